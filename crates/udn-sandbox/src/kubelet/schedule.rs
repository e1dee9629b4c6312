//! A trivial scheduler, run by every simulated kubelet: a Pod without `spec.nodeName`
//! (of `schedulerName` `default-scheduler`, not being deleted, without scheduling gates) is
//! bound through `pods/binding` to one of the Ready, schedulable Nodes its `nodeSelector`
//! matches, chosen by a hash of its uid, so every kubelet picks the same Node and a second
//! binding is only a harmless 409. A Pod no Node fits stays Pending: one kubelet (also
//! chosen by the hash) writes `PodScheduled=False` (`Unschedulable`) and a `FailedScheduling`
//! Warning Event worded as kube-scheduler words them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::KubeletConfig;

/// What to do with one unscheduled Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Decision {
    /// Not for this scheduler (another scheduler's, terminating, gated).
    Skip,
    /// Bind it to this Node.
    Bind(String),
    /// No Node fits: `reporter`'s kubelet reports `message`.
    Unschedulable {
        /// kube-scheduler's FitError message.
        message: String,
        /// The Node whose kubelet writes the condition and the Event.
        reporter: String,
    },
}

/// FNV-1a of the uid: the same on every kubelet (std's hasher is not stable across builds).
fn hash(uid: &str) -> u64 {
    uid.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn pick<'a>(uid: &str, names: &[&'a str]) -> Option<&'a str> {
    let count = u64::try_from(names.len()).ok().filter(|n| *n > 0)?;
    usize::try_from(hash(uid) % count)
        .ok()
        .and_then(|i| names.get(i).copied())
}

fn ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Why `node` does not fit `pod`, in kube-scheduler's words; `None` when it fits.
fn unfit(pod: &Pod, node: &Node) -> Option<&'static str> {
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        return Some("node(s) were unschedulable");
    }
    if !ready(node) {
        // The node lifecycle controller taints a node that is not Ready.
        return Some("node(s) had untolerated taint {node.kubernetes.io/not-ready: }");
    }
    let selector = pod.spec.as_ref().and_then(|s| s.node_selector.as_ref());
    let labels = node.metadata.labels.as_ref();
    let matches = selector
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
    (!matches).then_some("node(s) didn't match Pod's node affinity/selector")
}

/// kube-scheduler's `FitError` text: the reasons histogram, then the preemption plugin's
/// verdict (none of these reasons can be resolved by preempting pods).
fn fit_error(reasons: &BTreeMap<&str, usize>, nodes: usize) -> String {
    let histogram: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    format!(
        "0/{nodes} nodes are available: {}. preemption: 0/{nodes} nodes are available: {nodes} Preemption is not helpful for scheduling.",
        histogram.join(", ")
    )
}

/// The decision for `pod` given every Node.
pub(super) fn decide(pod: &Pod, nodes: &[Node]) -> Decision {
    let spec = pod.spec.as_ref();
    let scheduler = spec
        .and_then(|s| s.scheduler_name.as_deref())
        .unwrap_or("default-scheduler");
    let gated = spec
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| !g.is_empty());
    if scheduler != "default-scheduler"
        || gated
        || pod.metadata.deletion_timestamp.is_some()
        || spec
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty())
    {
        return Decision::Skip;
    }
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let mut sorted: Vec<&Node> = nodes.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    fn name<'a>(node: &&'a Node) -> &'a str {
        node.metadata.name.as_deref().unwrap_or_default()
    }
    let all: Vec<&str> = sorted.iter().map(name).collect();
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    let mut fitting = Vec::new();
    for node in &sorted {
        match unfit(pod, node) {
            None => fitting.push(name(node)),
            Some(reason) => *reasons.entry(reason).or_default() += 1,
        }
    }
    if let Some(node) = pick(uid, &fitting) {
        return Decision::Bind(node.to_owned());
    }
    match pick(uid, &all) {
        None => Decision::Skip,
        Some(reporter) => Decision::Unschedulable {
            message: fit_error(&reasons, all.len()),
            reporter: reporter.to_owned(),
        },
    }
}

/// Whether the pod already says `message` in `PodScheduled=False`.
fn reported(pod: &Pod, message: &str) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
                && c.message.as_deref() == Some(message)
        })
}

fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string())
}

/// Schedules every unscheduled Pod (best effort: what fails is retried at the next tick).
pub(super) async fn schedule(client: &kube::Client, config: &KubeletConfig) {
    let pods: Api<Pod> = Api::all(client.clone());
    let unscheduled = match pods
        .list(&ListParams::default().fields("spec.nodeName="))
        .await
    {
        Ok(list) => list.items,
        Err(error) => {
            tracing::warn!(%error, "cannot list unscheduled pods");
            return;
        }
    };
    if unscheduled.is_empty() {
        return;
    }
    let nodes = match Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        Ok(list) => list.items,
        Err(error) => {
            tracing::warn!(%error, "cannot list nodes");
            return;
        }
    };
    for pod in &unscheduled {
        match decide(pod, &nodes) {
            Decision::Skip => {}
            Decision::Bind(node) => bind(client, pod, &node).await,
            Decision::Unschedulable { message, reporter } => {
                if reporter == config.node_name && !reported(pod, &message) {
                    report_unschedulable(client, pod, &message).await;
                }
            }
        }
    }
}

/// POST `pods/binding` as kube-scheduler's default binder sends it (with the pod's uid).
async fn bind(client: &kube::Client, pod: &Pod, node: &str) {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let binding = json!({
        "apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace, "uid": pod.metadata.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    });
    match api
        .create_subresource::<Value, Value>("binding", name, &PostParams::default(), &binding)
        .await
    {
        Ok(_) => tracing::info!(pod = %format!("{namespace}/{name}"), %node, "pod bound"),
        // Another kubelet bound it first (to the same node).
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => {
            tracing::warn!(pod = %format!("{namespace}/{name}"), %error, "cannot bind pod")
        }
    }
}

/// `PodScheduled=False` (`Unschedulable`) and a `FailedScheduling` Warning Event.
async fn report_unschedulable(client: &kube::Client, pod: &Pod, message: &str) {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let stamp = now();
    let status = json!({"status": {"conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
        "lastProbeTime": null, "lastTransitionTime": stamp,
    }]}});
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    if let Err(error) = pods
        .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&status))
        .await
    {
        tracing::warn!(pod = %format!("{namespace}/{name}"), %error, "cannot write PodScheduled");
        return;
    }
    tracing::info!(pod = %format!("{namespace}/{name}"), %message, "pod unschedulable");
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": format!("{name}."), "namespace": namespace},
        "involvedObject": {"kind": "Pod", "namespace": namespace, "name": name, "uid": pod.metadata.uid, "apiVersion": "v1"},
        "reason": "FailedScheduling", "type": "Warning", "message": message,
        "source": {"component": "default-scheduler"},
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        "action": "Scheduling", "reportingComponent": "default-scheduler",
        "reportingInstance": "default-scheduler",
    });
    let events: Api<Event> = Api::namespaced(client.clone(), &namespace);
    if let Ok(event) = serde_json::from_value::<Event>(event)
        && let Err(error) = events.create(&PostParams::default(), &event).await
    {
        tracing::warn!(%error, "cannot record the FailedScheduling event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, labels: Value, ready: bool) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        }))
        .unwrap()
    }

    fn pod(uid: &str, spec: Value) -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": "p", "namespace": "n", "uid": uid}, "spec": spec}),
        )
        .unwrap()
    }

    #[test]
    fn every_kubelet_picks_the_same_ready_matching_node() {
        let nodes = [
            node("node2", json!({"disk": "ssd"}), true),
            node("node1", json!({"disk": "ssd"}), true),
            node("node3", json!({"disk": "ssd"}), false),
            node("node4", json!({}), true),
        ];
        let spec = json!({"nodeSelector": {"disk": "ssd"}, "containers": []});
        let mut chosen = std::collections::BTreeSet::new();
        for uid in ["a", "b", "c", "d", "e", "f", "g", "h"] {
            let Decision::Bind(node) = decide(&pod(uid, spec.clone()), &nodes) else {
                panic!("expected a binding");
            };
            // The same answer whatever the order the nodes come in.
            let mut reversed = nodes.to_vec();
            reversed.reverse();
            assert_eq!(
                decide(&pod(uid, spec.clone()), &reversed),
                Decision::Bind(node.clone())
            );
            chosen.insert(node);
        }
        assert_eq!(chosen, ["node1".to_owned(), "node2".to_owned()].into());
    }

    #[test]
    fn a_pod_no_node_matches_is_unschedulable_in_kube_schedulers_words() {
        let nodes = [
            node("node1", json!({}), true),
            node("node2", json!({}), true),
        ];
        let Decision::Unschedulable { message, reporter } = decide(
            &pod(
                "u",
                json!({"nodeSelector": {"disk": "ssd"}, "containers": []}),
            ),
            &nodes,
        ) else {
            panic!("expected unschedulable");
        };
        assert_eq!(
            message,
            "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        );
        assert!(reporter == "node1" || reporter == "node2");
        let nodes = [
            node("node1", json!({}), false),
            node("node2", json!({}), true),
        ];
        let Decision::Unschedulable { message, .. } = decide(
            &pod(
                "u",
                json!({"nodeSelector": {"disk": "ssd"}, "containers": []}),
            ),
            &nodes,
        ) else {
            panic!("expected unschedulable");
        };
        assert!(message.starts_with("0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. "), "{message}");
    }

    #[test]
    fn bound_gated_terminating_and_foreign_pods_are_skipped() {
        let nodes = [node("node1", json!({}), true)];
        for spec in [
            json!({"nodeName": "node1", "containers": []}),
            json!({"schedulerName": "other", "containers": []}),
            json!({"schedulingGates": [{"name": "wait"}], "containers": []}),
        ] {
            assert_eq!(decide(&pod("u", spec), &nodes), Decision::Skip);
        }
        assert_eq!(
            decide(&pod("u", json!({"containers": []})), &nodes),
            Decision::Bind("node1".to_owned())
        );
    }
}

#[cfg(test)]
mod api_tests {
    use super::*;
    use udn_kube_sim::http::SimService;
    use udn_kube_sim::{Sim, SimConfig};

    fn config(node: &str) -> KubeletConfig {
        KubeletConfig {
            node_name: node.to_owned(),
            node_ips: Vec::new(),
            kubeconfig: "/nonexistent".into(),
            cni_conf_dir: "/nonexistent".into(),
            cni_bin_dir: "/nonexistent".into(),
            state_dir: "/nonexistent".into(),
            cgroup_root: "/nonexistent".into(),
            netns_prefix: "t".to_owned(),
            image_command: Vec::new(),
        }
    }

    async fn create<K>(api: &Api<K>, object: Value)
    where
        K: kube::Resource<DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug,
    {
        api.create(
            &PostParams::default(),
            &serde_json::from_value(object).unwrap(),
        )
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn pods_are_bound_or_reported_unschedulable_once() {
        let client = kube::Client::new(SimService::new(Sim::new(SimConfig::default())), "default");
        create::<k8s_openapi::api::core::v1::Namespace>(
            &Api::all(client.clone()),
            json!({"metadata": {"name": "n"}}),
        )
        .await;
        let nodes: Api<Node> = Api::all(client.clone());
        for name in ["node1", "node2"] {
            create::<Node>(
                &nodes,
                json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}),
            )
            .await;
            let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
            nodes
                .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .unwrap();
        }
        create::<Pod>(&Api::namespaced(client.clone(), "n"), json!({"metadata": {"name": "pinned"},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": "node2"}, "containers": [{"name": "c", "image": "i"}]}})).await;
        create::<Pod>(&Api::namespaced(client.clone(), "n"), json!({"metadata": {"name": "nowhere"},
            "spec": {"nodeSelector": {"disk": "ssd"}, "containers": [{"name": "c", "image": "i"}]}})).await;
        for _ in 0..2 {
            for node in ["node1", "node2"] {
                schedule(&client, &config(node)).await;
            }
        }
        let pods: Api<Pod> = Api::namespaced(client.clone(), "n");
        let pinned = pods.get("pinned").await.unwrap();
        assert_eq!(pinned.spec.unwrap().node_name.as_deref(), Some("node2"));
        let scheduled = pinned.status.unwrap().conditions.unwrap();
        assert!(
            scheduled
                .iter()
                .any(|c| c.type_ == "PodScheduled" && c.status == "True")
        );
        let nowhere = pods.get("nowhere").await.unwrap();
        assert_eq!(nowhere.spec.unwrap().node_name, None);
        let status = nowhere.status.unwrap();
        assert_eq!(status.phase.as_deref(), Some("Pending"));
        let condition = status
            .conditions
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "PodScheduled")
            .unwrap();
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_deref()),
            ("False", Some("Unschedulable"))
        );
        let events: Api<Event> = Api::namespaced(client.clone(), "n");
        let failed: Vec<Event> = events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
            .collect();
        assert_eq!(
            failed.len(),
            1,
            "one event for one unschedulable verdict: {failed:?}"
        );
        assert_eq!(failed[0].type_.as_deref(), Some("Warning"));
        assert_eq!(failed[0].message, condition.message);
        assert_eq!(failed[0].involved_object.name.as_deref(), Some("nowhere"));
    }
}
