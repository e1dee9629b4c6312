//! What the gateway bridge's flows are computed from, as plain data the agent gathers: the
//! bridge (name, MAC, OpenFlow ports), the node's addresses, the cluster's service and
//! masquerade subnets, and the primary UDNs present on the node.

use std::fmt;
use std::net::IpAddr;

use ipnetwork::{IpNetwork, Ipv4Network, Ipv6Network};
use udn_api::annotations::MacAddress;
use udn_api::cluster::{ClusterConfig, GatewayMode};
use udn_ipam::NetworkId;

use crate::services::ServiceView;

/// Upstream's default `--conntrack-zone`: the zone of pod and host egress on the bridge.
/// The host masquerade zone is this + 1, the OVN masquerade zone + 2, the IP fragment
/// reassembly zone + 4 (`config.Default.*ConntrackZone`).
pub const DEFAULT_CONNTRACK_ZONE: u16 = 64000;

/// Upstream's default `--encap-port` (geneve).
pub const DEFAULT_ENCAP_PORT: u16 = 6081;

/// An OpenFlow port of the bridge as flows name it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OfPort {
    /// The bridge's own internal port (`LOCAL`), i.e. the host.
    Local,
    /// A port number (OVSDB `Interface.ofport`), how the agent names ports.
    Number(u32),
    /// A port name; ovs-ofctl resolves it through the switch. Upstream's unit tests use
    /// names, so exact-string tests against them can too.
    Name(String),
}

impl fmt::Display for OfPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local => f.write_str("LOCAL"),
            Self::Number(number) => write!(f, "{number}"),
            Self::Name(name) => f.write_str(name),
        }
    }
}

/// The cluster-wide settings the flows depend on (identical on every node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayCluster {
    /// Gateway mode; only [`GatewayMode::Shared`] is rendered.
    pub mode: GatewayMode,
    /// IPv4 enabled (upstream `config.IPv4Mode`).
    pub ipv4: bool,
    /// IPv6 enabled (upstream `config.IPv6Mode`).
    pub ipv6: bool,
    /// Service CIDRs, in configuration order.
    pub service_cidrs: Vec<IpNetwork>,
    /// Masquerade subnet, IPv4 (`--gateway-v4-masquerade-subnet`).
    pub masquerade_subnet_v4: Ipv4Network,
    /// Masquerade subnet, IPv6.
    pub masquerade_subnet_v6: Ipv6Network,
    /// Network segmentation (UDNs) enabled: adds the UDN service flows and the ARP fan-out
    /// filter (upstream `IsNetworkSegmentationSupportEnabled`).
    pub network_segmentation: bool,
    /// `--conntrack-zone`.
    pub conntrack_zone: u16,
    /// `--encap-port`.
    pub encap_port: u16,
    /// `--gateway-vlanid` (`None`: untagged).
    pub vlan_id: Option<u16>,
    /// `--udn-allowed-default-services` (`namespace/name`): default-network Services whose
    /// cluster IPs the host sends to the default network even from a UDN's side (table 2,
    /// priority 300), so UDN pods reach e.g. kube-dns.
    pub udn_allowed_default_services: Vec<String>,
}

impl GatewayCluster {
    /// The settings of `cluster` with upstream's defaults for the rest (zone 64000, geneve
    /// port 6081, no VLAN, network segmentation on).
    pub fn from_cluster(cluster: &ClusterConfig) -> Self {
        Self {
            mode: cluster.gateway_mode,
            ipv4: cluster.ipv4_enabled(),
            ipv6: cluster.ipv6_enabled(),
            service_cidrs: cluster.service_cidrs.clone(),
            masquerade_subnet_v4: cluster.masquerade_subnet_v4,
            masquerade_subnet_v6: cluster.masquerade_subnet_v6,
            network_segmentation: true,
            conntrack_zone: DEFAULT_CONNTRACK_ZONE,
            encap_port: DEFAULT_ENCAP_PORT,
            vlan_id: None,
            udn_allowed_default_services: cluster.udn_allowed_default_services.clone(),
        }
    }

    /// Whether `namespace/name` is listed in `--udn-allowed-default-services` (upstream
    /// `IsUDNEnabledService`).
    pub fn is_udn_enabled_service(&self, namespace: &str, name: &str) -> bool {
        self.udn_allowed_default_services.iter().any(|entry| {
            entry
                .split_once('/')
                .is_some_and(|(ns, n)| ns == namespace && n == name)
        })
    }
}

/// A primary UDN on this node's gateway bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdnPatch {
    /// The network's name (`blue_net`, `cluster_udn_green`), for logs and errors.
    pub network: String,
    /// Its network ID: gives the conntrack mark (3 + ID), the packet mark (0x1000 + ID) and
    /// the masquerade addresses.
    pub network_id: NetworkId,
    /// The ofport of its patch port `patch-<bridge>_<prefix><node>-to-br-int`, once
    /// ovn-controller has made it. Without it the network has no flows yet (upstream renders
    /// only patched networks) but already has its neighbour entries.
    pub ofport: Option<OfPort>,
}

/// Everything the bridge's flows and neighbour entries are computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeInputs {
    /// The bridge, e.g. `breth0`.
    pub bridge: String,
    /// Its MAC (that of the uplink NIC it took over).
    pub mac: MacAddress,
    /// The uplink's ofport (`None`: a bridge without uplink; most flows then go).
    pub ofport_phys: Option<OfPort>,
    /// The host's ofport: [`OfPort::Local`] unless a representor stands for the host.
    pub ofport_host: OfPort,
    /// The default network's patch port (`patch-<bridge>_<node>-to-br-int`).
    pub default_patch: OfPort,
    /// The bridge's IPs with prefix, the first of each family being the node IP (upstream
    /// keeps one per family).
    pub bridge_ips: Vec<IpNetwork>,
    /// The node's host addresses with prefix (the `k8s.ovn.org/host-cidrs` set: global
    /// unicast addresses on any host interface but management ports).
    pub host_addresses: Vec<IpNetwork>,
    /// The primary UDNs present on the node.
    pub udns: Vec<UdnPatch>,
    /// Every port of the bridge as `ovs-ofctl show` lists them (numbers ascending, `LOCAL`
    /// last): the ARP/NS bypass of an external IP goes to all of them but the uplink and the
    /// Service's patch port. Empty: unknown (the bypass then goes to `LOCAL` only, as
    /// upstream's fallback).
    pub bridge_ports: Vec<OfPort>,
    /// The Services of the cluster (sorted by namespace and name): NodePorts, external IPs
    /// and load balancer ingress IPs of those whose network is on the bridge get their flows.
    pub services: Vec<ServiceView>,
    /// Cluster-wide settings.
    pub cluster: GatewayCluster,
}

impl BridgeInputs {
    /// The node IP of a family: the first bridge IP of that family.
    pub fn node_ip(&self, v6: bool) -> Option<IpAddr> {
        self.bridge_ips
            .iter()
            .find(|ip| ip.is_ipv6() == v6)
            .map(IpNetwork::ip)
    }
}

/// The name ovn-controller gives a network's patch port on `bridge`: `patch-<bridge>_<prefix>
/// <node>-to-br-int`, with `prefix` empty for the default network and
/// [`ovn_prefix`](udn_api::names::ovn_prefix) for a UDN (upstream `GetPatchPortName` of the
/// network-scoped localnet port name).
pub fn patch_port_name(bridge: &str, prefix: &str, node: &str) -> String {
    format!("patch-{bridge}_{prefix}{node}-to-br-int")
}
