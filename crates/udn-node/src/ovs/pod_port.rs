//! A pod's port on `br-int` as upstream's `ConfigureOVS` writes it: other ports bound to the
//! same `iface-id` are removed (an older sandbox of the pod), a host veth already bound to
//! another pod or NAD is refused, then the port and interface are added or updated with
//! `other_config:transient=true` and the CNI's `external_ids`, all in one transaction.

use std::collections::BTreeMap;

use ipnetwork::IpNetwork;
use udn_api::annotations::MacAddress;
use udn_api::names::{DEFAULT_NETWORK_NAME, ovn_prefix};
use udn_ovsdb::protocol::Operation;

use super::error::OvsError;
use super::port::{PortWrite, delete_port_op, plan_port};
use super::state::OvsState;

/// `external_ids` key: the logical switch port the interface binds to.
pub const IFACE_ID: &str = "iface-id";
/// `external_ids` key: the pod UID.
pub const IFACE_ID_VER: &str = "iface-id-ver";
/// `external_ids` key: the pod MAC.
pub const ATTACHED_MAC: &str = "attached_mac";
/// `external_ids` key: the CNI container (sandbox) id.
pub const SANDBOX: &str = "sandbox";
/// `external_ids` key: `CNI_IFNAME`.
pub const POD_IF_NAME: &str = "pod-if-name";
/// `external_ids` key: the pod's addresses, comma-separated CIDRs.
pub const IP_ADDRESSES: &str = "ip_addresses";
/// `external_ids` key: the network name (non-default networks only).
pub const NETWORK: &str = "k8s.ovn.org/network";
/// `external_ids` key: the NAD key (non-default networks only).
pub const NAD: &str = "k8s.ovn.org/nad";
/// `external_ids` key ovn-controller sets once the port's flows are in.
pub const OVN_INSTALLED: &str = "ovn-installed";
/// `other_config` key: delete the port on an OVS restart with `--delete-transient-ports`.
pub const TRANSIENT: &str = "transient";

/// The integration bridge.
pub const BR_INT: &str = "br-int";

/// The logical switch port of a pod's attachment: `<ns>_<pod>` for the default network,
/// upstream's network prefix of the NAD key before it otherwise
/// (`ns1/l3-net` -> `ns1.l3.net_<ns>_<pod>`).
pub fn pod_iface_id(namespace: &str, pod: &str, nad_key: Option<&str>) -> String {
    let base = format!("{namespace}_{pod}");
    match nad_key {
        None => base,
        Some(nad) => ovn_prefix(nad) + &base,
    }
}

/// The network of a non-default attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodPortNetwork {
    /// The network name (`k8s.ovn.org/network`).
    pub name: String,
    /// The NAD key (`k8s.ovn.org/nad`).
    pub nad_key: String,
}

/// One pod interface's port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodPort {
    /// The bridge ([`BR_INT`]).
    pub bridge: String,
    /// The host veth's name (the port and interface name).
    pub name: String,
    /// The logical switch port ([`pod_iface_id`]).
    pub iface_id: String,
    /// The pod UID.
    pub pod_uid: String,
    /// `CNI_CONTAINERID`.
    pub sandbox: String,
    /// `CNI_IFNAME` (empty: not recorded).
    pub pod_if_name: String,
    /// The pod MAC.
    pub mac: MacAddress,
    /// The pod addresses (none: `ip_addresses` not written, as for IPAM-less networks).
    pub ips: Vec<IpNetwork>,
    /// The network, for all but the default network.
    pub network: Option<PodPortNetwork>,
}

impl PodPort {
    /// The NAD key upstream compares (`default` for the default network).
    pub fn nad_key(&self) -> &str {
        self.network
            .as_ref()
            .map_or(DEFAULT_NETWORK_NAME, |network| network.nad_key.as_str())
    }

    /// The interface's `external_ids` as this port writes them.
    pub fn external_ids(&self) -> BTreeMap<String, String> {
        let mut ids = BTreeMap::from([
            (ATTACHED_MAC.to_owned(), self.mac.to_string()),
            (IFACE_ID.to_owned(), self.iface_id.clone()),
            (IFACE_ID_VER.to_owned(), self.pod_uid.clone()),
            (SANDBOX.to_owned(), self.sandbox.clone()),
        ]);
        if !self.pod_if_name.is_empty() {
            ids.insert(POD_IF_NAME.to_owned(), self.pod_if_name.clone());
        }
        if !self.ips.is_empty() {
            let joined: Vec<String> = self.ips.iter().map(IpNetwork::to_string).collect();
            ids.insert(IP_ADDRESSES.to_owned(), joined.join(","));
        }
        if let Some(network) = &self.network {
            ids.insert(NETWORK.to_owned(), network.name.clone());
            ids.insert(NAD.to_owned(), network.nad_key.clone());
        }
        ids
    }
}

/// The transaction for one pod port, and what it removes.
#[derive(Debug, Clone, PartialEq)]
pub struct PodPortPlan {
    /// The operations (empty when the port is already as wanted).
    pub ops: Vec<Operation>,
    /// Ports of older sandboxes bound to the same `iface-id`, removed by `ops`.
    pub stale_ports: Vec<String>,
}

/// Plans [`PodPort`] against `state` (upstream's `ConfigureOVS` up to the wait).
pub fn plan_pod_port(state: &OvsState, port: &PodPort) -> Result<PodPortPlan, OvsError> {
    if let Some((_, existing)) = state.interface(&port.name) {
        let existing_id = existing
            .external_ids
            .get(IFACE_ID)
            .cloned()
            .unwrap_or_default();
        if existing_id != port.iface_id {
            return Err(OvsError::IfaceIdMismatch {
                port: port.name.clone(),
                existing: existing_id,
                wanted: port.iface_id.clone(),
            });
        }
        let existing_nad = existing
            .external_ids
            .get(NAD)
            .filter(|nad| !nad.is_empty())
            .map_or(DEFAULT_NETWORK_NAME, String::as_str);
        if existing_nad != port.nad_key() {
            return Err(OvsError::NadMismatch {
                port: port.name.clone(),
                existing: existing_nad.to_owned(),
                wanted: port.nad_key().to_owned(),
            });
        }
    }
    let mut ops = Vec::new();
    let mut stale_ports = Vec::new();
    for (_, stale) in state.interfaces_with(IFACE_ID, &port.iface_id) {
        if stale.name == port.name {
            continue;
        }
        if let Some(op) = delete_port_op(state, &port.bridge, &stale.name) {
            ops.push(op);
            stale_ports.push(stale.name.clone());
        }
    }
    let external_ids = port.external_ids();
    let remove: &[&str] = if port.network.is_none() {
        &[NETWORK, NAD]
    } else {
        &[]
    };
    let other_config = BTreeMap::from([(TRANSIENT.to_owned(), "true".to_owned())]);
    ops.extend(plan_port(
        state,
        &PortWrite {
            bridge: &port.bridge,
            name: &port.name,
            iface_type: "",
            mac: None,
            mtu_request: None,
            external_ids: &external_ids,
            remove_external_ids: remove,
            port_other_config: &other_config,
        },
        0,
    )?);
    Ok(PodPortPlan { ops, stale_ports })
}

/// Go's `%v` of a `[]*net.IPNet`: `[10.244.1.5/24 fd00::5/64]` (upstream's wait errors).
pub fn go_ip_list(ips: &[IpNetwork]) -> String {
    let joined: Vec<String> = ips.iter().map(IpNetwork::to_string).collect();
    format!("[{}]", joined.join(" "))
}
