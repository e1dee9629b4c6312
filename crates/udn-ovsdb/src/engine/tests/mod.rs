//! Pure tests of the engine: plans against an in-memory database, applied to it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod apply;
mod memory;
mod plan;
mod props;
mod skip;
mod synced;
mod validation;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use memory::MemoryDb;

use super::{DesiredRow, DesiredUnit, Engine, Plan, RowRef, Scope, UnitKey};
use crate::protocol::{Atom, Operation, Row, Value};

pub(crate) const CONTROLLER: &str = "test-controller";

/// Runs a future whose awaits are all immediately ready (the memory transactor's).
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

pub(crate) fn engine() -> Engine {
    Engine::new(CONTROLLER)
}

pub(crate) fn key(name: &str) -> UnitKey {
    UnitKey::new("Network", name)
}

pub(crate) fn s(text: &str) -> Atom {
    Atom::String(text.to_owned())
}

/// A Layer3-like network: cluster router with one router port per node and a static route
/// and NAT, one switch per node with its router-type port and a management port, a port
/// group holding the management ports and two ACLs.
pub(crate) fn network(name: &str, nodes: usize) -> DesiredUnit {
    let ids = [
        ("k8s.ovn.org/network", name),
        ("k8s.ovn.org/topology", "layer3"),
    ];
    let router = format!("{name}_ovn_cluster_router");
    let mut unit = DesiredUnit::new(key(name));
    let mut router_ports = Vec::new();
    let mut mgmt_ports = Vec::new();
    for node in 0..nodes {
        let switch = format!("{name}_node{node}");
        let rtos = format!("rtos-{switch}");
        let stor = format!("stor-{switch}");
        let mgmt = format!("k8s-{switch}");
        unit = unit
            .row(
                DesiredRow::new("Logical_Router_Port", &rtos)
                    .string("name", &rtos)
                    .string("mac", &format!("0a:58:0a:80:{node:02x}:01"))
                    .strings("networks", [format!("10.128.{node}.1/24").as_str()])
                    .map("external_ids", ids),
            )
            .row(
                DesiredRow::new("Logical_Switch_Port", &stor)
                    .string("name", &stor)
                    .string("type", "router")
                    .strings("addresses", ["router"])
                    .map("options", [("router-port", rtos.as_str())])
                    .map("external_ids", ids),
            )
            .row(
                DesiredRow::new("Logical_Switch_Port", &mgmt)
                    .string("name", &mgmt)
                    .strings(
                        "addresses",
                        [format!("0a:58:0a:80:{node:02x}:02 10.128.{node}.2").as_str()],
                    )
                    .map("external_ids", ids),
            )
            .row(
                DesiredRow::new("Logical_Switch", &switch)
                    .string("name", &switch)
                    .map(
                        "other_config",
                        [("subnet", format!("10.128.{node}.0/24").as_str())],
                    )
                    .map("external_ids", ids)
                    .refs(
                        "ports",
                        [
                            RowRef::desired("Logical_Switch_Port", &stor),
                            RowRef::desired("Logical_Switch_Port", &mgmt),
                        ],
                    ),
            );
        router_ports.push(RowRef::desired("Logical_Router_Port", &rtos));
        mgmt_ports.push(RowRef::desired("Logical_Switch_Port", &mgmt));
    }
    let route = format!("{name}_route");
    let nat = format!("{name}_nat");
    let pg = format!("{name}_pg");
    let acls = [format!("{name}_acl_in"), format!("{name}_acl_out")];
    unit = unit
        .row(
            DesiredRow::new("Logical_Router_Static_Route", &route)
                .string("ip_prefix", "10.128.0.0/14")
                .string("nexthop", "100.64.0.2")
                .map("external_ids", ids),
        )
        .row(
            DesiredRow::new("NAT", &nat)
                .string("type", "snat")
                .string("logical_ip", "10.128.0.0/14")
                .string("external_ip", "172.18.0.2")
                .map("external_ids", ids),
        )
        .row(
            DesiredRow::new("Logical_Router", &router)
                .string("name", &router)
                .map(
                    "external_ids",
                    [("k8s.ovn.org/network", name), ("k8s-cluster-router", "yes")],
                )
                .refs("ports", router_ports)
                .refs(
                    "static_routes",
                    [RowRef::desired("Logical_Router_Static_Route", &route)],
                )
                .refs("nat", [RowRef::desired("NAT", &nat)]),
        );
    for (acl, direction) in acls.iter().zip(["to-lport", "from-lport"]) {
        unit = unit.row(
            DesiredRow::new("ACL", acl)
                .integer("priority", 1001)
                .string("direction", direction)
                .string("match", &format!("outport == @{pg}"))
                .string("action", "allow-related")
                .map("external_ids", [("direction", direction)]),
        );
    }
    unit.row(
        DesiredRow::new("Port_Group", &pg)
            .string("name", &pg)
            .refs("ports", mgmt_ports)
            .refs("acls", acls.iter().map(|a| RowRef::desired("ACL", a))),
    )
}

/// Plans `units` against `db` and applies the plan to it; returns the plan.
pub(crate) fn converge(db: &mut MemoryDb, units: Vec<DesiredUnit>, scope: &Scope) -> Plan {
    let plan = engine().plan(db, units, scope).unwrap();
    let ops: Vec<Operation> = plan.operations().map(|(_, op)| op.clone()).collect();
    if !ops.is_empty() {
        db.transact(ops).unwrap();
    }
    plan
}

/// The value of an `external_ids` key of a row.
pub(crate) fn external_id<'r>(row: &'r Row, key: &str) -> Option<&'r str> {
    match row.get("external_ids") {
        Some(Value::Map(pairs)) => pairs.iter().find_map(|(k, v)| match (k, v) {
            (Atom::String(k), Atom::String(v)) if k == key => Some(v.as_str()),
            _ => None,
        }),
        _ => None,
    }
}

/// The row of `table` whose `name` is `name`.
pub(crate) fn by_name<'d>(
    db: &'d MemoryDb,
    table: &str,
    name: &str,
) -> (crate::protocol::Uuid, &'d Row) {
    db.rows_of(table)
        .into_iter()
        .find(|(_, row)| row.get("name") == Some(&Value::Atom(s(name))))
        .map(|(u, r)| (*u, r))
        .unwrap_or_else(|| panic!("no {table} named {name}"))
}
