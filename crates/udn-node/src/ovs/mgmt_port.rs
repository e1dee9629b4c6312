//! The management port (spec §5.4, dataplane §4.1): an OVS internal port on `br-int`,
//! `ovn-k8s-mp0` for the default network and `ovn-k8s-mp<network id>` for a UDN, bound to
//! the node's `k8s-<node>` logical switch port (network-scoped for a UDN).

use std::collections::BTreeMap;

use udn_api::annotations::MacAddress;
use udn_api::names::ovn_prefix;
use udn_ovsdb::protocol::Operation;

use super::error::OvsError;
use super::pod_port::{IFACE_ID, NETWORK};
use super::port::{PortWrite, delete_port_op, plan_port};
use super::state::OvsState;

/// The default network's management port.
pub const MGMT_PORT_DEFAULT: &str = "ovn-k8s-mp0";

/// `ovn-k8s-mp0` for the default network (`None`), `ovn-k8s-mp<id>` for network id `id`.
pub fn mgmt_port_name(network_id: Option<u32>) -> String {
    format!("ovn-k8s-mp{}", network_id.unwrap_or(0))
}

/// The management LSP: `k8s-<node>`, or `k8s-<prefix(network)><node>` for a UDN
/// (`k8s-ns1_blue_node1`).
pub fn mgmt_iface_id(node: &str, network: Option<&str>) -> String {
    match network {
        None => format!("k8s-{node}"),
        Some(network) => format!("k8s-{}{node}", ovn_prefix(network)),
    }
}

/// The pre-`ovn-k8s-mp0` port name upstream removes: `k8s-<node[:11]>`.
pub fn legacy_mgmt_port_name(node: &str) -> String {
    let short: String = node.chars().take(11).collect();
    format!("k8s-{short}")
}

/// A management port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MgmtPort {
    /// The bridge (`br-int`).
    pub bridge: String,
    /// The port and netdev name ([`mgmt_port_name`]).
    pub name: String,
    /// Its MAC (that of the host subnet's `.2`).
    pub mac: MacAddress,
    /// `mtu_request` (the network MTU).
    pub mtu: u32,
    /// The logical switch port ([`mgmt_iface_id`]).
    pub iface_id: String,
    /// The network, for a UDN (`k8s.ovn.org/network`).
    pub network: Option<String>,
    /// Older ports to remove in the same transaction (the default network's
    /// [`legacy_mgmt_port_name`]).
    pub remove_ports: Vec<String>,
}

/// Plans the port (empty: converged). Other `external_ids` keys are kept.
pub fn plan_mgmt_port(state: &OvsState, port: &MgmtPort) -> Result<Vec<Operation>, OvsError> {
    let mut ops: Vec<Operation> = port
        .remove_ports
        .iter()
        .filter(|name| **name != port.name)
        .filter_map(|name| delete_port_op(state, &port.bridge, name))
        .collect();
    let mut external_ids = BTreeMap::from([(IFACE_ID.to_owned(), port.iface_id.clone())]);
    if let Some(network) = &port.network {
        external_ids.insert(NETWORK.to_owned(), network.clone());
    }
    let mac = port.mac.to_string();
    ops.extend(plan_port(
        state,
        &PortWrite {
            bridge: &port.bridge,
            name: &port.name,
            iface_type: "internal",
            mac: Some(&mac),
            mtu_request: Some(i64::from(port.mtu)),
            external_ids: &external_ids,
            remove_external_ids: &[],
            port_other_config: &BTreeMap::new(),
        },
        0,
    )?);
    Ok(ops)
}
