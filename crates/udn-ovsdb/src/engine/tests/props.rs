//! Property: whatever the sequence of desired states, one apply converges (the next plan
//! is empty), the owned rows are exactly the desired ones, and foreign rows survive.

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::memory::{MemoryDb, Shared};
use super::{CONTROLLER, block_on, engine, external_id, network, s};
use crate::engine::{ApplyPolicy, DesiredUnit, Scope};
use crate::protocol::{Row, Value};

/// A desired state: per network (of 4), absent or (nodes, drop port group, subnet variant).
fn states() -> impl Strategy<Value = Vec<Vec<Option<(usize, bool, u8)>>>> {
    let network = proptest::option::of((0usize..3, any::<bool>(), 0u8..2));
    proptest::collection::vec(proptest::collection::vec(network, 4), 1..4)
}

fn desired(state: &[Option<(usize, bool, u8)>]) -> Vec<DesiredUnit> {
    state
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.map(|n| (i, n)))
        .map(|(i, (nodes, drop_pg, subnet))| {
            let mut unit = network(&format!("net{i}"), nodes);
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
