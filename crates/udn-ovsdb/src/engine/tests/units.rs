//! Units of several owner types, shaped like one network controller's: `Cluster` (a port
//! group), `Node` (a switch with a management port and its ACL, the ACL stamped with
//! upstream's `NetpolNode` owner type), `RemoteNode` and `Pod` (an address set each).

use std::collections::BTreeMap;

use super::memory::MemoryDb;
use super::{CONTROLLER, external_id};
use crate::engine::{DesiredRow, DesiredUnit, Engine, Plan, RowRef, Scope, UnitKey};
use crate::protocol::{Operation, Row};

/// The owner types the units here have.
pub(crate) const TYPES: [&str; 4] = ["Cluster", "Node", "RemoteNode", "Pod"];

/// The row owner type of a node's management-port ACL.
pub(crate) const NETPOL_NODE: &str = "NetpolNode";

/// Every unit of the owner types here.
pub(crate) fn all_types() -> Scope {
    Scope::OwnerTypes(TYPES.iter().map(|t| (*t).to_owned()).collect())
}

/// An engine that knows `NetpolNode` rows as rows of `Node` units.
pub(crate) fn node_engine() -> Engine {
    Engine::new(CONTROLLER).with_row_owner_type(NETPOL_NODE, "Node")
}

/// The cluster-wide unit: one port group.
pub(crate) fn cluster(net: &str) -> DesiredUnit {
    let pg = format!("{net}_cluster");
    DesiredUnit::new(UnitKey::new("Cluster", net))
        .row(DesiredRow::new("Port_Group", &pg).string("name", &pg))
}

/// The row id upstream gives a node's management-port ACL.
pub(crate) fn netpol_node_id(node: &str, ip: &str) -> String {
    format!("{CONTROLLER}:{NETPOL_NODE}:{node}:{ip}")
}

/// A node's switch with its management port and the ACL allowing the management IP `ip`
/// (stamped `NetpolNode` when `stamp_acl`, else the unit's `Node`).
pub(crate) fn node_with(node: &str, ip: &str, stamp_acl: bool) -> DesiredUnit {
    let port = format!("k8s-{node}");
    let acl = netpol_node_id(node, ip);
    let mut acl_row = DesiredRow::new("ACL", &acl)
        .integer("priority", 1001)
        .string("direction", "to-lport")
        .string("match", &format!("ip4.src=={ip}"))
        .string("action", "allow-related")
        .map("external_ids", [("k8s.ovn.org/name", node), ("ip", ip)]);
    if stamp_acl {
        acl_row = acl_row.owner_type(NETPOL_NODE);
    }
    DesiredUnit::new(UnitKey::new("Node", node))
        .row(DesiredRow::new("Logical_Switch_Port", &port).string("name", &port))
        .row(acl_row)
        .row(
            DesiredRow::new("Logical_Switch", node)
                .string("name", node)
                .refs("ports", [RowRef::desired("Logical_Switch_Port", &port)])
                .refs("acls", [RowRef::desired("ACL", &acl)]),
        )
}

/// A node with its `NetpolNode` ACL for the management IP `ip`.
pub(crate) fn node(node: &str, ip: &str) -> DesiredUnit {
    node_with(node, ip, true)
}

/// A unit of `owner_type` named `name` owning one address set.
pub(crate) fn address_set(owner_type: &str, name: &str) -> DesiredUnit {
    let id = format!("{owner_type}_{name}");
    DesiredUnit::new(UnitKey::new(owner_type, name))
        .row(DesiredRow::new("Address_Set", &id).string("name", &id))
}

/// One network's units: the cluster, nodes `a` and `b`, remote node `c`, pod `ns/x`.
pub(crate) fn network_units() -> Vec<DesiredUnit> {
    vec![
        cluster("net1"),
        node("a", "10.0.0.2"),
        node("b", "10.0.1.2"),
        address_set("RemoteNode", "c"),
        address_set("Pod", "ns/x"),
    ]
}

/// Plans `units` with `engine` and applies the plan to `db`.
pub(crate) fn converge_with(
    engine: &Engine,
    db: &mut MemoryDb,
    units: Vec<DesiredUnit>,
    scope: &Scope,
) -> Plan {
    let plan = engine.plan(db, units, scope).unwrap();
    let ops: Vec<Operation> = plan.operations().map(|(_, op)| op.clone()).collect();
    if !ops.is_empty() {
        db.transact(ops).unwrap();
    }
    plan
}

/// Our rows by table -> (row id, stamped owner type, owner name).
pub(crate) fn owned(db: &MemoryDb) -> BTreeMap<String, Vec<(String, String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String, String)>> = BTreeMap::new();
    for (table, rows) in &db.tables {
        for row in rows.values() {
            if external_id(row, "k8s.ovn.org/owner-controller") != Some(CONTROLLER) {
                continue;
            }
            let stamp = |key| external_id(row, key).unwrap_or_default().to_owned();
            out.entry(table.clone()).or_default().push((
                stamp("k8s.ovn.org/id"),
                stamp("k8s.ovn.org/owner-type"),
                stamp("k8s.ovn.org/owner"),
            ));
        }
    }
    for rows in out.values_mut() {
        rows.sort();
    }
    out
}

/// The row of `table` whose `k8s.ovn.org/id` is `id`.
pub(crate) fn by_id<'d>(db: &'d MemoryDb, table: &str, id: &str) -> Option<&'d Row> {
    db.rows_of(table)
        .into_iter()
        .find(|(_, row)| external_id(row, "k8s.ovn.org/id") == Some(id))
        .map(|(_, row)| row)
}
