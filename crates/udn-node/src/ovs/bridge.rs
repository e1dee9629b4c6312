//! Bridges: ensure one exists with its columns and ports. `br-int` is normally created by
//! ovn-controller (upstream relies on that); [`DesiredBridge::integration`] makes the same
//! bridge ovn-controller would (`fail_mode=secure`, `other_config:disable-in-band=true`), so
//! either may come first.

use std::collections::BTreeMap;

use udn_ovsdb::protocol::{Atom, Operation, Value};
use udn_ovsdb::vswitch::{bridge, interface, open_vswitch};

use super::error::OvsError;
use super::ops::{
    RowRef, insert, map_changes, map_merge, mutate, row, set_insert, string, string_map, update,
};
use super::pod_port::BR_INT;
use super::port::{PortWrite, plan_port};
use super::state::OvsState;

/// A port of a bridge besides its own internal one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgePort {
    /// Port and interface name (e.g. the uplink `eth0`).
    pub name: String,
    /// Interface type (`""` for a system device, `internal`, `patch`).
    pub iface_type: String,
    /// Port `other_config` pairs (e.g. `transient=true`).
    pub other_config: BTreeMap<String, String>,
    /// The interface's `mtu_request`, when set.
    pub mtu_request: Option<i64>,
}

/// A bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredBridge {
    /// Its name (also its internal port's).
    pub name: String,
    /// `datapath_type` (`system`, or `netdev` for the userspace datapath).
    pub datapath_type: String,
    /// `fail_mode`.
    pub fail_mode: Option<String>,
    /// `other_config` pairs (others kept).
    pub other_config: BTreeMap<String, String>,
    /// `external_ids` pairs (others kept).
    pub external_ids: BTreeMap<String, String>,
    /// Further ports.
    pub ports: Vec<BridgePort>,
    /// The `mtu_request` of the bridge's own (internal) interface, when set.
    pub mtu_request: Option<i64>,
}

impl DesiredBridge {
    /// `br-int` as ovn-controller creates it.
    pub fn integration(datapath_type: &str) -> Self {
        Self {
            name: BR_INT.to_owned(),
            datapath_type: datapath_type.to_owned(),
            fail_mode: Some("secure".to_owned()),
            other_config: BTreeMap::from([("disable-in-band".to_owned(), "true".to_owned())]),
            external_ids: BTreeMap::new(),
            ports: Vec::new(),
            mtu_request: None,
        }
    }

    /// The bridge's own port (an internal one of the same name).
    fn own_port(&self) -> BridgePort {
        BridgePort {
            name: self.name.clone(),
            iface_type: "internal".to_owned(),
            other_config: BTreeMap::new(),
            mtu_request: self.mtu_request,
        }
    }
}

/// Plans the bridge (empty: converged): a missing one is created with its internal port and
/// the `Open_vSwitch` row's reference; an existing one gets what differs; missing ports are
/// added (ports that exist are left as they are, but the internal interface's `mtu_request`).
pub fn plan_bridge(state: &OvsState, desired: &DesiredBridge) -> Result<Vec<Operation>, OvsError> {
    let Some((uuid, current)) = state.bridge(&desired.name) else {
        return create_bridge(state, desired);
    };
    let mut ops = Vec::new();
    let mut columns = udn_ovsdb::protocol::Row::new();
    if current.datapath_type != desired.datapath_type {
        columns.insert(
            bridge::DATAPATH_TYPE.to_owned(),
            string(&desired.datapath_type),
        );
    }
    if let Some(mode) = &desired.fail_mode
        && current.fail_mode.as_ref() != Some(mode)
    {
        columns.insert(bridge::FAIL_MODE.to_owned(), string(mode));
    }
    if !columns.is_empty() {
        ops.push(update(bridge::TABLE, uuid, columns));
    }
    let (config, _) = map_changes(&current.other_config, &desired.other_config, &[]);
    let (ids, _) = map_changes(&current.external_ids, &desired.external_ids, &[]);
    let mut mutations = map_merge(bridge::OTHER_CONFIG, &config, &Default::default());
    mutations.extend(map_merge(bridge::EXTERNAL_IDS, &ids, &Default::default()));
    if !mutations.is_empty() {
        ops.push(mutate(bridge::TABLE, uuid, mutations));
    }
    let own = desired.own_port();
    for (tag, port) in std::iter::once(&own).chain(&desired.ports).enumerate() {
        if state.port(&port.name).is_none() {
            ops.extend(plan_port(state, &port_write(&desired.name, port), tag)?);
        }
    }
    if let Some(mtu) = desired.mtu_request
        && state.port(&desired.name).is_some()
        && let Some((iface, current)) = state.interface(&desired.name)
        && current.mtu_request != Some(mtu)
    {
        let columns = row([(interface::MTU_REQUEST, Value::Atom(Atom::Integer(mtu)))]);
        ops.push(update(interface::TABLE, iface, columns));
    }
    Ok(ops)
}

fn port_write<'a>(bridge: &'a str, port: &'a BridgePort) -> PortWrite<'a> {
    static NO_IDS: BTreeMap<String, String> = BTreeMap::new();
    PortWrite {
        bridge,
        name: &port.name,
        iface_type: &port.iface_type,
        mac: None,
        mtu_request: port.mtu_request,
        external_ids: &NO_IDS,
        remove_external_ids: &[],
        port_other_config: &port.other_config,
    }
}

/// Inserts a new port with its one interface (named `port<tag>` / `iface<tag>`).
fn insert_port(ops: &mut Vec<Operation>, tag: usize, port: &BridgePort) -> RowRef {
    use udn_ovsdb::vswitch::port as port_table;
    let iface = format!("iface{tag}");
    let mut iface_row = row([(interface::NAME, string(&port.name))]);
    if !port.iface_type.is_empty() {
        iface_row.insert(interface::TYPE.to_owned(), string(&port.iface_type));
    }
    if let Some(mtu) = port.mtu_request {
        iface_row.insert(
            interface::MTU_REQUEST.to_owned(),
            Value::Atom(Atom::Integer(mtu)),
        );
    }
    ops.push(insert(interface::TABLE, &iface, iface_row));
    let name = format!("port{tag}");
    ops.push(insert(
        port_table::TABLE,
        &name,
        row([
            (port_table::NAME, string(&port.name)),
            (
                port_table::INTERFACES,
                super::ops::refs(&[RowRef::Named(iface)]),
            ),
            (port_table::OTHER_CONFIG, string_map(&port.other_config)),
        ]),
    ));
    RowRef::Named(name)
}

fn create_bridge(state: &OvsState, desired: &DesiredBridge) -> Result<Vec<Operation>, OvsError> {
    let root = state
        .open_vswitch
        .as_ref()
        .ok_or(OvsError::NoOpenVswitchRow)?;
    let root_uuid = root.uuid.ok_or(OvsError::NoOpenVswitchRow)?;
    let mut ops = Vec::new();
    let mut port_refs = Vec::new();
    let own = desired.own_port();
    for (tag, port) in std::iter::once(&own).chain(&desired.ports).enumerate() {
        port_refs.push(insert_port(&mut ops, tag, port));
    }
    let mut bridge_row = row([
        (bridge::NAME, string(&desired.name)),
        (bridge::DATAPATH_TYPE, string(&desired.datapath_type)),
        (bridge::OTHER_CONFIG, string_map(&desired.other_config)),
        (bridge::EXTERNAL_IDS, string_map(&desired.external_ids)),
        (bridge::PORTS, super::ops::refs(&port_refs)),
    ]);
    if let Some(mode) = &desired.fail_mode {
        bridge_row.insert(bridge::FAIL_MODE.to_owned(), string(mode));
    }
    ops.push(insert(bridge::TABLE, "bridge", bridge_row));
    ops.push(mutate(
        open_vswitch::TABLE,
        root_uuid,
        vec![set_insert(
            open_vswitch::BRIDGES,
            &[RowRef::Named("bridge".to_owned())],
        )],
    ));
    Ok(ops)
}
