//! The fields of a Pod the controller reads.

use k8s_openapi::api::core::v1::Pod;
use udn_api::annotations::{PodNetworks, parse_pod_networks};
use udn_api::names::{ANNOTATION_NETWORKS, ANNOTATION_OPEN_DEFAULT_PORTS, ANNOTATION_POD_NETWORKS};

/// A pod, reduced to what the zone needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodView {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// `spec.nodeName`; `None` while unscheduled.
    pub node: Option<String>,
    /// `spec.hostNetwork`: such pods get no attachments.
    pub host_network: bool,
    /// Phase `Succeeded` or `Failed`: the pod's addresses are released.
    pub completed: bool,
    /// `k8s.v1.cni.cncf.io/networks`.
    pub networks: Option<String>,
    /// `k8s.ovn.org/pod-networks`, parsed (the error's text when it does not parse).
    pub pod_networks: Result<PodNetworks, String>,
    /// `k8s.ovn.org/pod-networks` as written (to patch it).
    pub pod_networks_raw: Option<String>,
    /// `k8s.ovn.org/open-default-ports`, as written.
    pub open_default_ports: Option<String>,
    /// `metadata.resourceVersion` (the pod annotation patch is guarded by it).
    pub resource_version: Option<String>,
}

impl PodView {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Whether the pod can have network attachments (scheduled, not host-network, not done).
    pub fn is_networked(&self) -> bool {
        self.node.is_some() && !self.host_network && !self.completed
    }
}

/// Reads a pod.
pub fn pod_view(pod: &Pod) -> PodView {
    let annotations = pod.metadata.annotations.as_ref();
    let annotation = |key: &str| annotations.and_then(|a| a.get(key)).cloned();
    let raw = annotation(ANNOTATION_POD_NETWORKS);
    let pod_networks = match raw.as_deref() {
        None => Ok(PodNetworks::new()),
        Some(value) => parse_pod_networks(value).map_err(|e| e.to_string()),
    };
    let spec = pod.spec.as_ref();
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    PodView {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        node: spec
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty()),
        host_network: spec.and_then(|s| s.host_network).unwrap_or(false),
        completed: matches!(phase, Some("Succeeded" | "Failed")),
        networks: annotation(ANNOTATION_NETWORKS),
        pod_networks,
        pod_networks_raw: raw,
        open_default_ports: annotation(ANNOTATION_OPEN_DEFAULT_PORTS),
        resource_version: pod.metadata.resource_version.clone(),
    }
}
