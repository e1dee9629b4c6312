//! Desired states the engine refuses, each with a typed error naming what is wrong.

use super::memory::MemoryDb;
use super::{converge, engine, key, s};
use crate::engine::{DesiredRow, DesiredUnit, PlanError, RowAt, RowRef, Scope, UnitKey};
use crate::protocol::{Uuid, Value};

fn plan_error(db: &MemoryDb, units: Vec<DesiredUnit>, scope: &Scope) -> PlanError {
    engine().plan(db, units, scope).unwrap_err()
}

fn one(row: DesiredRow) -> Vec<DesiredUnit> {
    vec![DesiredUnit::new(key("net1")).row(row)]
}

fn at(table: &str, id: &str) -> Box<RowAt> {
    Box::new(RowAt {
        unit: key("net1"),
        table: table.into(),
        id: id.into(),
    })
}

#[test]
fn unknown_tables_and_columns_are_named() {
    let db = MemoryDb::nb();
    let err = plan_error(
        &db,
        one(DesiredRow::new("Logical_Flow", "x")),
        &Scope::Units,
    );
    assert_eq!(
        err,
        PlanError::UnknownTable {
            at: at("Logical_Flow", "x")
        }
    );
    assert_eq!(
        err.to_string(),
        "unit Network/net1: row Logical_Flow id=\"x\": the server schema (as monitored) has no table \"Logical_Flow\""
    );
    let err = plan_error(
        &db,
        one(DesiredRow::new("Logical_Switch", "x").string("colour", "red")),
        &Scope::Units,
    );
    assert_eq!(
        err,
        PlanError::UnknownColumn {
            at: at("Logical_Switch", "x"),
            column: "colour".into()
        }
    );
    let err = plan_error(
        &db,
        one(DesiredRow::new("Logical_Switch", "x").refs("nonexistent", [])),
        &Scope::Units,
    );
    assert_eq!(
        err,
        PlanError::UnknownColumn {
            at: at("Logical_Switch", "x"),
            column: "nonexistent".into()
        }
    );
}

#[test]
fn tables_without_external_ids_cannot_be_owned() {
    let db = MemoryDb::nb();
    let err = plan_error(
        &db,
        one(DesiredRow::new("Load_Balancer_Group", "g")),
        &Scope::Units,
    );
    assert_eq!(
        err,
        PlanError::NotOwnable {
            at: at("Load_Balancer_Group", "g")
        }
    );
}

#[test]
fn values_must_fit_their_columns() {
    let db = MemoryDb::nb();
    let err = plan_error(
        &db,
        one(DesiredRow::new("ACL", "a").string("priority", "high")),
        &Scope::Units,
    );
    let PlanError::BadValue {
        at: row,
        column,
        source,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (row.as_ref(), column.as_str()),
        (at("ACL", "a").as_ref(), "priority")
    );
    assert!(
        source.to_string().contains("expected an integer"),
        "{source}"
    );
    // A scalar given two values.
    let err = plan_error(
        &db,
        one(DesiredRow::new("Logical_Switch", "x").value("name", Value::Set(vec![s("a"), s("b")]))),
        &Scope::Units,
    );
    assert!(
        matches!(err, PlanError::BadValue { ref column, .. } if column == "name"),
        "{err:?}"
    );
}

#[test]
fn references_go_in_refs_and_refs_only_name_reference_sets() {
    let db = MemoryDb::nb();
    let err = plan_error(
        &db,
        one(DesiredRow::new("Logical_Switch", "x").value("ports", Value::Set(vec![]))),
        &Scope::Units,
    );
    assert_eq!(
        err,
        PlanError::ReferenceInColumns {
            at: at("Logical_Switch", "x"),
            column: "ports".into()
        }
    );
    let err = plan_error(
        &db,
        one(DesiredRow::new("Logical_Switch", "x").refs("name", [])),
        &Scope::Units,
    );
    assert_eq!(
        err,
        PlanError::NotAReferenceSet {
            at: at("Logical_Switch", "x"),
            column: "name".into()
        }
    );
    let err = plan_error(
        &db,
        one(DesiredRow::new("Logical_Switch", "x").refs("ports", [RowRef::desired("ACL", "a")])),
        &Scope::Units,
    );
    assert_eq!(
        err,
        PlanError::WrongTarget {
            at: at("Logical_Switch", "x"),
            column: "ports".into(),
            target_table: "ACL".into(),
            expected: "Logical_Switch_Port".into(),
        }
    );
}

#[test]
fn stamp_keys_are_reserved() {
    let db = MemoryDb::nb();
    let err = plan_error(
        &db,
        one(DesiredRow::new("Logical_Switch", "x")
            .map("external_ids", [("k8s.ovn.org/owner", "me")])),
        &Scope::Units,
    );
    assert_eq!(
        err,
        PlanError::ReservedKey {
            at: at("Logical_Switch", "x"),
            key: "k8s.ovn.org/owner".into()
        }
    );
}

#[test]
fn duplicate_rows_and_units_are_refused() {
    let db = MemoryDb::nb();
    let row = DesiredRow::new("Logical_Switch", "x");
    let units = vec![
        DesiredUnit::new(key("net0")).row(row.clone()),
        DesiredUnit::new(key("net1")).row(row),
    ];
    let err = plan_error(&db, units, &Scope::Units);
    assert_eq!(
        err,
        PlanError::DuplicateRow {
            at: at("Logical_Switch", "x"),
            first: key("net0")
        }
    );
    let err = plan_error(
        &db,
        vec![DesiredUnit::new(key("a")), DesiredUnit::new(key("a"))],
        &Scope::Units,
    );
    assert_eq!(err, PlanError::DuplicateUnit { unit: key("a") });
    let err = plan_error(
        &db,
        vec![DesiredUnit::new(UnitKey::new("Cluster", "c"))],
        &Scope::OwnerType("Network".into()),
    );
    assert_eq!(
        err,
        PlanError::OutOfScope {
            unit: UnitKey::new("Cluster", "c"),
            scope: "Network".into()
        }
    );
}

#[test]
fn references_to_rows_that_do_not_exist_are_refused() {
    let mut db = MemoryDb::nb();
    let err = plan_error(
        &db,
        one(DesiredRow::new("Logical_Switch", "x")
            .refs("ports", [RowRef::desired("Logical_Switch_Port", "p")])),
        &Scope::Units,
    );
    assert_eq!(
        err,
        PlanError::DanglingRef {
            at: at("Logical_Switch", "x"),
            column: "ports".into(),
            target: "Logical_Switch_Port id=\"p\"".into(),
        }
    );
    let missing = Uuid::from_u128(7);
    let err = plan_error(
        &db,
        one(DesiredRow::new("Logical_Router", "r").refs("copp", [RowRef::Existing(missing)])),
        &Scope::Units,
    );
    assert!(
        matches!(err, PlanError::DanglingRef { ref target, .. } if *target == missing.to_string()),
        "{err:?}"
    );
    // A row owned by another unit, not part of this plan, resolves by its id.
    converge(
        &mut db,
        vec![
            DesiredUnit::new(key("shared"))
                .row(DesiredRow::new("Copp", "copp").string("name", "c")),
        ],
        &Scope::Units,
    );
    let plan = engine()
        .plan(
            &db,
            one(DesiredRow::new("Logical_Router", "r")
                .refs("copp", [RowRef::desired("Copp", "copp")])),
            &Scope::Units,
        )
        .unwrap();
    assert_eq!(plan.op_count(), 1);
    // ... unless the plan deletes it.
    let units = vec![
        DesiredUnit::new(key("shared")),
        DesiredUnit::new(key("net1")).row(
            DesiredRow::new("Logical_Router", "r").refs("copp", [RowRef::desired("Copp", "copp")]),
        ),
    ];
    assert!(matches!(
        plan_error(&db, units, &Scope::Units),
        PlanError::DanglingRef { .. }
    ));
}

#[test]
fn new_child_rows_need_a_strong_parent() {
    let db = MemoryDb::nb();
    let err = plan_error(
        &db,
        one(DesiredRow::new("ACL", "a").integer("priority", 1)),
        &Scope::Units,
    );
    assert_eq!(err, PlanError::Unreferenced { at: at("ACL", "a") });
    // A weak reference (port group ports) does not keep a port.
    let units = one(DesiredRow::new("Logical_Switch_Port", "p").string("name", "p"));
    let units = vec![
        units[0].clone().row(
            DesiredRow::new("Port_Group", "pg")
                .refs("ports", [RowRef::desired("Logical_Switch_Port", "p")]),
        ),
    ];
    assert_eq!(
        plan_error(&db, units, &Scope::Units),
        PlanError::Unreferenced {
            at: at("Logical_Switch_Port", "p")
        }
    );
}

#[test]
fn cycles_among_new_rows_are_refused() {
    // NB has no reference cycles; give switches a "peer" reference to switches.
    let mut db = MemoryDb::nb();
    let table = db.schema.tables.get_mut("Logical_Switch").unwrap();
    let mut peer = table.columns.get("ports").unwrap().clone();
    peer.ty.key.ref_table = Some("Logical_Switch".into());
    table.columns.insert("peer".into(), peer);
    let switch = |id: &str, peer: &str| {
        DesiredRow::new("Logical_Switch", id)
            .refs("peer", [RowRef::desired("Logical_Switch", peer)])
    };
    let err = plan_error(
        &db,
        vec![
            DesiredUnit::new(key("net1"))
                .row(switch("a", "b"))
                .row(switch("b", "a")),
        ],
        &Scope::Units,
    );
    assert_eq!(
        err,
        PlanError::Cycle {
            at: at("Logical_Switch", "a")
        }
    );
    // Across units: the units share a transaction, and still no order exists.
    let units = vec![
        DesiredUnit::new(key("net1")).row(switch("a", "b")),
        DesiredUnit::new(key("net2")).row(switch("b", "a")),
    ];
    assert!(matches!(
        plan_error(&db, units, &Scope::Units),
        PlanError::Cycle { .. }
    ));
    // A chain is fine, and inserted target first.
    let units = vec![
        DesiredUnit::new(key("net1"))
            .row(switch("a", "b"))
            .row(switch("b", "c"))
            .row(DesiredRow::new("Logical_Switch", "c")),
    ];
    let plan = engine().plan(&db, units, &Scope::Units).unwrap();
    let order: Vec<String> = plan
        .operations()
        .map(|(_, op)| match op {
            crate::protocol::Operation::Insert { row, .. } => {
                super::external_id(row, "k8s.ovn.org/id")
                    .unwrap()
                    .to_owned()
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(order, vec!["c", "b", "a"]);
}

#[test]
fn immutable_columns_cannot_change() {
    let mut db = MemoryDb::nb();
    db.schema
        .tables
        .get_mut("Logical_Switch")
        .unwrap()
        .columns
        .get_mut("name")
        .unwrap()
        .mutable = false;
    let unit = |name: &str| {
        DesiredUnit::new(key("net1"))
            .row(DesiredRow::new("Logical_Switch", "x").string("name", name))
    };
    converge(&mut db, vec![unit("a")], &Scope::Units);
    let err = plan_error(&db, vec![unit("b")], &Scope::Units);
    assert_eq!(
        err,
        PlanError::ImmutableColumn {
            at: at("Logical_Switch", "x"),
            column: "name".into()
        }
    );
}
