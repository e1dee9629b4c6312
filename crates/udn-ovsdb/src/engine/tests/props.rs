//! Property: whatever the sequence of desired states, one apply converges (the next plan
//! is empty), the owned rows are exactly the desired ones, and foreign rows survive; also
//! with changes made behind the engine's back between reconciles, which never let a
//! drifted unit be skipped. Networks' ACLs come and go stamped with a row owner type or
//! with the unit's.

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::memory::{MemoryDb, Shared};
use super::synced::Synced;
use super::{CONTROLLER, block_on, external_id, network, s};
use crate::engine::{ApplyPolicy, DesiredUnit, Engine, Scope};
use crate::protocol::{
    Atom, Condition, ConditionFunction, Mutation, Mutator, Operation, Row, Value,
};

/// The row owner type networks' ACLs may carry.
const NETWORK_ACL: &str = "NetworkACL";

/// An engine knowing `NetworkACL` rows as rows of `Network` units.
fn engine() -> Engine {
    Engine::new(CONTROLLER).with_row_owner_type(NETWORK_ACL, "Network")
}

/// One network's state: (nodes, drop port group, subnet variant, ACLs stamped `NetworkACL`).
type NetworkState = (usize, bool, u8, bool);

/// A desired state: per network (of 4), absent or its state.
fn states() -> impl Strategy<Value = Vec<Vec<Option<NetworkState>>>> {
    let network = proptest::option::of((0usize..3, any::<bool>(), 0u8..2, any::<bool>()));
    proptest::collection::vec(proptest::collection::vec(network, 4), 1..4)
}

fn desired(state: &[Option<NetworkState>]) -> Vec<DesiredUnit> {
    state
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.map(|n| (i, n)))
        .map(|(i, (nodes, drop_pg, subnet, acl_type))| {
            let mut unit = network(&format!("net{i}"), nodes);
            if acl_type {
                for row in unit.rows.iter_mut().filter(|r| r.table == "ACL") {
                    row.owner_type = Some(NETWORK_ACL.to_owned());
                }
            }
            if drop_pg {
                unit.rows
                    .retain(|r| r.table != "Port_Group" && r.table != "ACL");
            }
            if subnet == 1 {
                for row in unit.rows.iter_mut().filter(|r| r.table == "Logical_Switch") {
                    row.columns.insert(
                        "other_config".into(),
                        Value::Map(vec![(s("subnet"), s("10.1.0.0/24"))]),
                    );
                }
            }
            unit
        })
        .collect()
}

fn owned_ids(db: &MemoryDb) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (table, rows) in &db.tables {
        for row in rows.values() {
            if external_id(row, "k8s.ovn.org/owner-controller") == Some(CONTROLLER) {
                let id = external_id(row, "k8s.ovn.org/id").unwrap().to_owned();
                assert!(out.insert((table.clone(), id)), "duplicate row {table}");
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn apply_converges_from_any_state_to_any_state(
        states in states(),
        max_ops in 1usize..40,
        in_flight in 1usize..4,
    ) {
        let mut db = MemoryDb::nb();
        let foreign = db.put("Logical_Switch", Row::from([
            ("name".into(), Value::Atom(s("foreign"))),
            ("external_ids".into(), Value::Map(vec![(s("k8s.ovn.org/owner-controller"), s("other"))])),
        ]));
        let shared = Shared::new(db);
        let scope = Scope::OwnerType("Network".into());
        for state in &states {
            let units = desired(state);
            let want: BTreeSet<(String, String)> = units
                .iter()
                .flat_map(|u| u.rows.iter().map(|r| (r.table.clone(), r.id.clone())))
                .collect();
            let plan = engine().plan(&*shared.db.lock().unwrap(), units.clone(), &scope).unwrap();
            let report = block_on(engine().apply(&shared, &plan, &ApplyPolicy { max_ops, in_flight }));
            prop_assert!(report.is_success(), "{:?}", report);
            let db = shared.db.lock().unwrap();
            prop_assert_eq!(owned_ids(&db), want);
            prop_assert!(db.row_exists("Logical_Switch", foreign));
            let again = engine().plan(&*db, units, &scope).unwrap();
            prop_assert!(again.is_empty(), "{}", again);
        }
    }
}

/// A change another writer makes to network `net` (of 4) at node `node`, when the row is
/// there: (kind, net, node).
fn drifts() -> impl Strategy<Value = Vec<Option<(u8, usize, usize)>>> {
    proptest::collection::vec(proptest::option::of((0u8..7, 0usize..4, 0usize..3)), 1..4)
}

fn stamped(owner: &str, id: &str) -> Value {
    Value::Map(vec![
        (s("k8s.ovn.org/id"), s(id)),
        (s("k8s.ovn.org/owner"), s(owner)),
        (s("k8s.ovn.org/owner-controller"), s(CONTROLLER)),
        (s("k8s.ovn.org/owner-type"), s("Network")),
    ])
}

/// The operations of drift `kind` on network `net`, node `node` (none when its row is not
/// there).
fn drift_ops(db: &MemoryDb, (kind, net, node): (u8, usize, usize)) -> Vec<Operation> {
    let find = |table: &str, name: &str| {
        db.rows_of(table)
            .into_iter()
            .find(|(_, row)| row.get("name") == Some(&Value::Atom(s(name))))
            .map(|(u, r)| (*u, r.clone()))
    };
    let where_ = |uuid| {
        vec![Condition {
            column: "_uuid".into(),
            function: ConditionFunction::Equal,
            value: Value::Atom(Atom::Uuid(uuid)),
        }]
    };
    let name = format!("net{net}");
    let switch = find("Logical_Switch", &format!("{name}_node{node}"));
    let router = find("Logical_Router", &format!("{name}_ovn_cluster_router"));
    let pg = find("Port_Group", &format!("{name}_pg"));
    let update = |table: &str, uuid, column: &str, value| Operation::Update {
        table: table.into(),
        where_: where_(uuid),
        row: Row::from([(column.to_owned(), value)]),
    };
    let insert = |row: Row| Operation::Insert {
        table: "Logical_Switch".into(),
        row,
        uuid_name: None,
        uuid: None,
    };
    match kind {
        0 => switch
            .map(|(uuid, _)| {
                update(
                    "Logical_Switch",
                    uuid,
                    "other_config",
                    Value::Map(vec![(s("subnet"), s("192.168.0.0/24"))]),
                )
            })
            .into_iter()
            .collect(),
        1 => switch
            .map(|(uuid, _)| Operation::Delete {
                table: "Logical_Switch".into(),
                where_: where_(uuid),
            })
            .into_iter()
            .collect(),
        2 => router
            .and_then(|(uuid, row)| {
                let Some(Value::Map(mut ids)) = row.get("external_ids").cloned() else {
                    return None;
                };
                ids.retain(|(k, _)| *k != s("k8s.ovn.org/owner"));
                Some(update(
                    "Logical_Router",
                    uuid,
                    "external_ids",
                    Value::Map(ids),
                ))
            })
            .into_iter()
            .collect(),
        3 => vec![insert(Row::from([
            ("name".into(), Value::Atom(s(&format!("ghost{node}")))),
            (
                "external_ids".into(),
                stamped(&name, &format!("ghost{node}")),
            ),
        ]))],
        4 => switch
            .map(|(_, mut row)| {
                row.remove("ports");
                insert(row)
            })
            .into_iter()
            .collect(),
        5 => pg
            .and_then(|(uuid, row)| {
                let first = row.get("ports")?.clone().into_set()?.into_iter().next()?;
                Some(Operation::Mutate {
                    table: "Port_Group".into(),
                    where_: where_(uuid),
                    mutations: vec![Mutation {
                        column: "ports".into(),
                        mutator: Mutator::Delete,
                        value: Value::Set(vec![first]),
                    }],
                })
            })
            .into_iter()
            .collect(),
        _ => vec![insert(Row::from([
            ("name".into(), Value::Atom(s(&format!("theirs{node}")))),
            (
                "external_ids".into(),
                Value::Map(vec![
                    (s("k8s.ovn.org/owner"), s(&name)),
                    (s("k8s.ovn.org/owner-controller"), s("other")),
                ]),
            ),
        ]))],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn reconcile_converges_through_random_drift_and_skips_only_converged_units(
        steps in proptest::collection::vec((states(), drifts()), 1..4),
    ) {
        let mut db = MemoryDb::nb();
        let foreign = db.put("Logical_Switch", Row::from([
            ("name".into(), Value::Atom(s("foreign"))),
            ("external_ids".into(), Value::Map(vec![(s("k8s.ovn.org/owner-controller"), s("other"))])),
        ]));
        let synced = Synced::new(db);
        let engine = engine();
        let scope = Scope::OwnerType("Network".into());
        for (states, drifts) in &steps {
            for state in states {
                for &(kind, net, node) in drifts.iter().flatten() {
                    // A row that lost its owner stamp is no unit's any more: only its unit,
                    // still desired, finds it again (by row id).
                    if kind == 2 && state.get(net).is_none_or(Option::is_none) {
                        continue;
                    }
                    let ops = drift_ops(&synced.db.db.lock().unwrap(), (kind, net, node));
                    if !ops.is_empty() {
                        synced.drift(ops);
                    }
                }
                let units = desired(state);
                let want: BTreeSet<(String, String)> = units
                    .iter()
                    .flat_map(|u| u.rows.iter().map(|r| (r.table.clone(), r.id.clone())))
                    .collect();
                synced.reconcile(&engine, units.clone(), &scope);
                if let Err(plan) = synced.holds_with(&self::engine(), units.clone(), &scope) {
                    prop_assert!(false, "not converged after reconcile: {}", plan);
                }
                prop_assert_eq!(owned_ids(&synced.db.db.lock().unwrap()), want);
                prop_assert!(synced.db.db.lock().unwrap().row_exists("Logical_Switch", foreign));
                let again = synced.plan(&engine, units.clone(), &scope);
                prop_assert_eq!(again.skipped_units(), units.len(), "{}", again);
            }
        }
    }
}
