//! CNI DEL and restart rebuild: finding a sandbox's ports by `external_ids:sandbox` and
//! removing them in one transaction, and listing every pod port the CNI made (the agent
//! rebuilds its state from OVS).

use std::collections::BTreeMap;

use udn_ovsdb::protocol::Operation;

use super::pod_port::{IFACE_ID, NAD, NETWORK, OVN_INSTALLED, POD_IF_NAME, SANDBOX};
use super::port::delete_port_op;
use super::state::OvsState;

/// Which of a sandbox's interfaces a DEL removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NadFilter {
    /// All of them (the default network's DEL with segmentation on: it also takes the
    /// primary UDN's `ovn-udn1`, which gets no DEL of its own).
    Any,
    /// Those of this NAD key (`k8s.ovn.org/nad`).
    Nad(String),
    /// Those without a NAD key (the default network's).
    DefaultNetwork,
}

impl NadFilter {
    fn admits(&self, external_ids: &BTreeMap<String, String>) -> bool {
        let nad = external_ids.get(NAD).filter(|nad| !nad.is_empty());
        match self {
            Self::Any => true,
            Self::Nad(key) => nad == Some(key),
            Self::DefaultNetwork => nad.is_none(),
        }
    }
}

/// The transaction removing a sandbox's ports, and their names (the host veths to delete).
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxPlan {
    /// The operations (empty: nothing to remove).
    pub ops: Vec<Operation>,
    /// The ports removed, by name, sorted.
    pub ports: Vec<String>,
}

/// Plans removing the ports on `bridge` whose interface has `external_ids:sandbox=<sandbox>`
/// and passes `filter`.
pub fn plan_delete_sandbox(
    state: &OvsState,
    bridge: &str,
    sandbox: &str,
    filter: &NadFilter,
) -> SandboxPlan {
    let mut names: Vec<String> = state
        .interfaces_with(SANDBOX, sandbox)
        .filter(|(_, interface)| filter.admits(&interface.external_ids))
        .map(|(_, interface)| interface.name.clone())
        .collect();
    names.sort();
    names.dedup();
    let mut plan = SandboxPlan {
        ops: Vec::new(),
        ports: Vec::new(),
    };
    for name in names {
        if let Some(op) = delete_port_op(state, bridge, &name) {
            plan.ops.push(op);
            plan.ports.push(name);
        }
    }
    plan
}

/// A pod port the CNI made, as OVS has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodPortRecord {
    /// The port (host veth) name.
    pub name: String,
    /// `iface-id`.
    pub iface_id: String,
    /// `sandbox`.
    pub sandbox: String,
    /// `pod-if-name`, when recorded.
    pub pod_if_name: Option<String>,
    /// `k8s.ovn.org/network` (none for the default network).
    pub network: Option<String>,
    /// `k8s.ovn.org/nad` (none for the default network).
    pub nad_key: Option<String>,
    /// Whether ovn-controller has installed its flows.
    pub ovn_installed: bool,
    /// Every `external_ids` pair.
    pub external_ids: BTreeMap<String, String>,
}

/// Every port on `bridge` whose interface carries `external_ids:sandbox` (the CNI's mark),
/// sorted by name.
pub fn list_pod_ports(state: &OvsState, bridge: &str) -> Vec<PodPortRecord> {
    let Some((_, bridge_row)) = state.bridge(bridge) else {
        return Vec::new();
    };
    let mut records: Vec<PodPortRecord> = bridge_row
        .ports
        .iter()
        .filter_map(|port| state.ports.get(port))
        .flat_map(|port| port.interfaces.iter())
        .filter_map(|interface| state.interfaces.get(interface))
        .filter_map(|interface| {
            let ids = &interface.external_ids;
            let get = |key: &str| ids.get(key).filter(|v| !v.is_empty()).cloned();
            Some(PodPortRecord {
                name: interface.name.clone(),
                iface_id: get(IFACE_ID).unwrap_or_default(),
                sandbox: get(SANDBOX)?,
                pod_if_name: get(POD_IF_NAME),
                network: get(NETWORK),
                nad_key: get(NAD),
                ovn_installed: ids.get(OVN_INSTALLED).map(String::as_str) == Some("true"),
                external_ids: ids.clone(),
            })
        })
        .collect();
    records.sort_by(|a, b| a.name.cmp(&b.name));
    records
}
