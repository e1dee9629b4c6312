//! A pod's attachment to one network, from its `k8s.ovn.org/pod-networks` entry.

use ipnetwork::IpNetwork;
use udn_api::annotations::{MacAddress, OpenPort, PodNetworkRole};

/// One attachment of a pod to a network: what its logical switch port is built from. Only
/// attachments whose addresses are known (the pod's `k8s.ovn.org/pod-networks` has the entry)
/// become ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodAttachment {
    /// Pod namespace.
    pub namespace: String,
    /// Pod name.
    pub pod: String,
    /// Pod UID (`iface-id-ver`).
    pub uid: String,
    /// The node the pod runs on.
    pub node: String,
    /// The attachment's key in `k8s.ovn.org/pod-networks`: `default`, or the NAD key
    /// `namespace/name` of the network's NAD the pod attaches through.
    pub nad_key: String,
    /// Interface MAC.
    pub mac: MacAddress,
    /// Addresses with the subnet's prefix length (empty: no IPAM).
    pub ips: Vec<IpNetwork>,
    /// Logical port tunnel key (Layer2), from the annotation's `tunnel_id`.
    pub tunnel_id: Option<u32>,
    /// The network's role for the pod.
    pub role: PodNetworkRole,
    /// Default network only: the ports `k8s.ovn.org/open-default-ports` opens (a primary-UDN
    /// pod's default-network leg); empty when absent or unparsable.
    pub open_ports: Vec<OpenPort>,
}
