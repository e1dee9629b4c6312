//! A new network's first pod on node1 to the pod Ready, in the scale bench's live zone.
//!
//! `udn-node` (release, Dynamic UDN on) starts in node1's netns as the sandbox runs it
//! (the API server reached through a forwarder); the bench waits until it is done with the
//! node's networks (its log shows a gateway bridge sync and then stays quiet for 5 s) and
//! the zone settled (NB quiet, `hv_cfg` caught up). Then a namespace with a primary Layer3 UDN is created and the bench waits
//! for its NAD's network ID (cluster-manager). The clock starts when the pod (bound to
//! node1) is created: cluster-manager sees node1 active for the network and gives it a host
//! subnet, udn-controller renders the network in node1's zone and annotates the pod, and
//! the bench, as kubelet's runtime, makes the pod's netns and executes the real
//! `ovn-k8s-cni-overlay` ADD (the agent waits for the annotation, wires the veth and the OVS
//! port and answers once ovn-controller set `ovn-installed`), then writes the pod's status
//! Ready (no container to start). Stops when that write returns.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::{ANNOTATION_NETWORK_ID, ANNOTATION_POD_NETWORKS};
use udn_sandbox::components::{self, AgentSettings};
use udn_sandbox::forward::Forwarder;
use udn_test_support::stack::{CNI_CONF_FILE, run_cni};

use super::controller_objects::{NAD_NAME, ZONE};
use super::process::ChildGuard;
use super::scale_objects::{namespace_object, pod_object, udn_object};
use super::scale_zone::{DYNAMIC_UDN_FLAGS, LiveZone, settle, zone_endpoints};

/// The new network's namespace.
pub const NEW_NAMESPACE: &str = "scale-new";
/// Its pod.
const POD: &str = "first";
/// A sandbox ID like a runtime's (64 hex digits).
const SANDBOX: &str = "5ca1e0000000000000000000000000000000000000000000000000000000f1r5";

/// What the new network's first pod took, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PodReady {
    /// udn-node's start until its CNI config was written.
    pub agent_ready_s: f64,
    /// udn-node's start until its last log line before it was quiet (done with the node's
    /// networks: management ports, routes, gateway bridge flows).
    pub agent_settled_s: f64,
    /// The zone settling after it (NB quiet, `hv_cfg`).
    pub settle_s: f64,
    /// UDN created to its NAD with a network ID.
    pub udn_to_nad_s: f64,
    /// Pod created to its `k8s.ovn.org/pod-networks` annotation seen.
    pub annotated_s: f64,
    /// The CNI ADD's run (exec to exit).
    pub cni_s: f64,
    /// Pod created to the CNI ADD returned.
    pub added_s: f64,
    /// Pod created to its Ready status written.
    pub ready_s: f64,
}

/// Binaries and places of the pod-ready phase.
#[derive(Debug, Clone)]
pub struct PodSetup {
    /// The release `udn-node`.
    pub agent: PathBuf,
    /// The release `ovn-k8s-cni-overlay`.
    pub cni: PathBuf,
    /// The API server's address.
    pub api: std::net::SocketAddr,
    /// A work directory (kubeconfig, CNI socket and config).
    pub dir: PathBuf,
    /// The agent's log.
    pub log: PathBuf,
    /// The longest any step may take.
    pub deadline: Duration,
}

fn write_kubeconfig(path: &Path, server: &str) -> anyhow::Result<()> {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {server}\n\
         contexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sim\n\
         current-context: sim\nusers:\n- name: sim\n  user: {{}}\n"
    );
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// A pod netns, deleted when dropped.
struct Netns(String);

impl Netns {
    fn add(name: String) -> anyhow::Result<Self> {
        let status = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .context("running ip netns add")?;
        anyhow::ensure!(status.success(), "ip netns add {name}: {status}");
        Ok(Self(name))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.0])
            .stderr(Stdio::null())
            .status();
    }
}

/// Starts udn-node on node1; returns it, its forwarder and its CNI paths once ready.
fn start_agent(
    zone: &LiveZone,
    setup: &PodSetup,
) -> anyhow::Result<(ChildGuard, Forwarder, AgentSettings)> {
    let endpoints = zone_endpoints(&zone.lab)?;
    let forwarder = Forwarder::start(
        &endpoints.netns,
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        setup.api,
    )
    .context("the forwarder into node1's netns")?;
    let kubeconfig = setup.dir.join("kubeconfig-node1");
    write_kubeconfig(
        &kubeconfig,
        &format!("http://127.0.0.1:{}", forwarder.port()),
    )?;
    let settings = AgentSettings {
        kubeconfig,
        socket: setup.dir.join("cni-node1").join("cni.sock"),
        conf_dir: setup.dir.join("net.d-node1"),
        cni_request_timeout_s: setup.deadline.as_secs(),
        log_filter: "info".to_owned(),
        kubelet_cgroup_path: None,
    };
    let log = std::fs::File::create(&setup.log)
        .with_context(|| format!("creating {}", setup.log.display()))?;
    let mut command = components::agent(&setup.agent, &endpoints, &settings);
    command
        .args(DYNAMIC_UDN_FLAGS)
        .stdout(Stdio::null())
        .stderr(log);
    let agent = ChildGuard(command.spawn().context("starting udn-node")?);
    Ok((agent, forwarder, settings))
}

/// Waits until the agent wrote its CNI config (it is ready then).
async fn wait_agent(
    agent: &mut ChildGuard,
    settings: &AgentSettings,
    deadline: Duration,
) -> anyhow::Result<()> {
    let started = Instant::now();
    while !settings.conf_dir.join(CNI_CONF_FILE).exists() {
        agent.ensure_running("udn-node")?;
        if started.elapsed() > deadline {
            bail!("udn-node not ready after {} s", deadline.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// The agent's log line of a full gateway bridge sync (done with every network's flows).
const GATEWAY_SYNCED: &str = "gateway bridge synced";
/// How long the agent's log must not grow for it to count as idle.
const AGENT_QUIET: Duration = Duration::from_secs(5);

/// Waits until the agent's log shows a gateway bridge sync and then stops growing for
/// [`AGENT_QUIET`]; returns when it last grew, seconds from `started`.
async fn wait_agent_settled(
    agent: &mut ChildGuard,
    log: &Path,
    started: Instant,
    deadline: Duration,
) -> anyhow::Result<f64> {
    let mut size = 0;
    let mut grew = Instant::now();
    let mut synced = false;
    loop {
        agent.ensure_running("udn-node")?;
        let now = std::fs::metadata(log).map_or(0, |m| m.len());
        if now != size {
            size = now;
            grew = Instant::now();
            synced = synced
                || std::fs::read_to_string(log).is_ok_and(|text| text.contains(GATEWAY_SYNCED));
        } else if synced && grew.elapsed() >= AGENT_QUIET {
            return Ok(grew.saturating_duration_since(started).as_secs_f64());
        }
        if started.elapsed() > deadline {
            bail!("udn-node still busy after {} s", deadline.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates the new network and waits for its NAD's network ID; seconds it took.
async fn new_network(client: &Client, deadline: Duration) -> anyhow::Result<f64> {
    let pp = PostParams::default();
    kube::Api::all(client.clone())
        .create(&pp, &namespace_object(NEW_NAMESPACE)?)
        .await
        .context("creating the new namespace")?;
    let started = Instant::now();
    Api::namespaced(client.clone(), NEW_NAMESPACE)
        .create(&pp, &udn_object(NEW_NAMESPACE)?)
        .await
        .context("creating the new UDN")?;
    let nads: Api<NetworkAttachmentDefinition> = Api::namespaced(client.clone(), NEW_NAMESPACE);
    loop {
        let has_id = nads
            .get_opt(NAD_NAME)
            .await
            .context("reading the new NAD")?
            .and_then(|nad| nad.metadata.annotations)
            .is_some_and(|a| a.contains_key(ANNOTATION_NETWORK_ID));
        if has_id {
            return Ok(started.elapsed().as_secs_f64());
        }
        if started.elapsed() > deadline {
            bail!(
                "the new UDN's NAD has no network ID after {} s",
                deadline.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sends when the watch first sees the pod annotated.
fn watch_annotation(client: &Client) -> tokio::sync::oneshot::Receiver<Instant> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NEW_NAMESPACE);
    tokio::spawn(async move {
        let mut stream = watcher::watcher(pods, watcher::Config::default()).boxed();
        while let Some(event) = stream.next().await {
            let Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) = event else {
                continue;
            };
            let annotated = pod
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(ANNOTATION_POD_NETWORKS));
            if annotated {
                let _ = tx.send(Instant::now());
                return;
            }
        }
    });
    rx
}

/// The CNI ADD of the new pod, as kubelet's runtime executes it.
fn cni_add(
    setup: &PodSetup,
    settings: &AgentSettings,
    uid: &str,
    netns: &str,
) -> anyhow::Result<f64> {
    let conf_path = settings.conf_dir.join(CNI_CONF_FILE);
    let conf = std::fs::read_to_string(&conf_path)
        .with_context(|| format!("reading {}", conf_path.display()))?;
    let env: BTreeMap<String, String> = BTreeMap::from([
        ("CNI_COMMAND".into(), "ADD".into()),
        ("CNI_CONTAINERID".into(), SANDBOX.into()),
        ("CNI_NETNS".into(), format!("/run/netns/{netns}")),
        ("CNI_IFNAME".into(), "eth0".into()),
        ("CNI_PATH".into(), "/opt/cni/bin".into()),
        (
            "CNI_ARGS".into(),
            format!(
                "IgnoreUnknown=1;K8S_POD_NAMESPACE={NEW_NAMESPACE};K8S_POD_NAME={POD};K8S_POD_INFRA_CONTAINER_ID={SANDBOX};K8S_POD_UID={uid}"
            ),
        ),
        ("PATH".into(), "/usr/sbin:/usr/bin:/sbin:/bin".into()),
        (
            "UDN_CNI_SERVER_SOCKET".into(),
            settings.socket.display().to_string(),
        ),
    ]);
    let run = run_cni(&setup.cni, &env, &conf);
    anyhow::ensure!(
        run.code == 0,
        "CNI ADD failed ({}): {} {}",
        run.code,
        run.stdout,
        run.stderr
    );
    Ok(run.elapsed.as_secs_f64())
}

/// Runs the phase in `zone` (see the module docs).
pub async fn new_network_pod(
    client: &Client,
    zone: &LiveZone,
    setup: &PodSetup,
) -> anyhow::Result<PodReady> {
    std::fs::create_dir_all(&setup.dir).context("creating the pod phase's directory")?;
    let started = Instant::now();
    let (mut agent, _forwarder, settings) = start_agent(zone, setup)?;
    wait_agent(&mut agent, &settings, setup.deadline).await?;
    let agent_ready_s = started.elapsed().as_secs_f64();
    let agent_settled_s =
        wait_agent_settled(&mut agent, &setup.log, started, setup.deadline).await?;
    let settle_s = settle(&zone.view, setup.deadline).await?;
    let udn_to_nad_s = new_network(client, setup.deadline).await?;
    let netns = Netns::add(format!("{}-scale-new", zone.lab.prefix()))?;
    let annotated = watch_annotation(client);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NEW_NAMESPACE);
    let created = Instant::now();
    let pod = pods
        .create(
            &PostParams::default(),
            &pod_object(NEW_NAMESPACE, POD, ZONE)?,
        )
        .await
        .context("creating the new pod")?;
    let uid = pod.metadata.uid.unwrap_or_default();
    let cni_s = {
        let setup = setup.clone();
        let settings = settings.clone();
        let netns = netns.0.clone();
        tokio::task::spawn_blocking(move || cni_add(&setup, &settings, &uid, &netns))
            .await
            .context("the CNI ADD's thread")??
    };
    let added_s = created.elapsed().as_secs_f64();
    agent.ensure_running("udn-node")?;
    let status = json!({"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"},
        {"type": "ContainersReady", "status": "True"},
    ]}});
    pods.patch_status(POD, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .context("writing the pod's Ready status")?;
    let ready_s = created.elapsed().as_secs_f64();
    let annotated_s = match tokio::time::timeout(Duration::from_secs(5), annotated).await {
        Ok(Ok(at)) => at.saturating_duration_since(created).as_secs_f64(),
        _ => f64::NAN,
    };
    drop(netns);
    Ok(PodReady {
        agent_ready_s,
        agent_settled_s,
        settle_s,
        udn_to_nad_s,
        annotated_s,
        cni_s,
        added_s,
        ready_s,
    })
}
