//! Binding of `type=remote` ports to their chassis. The zone's NB says which chassis a
//! remote port lives on (`options:requested-chassis`); ovn-northd copies that into
//! `Port_Binding.requested_chassis`, and newer ovn-northd (after OVN commit 170d3e5f19f0)
//! also sets `Port_Binding.chassis`, which is what ovn-controller tunnels to. OVN 23.03 does
//! not (measured: `chassis` stays empty), and upstream OVN-Kubernetes set it itself before
//! Oct 2024. So: detected per port, not configured: a remote port whose `chassis` is not its
//! requested chassis gets it set; where northd binds, there is nothing to do.

use std::collections::BTreeMap;

use udn_ovsdb::protocol::{Atom, Operation, Row, Uuid, Value};

use super::rows::{TableRows, by_uuid, map_get, string, uuids};

/// The updates binding every remote port to its requested chassis. Empty when bound.
pub fn remote_binding_ops(sb: &impl TableRows) -> Vec<Operation> {
    let chassis_by_name: BTreeMap<&str, Uuid> = sb
        .table_rows("Chassis")
        .into_iter()
        .filter_map(|(uuid, row)| Some((string(row, "name")?, uuid)))
        .collect();
    let mut ops = Vec::new();
    for (uuid, row) in sb.table_rows("Port_Binding") {
        if string(row, "type") != Some("remote") {
            continue;
        }
        let Some(wanted) = requested(row, &chassis_by_name) else {
            continue;
        };
        if uuids(row, "chassis").as_slice() == [wanted] {
            continue;
        }
        ops.push(Operation::Update {
            table: "Port_Binding".to_owned(),
            where_: vec![by_uuid(uuid)],
            row: Row::from([("chassis".to_owned(), Value::Set(vec![Atom::Uuid(wanted)]))]),
        });
    }
    ops
}

/// The requested chassis of a port binding: `requested_chassis` (set by northd), else the
/// chassis named by `options:requested-chassis` (older schemas).
fn requested(row: &Row, chassis_by_name: &BTreeMap<&str, Uuid>) -> Option<Uuid> {
    if let [uuid] = uuids(row, "requested_chassis").as_slice() {
        return Some(*uuid);
    }
    let name = map_get(row, "options", "requested-chassis")?;
    chassis_by_name.get(name).copied()
}
