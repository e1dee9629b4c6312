//! Which nodes are active for which UDN/CUDN network (upstream `PodTrackerController`): a
//! node is active for a network while a scheduled, not host-networked, not finished pod on it
//! attaches to a NAD of the network, through its namespace's primary network or its
//! `k8s.v1.cni.cncf.io/networks` selections. Only networks whose NADs a UDN or CUDN owns are
//! gated; other networks are on every node and are not listed. Pure.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use udn_api::annotations::parse_network_selection_for_pod;
use udn_api::names::ANNOTATION_NETWORKS;

/// What the tracker needs of one NAD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NadView {
    /// `namespace/name`.
    pub(crate) key: String,
    /// The network it belongs to.
    pub(crate) network: String,
    /// A primary network NAD (the namespace's primary network).
    pub(crate) primary: bool,
    /// Owned by a UDN or CUDN: the network is rendered on active nodes only.
    pub(crate) gated: bool,
}

/// What the tracker needs of one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PodView {
    /// Namespace.
    pub(crate) namespace: String,
    /// `spec.nodeName`.
    pub(crate) node: String,
    /// NAD keys of its `k8s.v1.cni.cncf.io/networks` selections (namespace defaulted to the
    /// pod's); a selection that does not parse counts as none.
    pub(crate) selections: Vec<String>,
}

/// The view of `pod` when it can hold a network on its node: scheduled, not host-networked,
/// not `Succeeded` or `Failed`.
pub(crate) fn pod_view(pod: &Pod) -> Option<PodView> {
    let spec = pod.spec.as_ref()?;
    let node = spec.node_name.clone().filter(|n| !n.is_empty())?;
    if spec.host_network == Some(true) {
        return None;
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return None;
    }
    let namespace = pod.metadata.namespace.clone()?;
    let selections = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_NETWORKS))
        .and_then(|value| parse_network_selection_for_pod(value, &namespace).ok())
        .unwrap_or_default()
        .into_iter()
        .map(|s| udn_api::names::nad_key(&s.namespace, &s.name))
        .collect();
    Some(PodView {
        namespace,
        node,
        selections,
    })
}

/// Active nodes by gated network.
pub(crate) type Activity = BTreeMap<String, BTreeSet<String>>;

/// The active nodes of every gated network with at least one.
pub(crate) fn active_nodes<'a>(
    nads: &[NadView],
    pods: impl IntoIterator<Item = &'a PodView>,
) -> Activity {
    let by_key: BTreeMap<&str, &NadView> = nads.iter().map(|n| (n.key.as_str(), n)).collect();
    let mut primary_of: BTreeMap<&str, &NadView> = BTreeMap::new();
    for nad in nads.iter().filter(|n| n.primary) {
        let namespace = nad.key.split_once('/').map_or("", |(ns, _)| ns);
        // One primary network per namespace; the first NAD by key if several disagree.
        primary_of.entry(namespace).or_insert(nad);
    }
    let mut active = Activity::new();
    for pod in pods {
        let primary = primary_of.get(pod.namespace.as_str()).copied();
        let selected = pod
            .selections
            .iter()
            .filter_map(|key| by_key.get(key.as_str()).copied());
        for nad in primary.into_iter().chain(selected).filter(|n| n.gated) {
            active
                .entry(nad.network.clone())
                .or_default()
                .insert(pod.node.clone());
        }
    }
    active
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nad(key: &str, network: &str, primary: bool, gated: bool) -> NadView {
        NadView {
            key: key.to_owned(),
            network: network.to_owned(),
            primary,
            gated,
        }
    }

    fn pod(namespace: &str, node: &str, selections: &[&str]) -> PodView {
        PodView {
            namespace: namespace.to_owned(),
            node: node.to_owned(),
            selections: selections.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn primary_and_secondary_attachments_make_their_nodes_active() {
        let nads = [
            nad("blue/net", "blue_net", true, true),
            nad("red/sec", "red_sec", false, true),
            nad("default/macvlan", "macvlan", false, false),
            // A CUDN's NADs in two namespaces: one network.
            nad("a/c", "cluster_udn_c", true, true),
            nad("b/c", "cluster_udn_c", true, true),
        ];
        let pods = [
            pod("blue", "node1", &[]),
            pod("blue", "node2", &["red/sec"]),
            pod(
                "plain",
                "node3",
                &["default/macvlan", "red/sec", "gone/nad"],
            ),
            pod("a", "node4", &[]),
            pod("b", "node5", &[]),
        ];
        let active = active_nodes(&nads, &pods);
        let nodes = |net: &str| -> Vec<&str> { active[net].iter().map(String::as_str).collect() };
        assert_eq!(nodes("blue_net"), ["node1", "node2"]);
        assert_eq!(nodes("red_sec"), ["node2", "node3"]);
        assert_eq!(nodes("cluster_udn_c"), ["node4", "node5"]);
        // A plain NAD's network is on every node: not tracked.
        assert!(!active.contains_key("macvlan"));
    }

    #[test]
    fn only_scheduled_running_pod_networked_pods_count() {
        let mut p: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "blue",
                "annotations": {"k8s.v1.cni.cncf.io/networks": "sec, other/x@net2"}},
            "spec": {"nodeName": "node1", "containers": []},
            "status": {"phase": "Running"},
        }))
        .unwrap();
        let view = pod_view(&p).unwrap();
        assert_eq!(view.node, "node1");
        assert_eq!(view.selections, ["blue/sec", "other/x"]);
        p.status.as_mut().unwrap().phase = Some("Succeeded".to_owned());
        assert!(pod_view(&p).is_none());
        p.status.as_mut().unwrap().phase = Some("Pending".to_owned());
        p.spec.as_mut().unwrap().host_network = Some(true);
        assert!(pod_view(&p).is_none());
        p.spec.as_mut().unwrap().host_network = None;
        p.spec.as_mut().unwrap().node_name = None;
        assert!(pod_view(&p).is_none());
    }
}
