//! One pass's inputs, read from the watch caches: the networks (from NADs), the nodes (from
//! their annotations), the namespaces labelled for a primary UDN, the pods with the
//! attachments they ask for, and the Services with their EndpointSlices. Pure (a function of
//! the cached objects).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Namespace, Node as KubeNode, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use udn_api::annotations::{AnnotationError, parse_open_default_ports};
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::LABEL_PRIMARY_UDN_NAMESPACE;

use crate::model::{DEFAULT_NETWORK, Node, PodAttachment, Topology, ZoneConfig};
use crate::networks::{NetworkSet, network_set};
use crate::nodes::node_from_kube;
use crate::pods::{PodProblem, PodView, Wanted, pod_view, wanted_attachments};
use crate::services::{ServiceView, SliceView, service_view, slice_view};

/// A pod and what it asks for.
#[derive(Debug)]
pub struct PodEntry {
    /// The pod.
    pub view: PodView,
    /// Whether it runs on a local node.
    pub local: bool,
    /// Its attachments, or why they cannot be known now.
    pub wanted: Result<Vec<Wanted>, PodProblem>,
    /// Requested attachments left out, and why.
    pub problems: Vec<PodProblem>,
}

/// Everything one pass reads.
#[derive(Debug)]
pub struct Snapshot {
    /// Networks.
    pub networks: NetworkSet,
    /// Nodes, by name order.
    pub nodes: Vec<Node>,
    /// Nodes with unreadable annotations.
    pub node_errors: Vec<(String, AnnotationError)>,
    /// Namespaces labelled `k8s.ovn.org/primary-user-defined-network`.
    pub labelled: BTreeSet<String>,
    /// Networked pods (scheduled, not host-network, not completed), by key.
    pub pods: BTreeMap<String, PodEntry>,
    /// Services (with a name), by namespace and name.
    pub services: Vec<ServiceView>,
    /// EndpointSlices of Kubernetes' controller and of the mirror.
    pub slices: Vec<SliceView>,
}

/// Reads the caches.
pub fn snapshot<'a>(
    config: &ZoneConfig,
    nads: impl IntoIterator<Item = &'a NetworkAttachmentDefinition>,
    nodes: impl IntoIterator<Item = &'a KubeNode>,
    namespaces: impl IntoIterator<Item = &'a Namespace>,
    pods: impl IntoIterator<Item = &'a Pod>,
) -> Snapshot {
    let networks = network_set(nads, config);
    let mut node_list = Vec::new();
    let mut node_errors = Vec::new();
    for node in nodes {
        let (node, errors) = node_from_kube(node, &config.zone);
        node_errors.extend(errors.into_iter().map(|e| (node.name.clone(), e)));
        node_list.push(node);
    }
    node_list.sort_by(|a, b| a.name.cmp(&b.name));
    let local: BTreeSet<&str> = node_list
        .iter()
        .filter(|n| n.local)
        .map(|n| n.name.as_str())
        .collect();
    let labelled: BTreeSet<String> = namespaces
        .into_iter()
        .filter(|ns| {
            ns.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(LABEL_PRIMARY_UDN_NAMESPACE))
        })
        .filter_map(|ns| ns.metadata.name.clone())
        .collect();
    let mut pod_map = BTreeMap::new();
    for pod in pods {
        let view = pod_view(pod);
        if !view.is_networked() {
            continue;
        }
        let is_local = view.node.as_deref().is_some_and(|n| local.contains(n));
        let (wanted, problems) =
            match wanted_attachments(&view, &networks, &labelled, config.segmentation) {
                Ok((wanted, problems)) => (Ok(wanted), problems),
                Err(problem) => (Err(problem), Vec::new()),
            };
        pod_map.insert(
            view.key(),
            PodEntry {
                view,
                local: is_local,
                wanted,
                problems,
            },
        );
    }
    Snapshot {
        networks,
        nodes: node_list,
        node_errors,
        labelled,
        pods: pod_map,
        services: Vec::new(),
        slices: Vec::new(),
    }
}

/// Reads Services and EndpointSlices into `snap`.
pub fn add_services<'a>(
    snap: &mut Snapshot,
    services: impl IntoIterator<Item = &'a Service>,
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
) {
    snap.services = services.into_iter().filter_map(service_view).collect();
    snap.services
        .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    snap.slices = slices.into_iter().filter_map(slice_view).collect();
}

/// A pod whose `k8s.ovn.org/open-default-ports` does not parse (its open-port ACLs are
/// removed; a Warning Event says why).
#[derive(Debug)]
pub struct OpenPortsProblem {
    /// Pod key.
    pub pod: String,
    /// The parse error.
    pub error: AnnotationError,
}

/// The attachments with known addresses, per network: local pods' attachments of every
/// network, and remote pods' attachments of Layer2 networks (remote ports on the shared
/// switch). Also the pods whose open-ports annotation does not parse.
pub fn attachments_by_network(
    snapshot: &Snapshot,
) -> (BTreeMap<String, Vec<PodAttachment>>, Vec<OpenPortsProblem>) {
    let mut out: BTreeMap<String, Vec<PodAttachment>> = BTreeMap::new();
    let mut problems = Vec::new();
    for (key, entry) in &snapshot.pods {
        let (Ok(wanted), Ok(annotated)) = (&entry.wanted, &entry.view.pod_networks) else {
            continue;
        };
        let Some(node) = entry.view.node.as_deref() else {
            continue;
        };
        for want in wanted {
            let Some(network) = snapshot.networks.networks.get(&want.network) else {
                continue;
            };
            if !entry.local && network.topology() != Topology::Layer2 {
                continue;
            }
            let Some(annotation) = annotated.get(&want.nad_key) else {
                continue;
            };
            let mut open_ports = Vec::new();
            if want.network == DEFAULT_NETWORK
                && want.role == udn_api::annotations::PodNetworkRole::InfrastructureLocked
                && let Some(value) = entry.view.open_default_ports.as_deref()
            {
                match parse_open_default_ports(value) {
                    Ok(ports) => open_ports = ports,
                    Err(error) => problems.push(OpenPortsProblem {
                        pod: key.clone(),
                        error,
                    }),
                }
            }
            out.entry(want.network.clone())
                .or_default()
                .push(PodAttachment {
                    namespace: entry.view.namespace.clone(),
                    pod: entry.view.name.clone(),
                    uid: entry.view.uid.clone(),
                    node: node.to_owned(),
                    nad_key: want.nad_key.clone(),
                    mac: annotation.mac_address,
                    ips: annotation.ip_addresses.clone(),
                    tunnel_id: (annotation.tunnel_id != 0).then_some(annotation.tunnel_id),
                    role: want.role,
                    open_ports,
                });
        }
    }
    (out, problems)
}
