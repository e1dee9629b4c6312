//! The EndpointSlices a Service should have, as upstream's reconciler computes them: per
//! address type of the Service, the selected pods' endpoints grouped by the ports they
//! resolve to (a named `targetPort` can resolve differently per pod), and the slice
//! metadata (generateName, labels, owner).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service, ServicePort};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::inputs::{Inputs, key};
use super::{CONTROLLER_NAME, LABEL_HEADLESS, LABEL_MANAGED_BY, LABEL_SERVICE_NAME};

/// An EndpointSlice's `addressType` (the deprecated `FQDN` is never written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AddressType {
    /// `IPv4`.
    IPv4,
    /// `IPv6`.
    IPv6,
}

impl AddressType {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IPv4 => "IPv4",
            Self::IPv6 => "IPv6",
        }
    }

    /// From the API's spelling (`None` for `FQDN` and anything else).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "IPv4" => Some(Self::IPv4),
            "IPv6" => Some(Self::IPv6),
            _ => None,
        }
    }

    fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(_) => Self::IPv4,
            IpAddr::V6(_) => Self::IPv6,
        }
    }
}

/// An endpoint's identity, as upstream's endpoint hash: its addresses (sorted), hostname and
/// pod. Endpoints with the same identity are the same endpoint, possibly with new conditions.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EndpointKey {
    /// The target pod's namespace and name.
    pub pod: (String, String),
    /// The addresses, sorted.
    pub addresses: Vec<String>,
    /// The hostname.
    pub hostname: String,
}

impl EndpointKey {
    /// The identity of `endpoint`.
    pub fn of(endpoint: &Endpoint) -> Self {
        let mut addresses = endpoint.addresses.clone();
        addresses.sort();
        let target = endpoint.target_ref.as_ref();
        Self {
            pod: (
                target.and_then(|t| t.namespace.clone()).unwrap_or_default(),
                target.and_then(|t| t.name.clone()).unwrap_or_default(),
            ),
            addresses,
            hostname: endpoint.hostname.clone().unwrap_or_default(),
        }
    }
}

/// The identity of a set of ports, whatever their order: (name, port, protocol, appProtocol).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct PortsKey(pub Vec<(String, i32, String, String)>);

impl PortsKey {
    /// The key of `ports` (an absent list is the empty one).
    pub fn of(ports: Option<&Vec<EndpointPort>>) -> Self {
        let mut key: Vec<_> = ports
            .into_iter()
            .flatten()
            .map(|p| {
                (
                    p.name.clone().unwrap_or_default(),
                    p.port.unwrap_or_default(),
                    p.protocol.clone().unwrap_or_default(),
                    p.app_protocol.clone().unwrap_or_default(),
                )
            })
            .collect();
        key.sort();
        Self(key)
    }
}

/// The endpoints of one (address type, ports) group: they go to slices of their own.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The ports, in the Service's order.
    pub ports: Vec<EndpointPort>,
    /// The endpoints (possibly none: the group still exists, as upstream's does).
    pub endpoints: BTreeMap<EndpointKey, Endpoint>,
}

/// What every slice of the Service carries.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceTemplate {
    /// The Service's namespace.
    pub namespace: String,
    /// `<service>-`.
    pub generate_name: String,
    /// The Service's labels without the reserved ones.
    pub service_labels: BTreeMap<String, String>,
    /// Whether the Service has no cluster IP (`service.kubernetes.io/headless`).
    pub headless: bool,
    /// The Service's name.
    pub service_name: String,
    /// The controller reference to the Service.
    pub owner: OwnerReference,
}

impl SliceTemplate {
    /// The slice labels: the Service's, the headless marker, the service name and manager.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.service_labels.clone();
        if self.headless {
            labels.insert(LABEL_HEADLESS.to_owned(), String::new());
        }
        labels.insert(LABEL_SERVICE_NAME.to_owned(), self.service_name.clone());
        labels.insert(LABEL_MANAGED_BY.to_owned(), CONTROLLER_NAME.to_owned());
        labels
    }
}

/// Whether a label is one the controller sets itself (the Service's own value is ignored).
pub fn is_reserved_label(label: &str) -> bool {
    label == LABEL_SERVICE_NAME || label == LABEL_MANAGED_BY || label == LABEL_HEADLESS
}

/// The desired state of one Service's slices.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    /// `namespace/name` of the Service.
    pub service: String,
    /// The Service's uid (slices owned by another uid are replaced).
    pub service_uid: String,
    /// The Service is being deleted: no new slices.
    pub deleting: bool,
    /// The address types the Service has slices of.
    pub address_types: BTreeSet<AddressType>,
    /// The groups by (address type, ports).
    pub groups: BTreeMap<(AddressType, PortsKey), Group>,
    /// The slices' metadata.
    pub template: SliceTemplate,
    /// Selected pods left out because their Node does not exist (the sync is retried).
    pub missing_nodes: Vec<String>,
}

/// The desired slices of `inputs.service`; `None` when this controller leaves the Service
/// alone: without a selector (its slices are written by someone else) or of type
/// `ExternalName`.
pub fn desired(inputs: &Inputs) -> Option<Desired> {
    let service = &inputs.service;
    let spec = service.spec.as_ref()?;
    spec.selector.as_ref()?;
    if spec.type_.as_deref() == Some("ExternalName") {
        return None;
    }
    let namespace = service.metadata.namespace.clone().unwrap_or_default();
    let name = service.metadata.name.clone().unwrap_or_default();
    let uid = service.metadata.uid.clone().unwrap_or_default();
    let address_types = address_types(service);
    let publish_not_ready = spec.publish_not_ready_addresses.unwrap_or(false);
    let mut groups: BTreeMap<(AddressType, PortsKey), Group> = BTreeMap::new();
    let mut missing_nodes = Vec::new();
    for pod in inputs.pods.iter().filter(|p| in_endpoints(p)) {
        let ports = endpoint_ports(service, pod);
        let ports_key = PortsKey::of(Some(&ports));
        for address_type in &address_types {
            groups
                .entry((*address_type, ports_key.clone()))
                .or_insert_with(|| Group {
                    ports: ports.clone(),
                    endpoints: BTreeMap::new(),
                });
        }
        let node_name = pod_node(pod);
        let zone = match inputs.nodes.get(node_name) {
            Some(zone) => zone.clone(),
            None if publish_not_ready => None,
            None => {
                missing_nodes.push(pod.metadata.name.clone().unwrap_or_default());
                continue;
            }
        };
        for address_type in &address_types {
            let endpoint = endpoint(pod, zone.as_deref(), service, *address_type);
            if endpoint.addresses.is_empty() {
                continue;
            }
            if let Some(group) = groups.get_mut(&(*address_type, ports_key.clone())) {
                group.endpoints.insert(EndpointKey::of(&endpoint), endpoint);
            }
        }
    }
    let cluster_ip = spec.cluster_ip.as_deref().unwrap_or_default();
    Some(Desired {
        service: key(&namespace, &name),
        service_uid: uid.clone(),
        deleting: service.metadata.deletion_timestamp.is_some(),
        address_types,
        groups,
        template: SliceTemplate {
            generate_name: format!("{name}-"),
            namespace,
            service_labels: service
                .metadata
                .labels
                .iter()
                .flatten()
                .filter(|(k, _)| !is_reserved_label(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            headless: cluster_ip.is_empty() || cluster_ip == "None",
            service_name: name.clone(),
            owner: OwnerReference {
                api_version: "v1".to_owned(),
                kind: "Service".to_owned(),
                name,
                uid,
                controller: Some(true),
                block_owner_deletion: Some(true),
            },
        },
        missing_nodes,
    })
}

fn pod_node(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or_default()
}

/// The address types of a Service: its `ipFamilies`; without them (an old API server), the
/// family of its cluster IP, or both for a headless Service.
pub fn address_types(service: &Service) -> BTreeSet<AddressType> {
    let spec = service.spec.as_ref();
    let families: BTreeSet<AddressType> = spec
        .and_then(|s| s.ip_families.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|f| AddressType::parse(f))
        .collect();
    if !families.is_empty() {
        return families;
    }
    let cluster_ip = spec
        .and_then(|s| s.cluster_ip.as_deref())
        .unwrap_or_default();
    if !cluster_ip.is_empty() && cluster_ip != "None" {
        let family = match cluster_ip.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => AddressType::IPv6,
            _ => AddressType::IPv4,
        };
        return BTreeSet::from([family]);
    }
    BTreeSet::from([AddressType::IPv4, AddressType::IPv6])
}

/// `ShouldPodBeInEndpoints(pod, includeTerminating=true)`: not Succeeded or Failed, and with
/// an IP.
fn in_endpoints(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or_default();
    if phase == "Succeeded" || phase == "Failed" {
        return false;
    }
    status
        .and_then(|s| s.pod_ip.as_deref())
        .is_some_and(|ip| !ip.is_empty())
        || status
            .and_then(|s| s.pod_ips.as_ref())
            .is_some_and(|ips| !ips.is_empty())
}

/// Whether the pod's Ready condition is True.
fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// `podToEndpoint`: the pod's addresses of `address_type` and its conditions.
fn endpoint(
    pod: &Pod,
    zone: Option<&str>,
    service: &Service,
    address_type: AddressType,
) -> Endpoint {
    let spec = service.spec.as_ref();
    let serving = pod_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    // "ready" is never true for a terminating pod unless publishNotReadyAddresses is set.
    let ready = spec
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false)
        || (serving && !terminating);
    let addresses = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ips.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|ip| ip.ip.parse::<IpAddr>().ok())
        .filter(|ip| AddressType::of(*ip) == address_type)
        .map(|ip| ip.to_string())
        .collect();
    let pod_spec = pod.spec.as_ref();
    let node_name = pod_node(pod);
    let hostname = pod_spec
        .and_then(|s| s.hostname.as_deref())
        .filter(|h| !h.is_empty());
    let sets_hostname = hostname.is_some()
        && pod_spec.and_then(|s| s.subdomain.as_deref()) == service.metadata.name.as_deref()
        && pod.metadata.namespace == service.metadata.namespace;
    Endpoint {
        addresses,
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        hostname: hostname.filter(|_| sets_hostname).map(str::to_owned),
        node_name: (!node_name.is_empty()).then(|| node_name.to_owned()),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".to_owned()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectReference::default()
        }),
        zone: zone.map(str::to_owned),
        ..Endpoint::default()
    }
}

/// `getEndpointPorts`: each Service port resolved against the pod; a port that does not
/// resolve is left out for this pod. A headless Service may have no ports.
fn endpoint_ports(service: &Service, pod: &Pod) -> Vec<EndpointPort> {
    let spec = service.spec.as_ref();
    spec.and_then(|s| s.ports.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|port| {
            let protocol = port.protocol.clone().unwrap_or_else(|| "TCP".to_owned());
            let number = find_port(pod, port, &protocol)?;
            Some(EndpointPort {
                name: Some(port.name.clone().unwrap_or_default()),
                port: Some(number),
                protocol: Some(protocol),
                app_protocol: port.app_protocol.clone(),
            })
        })
        .collect()
}

/// `FindPort`: a numeric `targetPort` as is (absent: the port, as the API server defaults
/// it); a name looked up in the containers' ports of the same protocol, then in those of
/// sidecars (init containers with `restartPolicy: Always`).
fn find_port(pod: &Pod, port: &ServicePort, protocol: &str) -> Option<i32> {
    let name = match &port.target_port {
        None => return Some(port.port),
        Some(IntOrString::Int(number)) => return Some(*number),
        Some(IntOrString::String(name)) => name,
    };
    let spec = pod.spec.as_ref()?;
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    spec.containers
        .iter()
        .chain(sidecars)
        .flat_map(|c| c.ports.iter().flatten())
        .find(|p| {
            p.name.as_deref() == Some(name.as_str())
                && p.protocol.as_deref().unwrap_or("TCP") == protocol
        })
        .map(|p| p.container_port)
}

#[cfg(test)]
#[path = "desired_tests.rs"]
mod tests;
