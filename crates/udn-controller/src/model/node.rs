//! A node as the zone sees it, from its annotations (written by cluster-manager and by the
//! node agent; see `docs/controller.md` for which annotation feeds which field).

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_api::annotations::MacAddress;

/// One node of the cluster. Fields are `None`/empty while the annotation that carries them
/// is missing (a node that just joined); the topology renders only what it can and the
/// controller reports what is missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Node name.
    pub name: String,
    /// Whether the node is in this controller's zone (its name is the zone, or an older
    /// upstream's `k8s.ovn.org/zone-name` says so). Local nodes get the full per-node
    /// topology; remote ones transit-switch ports, routes and a remote chassis.
    pub local: bool,
    /// `k8s.ovn.org/node-id` (cluster-manager): transit port tunnel keys, gateway-router
    /// join IPs.
    pub id: Option<u32>,
    /// `k8s.ovn.org/node-chassis-id` (node agent): the OVS `system-id`.
    pub chassis_id: Option<String>,
    /// `k8s.ovn.org/node-transit-switch-port-ifaddr` (cluster-manager): the node's port
    /// addresses on every network's transit switch, one per family.
    pub transit_ips: Vec<IpNetwork>,
    /// `k8s.ovn.org/node-subnets` (cluster-manager): host subnets per network name
    /// (`default` and each Layer3 network).
    pub subnets: BTreeMap<String, Vec<IpNetwork>>,
    /// `k8s.ovn.org/l3-gateway-config` `default` entry (node agent).
    pub gateway: Option<GatewayConfig>,
    /// `k8s.ovn.org/node-encap-ips` (node agent): geneve endpoints of a remote node.
    pub encap_ips: Vec<IpAddr>,
    /// `k8s.ovn.org/host-cidrs` (node agent): the node's own addresses.
    pub host_cidrs: Vec<IpNetwork>,
    /// `k8s.ovn.org/gateway-mtu-support` (absent = true): whether `gateway_mtu` is set on
    /// the node's router ports.
    pub gateway_mtu_support: bool,
    /// `k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids` (cluster-manager):
    /// per primary Layer2 network, the tunnel key of the node's gateway-router port on the
    /// network's switch.
    pub layer2_gateway_tunnel_ids: BTreeMap<String, u32>,
}

impl Node {
    /// A node with a name and nothing annotated yet.
    pub fn new(name: impl Into<String>, local: bool) -> Self {
        Self {
            name: name.into(),
            local,
            id: None,
            chassis_id: None,
            transit_ips: Vec::new(),
            subnets: BTreeMap::new(),
            gateway: None,
            encap_ips: Vec::new(),
            host_cidrs: Vec::new(),
            gateway_mtu_support: true,
            layer2_gateway_tunnel_ids: BTreeMap::new(),
        }
    }

    /// The node's host subnets of `network` (empty when not annotated).
    pub fn subnets_of(&self, network: &str) -> &[IpNetwork] {
        self.subnets.get(network).map_or(&[], Vec::as_slice)
    }
}

/// The node's gateway (upstream `L3GatewayConfig`, the `default` entry of
/// `k8s.ovn.org/l3-gateway-config`): every network's gateway router on the node uses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayConfig {
    /// `mode`.
    pub mode: GatewayConfigMode,
    /// `bridge-id`: the gateway bridge (`breth0`); the localnet port is
    /// `<bridge-id>_<prefix><node>`.
    pub bridge_id: String,
    /// `interface-id`: `<bridge-id>_<node>`, the default network's localnet port.
    pub interface_id: String,
    /// `mac-address`: the gateway bridge's MAC (the `rtoe-` ports' MAC).
    pub mac: MacAddress,
    /// `ip-addresses`: the bridge's addresses (the node IPs) with prefix lengths.
    pub ips: Vec<IpNetwork>,
    /// `next-hops`: the default gateway(s).
    pub next_hops: Vec<IpAddr>,
    /// `node-port-enable`.
    pub node_port_enable: bool,
    /// `vlan-id` (0: none): `tag_request` of the localnet port.
    pub vlan_id: u16,
}

/// `mode` of the gateway config.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GatewayConfigMode {
    /// Shared gateway.
    Shared,
    /// Local gateway.
    Local,
    /// No gateway on this node.
    Disabled,
}
