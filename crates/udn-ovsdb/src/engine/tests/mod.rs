//! Pure tests of the engine: plans against an in-memory database, applied to it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod apply;
mod memory;
mod plan;
mod props;
mod row_owner;
mod scopes;
mod skip;
mod synced;
mod units;
mod validation;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use memory::MemoryDb;

use super::{DesiredUnit, Engine, Plan, Scope, UnitKey};
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

/// The shared Layer3-like sample network (see [`crate::testing::sample_network`]).
pub(crate) use crate::testing::sample_network as network;

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
