//! One pod's life on the node: set-up (sandbox, networks, containers), every tick (liveness,
//! restarts, probes, status), tear-down; and the record of it under the state dir.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, Pod};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::discovery::ApiResource;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::cni::{Invocation, NetworkConfig, exec_list, network_status};
use super::{KubeletConfig, KubeletError, container, probe};

/// A container the kubelet runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ContainerRecord {
    pub(super) name: String,
    pub(super) pid: u32,
    pub(super) restarts: i32,
    pub(super) started_at: String,
    #[serde(skip)]
    probes: ProbeState,
}

#[derive(Debug, Clone, Default)]
struct ProbeState {
    ready: bool,
    readiness_failures: i32,
    liveness_failures: i32,
    last_readiness: Option<Instant>,
    last_liveness: Option<Instant>,
}

/// A delegated attachment (for CNI DEL).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Delegate {
    pub(super) config: String,
    pub(super) ifname: String,
}

/// What was set up for a pod.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PodRecord {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) uid: String,
    pub(super) netns: String,
    pub(super) container_id: String,
    pub(super) default_network: String,
    pub(super) pod_ips: Vec<IpAddr>,
    pub(super) delegates: Vec<Delegate>,
    pub(super) containers: Vec<ContainerRecord>,
    pub(super) start_time: String,
    #[serde(default)]
    pub(super) ready_since: String,
    /// `spec.terminationGracePeriodSeconds`: the grace when the pod vanishes without a
    /// graceful deletion.
    #[serde(default = "default_grace")]
    pub(super) termination_grace_seconds: i64,
    #[serde(skip)]
    written: Option<Value>,
}

fn default_grace() -> i64 {
    30
}

/// How long `pod`'s containers get between SIGTERM and SIGKILL: its
/// `deletionGracePeriodSeconds` once deleted gracefully, else its
/// `spec.terminationGracePeriodSeconds` (30 when unset).
pub(super) fn grace_period(pod: &Pod) -> Duration {
    let seconds = pod
        .metadata
        .deletion_grace_period_seconds
        .or_else(|| {
            pod.spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
        })
        .unwrap_or_else(default_grace);
    Duration::from_secs(u64::try_from(seconds).unwrap_or(0))
}

/// `namespace/name`.
pub(super) fn key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

fn pod_dir(state_dir: &Path, namespace: &str, name: &str, uid: &str) -> PathBuf {
    state_dir
        .join("pods")
        .join(format!("{namespace}_{name}_{uid}"))
}

fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string())
}

/// Every record under `state_dir`, by `namespace/name`.
pub(super) fn load_records(state_dir: &Path) -> BTreeMap<String, PodRecord> {
    std::fs::read_dir(state_dir.join("pods"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("record.json")).ok())
        .filter_map(|text| serde_json::from_str::<PodRecord>(&text).ok())
        .map(|record| (format!("{}/{}", record.namespace, record.name), record))
        .collect()
}

fn save(state_dir: &Path, record: &PodRecord) -> Result<(), KubeletError> {
    let dir = pod_dir(state_dir, &record.namespace, &record.name, &record.uid);
    std::fs::create_dir_all(&dir)
        .map_err(|e| KubeletError::Host(format!("creating {}: {e}", dir.display())))?;
    let text =
        serde_json::to_string_pretty(record).map_err(|e| KubeletError::Host(e.to_string()))?;
    std::fs::write(dir.join("record.json"), text)
        .map_err(|e| KubeletError::Host(format!("writing {}: {e}", dir.display())))
}

fn pod_cgroup(config: &KubeletConfig, uid: &str) -> PathBuf {
    config
        .cgroup_root
        .join("kubepods.slice")
        .join(format!("kubepods-pod{}.slice", uid.replace('-', "_")))
}

fn run_ip(args: &[&str]) -> Result<(), KubeletError> {
    crate::command::run("ip", args)
        .map(|_| ())
        .map_err(|e| KubeletError::Host(e.to_string()))
}

/// Sets the pod up; `None` while the node's network is not ready (no CNI config yet).
pub(super) async fn set_up(
    client: &kube::Client,
    config: &KubeletConfig,
    pod: &Pod,
) -> Result<Option<PodRecord>, KubeletError> {
    let Some(network) = NetworkConfig::default_network(&config.cni_conf_dir)? else {
        return Ok(None);
    };
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let short: String = uid
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(8)
        .collect();
    let netns = format!("{}-{short}", config.netns_prefix);
    // Host-side steps block (commands, signals, waits): off the async threads, which the
    // other pods' workers share.
    tokio::task::block_in_place(|| {
        let _ = crate::command::run("ip", &["netns", "delete", &netns]);
        run_ip(&["netns", "add", &netns])?;
        run_ip(&["-n", &netns, "link", "set", "lo", "up"])
    })?;
    let container_id = format!("{:0<64}", uid.replace('-', ""));
    let netns_path = format!("/run/netns/{netns}");
    let call = Invocation {
        container_id: &container_id,
        netns: &netns_path,
        ifname: "eth0",
        pod: (&namespace, &name, &uid),
        bin_dir: &config.cni_bin_dir,
    };
    let mut record = PodRecord {
        namespace: namespace.clone(),
        name: name.clone(),
        uid: uid.clone(),
        netns: netns.clone(),
        container_id: container_id.clone(),
        default_network: serde_json::to_string(&json!({"name": network.name, "cniVersion": network.cni_version, "plugins": network.plugins})).unwrap_or_default(),
        pod_ips: Vec::new(),
        delegates: Vec::new(),
        containers: Vec::new(),
        start_time: now(),
        ready_since: String::new(),
        termination_grace_seconds: pod
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or_else(default_grace),
        written: None,
    };
    let outcome = set_up_networks(client, config, pod, &network, &call, &mut record).await;
    if let Err(error) = outcome {
        tokio::task::block_in_place(|| tear_down(config, &record, Duration::ZERO));
        return Err(error);
    }
    let host_ip = config
        .node_ips
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    for spec in pod.spec.iter().flat_map(|s| s.containers.iter()) {
        let pid = tokio::task::block_in_place(|| {
            start_container(config, &record, spec, &host_ip)
                .inspect_err(|_| tear_down(config, &record, Duration::ZERO))
        })?;
        record.containers.push(ContainerRecord {
            name: spec.name.clone(),
            pid,
            restarts: 0,
            started_at: now(),
            probes: ProbeState::default(),
        });
    }
    save(&config.state_dir, &record)?;
    tracing::info!(pod = %key(pod), netns = %netns, "pod sandbox and containers started");
    Ok(Some(record))
}

async fn set_up_networks(
    client: &kube::Client,
    config: &KubeletConfig,
    pod: &Pod,
    network: &NetworkConfig,
    call: &Invocation<'_>,
    record: &mut PodRecord,
) -> Result<(), KubeletError> {
    let result =
        tokio::task::block_in_place(|| exec_list(network, "ADD", call))?.unwrap_or(Value::Null);
    let mut statuses = network_status(&network.name, &result, true)?;
    record.pod_ips = statuses
        .iter()
        .filter(|s| s.interface == "eth0")
        .flat_map(|s| s.ips.iter().filter_map(|ip| ip.parse().ok()))
        .collect();
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    if let Some(value) = annotations.get("k8s.v1.cni.cncf.io/networks") {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let elements = udn_api::annotations::network_selection::parse_network_selection_for_pod(
            value, &namespace,
        )
        .map_err(|e| KubeletError::Cni(format!("k8s.v1.cni.cncf.io/networks: {e}")))?;
        let resource = ApiResource {
            group: "k8s.cni.cncf.io".to_owned(),
            version: "v1".to_owned(),
            api_version: "k8s.cni.cncf.io/v1".to_owned(),
            kind: "NetworkAttachmentDefinition".to_owned(),
            plural: "network-attachment-definitions".to_owned(),
        };
        for (index, element) in elements.iter().enumerate() {
            let nads: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), &element.namespace, &resource);
            let nad = nads
                .get(&element.name)
                .await
                .map_err(|source| KubeletError::Api {
                    what: format!(
                        "getting NetworkAttachmentDefinition {}/{}",
                        element.namespace, element.name
                    ),
                    source,
                })?;
            let text = nad.data["spec"]["config"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let delegate = NetworkConfig::parse(
                &format!(
                    "NetworkAttachmentDefinition {}/{}",
                    element.namespace, element.name
                ),
                &text,
            )?;
            let ifname = if element.interface.is_empty() {
                format!("net{}", index + 1)
            } else {
                element.interface.clone()
            };
            let delegated_call = Invocation {
                ifname: &ifname,
                ..call.clone()
            };
            let result =
                tokio::task::block_in_place(|| exec_list(&delegate, "ADD", &delegated_call))?
                    .unwrap_or(Value::Null);
            record.delegates.push(Delegate {
                config: text,
                ifname: ifname.clone(),
            });
            statuses.extend(network_status(
                &format!("{}/{}", element.namespace, element.name),
                &result,
                false,
            )?);
        }
    }
    let text = udn_api::annotations::network_status::format_network_status(&statuses)
        .map_err(|e| KubeletError::Cni(format!("network-status: {e}")))?;
    let api: Api<Pod> = Api::namespaced(client.clone(), &record.namespace);
    let patch = json!({"metadata": {"annotations": {"k8s.v1.cni.cncf.io/network-status": text}}});
    api.patch(&record.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| KubeletError::Api {
            what: format!("annotating pod {}/{}", record.namespace, record.name),
            source,
        })?;
    let _ = config;
    Ok(())
}

fn start_container(
    config: &KubeletConfig,
    record: &PodRecord,
    spec: &Container,
    host_ip: &str,
) -> Result<u32, KubeletError> {
    let argv = container::argv(spec, &config.image_command)?;
    let pod_ip = record
        .pod_ips
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    let mut env = vec![
        ("HOSTNAME".to_owned(), record.name.clone()),
        (
            "PATH".to_owned(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned(),
        ),
    ];
    for var in spec.env.iter().flatten() {
        let value = match (
            &var.value,
            var.value_from.as_ref().and_then(|f| f.field_ref.as_ref()),
        ) {
            (Some(value), _) => value.clone(),
            (None, Some(field)) => match field.field_path.as_str() {
                "metadata.name" => record.name.clone(),
                "metadata.namespace" => record.namespace.clone(),
                "metadata.uid" => record.uid.clone(),
                "status.podIP" => pod_ip.clone(),
                "status.hostIP" => host_ip.to_owned(),
                "spec.nodeName" => config.node_name.clone(),
                _ => String::new(),
            },
            _ => String::new(),
        };
        env.push((var.name.clone(), value));
    }
    let dir = pod_dir(
        &config.state_dir,
        &record.namespace,
        &record.name,
        &record.uid,
    );
    std::fs::create_dir_all(&dir)
        .map_err(|e| KubeletError::Host(format!("creating {}: {e}", dir.display())))?;
    let cgroup = pod_cgroup(config, &record.uid).join(&spec.name);
    container::start(
        &argv,
        &format!("/run/netns/{}", record.netns),
        &cgroup,
        &env,
        &dir.join(format!("{}.log", spec.name)),
    )
}

fn stop_container(pid: u32, grace: Duration) {
    container::signal(pid, rustix::process::Signal::TERM);
    let deadline = Instant::now() + grace;
    while container::alive(pid) && Instant::now() < deadline {
        std::thread::park_timeout(Duration::from_millis(20));
    }
    if container::alive(pid) {
        container::signal(pid, rustix::process::Signal::KILL);
    }
}

/// Liveness, restarts, readiness, then the Pod's status if it changed.
pub(super) async fn tick(
    client: &kube::Client,
    config: &KubeletConfig,
    pod: &Pod,
    record: &mut PodRecord,
) {
    let Some(spec) = pod.spec.as_ref() else {
        return;
    };
    let pod_ip = record.pod_ips.first().copied();
    let netns = format!("/run/netns/{}", record.netns);
    let host_ip = config
        .node_ips
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    let mut changed = false;
    for container_spec in &spec.containers {
        let Some(index) = record
            .containers
            .iter()
            .position(|c| c.name == container_spec.name)
        else {
            continue;
        };
        let mut restart = !container::alive(record.containers[index].pid);
        if let (Some(live), Some(ip)) = (&container_spec.liveness_probe, pod_ip)
            && due(live, record.containers[index].probes.last_liveness)
        {
            record.containers[index].probes.last_liveness = Some(Instant::now());
            let (probe, spec_c, ns) = (live.clone(), container_spec.clone(), netns.clone());
            let ok = tokio::task::spawn_blocking(move || probe::run(&probe, &spec_c, ip, &ns))
                .await
                .unwrap_or(false);
            let state = &mut record.containers[index].probes;
            state.liveness_failures = if ok { 0 } else { state.liveness_failures + 1 };
            if state.liveness_failures >= live.failure_threshold.unwrap_or(3) {
                tracing::info!(pod = %key(pod), container = %container_spec.name, "liveness probe failed; restarting");
                let pid = record.containers[index].pid;
                tokio::task::block_in_place(|| stop_container(pid, Duration::from_secs(2)));
                restart = true;
            }
        }
        if restart {
            let started = tokio::task::block_in_place(|| {
                start_container(config, record, container_spec, &host_ip)
            });
            match started {
                Ok(pid) => {
                    let c = &mut record.containers[index];
                    c.pid = pid;
                    c.restarts += 1;
                    c.started_at = now();
                    c.probes = ProbeState::default();
                    changed = true;
                }
                Err(error) => tracing::warn!(pod = %key(pod), %error, "cannot restart a container"),
            }
        }
        let ready = match (&container_spec.readiness_probe, pod_ip) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(readiness), Some(ip)) => {
                let state = record.containers[index].probes.clone();
                if due(readiness, state.last_readiness) {
                    let (probe, spec_c, ns) =
                        (readiness.clone(), container_spec.clone(), netns.clone());
                    let ok =
                        tokio::task::spawn_blocking(move || probe::run(&probe, &spec_c, ip, &ns))
                            .await
                            .unwrap_or(false);
                    let state = &mut record.containers[index].probes;
                    state.last_readiness = Some(Instant::now());
                    if ok {
                        state.readiness_failures = 0;
                        true
                    } else {
                        state.readiness_failures += 1;
                        state.ready
                            && state.readiness_failures < readiness.failure_threshold.unwrap_or(3)
                    }
                } else {
                    state.ready
                }
            }
        };
        record.containers[index].probes.ready = ready;
    }
    if changed {
        let _ = save(&config.state_dir, record);
    }
    write_status(client, config, record).await;
}

/// Whether a probe is due: every `periodSeconds` (default 10), the first at once.
fn due(probe: &k8s_openapi::api::core::v1::Probe, last: Option<Instant>) -> bool {
    let period = Duration::from_secs(
        u64::try_from(probe.period_seconds.unwrap_or(10))
            .unwrap_or(10)
            .max(1),
    );
    last.is_none_or(|at| at.elapsed() >= period)
}

async fn write_status(client: &kube::Client, config: &KubeletConfig, record: &mut PodRecord) {
    let ready = record
        .containers
        .iter()
        .all(|c| c.probes.ready && container::alive(c.pid));
    let ready_word = if ready { "True" } else { "False" };
    let previous_ready = record
        .written
        .as_ref()
        .and_then(|w| w["status"]["conditions"].as_array().cloned())
        .and_then(|c| c.into_iter().find(|c| c["type"] == "Ready"))
        .map(|c| c["status"] == "True");
    if previous_ready != Some(ready) {
        record.ready_since = now();
    }
    let condition = |kind: &str, status: &str, at: &str| json!({"type": kind, "status": status, "lastTransitionTime": at, "lastProbeTime": null});
    let host = config
        .node_ips
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    let containers: Vec<Value> = record
        .containers
        .iter()
        .map(|c| {
            json!({"name": c.name, "ready": c.probes.ready, "started": true, "restartCount": c.restarts,
                   "image": "", "imageID": "", "containerID": format!("udn-sandbox://{}", c.pid),
                   "state": {"running": {"startedAt": c.started_at}}})
        })
        .collect();
    let status = json!({"status": {
        "phase": "Running",
        "conditions": [
            condition("PodReadyToStartContainers", "True", &record.start_time),
            condition("Initialized", "True", &record.start_time),
            condition("ContainersReady", ready_word, &record.ready_since),
            condition("Ready", ready_word, &record.ready_since),
            condition("PodScheduled", "True", &record.start_time),
        ],
        "hostIP": host, "hostIPs": config.node_ips.iter().map(|ip| json!({"ip": ip.to_string()})).collect::<Vec<_>>(),
        "podIP": record.pod_ips.first().map(ToString::to_string),
        "podIPs": record.pod_ips.iter().map(|ip| json!({"ip": ip.to_string()})).collect::<Vec<_>>(),
        "startTime": record.start_time,
        "containerStatuses": containers,
    }});
    if record.written.as_ref() == Some(&status) {
        return;
    }
    let api: Api<Pod> = Api::namespaced(client.clone(), &record.namespace);
    match api
        .patch_status(
            &record.name,
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await
    {
        Ok(_) => record.written = Some(status),
        Err(error) => {
            tracing::warn!(pod = %format!("{}/{}", record.namespace, record.name), %error, "cannot write pod status")
        }
    }
}

/// Stops the containers (SIGTERM to each, SIGKILL to those still running after `grace`),
/// runs CNI DEL, deletes the netns, cgroups and record.
pub(super) fn tear_down(config: &KubeletConfig, record: &PodRecord, grace: Duration) {
    for c in &record.containers {
        container::signal(c.pid, rustix::process::Signal::TERM);
    }
    let deadline = Instant::now() + grace;
    while record.containers.iter().any(|c| container::alive(c.pid)) && Instant::now() < deadline {
        std::thread::park_timeout(Duration::from_millis(20));
    }
    for c in record.containers.iter().filter(|c| container::alive(c.pid)) {
        tracing::info!(pod = %format!("{}/{}", record.namespace, record.name), container = %c.name, "grace period over; killing");
        container::signal(c.pid, rustix::process::Signal::KILL);
    }
    let netns_path = format!("/run/netns/{}", record.netns);
    let call = Invocation {
        container_id: &record.container_id,
        netns: &netns_path,
        ifname: "eth0",
        pod: (&record.namespace, &record.name, &record.uid),
        bin_dir: &config.cni_bin_dir,
    };
    for delegate in record.delegates.iter().rev() {
        if let Ok(network) = NetworkConfig::parse("delegate", &delegate.config) {
            let call = Invocation {
                ifname: &delegate.ifname,
                ..call.clone()
            };
            if let Err(error) = exec_list(&network, "DEL", &call) {
                tracing::warn!(%error, "CNI DEL of a delegated network failed");
            }
        }
    }
    if let Ok(network) = NetworkConfig::parse("default network", &record.default_network)
        && let Err(error) = exec_list(&network, "DEL", &call)
    {
        tracing::warn!(%error, "CNI DEL failed");
    }
    let _ = crate::command::run("ip", &["netns", "delete", &record.netns]);
    let _ = crate::cgroup::remove(&pod_cgroup(config, &record.uid));
    let _ = std::fs::remove_dir_all(pod_dir(
        &config.state_dir,
        &record.namespace,
        &record.name,
        &record.uid,
    ));
    tracing::info!(pod = %format!("{}/{}", record.namespace, record.name), "pod torn down");
}

/// Deletes a terminating pod for good (grace 0, this uid only), as kubelet does once its
/// containers are gone.
pub(super) async fn delete_for_good(client: &kube::Client, pod: &Pod) {
    let api: Api<Pod> = Api::namespaced(
        client.clone(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: pod.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let _ = api
        .delete(pod.metadata.name.as_deref().unwrap_or_default(), &params)
        .await;
}

/// A Warning Event `FailedCreatePodSandBox` on the pod, as kubelet reports it.
pub(super) async fn report_failure(
    client: &kube::Client,
    config: &KubeletConfig,
    pod: &Pod,
    error: &KubeletError,
) {
    tracing::warn!(pod = %key(pod), %error, "pod sandbox set-up failed");
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), &namespace);
    let stamp = now();
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": format!("{}.", pod.metadata.name.as_deref().unwrap_or_default()), "namespace": namespace},
        "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod.metadata.name, "uid": pod.metadata.uid, "apiVersion": "v1"},
        "reason": "FailedCreatePodSandBox", "type": "Warning",
        "message": format!("Failed to create pod sandbox: {error}"),
        "source": {"component": "kubelet", "host": config.node_name},
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        "reportingComponent": "kubelet", "reportingInstance": config.node_name,
    });
    if let Ok(event) = serde_json::from_value(event) {
        let _ = api.create(&PostParams::default(), &event).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grace_period_is_the_deletions_then_the_pods_own() {
        let pod = |value: Value| -> Pod { serde_json::from_value(value).unwrap() };
        let terminating = pod(
            json!({"metadata": {"name": "p", "deletionGracePeriodSeconds": 7},
                                     "spec": {"terminationGracePeriodSeconds": 60, "containers": []}}),
        );
        assert_eq!(grace_period(&terminating), Duration::from_secs(7));
        let own = pod(
            json!({"metadata": {"name": "p"}, "spec": {"terminationGracePeriodSeconds": 60, "containers": []}}),
        );
        assert_eq!(grace_period(&own), Duration::from_secs(60));
        let unset = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        assert_eq!(grace_period(&unset), Duration::from_secs(30));
    }
}
