//! A management port as the node agent creates it (spec §5.4): an OVS internal port on
//! `br-int` in the node netns, bound to the node's `k8s-<node>` logical switch port.

use ipnetwork::IpNetwork;

use crate::error::LabError;
use crate::netns::ip;
use crate::node::Node;
use crate::node_start::{external_id, quoted};
use crate::pod::Route;

/// The default network's management port name.
pub const MGMT_PORT_NAME: &str = "ovn-k8s-mp0";

/// A management port to create with [`Node::add_mgmt_port`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MgmtPortSpec {
    /// The port and netdev name (`ovn-k8s-mp0`; UDNs use `ovn-k8s-mp<network id>`).
    pub name: String,
    /// The logical switch port (`k8s-<node>`, or the network-scoped name for a UDN).
    pub iface_id: String,
    /// The MAC (the `.2` of the host subnet, `0a:58:...`).
    pub mac: String,
    /// Addresses with the host subnet's prefix (`10.244.1.2/24`).
    pub ips: Vec<IpNetwork>,
    /// `mtu_request` (1400 is upstream's default MTU).
    pub mtu: u32,
    /// Routes via the port (cluster CIDRs via the `.1`).
    pub routes: Vec<Route>,
}

impl MgmtPortSpec {
    /// `ovn-k8s-mp0` bound to `k8s-<node>` with `mac`, no addresses, MTU 1400.
    pub fn new(node: &str, mac: &str) -> Self {
        Self {
            name: MGMT_PORT_NAME.to_owned(),
            iface_id: format!("k8s-{node}"),
            mac: mac.to_owned(),
            ips: Vec::new(),
            mtu: 1400,
            routes: Vec::new(),
        }
    }

    /// Adds an address.
    pub fn ip(mut self, ip: IpNetwork) -> Self {
        self.ips.push(ip);
        self
    }

    /// Adds a route.
    pub fn route(mut self, dest: IpNetwork, via: std::net::IpAddr) -> Self {
        self.routes.push(Route::new(dest, via));
        self
    }
}

impl Node {
    /// Creates the management port: the OVS internal port (ovs-vsctl returns once
    /// ovs-vswitchd has made its tap device in the node netns), then its addresses and routes.
    pub fn add_mgmt_port(&self, spec: &MgmtPortSpec) -> Result<(), LabError> {
        let step = format!("add management port {} on {}", spec.name, self.name());
        let step = step.as_str();
        let name = spec.name.as_str();
        self.vsctl(&[
            "--",
            "--may-exist",
            "add-port",
            "br-int",
            name,
            "--",
            "set",
            "Interface",
            name,
            "type=internal",
            &format!("mac={}", quoted(&spec.mac)),
            &format!("mtu_request={}", spec.mtu),
            &external_id("iface-id", &spec.iface_id),
        ])?;
        let netns = self.netns();
        ip(netns).args(["link", "set", name, "up"]).run(step)?;
        for address in &spec.ips {
            ip(netns)
                .args(["addr", "replace", &address.to_string(), "dev", name])
                .run(step)?;
        }
        for route in &spec.routes {
            ip(netns)
                .args(["route", "replace", &route.dest.to_string()])
                .args(["via", &route.via.to_string(), "dev", name])
                .run(step)?;
        }
        Ok(())
    }
}
