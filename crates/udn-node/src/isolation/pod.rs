//! A pod's inputs to host isolation, and the set elements it wants.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Pod;
use udn_api::annotations::{
    AnnotationError, OpenPort, PodNetworkRole, parse_open_default_ports, parse_pod_networks,
};
use udn_api::names::{ANNOTATION_OPEN_DEFAULT_PORTS, ANNOTATION_POD_NETWORKS};

use super::names::{IpFamily, SetId, SetKind};

/// The `k8s.ovn.org/pod-networks` key of the default network.
const DEFAULT_NETWORK_KEY: &str = "default";

/// A pod, by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodKey {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl PodKey {
    /// `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for PodKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What host isolation needs to know about a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodIsolationInput {
    /// The pod.
    pub key: PodKey,
    /// `spec.hostNetwork` (such pods cannot be isolated by address).
    pub host_network: bool,
    /// Whether its `default` `k8s.ovn.org/pod-networks` entry has the role
    /// `infrastructure-locked`, that is its primary network is a UDN.
    pub infrastructure_locked: bool,
    /// Its default-network IPs.
    pub default_network_ips: Vec<IpAddr>,
    /// `k8s.ovn.org/open-default-ports`.
    pub open_ports: Vec<OpenPort>,
}

/// The input read from a Pod object, and the annotations that could not be parsed.
#[derive(Debug)]
pub struct PodInputs {
    /// The input (an unparsable pod-networks annotation counts as not set, so the pod is
    /// left as it is; unparsable open ports count as none).
    pub input: PodIsolationInput,
    /// What could not be parsed, to log or report.
    pub problems: Vec<AnnotationError>,
}

impl PodIsolationInput {
    /// Reads a Pod as upstream does: default-network IPs from `status.podIPs`, else the
    /// `default` pod-networks entry, else `status.podIP`.
    pub fn from_pod(pod: &Pod) -> PodInputs {
        let metadata = &pod.metadata;
        let key = PodKey::new(
            metadata.namespace.clone().unwrap_or_default(),
            metadata.name.clone().unwrap_or_default(),
        );
        let annotation = |name: &str| metadata.annotations.as_ref()?.get(name);
        let mut problems = Vec::new();
        let default_entry = annotation(ANNOTATION_POD_NETWORKS)
            .and_then(|value| {
                parse_pod_networks(value)
                    .map_err(|error| problems.push(error))
                    .ok()
            })
            .and_then(|mut networks| networks.remove(DEFAULT_NETWORK_KEY));
        let open_ports = annotation(ANNOTATION_OPEN_DEFAULT_PORTS)
            .map(|value| {
                parse_open_default_ports(value).unwrap_or_else(|error| {
                    problems.push(error);
                    Vec::new()
                })
            })
            .unwrap_or_default();
        let status = pod.status.as_ref();
        let mut ips: Vec<IpAddr> = status
            .and_then(|s| s.pod_ips.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|pod_ip| pod_ip.ip.parse().ok())
            .collect();
        if ips.is_empty() {
            ips = default_entry
                .iter()
                .flat_map(|entry| entry.ip_addresses.iter().map(|net| net.ip()))
                .collect();
        }
        if ips.is_empty() {
            ips.extend(
                status
                    .and_then(|s| s.pod_ip.as_ref())
                    .and_then(|ip| ip.parse::<IpAddr>().ok()),
            );
        }
        let input = PodIsolationInput {
            key,
            host_network: pod
                .spec
                .as_ref()
                .and_then(|spec| spec.host_network)
                .unwrap_or(false),
            infrastructure_locked: default_entry
                .is_some_and(|entry| entry.role == Some(PodNetworkRole::InfrastructureLocked)),
            default_network_ips: ips,
            open_ports,
        };
        PodInputs { input, problems }
    }
}

/// What an element of one of the six sets holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ElementKey {
    /// An address.
    Address(IpAddr),
    /// `address . protocol . port` (the port is never [`OpenPort::Icmp`]).
    Port(IpAddr, OpenPort),
}

impl ElementKey {
    /// The nft key parts (`["10.0.0.5", "tcp", "80"]`).
    pub fn parts(&self) -> Vec<String> {
        match self {
            Self::Address(ip) => vec![ip.to_string()],
            Self::Port(ip, port) => vec![
                ip.to_string(),
                port.protocol().to_owned(),
                port.port().map(|p| p.get()).unwrap_or(0).to_string(),
            ],
        }
    }
}

/// One element of one of the six sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IsolationElement {
    /// The set.
    pub set: SetId,
    /// The element.
    pub key: ElementKey,
}

impl fmt::Display for IsolationElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {{ {} }}",
            self.set.name(),
            self.key.parts().join(" . ")
        )
    }
}

/// The elements a pod wants, or `None` when host isolation leaves the pod alone: a
/// host-network pod, a pod whose primary network is not a UDN (or whose pod-networks
/// annotation is not written yet), or a pod with no default-network IP yet (an update is
/// expected to follow). `Some` of an empty set never happens.
pub fn desired_pod_elements(pod: &PodIsolationInput) -> Option<BTreeSet<IsolationElement>> {
    if pod.host_network || !pod.infrastructure_locked || pod.default_network_ips.is_empty() {
        return None;
    }
    let mut elements = BTreeSet::new();
    for ip in &pod.default_network_ips {
        let family = IpFamily::of(ip);
        let element = |kind, key| IsolationElement {
            set: SetId::new(kind, family),
            key,
        };
        elements.insert(element(SetKind::PodIps, ElementKey::Address(*ip)));
        for port in &pod.open_ports {
            elements.insert(match port {
                OpenPort::Icmp => element(SetKind::OpenIcmp, ElementKey::Address(*ip)),
                _ => element(SetKind::OpenPorts, ElementKey::Port(*ip, *port)),
            });
        }
    }
    Some(elements)
}
