//! Row owner types: a row of a non-root table stamped with another owner type than its
//! unit's (upstream's `NetpolNode` ACL in a `Node` unit) is written with it, found as a row of
//! its unit, removed when no longer desired and with its unit, never claimed by another unit
//! of the same name, and skipped when converged.

use super::memory::MemoryDb;
use super::plan::Unlisted;
use super::synced::Synced;
use super::units::{
    NETPOL_NODE, address_set, all_types, by_id, cluster, converge_with, netpol_node_id,
    network_units, node, node_engine, node_with, owned,
};
use super::{CONTROLLER, engine, external_id, s};
use crate::engine::{DesiredRow, DesiredUnit, Engine, PlanError, RowAt, Scope, UnitKey};
use crate::protocol::{Atom, Condition, ConditionFunction, Operation, Row, Uuid, Value};

fn where_uuid(uuid: Uuid) -> Vec<Condition> {
    vec![Condition {
        column: "_uuid".into(),
        function: ConditionFunction::Equal,
        value: Value::Atom(Atom::Uuid(uuid)),
    }]
}

fn uuid_of(db: &MemoryDb, table: &str, id: &str) -> Uuid {
    db.rows_of(table)
        .into_iter()
        .find(|(_, row)| external_id(row, "k8s.ovn.org/id") == Some(id))
        .map(|(uuid, _)| *uuid)
        .unwrap_or_else(|| panic!("no {table} id={id}"))
}

/// Another controller's port group holding our row `acl` (as a network policy might).
fn foreign_holder(db: &mut MemoryDb, acl: &str) -> Uuid {
    let acl = uuid_of(db, "ACL", acl);
    db.put(
        "Port_Group",
        Row::from([
            ("name".into(), Value::Atom(s("theirs"))),
            ("acls".into(), Value::Set(vec![Atom::Uuid(acl)])),
            (
                "external_ids".into(),
                Value::Map(vec![(s("k8s.ovn.org/owner-controller"), s("other"))]),
            ),
        ]),
    )
}

fn acls_of(db: &MemoryDb, table: &str, uuid: Uuid) -> Value {
    db.tables[table][&uuid]
        .get("acls")
        .cloned()
        .unwrap_or(Value::Set(vec![]))
}

#[test]
fn the_row_owner_type_is_stamped_instead_of_the_units() {
    let engine = node_engine();
    let mut db = MemoryDb::nb();
    converge_with(&engine, &mut db, vec![node("a", "10.0.0.2")], &Scope::Units);
    let acl_id = netpol_node_id("a", "10.0.0.2");
    assert_eq!(acl_id, "test-controller:NetpolNode:a:10.0.0.2");
    let acl = by_id(&db, "ACL", &acl_id).unwrap();
    for (key, value) in [
        ("k8s.ovn.org/owner-controller", CONTROLLER),
        ("k8s.ovn.org/owner-type", NETPOL_NODE),
        ("k8s.ovn.org/owner", "a"),
        ("k8s.ovn.org/id", acl_id.as_str()),
        ("k8s.ovn.org/name", "a"),
        ("ip", "10.0.0.2"),
    ] {
        assert_eq!(external_id(acl, key), Some(value), "{key}");
    }
    let switch = by_id(&db, "Logical_Switch", "a").unwrap();
    assert_eq!(external_id(switch, "k8s.ovn.org/owner-type"), Some("Node"));
    let again = engine
        .plan(&db, vec![node("a", "10.0.0.2")], &Scope::Units)
        .unwrap();
    assert!(again.is_empty(), "{again}");
    // The row owner type equal to the unit's is no row owner type at all.
    let mut same = node_with("a", "10.0.0.2", false);
    for row in &mut same.rows {
        row.owner_type = Some("Node".into());
    }
    let plain = engine
        .plan(&db, vec![node_with("a", "10.0.0.2", false)], &Scope::Units)
        .unwrap();
    assert_eq!(engine.plan(&db, vec![same], &Scope::Units).unwrap(), plain);
    // Without it, only the ACL's stamps change, in place.
    assert_eq!(
        plain.to_string(),
        format!(
            "plan: 1 operations in 1 of 1 units\nunit Node/a:\n  update ACL id={acl_id:?}: external_ids\n"
        )
    );
    converge_with(
        &engine,
        &mut db,
        vec![node_with("a", "10.0.0.2", false)],
        &Scope::Units,
    );
    assert_eq!(
        external_id(
            by_id(&db, "ACL", &acl_id).unwrap(),
            "k8s.ovn.org/owner-type"
        ),
        Some("Node")
    );
}

#[test]
fn a_changed_row_id_removes_the_old_row_while_the_unit_lives() {
    let engine = node_engine();
    let mut db = MemoryDb::nb();
    converge_with(&engine, &mut db, vec![node("a", "10.0.0.2")], &Scope::Units);
    let switch = uuid_of(&db, "Logical_Switch", "a");
    let old = uuid_of(&db, "ACL", &netpol_node_id("a", "10.0.0.2"));
    let plan = engine
        .plan(&db, vec![node("a", "10.0.0.3")], &Scope::Units)
        .unwrap();
    let new_id = netpol_node_id("a", "10.0.0.3");
    let text = plan.to_string();
    assert!(
        text.contains(&format!("insert ACL id={new_id:?}"))
            && text.contains("mutate Logical_Switch id=\"a\": acls delete 1, acls insert 1"),
        "{text}"
    );
    converge_with(&engine, &mut db, vec![node("a", "10.0.0.3")], &Scope::Units);
    assert!(!db.row_exists("ACL", old));
    assert_eq!(db.count("ACL"), 1);
    let new = uuid_of(&db, "ACL", &new_id);
    assert_eq!(
        acls_of(&db, "Logical_Switch", switch),
        Value::Set(vec![Atom::Uuid(new)])
    );
    assert_eq!(
        external_id(&db.tables["ACL"][&new], "k8s.ovn.org/owner-type"),
        Some(NETPOL_NODE)
    );
    assert!(
        engine
            .plan(&db, vec![node("a", "10.0.0.3")], &Scope::Units)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_row_no_longer_desired_is_detached_from_every_row_holding_it() {
    let engine = node_engine();
    let mut db = MemoryDb::nb();
    converge_with(&engine, &mut db, vec![node("a", "10.0.0.2")], &Scope::Units);
    let acl_id = netpol_node_id("a", "10.0.0.2");
    let theirs = foreign_holder(&mut db, &acl_id);
    // The unit keeps its switch and port but no longer wants the ACL.
    let mut unit = node("a", "10.0.0.2");
    unit.rows.retain(|row| row.table != "ACL");
    for row in &mut unit.rows {
        row.refs.remove("acls");
    }
    let plan = engine.plan(&db, vec![unit.clone()], &Scope::Units).unwrap();
    assert!(
        plan.to_string().contains(&format!(
            "release ACL id={acl_id:?} (garbage collected once unreferenced)"
        )),
        "{plan}"
    );
    // Our switch does not manage `acls` any more: both holders are detached by mutation.
    let detached: Vec<&str> = plan
        .operations()
        .filter_map(|(_, op)| match op {
            Operation::Mutate { table, .. } => Some(table.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(detached, ["Logical_Switch", "Port_Group"], "{plan}");
    converge_with(&engine, &mut db, vec![unit.clone()], &Scope::Units);
    assert_eq!(db.count("ACL"), 0);
    assert!(db.row_exists("Port_Group", theirs));
    assert_eq!(acls_of(&db, "Port_Group", theirs), Value::Set(vec![]));
    assert!(
        engine
            .plan(&db, vec![unit], &Scope::Units)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_gone_unit_goes_with_its_rows_of_row_owner_types() {
    let engine = node_engine();
    let mut db = MemoryDb::nb();
    converge_with(&engine, &mut db, network_units(), &all_types());
    let acl_id = netpol_node_id("b", "10.0.1.2");
    let theirs = foreign_holder(&mut db, &acl_id);
    let units: Vec<DesiredUnit> = network_units()
        .into_iter()
        .filter(|u| u.key != UnitKey::new("Node", "b"))
        .collect();
    let plan = engine.plan(&db, units.clone(), &all_types()).unwrap();
    assert_eq!(
        engine
            .plan(&Unlisted(&db), units.clone(), &all_types())
            .unwrap(),
        plan
    );
    assert_eq!(
        plan.unit_operations(&UnitKey::new("Node", "b"))
            .map(|op| match op {
                Operation::Delete { table, .. } => format!("delete {table}"),
                Operation::Mutate { table, .. } => format!("mutate {table}"),
                other => format!("{other:?}"),
            })
            .collect::<Vec<_>>(),
        ["mutate Port_Group", "delete Logical_Switch"]
    );
    converge_with(&engine, &mut db, units.clone(), &all_types());
    assert!(
        owned(&db)
            .values()
            .flatten()
            .all(|(_, _, owner)| owner != "b")
    );
    assert!(db.row_exists("Port_Group", theirs));
    assert_eq!(acls_of(&db, "Port_Group", theirs), Value::Set(vec![]));
    assert!(engine.plan(&db, units, &all_types()).unwrap().is_empty());
}

#[test]
fn a_gone_unit_with_only_rows_of_a_row_owner_type_left_is_found() {
    let engine = node_engine();
    let mut db = MemoryDb::nb();
    converge_with(&engine, &mut db, vec![node("b", "10.0.1.2")], &all_types());
    let acl_id = netpol_node_id("b", "10.0.1.2");
    let theirs = foreign_holder(&mut db, &acl_id);
    // The switch deleted behind our back: only the ACL (held by their port group) is left.
    let switch = uuid_of(&db, "Logical_Switch", "b");
    db.transact(vec![Operation::Delete {
        table: "Logical_Switch".into(),
        where_: where_uuid(switch),
    }])
    .unwrap();
    assert_eq!(db.count("ACL"), 1);
    let plan = engine.plan(&db, vec![], &all_types()).unwrap();
    assert_eq!(
        engine.plan(&Unlisted(&db), vec![], &all_types()).unwrap(),
        plan
    );
    assert_eq!(
        plan.units().map(ToString::to_string).collect::<Vec<_>>(),
        ["Node/b"]
    );
    converge_with(&engine, &mut db, vec![], &all_types());
    assert_eq!(db.count("ACL"), 0);
    assert_eq!(acls_of(&db, "Port_Group", theirs), Value::Set(vec![]));
}

#[test]
fn rows_of_a_unit_of_another_type_with_the_same_name_are_left_alone() {
    let engine = node_engine();
    let mut db = MemoryDb::nb();
    let units = vec![node("a", "10.0.0.2"), address_set("RemoteNode", "a")];
    converge_with(&engine, &mut db, units, &all_types());
    let before = owned(&db);
    // RemoteNode/a planned alone, as it is now: nothing of Node/a is its.
    let plan = engine
        .plan(&db, vec![address_set("RemoteNode", "a")], &Scope::Units)
        .unwrap();
    assert!(plan.is_empty(), "{plan}");
    // RemoteNode/a gone: its address set goes, Node/a's NetpolNode ACL stays.
    converge_with(
        &engine,
        &mut db,
        vec![],
        &Scope::OwnerTypes(vec!["RemoteNode".into()]),
    );
    let after = owned(&db);
    assert_eq!(after["ACL"], before["ACL"]);
    assert_eq!(after["Logical_Switch"], before["Logical_Switch"]);
    assert!(!after.contains_key("Address_Set"), "{after:?}");
    // A row owner type declared for another unit type is not Node's either.
    let remote = Engine::new(CONTROLLER).with_row_owner_type(NETPOL_NODE, "RemoteNode");
    let plan = remote
        .plan(&db, vec![node_with("a", "10.0.0.2", false)], &Scope::Units)
        .unwrap();
    // The ACL is located by its id and restamped as Node's, never deleted.
    assert!(
        plan.operations()
            .all(|(_, op)| matches!(op, Operation::Update { table, .. } if table == "ACL")),
        "{plan}"
    );
}

fn at(unit: UnitKey, table: &str, id: &str) -> Box<RowAt> {
    Box::new(RowAt {
        unit,
        table: table.into(),
        id: id.into(),
    })
}

#[test]
fn misplaced_or_undeclared_row_owner_types_are_refused() {
    let db = MemoryDb::nb();
    let node_key = UnitKey::new("Node", "a");
    // On a root table.
    let unit = DesiredUnit::new(node_key.clone()).row(
        DesiredRow::new("Logical_Switch", "a")
            .string("name", "a")
            .owner_type(NETPOL_NODE),
    );
    let error = node_engine()
        .plan(&db, vec![unit], &Scope::Units)
        .unwrap_err();
    assert_eq!(
        error,
        PlanError::RowOwnerTypeOnRoot {
            at: at(node_key.clone(), "Logical_Switch", "a"),
            owner_type: NETPOL_NODE.into(),
        }
    );
    assert_eq!(
        error.to_string(),
        "unit Node/a: row Logical_Switch id=\"a\": row owner type \"NetpolNode\" on a row of root table \"Logical_Switch\": only rows of non-root tables may carry one"
    );
    // Not declared, or declared for another unit type.
    let acl_id = netpol_node_id("a", "10.0.0.2");
    for engine in [
        engine(),
        Engine::new(CONTROLLER).with_row_owner_type(NETPOL_NODE, "RemoteNode"),
    ] {
        let error = engine
            .plan(&db, vec![node("a", "10.0.0.2")], &Scope::Units)
            .unwrap_err();
        assert_eq!(
            error,
            PlanError::UndeclaredRowOwnerType {
                at: at(node_key.clone(), "ACL", &acl_id),
                owner_type: NETPOL_NODE.into(),
            }
        );
        assert_eq!(
            error.to_string(),
            format!(
                "unit Node/a: row ACL id={acl_id:?}: row owner type \"NetpolNode\" is not declared for units of owner type \"Node\" (Engine::with_row_owner_type)"
            )
        );
    }
    // A row owner type is no unit's owner type, nor a scope's.
    let error = node_engine()
        .plan(&db, vec![address_set(NETPOL_NODE, "a")], &Scope::Units)
        .unwrap_err();
    assert_eq!(
        error,
        PlanError::RowOwnerTypeAsUnitType {
            owner_type: NETPOL_NODE.into(),
            unit_type: "Node".into(),
            given: "unit NetpolNode/a".into(),
        }
    );
    assert_eq!(
        error.to_string(),
        "owner type \"NetpolNode\" is a row owner type of \"Node\" units, not a unit owner type (given as unit NetpolNode/a)"
    );
    let error = node_engine()
        .plan(
            &db,
            vec![cluster("net1")],
            &Scope::OwnerTypes(vec!["Cluster".into(), NETPOL_NODE.into()]),
        )
        .unwrap_err();
    assert_eq!(
        error,
        PlanError::RowOwnerTypeAsUnitType {
            owner_type: NETPOL_NODE.into(),
            unit_type: "Node".into(),
            given: "scope".into(),
        }
    );
}

#[test]
fn converged_units_with_row_owner_types_are_skipped_and_drift_is_put_back() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = node_engine();
    let scope = all_types();
    synced.reconcile(&engine, network_units(), &scope);
    let plan = synced.plan(&engine, network_units(), &scope);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (0, 5));
    assert_eq!(plan.op_count(), 0);
    // Their ACL changed behind our back: only Node/a is compared, and put back.
    let acl = uuid_of(
        &synced.db.db.lock().unwrap(),
        "ACL",
        &netpol_node_id("a", "10.0.0.2"),
    );
    synced.drift(vec![Operation::Update {
        table: "ACL".into(),
        where_: where_uuid(acl),
        row: Row::from([("action".into(), Value::Atom(s("drop")))]),
    }]);
    let plan = synced.plan(&engine, network_units(), &scope);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (1, 4));
    assert_eq!(
        plan.to_string(),
        format!(
            "plan: 1 operations in 1 of 5 units\nunit Node/a:\n  update ACL id={:?}: action\n",
            netpol_node_id("a", "10.0.0.2")
        )
    );
    synced.reconcile(&engine, network_units(), &scope);
    synced
        .holds_with(&node_engine(), network_units(), &scope)
        .unwrap();
    assert_eq!(
        synced
            .plan(&engine, network_units(), &scope)
            .skipped_units(),
        5
    );
}

#[test]
fn declaring_a_row_owner_type_starts_a_new_memory() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = node_engine();
    synced.reconcile(&engine, network_units(), &all_types());
    assert_eq!(
        synced
            .plan(&engine, network_units(), &all_types())
            .skipped_units(),
        5
    );
    let declared = engine.clone().with_row_owner_type("NodeExtra", "Node");
    assert_ne!(declared, engine);
    let plan = synced.plan(&declared, network_units(), &all_types());
    assert_eq!((plan.compared_units(), plan.skipped_units()), (5, 0));
    assert!(plan.is_empty(), "{plan}");
    // The engine it was made from keeps its own memory.
    assert_eq!(
        synced
            .plan(&engine, network_units(), &all_types())
            .skipped_units(),
        5
    );
}

#[test]
fn a_skipped_unit_whose_row_of_a_row_owner_type_refers_to_a_removed_row_is_compared() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = Engine::new(CONTROLLER).with_row_owner_type("NodePort", "Node");
    let provider = || {
        DesiredUnit::new(UnitKey::new("Cluster", "p"))
            .row(DesiredRow::new("HA_Chassis_Group", "hag").string("name", "hag"))
    };
    // Node/c's port, stamped NodePort, refers to the cluster's chassis group.
    let consumer = || {
        DesiredUnit::new(UnitKey::new("Node", "c"))
            .row(
                DesiredRow::new("Logical_Switch_Port", "c-port")
                    .string("name", "c-port")
                    .owner_type("NodePort")
                    .refs(
                        "ha_chassis_group",
                        [crate::engine::RowRef::desired("HA_Chassis_Group", "hag")],
                    ),
            )
            .row(
                DesiredRow::new("Logical_Switch", "c")
                    .string("name", "c")
                    .refs(
                        "ports",
                        [crate::engine::RowRef::desired(
                            "Logical_Switch_Port",
                            "c-port",
                        )],
                    ),
            )
    };
    let units = || vec![consumer(), provider()];
    synced.reconcile(&engine, units(), &Scope::Units);
    assert_eq!(
        synced.plan(&engine, units(), &Scope::Units).skipped_units(),
        2
    );
    // Another writer adds a copy of the group with a smaller UUID: the cluster's plan keeps
    // the copy and deletes the row Node/c's port holds, so Node/c is compared to follow.
    {
        let mut db = synced.db.db.lock().unwrap();
        let uuid = uuid_of(&db, "HA_Chassis_Group", "hag");
        let row = db.tables["HA_Chassis_Group"][&uuid].clone();
        db.tables
            .get_mut("HA_Chassis_Group")
            .unwrap()
            .insert(Uuid::from_u128(1), row);
    }
    synced.sync();
    let plan = synced.plan(&engine, units(), &Scope::Units);
    assert_eq!(
        (plan.compared_units(), plan.skipped_units()),
        (2, 0),
        "{plan}"
    );
    synced.reconcile(&engine, units(), &Scope::Units);
    let fresh = Engine::new(CONTROLLER).with_row_owner_type("NodePort", "Node");
    synced.holds_with(&fresh, units(), &Scope::Units).unwrap();
    let db = synced.db.db.lock().unwrap();
    assert_eq!(db.count("HA_Chassis_Group"), 1);
    let port = uuid_of(&db, "Logical_Switch_Port", "c-port");
    assert_eq!(
        db.tables["Logical_Switch_Port"][&port].get("ha_chassis_group"),
        Some(&Value::Set(vec![Atom::Uuid(Uuid::from_u128(1))]))
    );
}
