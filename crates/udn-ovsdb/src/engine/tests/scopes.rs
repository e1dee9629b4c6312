//! A scope of several owner types: units of each type present in the database but not
//! given are deleted whole, a unit is its owner type and name, units of other types are left
//! alone, and the converged memory skips what it can per type.

use super::memory::MemoryDb;
use super::plan::Unlisted;
use super::skip::owner_finds;
use super::synced::Synced;
use super::units::{
    address_set, all_types, cluster, converge_with, network_units, node, node_engine, owned,
};
use super::{CONTROLLER, network, s};
use crate::engine::{DesiredUnit, PlanError, Scope, UnitKey};
use crate::protocol::{Operation, Row, Value};

/// The units of `units` but those named in `without` (owner type, name).
fn without(units: Vec<DesiredUnit>, gone: &[(&str, &str)]) -> Vec<DesiredUnit> {
    units
        .into_iter()
        .filter(|u| !gone.contains(&(u.key.owner_type.as_str(), u.key.name.as_str())))
        .collect()
}

#[test]
fn gone_units_of_every_type_of_the_scope_are_deleted_whole() {
    let engine = node_engine();
    let mut db = MemoryDb::nb();
    // A unit of another owner type, written with the given units only.
    converge_with(&engine, &mut db, vec![network("keep", 1)], &Scope::Units);
    let kept = owned(&db);
    converge_with(&engine, &mut db, network_units(), &all_types());
    let again = engine.plan(&db, network_units(), &all_types()).unwrap();
    assert!(again.is_empty(), "{again}");

    let units = without(network_units(), &[("Node", "b"), ("Pod", "ns/x")]);
    let plan = engine.plan(&db, units.clone(), &all_types()).unwrap();
    let keys: Vec<String> = plan.units().map(ToString::to_string).collect();
    assert_eq!(
        keys,
        [
            "Cluster/net1",
            "Node/a",
            "RemoteNode/c",
            "Node/b",
            "Pod/ns/x"
        ]
    );
    // The switch goes with a delete; its port and ACL with it (garbage collected).
    assert_eq!(
        plan.to_string(),
        "plan: 2 operations in 2 of 5 units\n\
         unit Node/b:\n  \
           delete Logical_Switch id=\"b\"\n  \
           release ACL id=\"test-controller:NetpolNode:b:10.0.1.2\" (garbage collected once unreferenced)\n  \
           release Logical_Switch_Port id=\"k8s-b\" (garbage collected once unreferenced)\n\
         unit Pod/ns/x:\n  \
           delete Address_Set id=\"Pod_ns/x\"\n"
    );
    assert_eq!(
        engine
            .plan(&Unlisted(&db), units.clone(), &all_types())
            .unwrap(),
        plan
    );
    converge_with(&engine, &mut db, units.clone(), &all_types());
    let after = owned(&db);
    assert!(
        after
            .values()
            .flatten()
            .all(|(_, _, owner)| owner != "b" && owner != "ns/x"),
        "{after:?}"
    );
    // The unit of another type is untouched, the others are all there.
    for (table, rows) in &kept {
        for row in rows {
            assert!(after[table].contains(row), "{table} {row:?}");
        }
    }
    // RemoteNode/c's address set; the switches of Node/a and of `keep`.
    assert_eq!(after["Address_Set"].len(), 1);
    assert_eq!(after["Logical_Switch"].len(), 2);
    assert!(engine.plan(&db, units, &all_types()).unwrap().is_empty());
}

#[test]
fn a_unit_is_its_owner_type_and_name() {
    let engine = node_engine();
    let mut db = MemoryDb::nb();
    let both = vec![node("a", "10.0.0.2"), address_set("RemoteNode", "a")];
    converge_with(&engine, &mut db, both, &all_types());
    // Node/a given does not keep RemoteNode/a.
    let plan = engine
        .plan(&db, vec![node("a", "10.0.0.2")], &all_types())
        .unwrap();
    assert_eq!(
        plan.to_string(),
        "plan: 1 operations in 1 of 2 units\n\
         unit RemoteNode/a:\n  delete Address_Set id=\"RemoteNode_a\"\n"
    );
    // A scope of one type: nothing of the other type goes, though the name is the same.
    let plan = engine
        .plan(&db, vec![], &Scope::OwnerTypes(vec!["Node".into()]))
        .unwrap();
    assert!(
        plan.operations()
            .all(|(unit, _)| *unit == UnitKey::new("Node", "a")),
        "{plan}"
    );
    assert_eq!(plan.op_count(), 1, "{plan}");
    converge_with(
        &engine,
        &mut db,
        vec![],
        &Scope::OwnerTypes(vec!["Node".into()]),
    );
    assert_eq!(
        owned(&db)
            .into_values()
            .flatten()
            .map(|(id, _, _)| id)
            .collect::<Vec<_>>(),
        ["RemoteNode_a"]
    );
}

#[test]
fn one_type_as_a_list_is_the_single_type_scope() {
    let engine = node_engine();
    let mut db = MemoryDb::nb();
    converge_with(
        &engine,
        &mut db,
        vec![network("net1", 1), network("net2", 1)],
        &Scope::Units,
    );
    let units = vec![network("net1", 1)];
    let single = engine
        .plan(&db, units.clone(), &Scope::OwnerType("Network".into()))
        .unwrap();
    let listed = engine
        .plan(
            &db,
            units,
            &Scope::OwnerTypes(vec!["Network".into(), "Network".into()]),
        )
        .unwrap();
    assert_eq!(single, listed);
    assert!(
        single
            .unit_operations(&UnitKey::new("Network", "net2"))
            .count()
            > 0
    );
}

#[test]
fn units_of_types_outside_the_scope_are_refused() {
    let db = MemoryDb::nb();
    let scope = Scope::OwnerTypes(vec!["Pod".into(), "Node".into()]);
    let error = node_engine()
        .plan(&db, vec![cluster("net1")], &scope)
        .unwrap_err();
    assert_eq!(
        error,
        PlanError::OutOfScope {
            unit: UnitKey::new("Cluster", "net1"),
            scope: "Node, Pod".into(),
        }
    );
    assert_eq!(
        error.to_string(),
        "unit Cluster/net1 is outside the plan's scope (owner type \"Node, Pod\")"
    );
    // No types: no unit is in scope, and an empty plan deletes nothing.
    let none = Scope::OwnerTypes(Vec::new());
    assert!(node_engine().plan(&db, vec![cluster("x")], &none).is_err());
    assert!(node_engine().plan(&db, vec![], &none).unwrap().is_empty());
}

#[test]
fn converged_units_and_names_owning_none_of_a_type_are_not_read_again() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = node_engine();
    let scope = all_types();
    // Another controller's row carrying an owner name.
    synced.db.db.lock().unwrap().put(
        "Address_Set",
        Row::from([
            ("name".into(), Value::Atom(s("theirs"))),
            (
                "external_ids".into(),
                Value::Map(vec![
                    (s("k8s.ovn.org/owner"), s("f")),
                    (s("k8s.ovn.org/owner-controller"), s("other")),
                ]),
            ),
        ]),
    );
    synced.sync();
    synced.reconcile(&engine, network_units(), &scope);
    // Each desired name is a candidate for the other types, read once and remembered as
    // owning none of them; the foreign name for every type.
    let (plan, _) = owner_finds(&synced, network_units(), &scope, &engine);
    assert!(plan.is_empty(), "{plan}");
    let (plan, finds) = owner_finds(&synced, network_units(), &scope, &engine);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (0, 5));
    assert!(finds.is_empty(), "{finds:?}");

    // Node/b no longer desired: read (for Node) and deleted whole, the others skipped.
    let units = without(network_units(), &[("Node", "b")]);
    let (plan, finds) = owner_finds(&synced, units.clone(), &scope, &engine);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (0, 4));
    assert_eq!(finds, ["b"]);
    assert_eq!(
        plan.operations()
            .map(|(unit, op)| (unit.to_string(), matches!(op, Operation::Delete { .. })))
            .collect::<Vec<_>>(),
        [("Node/b".to_owned(), true)]
    );
    synced.reconcile(&engine, units.clone(), &scope);
    synced
        .holds_with(&node_engine(), units.clone(), &scope)
        .unwrap();
    let (plan, finds) = owner_finds(&synced, units.clone(), &scope, &engine);
    assert_eq!(plan.skipped_units(), 4);
    assert!(finds.is_empty(), "{finds:?}");

    // A row of ours with the name `f` makes `f` a unit of that type: read and deleted.
    let foreign = synced
        .db
        .db
        .lock()
        .unwrap()
        .rows_of("Address_Set")
        .into_iter()
        .find(|(_, row)| row.get("name") == Some(&Value::Atom(s("theirs"))))
        .map(|(uuid, _)| *uuid)
        .unwrap();
    synced.drift(vec![Operation::Update {
        table: "Address_Set".into(),
        where_: vec![crate::protocol::Condition {
            column: "_uuid".into(),
            function: crate::protocol::ConditionFunction::Equal,
            value: Value::Atom(crate::protocol::Atom::Uuid(foreign)),
        }],
        row: Row::from([(
            "external_ids".into(),
            Value::Map(vec![
                (s("k8s.ovn.org/id"), s("theirs")),
                (s("k8s.ovn.org/owner"), s("f")),
                (s("k8s.ovn.org/owner-controller"), s(CONTROLLER)),
                (s("k8s.ovn.org/owner-type"), s("Pod")),
            ]),
        )]),
    }]);
    let (plan, finds) = owner_finds(&synced, units.clone(), &scope, &engine);
    assert_eq!(finds, ["f"]);
    assert_eq!(
        plan.operations()
            .map(|(unit, _)| unit.to_string())
            .collect::<Vec<_>>(),
        ["Pod/f"]
    );
    synced.reconcile(&engine, units, &scope);
    assert!(
        !synced
            .db
            .db
            .lock()
            .unwrap()
            .row_exists("Address_Set", foreign)
    );
}
