//! Applying plans: batching, no-op, failure isolation, dependencies, unavailability.

use super::memory::{MemoryDb, Shared};
use super::{block_on, by_name, engine, key, network};
use crate::engine::{
    ApplyPolicy, ApplyReport, DesiredRow, DesiredUnit, Plan, RowRef, Scope, TransactFailure,
    Transactor, UnitError, UnitKey, UnitOutcome,
};
use crate::protocol::{Operation, OperationError, OperationResult, TransactError};

fn plan(shared: &Shared, units: Vec<DesiredUnit>) -> Plan {
    let db = shared.db.lock().unwrap();
    engine().plan(&*db, units, &Scope::Units).unwrap()
}

fn apply(shared: &Shared, units: Vec<DesiredUnit>, policy: ApplyPolicy) -> ApplyReport {
    let plan = plan(shared, units);
    block_on(engine().apply(shared, &plan, &policy))
}

fn networks(n: usize) -> Vec<DesiredUnit> {
    (0..n).map(|i| network(&format!("net{i}"), 1)).collect()
}

#[test]
fn whole_units_are_batched_up_to_the_budget_and_nothing_to_do_sends_nothing() {
    let shared = Shared::new(MemoryDb::nb());
    // 30 units of 10 rows each.
    let policy = ApplyPolicy {
        max_ops: 100,
        in_flight: 2,
    };
    let report = apply(&shared, networks(30), policy);
    assert!(report.is_success());
    assert_eq!(report.transactions, 3);
    assert_eq!(report.ops, 300);
    assert_eq!(shared.sent(), vec![100, 100, 100]);
    assert!(
        report
            .units
            .values()
            .all(|o| matches!(o, UnitOutcome::Applied { ops: 10 }))
    );
    let report = apply(&shared, networks(30), policy);
    assert_eq!(report.transactions, 0);
    assert_eq!(report.ops, 0);
    assert_eq!(report.units.len(), 30);
    assert!(
        report
            .units
            .values()
            .all(|o| matches!(o, UnitOutcome::Unchanged))
    );
    assert_eq!(shared.sent().len(), 3);
}

#[test]
fn a_unit_larger_than_the_budget_goes_alone_and_is_never_split() {
    let shared = Shared::new(MemoryDb::nb());
    let units = vec![
        network("small", 1),
        network("big", 10),
        network("small2", 1),
    ];
    let report = apply(
        &shared,
        units,
        ApplyPolicy {
            max_ops: 15,
            in_flight: 1,
        },
    );
    assert!(report.is_success());
    assert_eq!(shared.sent(), vec![10, 46, 10]);
}

#[test]
fn a_rejected_batch_is_retried_unit_by_unit_to_name_the_failing_unit() {
    let shared = Shared::new(MemoryDb::nb());
    let mut units = networks(6);
    // net3's port group takes the name of net1's.
    for row in &mut units[3].rows {
        if row.table == "Port_Group" {
            *row = row.clone().string("name", "net1_pg");
        }
    }
    let report = apply(&shared, units, ApplyPolicy::default());
    assert_eq!(report.transactions, 7, "one batch, then each unit alone");
    let failures: Vec<&UnitError> = report.failures().collect();
    assert_eq!(failures.len(), 1);
    let UnitError::Rejected {
        unit,
        op_index,
        op,
        error,
    } = failures[0]
    else {
        panic!("{failures:?}")
    };
    assert_eq!(unit, &key("net3"));
    assert_eq!((op_index, op), (&None, &None));
    let TransactError::Commit { error } = error else {
        panic!("{error:?}")
    };
    assert_eq!(error.error, "constraint violation");
    assert!(
        error.details.as_deref().unwrap().contains("Port_Group"),
        "{error:?}"
    );
    assert!(
        failures[0]
            .to_string()
            .starts_with("unit Network/net3: transaction rejected at commit")
    );
    assert_eq!(
        report
            .units
            .values()
            .filter(|o| matches!(o, UnitOutcome::Applied { .. }))
            .count(),
        5
    );
    let db = shared.db.lock().unwrap();
    assert_eq!(db.count("Port_Group"), 5);
}

/// Rejects any transaction inserting a row with the given id, at that operation.
struct RejectInsertOf(Shared, &'static str);

impl Transactor for RejectInsertOf {
    async fn transact(&self, ops: Vec<Operation>) -> Result<Vec<OperationResult>, TransactFailure> {
        let bad = ops.iter().position(|op| {
            matches!(op, Operation::Insert { row, .. } if super::external_id(row, "k8s.ovn.org/id") == Some(self.1))
        });
        if let Some(index) = bad {
            self.0.sent.lock().unwrap().push(ops.len());
            return Err(TransactFailure::Rejected(TransactError::Operation {
                index,
                error: OperationError {
                    error: "constraint violation".into(),
                    details: Some("no".into()),
                },
            }));
        }
        self.0.transact(ops).await
    }
}

#[test]
fn an_operation_error_names_the_unit_and_operation_and_dependents_are_skipped() {
    let shared = Shared::new(MemoryDb::nb());
    let copp = DesiredUnit::new(UnitKey::new("Cluster", "shared"))
        .row(DesiredRow::new("Copp", "copp").string("name", "ovnkube-default"))
        .row(DesiredRow::new("Address_Set", "bad").string("name", "bad"));
    let user = DesiredUnit::new(key("user")).row(
        DesiredRow::new("Logical_Router", "r")
            .string("name", "r")
            .refs("copp", [RowRef::desired("Copp", "copp")]),
    );
    let plan = plan(&shared, vec![user, copp, network("net9", 1)]);
    let client = RejectInsertOf(shared, "bad");
    let report = block_on(engine().apply(&client, &plan, &ApplyPolicy::default()));
    let Some(UnitOutcome::Failed(UnitError::Rejected { op_index, op, .. })) =
        report.units.get(&UnitKey::new("Cluster", "shared"))
    else {
        panic!("{report:?}")
    };
    assert_eq!(*op_index, Some(1));
    assert_eq!(
        op.as_deref(),
        Some("insert Address_Set id=\"bad\" as r1_1: external_ids, name")
    );
    assert!(matches!(
        report.units.get(&key("user")),
        Some(UnitOutcome::Failed(UnitError::DependencyFailed { dependency, .. })) if *dependency == UnitKey::new("Cluster", "shared")
    ));
    assert!(matches!(
        report.units.get(&key("net9")),
        Some(UnitOutcome::Applied { .. })
    ));
}

#[test]
fn new_rows_of_units_committed_earlier_are_referred_to_by_uuid() {
    let shared = Shared::new(MemoryDb::nb());
    let copp = DesiredUnit::new(UnitKey::new("Cluster", "shared"))
        .row(DesiredRow::new("Copp", "copp").string("name", "ovnkube-default"));
    let users: Vec<DesiredUnit> = (0..3)
        .map(|i| {
            DesiredUnit::new(key(&format!("user{i}"))).row(
                DesiredRow::new("Logical_Router", format!("r{i}"))
                    .string("name", &format!("r{i}"))
                    .refs("copp", [RowRef::desired("Copp", "copp")]),
            )
        })
        .collect();
    let mut units = users;
    units.push(copp);
    let report = apply(
        &shared,
        units,
        ApplyPolicy {
            max_ops: 1,
            in_flight: 3,
        },
    );
    assert!(report.is_success(), "{report:?}");
    assert_eq!(report.transactions, 4);
    let db = shared.db.lock().unwrap();
    let (copp, _) = by_name(&db, "Copp", "ovnkube-default");
    for i in 0..3 {
        let (_, router) = by_name(&db, "Logical_Router", &format!("r{i}"));
        assert_eq!(
            router.get("copp"),
            Some(&crate::protocol::Value::Set(vec![
                crate::protocol::Atom::Uuid(copp)
            ]))
        );
    }
}

#[test]
fn an_unavailable_server_stops_the_apply() {
    let shared = Shared::new(MemoryDb::nb());
    *shared.unavailable.lock().unwrap() = true;
    let report = apply(
        &shared,
        networks(4),
        ApplyPolicy {
            max_ops: 20,
            in_flight: 1,
        },
    );
    assert_eq!(report.transactions, 1);
    let unavailable = report
        .units
        .values()
        .filter(|o| matches!(o, UnitOutcome::Failed(UnitError::Unavailable { .. })))
        .count();
    let not_attempted = report
        .units
        .values()
        .filter(|o| matches!(o, UnitOutcome::NotAttempted))
        .count();
    assert_eq!((unavailable, not_attempted), (2, 2));
    assert!(!report.is_success());
    let error = report.failures().next().unwrap();
    assert!(error.is_retryable());
    assert_eq!(error.kind(), "unavailable");
    assert_eq!(
        error.to_string(),
        "unit Network/net0: transaction outcome unknown"
    );
}
