//! A port with its one interface on a bridge: the plan that makes it exist with the given
//! columns (only what differs is written, so an unchanged port plans nothing), and the
//! deletion of a port by name. Ports and interfaces are not root rows: a port the bridge no
//! longer holds is deleted by the server, with its interfaces.

use std::collections::{BTreeMap, BTreeSet};

use udn_ovsdb::protocol::{Atom, Operation, Uuid, Value};
use udn_ovsdb::vswitch::{bridge, interface, port};

use super::error::OvsError;
use super::ops::{
    RowRef, insert, map_changes, map_merge, mutate, refs, row, set_delete, set_insert, string,
    string_map, update,
};
use super::state::OvsState;

/// What a port and its interface should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PortWrite<'a> {
    /// The bridge.
    pub(crate) bridge: &'a str,
    /// The port's and the interface's name.
    pub(crate) name: &'a str,
    /// The interface type (`""` for a system device such as a veth, `internal`).
    pub(crate) iface_type: &'a str,
    /// The interface `mac` column, when set.
    pub(crate) mac: Option<&'a str>,
    /// The interface `mtu_request`, when set.
    pub(crate) mtu_request: Option<i64>,
    /// `external_ids` pairs of the interface (other keys are kept).
    pub(crate) external_ids: &'a BTreeMap<String, String>,
    /// `external_ids` keys of the interface to remove.
    pub(crate) remove_external_ids: &'a [&'a str],
    /// `other_config` pairs of the port (other keys are kept).
    pub(crate) port_other_config: &'a BTreeMap<String, String>,
}

/// The operations that make `write` true, given `state` (empty: it already is). `tag`
/// makes the named UUIDs unique within one transaction.
pub(crate) fn plan_port(
    state: &OvsState,
    write: &PortWrite<'_>,
    tag: usize,
) -> Result<Vec<Operation>, OvsError> {
    let (bridge_uuid, bridge_row) =
        state
            .bridge(write.bridge)
            .ok_or_else(|| OvsError::BridgeNotFound {
                bridge: write.bridge.to_owned(),
            })?;
    let existing_port = state.port(write.name);
    if let Some((port_uuid, _)) = existing_port
        && let Some((_, holder)) = state.bridge_of_port(port_uuid)
        && holder.name != write.bridge
    {
        return Err(OvsError::PortOnOtherBridge {
            port: write.name.to_owned(),
            bridge: holder.name.clone(),
        });
    }
    let mut ops = Vec::new();
    let iface_ref = match state.interface(write.name) {
        Some((uuid, current)) => {
            ops.extend(update_interface(uuid, current, write));
            RowRef::Existing(uuid)
        }
        None => {
            let name = format!("iface{tag}");
            ops.push(insert(interface::TABLE, &name, new_interface(write)));
            RowRef::Named(name)
        }
    };
    let port_ref = match existing_port {
        Some((uuid, current)) => {
            ops.extend(update_port(uuid, current, &iface_ref, write));
            RowRef::Existing(uuid)
        }
        None => {
            let name = format!("port{tag}");
            let columns = row([
                (port::NAME, string(write.name)),
                (port::INTERFACES, refs(std::slice::from_ref(&iface_ref))),
                (port::OTHER_CONFIG, string_map(write.port_other_config)),
            ]);
            ops.push(insert(port::TABLE, &name, columns));
            RowRef::Named(name)
        }
    };
    let on_bridge = matches!(port_ref, RowRef::Existing(uuid) if bridge_row.ports.contains(&uuid));
    if !on_bridge {
        ops.push(mutate(
            bridge::TABLE,
            bridge_uuid,
            vec![set_insert(bridge::PORTS, &[port_ref])],
        ));
    }
    Ok(ops)
}

fn new_interface(write: &PortWrite<'_>) -> udn_ovsdb::protocol::Row {
    let mut columns = row([
        (interface::NAME, string(write.name)),
        (interface::EXTERNAL_IDS, string_map(write.external_ids)),
    ]);
    if !write.iface_type.is_empty() {
        columns.insert(interface::TYPE.to_owned(), string(write.iface_type));
    }
    if let Some(mac) = write.mac {
        columns.insert(interface::MAC.to_owned(), string(mac));
    }
    if let Some(mtu) = write.mtu_request {
        columns.insert(
            interface::MTU_REQUEST.to_owned(),
            Value::Atom(Atom::Integer(mtu)),
        );
    }
    columns
}

fn update_interface(
    uuid: Uuid,
    current: &udn_ovsdb::vswitch::Interface,
    write: &PortWrite<'_>,
) -> Vec<Operation> {
    let mut ops = Vec::new();
    let mut columns = udn_ovsdb::protocol::Row::new();
    if current.type_ != write.iface_type {
        columns.insert(interface::TYPE.to_owned(), string(write.iface_type));
    }
    if let Some(mac) = write.mac
        && current.mac.as_deref() != Some(mac)
    {
        columns.insert(interface::MAC.to_owned(), string(mac));
    }
    if let Some(mtu) = write.mtu_request
        && current.mtu_request != Some(mtu)
    {
        columns.insert(
            interface::MTU_REQUEST.to_owned(),
            Value::Atom(Atom::Integer(mtu)),
        );
    }
    if !columns.is_empty() {
        ops.push(update(interface::TABLE, uuid, columns));
    }
    let (set, remove) = map_changes(
        &current.external_ids,
        write.external_ids,
        write.remove_external_ids,
    );
    let mutations = map_merge(interface::EXTERNAL_IDS, &set, &remove);
    if !mutations.is_empty() {
        ops.push(mutate(interface::TABLE, uuid, mutations));
    }
    ops
}

fn update_port(
    uuid: Uuid,
    current: &udn_ovsdb::vswitch::Port,
    iface: &RowRef,
    write: &PortWrite<'_>,
) -> Vec<Operation> {
    let mut ops = Vec::new();
    let holds_only_it = matches!(iface, RowRef::Existing(i)
        if current.interfaces.len() == 1 && current.interfaces.contains(i));
    if !holds_only_it {
        let columns = row([(port::INTERFACES, refs(std::slice::from_ref(iface)))]);
        ops.push(update(port::TABLE, uuid, columns));
    }
    let (set, _) = map_changes(&current.other_config, write.port_other_config, &[]);
    let mutations = map_merge(port::OTHER_CONFIG, &set, &BTreeSet::new());
    if !mutations.is_empty() {
        ops.push(mutate(port::TABLE, uuid, mutations));
    }
    ops
}

/// The operation that takes port `name` off `bridge` (the server then deletes it and its
/// interfaces); `None` when there is no such port on that bridge (as upstream, a port on
/// another bridge is left alone).
pub(crate) fn delete_port_op(state: &OvsState, bridge: &str, name: &str) -> Option<Operation> {
    let (port_uuid, _) = state.port(name)?;
    let (bridge_uuid, holder) = state.bridge_of_port(port_uuid)?;
    (holder.name == bridge).then(|| {
        mutate(
            bridge::TABLE,
            bridge_uuid,
            vec![set_delete(bridge::PORTS, &[RowRef::Existing(port_uuid)])],
        )
    })
}
