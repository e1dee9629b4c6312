//! Plans: what the diff produces for new, unchanged, changed, drifted and stale state.

use std::collections::{BTreeMap, HashSet};

use super::memory::MemoryDb;
use super::{CONTROLLER, by_name, converge, engine, external_id, key, network, s};
use crate::engine::{DesiredRow, DesiredUnit, OwnedRowsView, RowRef, Scope, UnitKey};
use crate::protocol::{Atom, Mutator, Operation, Row, Value};

fn rows_owned_by(db: &MemoryDb, unit: &str) -> usize {
    db.tables
        .values()
        .flat_map(BTreeMap::values)
        .filter(|row| {
            external_id(row, "k8s.ovn.org/owner-controller") == Some(CONTROLLER)
                && external_id(row, "k8s.ovn.org/owner") == Some(unit)
        })
        .count()
}

/// Names used by each operation are defined by an earlier insert of the same plan.
fn assert_names_defined_before_use(ops: &[Operation]) {
    let mut defined = HashSet::new();
    let check = |value: &Value, defined: &HashSet<String>| {
        let atoms: Vec<&Atom> = match value {
            Value::Atom(a) => vec![a],
            Value::Set(s) => s.iter().collect(),
            Value::Map(m) => m.iter().flat_map(|(k, v)| [k, v]).collect(),
        };
        for atom in atoms {
            if let Atom::NamedUuid(name) = atom {
                assert!(defined.contains(name), "{name} used before its insert");
            }
        }
    };
    for op in ops {
        match op {
            Operation::Insert { row, uuid_name, .. } => {
                row.values().for_each(|v| check(v, &defined));
                if let Some(name) = uuid_name {
                    let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                    assert!(valid, "{name} is not an identifier");
                    assert!(defined.insert(name.clone()), "{name} defined twice");
                }
            }
            Operation::Update { row, .. } => row.values().for_each(|v| check(v, &defined)),
            Operation::Mutate { mutations, .. } => {
                mutations.iter().for_each(|m| check(&m.value, &defined))
            }
            _ => {}
        }
    }
}

#[test]
fn new_unit_is_inserted_children_first_with_stamps() {
    let mut db = MemoryDb::nb();
    let unit = network("net1", 2);
    let rows = unit.rows.len();
    let plan = engine().plan(&db, vec![unit], &Scope::Units).unwrap();
    let ops: Vec<Operation> = plan.operations().map(|(_, op)| op.clone()).collect();
    assert_eq!(ops.len(), rows);
    assert!(ops.iter().all(|op| matches!(op, Operation::Insert { .. })));
    assert_names_defined_before_use(&ops);
    db.transact(ops).unwrap();
    assert_eq!(db.total(), rows);
    assert_eq!(rows_owned_by(&db, "net1"), rows);
    let (_, switch) = by_name(&db, "Logical_Switch", "net1_node0");
    assert_eq!(
        external_id(switch, "k8s.ovn.org/owner-type"),
        Some("Network")
    );
    assert_eq!(external_id(switch, "k8s.ovn.org/id"), Some("net1_node0"));
    assert_eq!(external_id(switch, "k8s.ovn.org/network"), Some("net1"));
    assert_eq!(external_id(switch, "k8s.ovn.org/topology"), Some("layer3"));
    let Some(Value::Set(ports)) = switch.get("ports") else {
        panic!("no ports")
    };
    assert_eq!(ports.len(), 2);
}

#[test]
fn reapplying_the_same_state_plans_nothing() {
    let mut db = MemoryDb::nb();
    converge(&mut db, vec![network("net1", 3)], &Scope::Units);
    let plan = engine()
        .plan(&db, vec![network("net1", 3)], &Scope::Units)
        .unwrap();
    assert!(plan.is_empty(), "{plan}");
    assert_eq!(plan.op_count(), 0);
    let plan = engine()
        .plan(
            &db,
            vec![network("net1", 3)],
            &Scope::OwnerType("Network".into()),
        )
        .unwrap();
    assert!(plan.is_empty(), "{plan}");
}

#[test]
fn a_changed_column_is_one_update_of_that_column() {
    let mut db = MemoryDb::nb();
    converge(&mut db, vec![network("net1", 2)], &Scope::Units);
    let mut unit = network("net1", 2);
    let row = unit.rows.iter_mut().find(|r| r.id == "net1_node1").unwrap();
    row.columns.insert(
        "other_config".into(),
        Value::Map(vec![
            (s("subnet"), s("10.128.9.0/24")),
            (s("mcast_snoop"), s("true")),
        ]),
    );
    let plan = engine().plan(&db, vec![unit], &Scope::Units).unwrap();
    let ops: Vec<&Operation> = plan.operations().map(|(_, op)| op).collect();
    assert_eq!(ops.len(), 1, "{plan}");
    let Operation::Update { table, row, .. } = ops[0] else {
        panic!("{plan}")
    };
    assert_eq!(table, "Logical_Switch");
    assert_eq!(row.keys().collect::<Vec<_>>(), vec!["other_config"]);
}

#[test]
fn a_row_changed_behind_our_back_is_put_back() {
    let mut db = MemoryDb::nb();
    converge(&mut db, vec![network("net1", 1)], &Scope::Units);
    let (uuid, _) = by_name(&db, "Logical_Switch_Port", "k8s-net1_node0");
    let row = db
        .tables
        .get_mut("Logical_Switch_Port")
        .unwrap()
        .get_mut(&uuid)
        .unwrap();
    row.insert("addresses".into(), Value::Set(vec![s("dynamic")]));
    if let Some(Value::Map(ids)) = row.get_mut("external_ids") {
        ids.push((s("zz-added"), s("by someone")));
    }
    let plan = engine()
        .plan(&db, vec![network("net1", 1)], &Scope::Units)
        .unwrap();
    assert_eq!(plan.op_count(), 1, "{plan}");
    let Some((_, Operation::Update { row, .. })) = plan.operations().next() else {
        panic!("{plan}")
    };
    assert_eq!(
        row.keys().collect::<Vec<_>>(),
        vec!["addresses", "external_ids"]
    );
    converge(&mut db, vec![network("net1", 1)], &Scope::Units);
    let (_, row) = by_name(&db, "Logical_Switch_Port", "k8s-net1_node0");
    assert_eq!(external_id(row, "zz-added"), None);
    assert!(
        engine()
            .plan(&db, vec![network("net1", 1)], &Scope::Units)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_removed_root_row_is_deleted_and_a_removed_child_is_dropped_from_its_parent() {
    let mut db = MemoryDb::nb();
    converge(&mut db, vec![network("net1", 2)], &Scope::Units);
    let (pg, _) = by_name(&db, "Port_Group", "net1_pg");
    let mut unit = network("net1", 2);
    unit.rows
        .retain(|r| r.id != "net1_pg" && !r.id.starts_with("net1_acl"));
    // Drop node1's management port from the desired switch.
    unit.rows.retain(|r| r.id != "k8s-net1_node1");
    for row in &mut unit.rows {
        if row.id == "net1_node1" {
            row.refs.insert(
                "ports".into(),
                vec![RowRef::desired("Logical_Switch_Port", "stor-net1_node1")],
            );
        }
    }
    let plan = engine()
        .plan(&db, vec![unit.clone()], &Scope::Units)
        .unwrap();
    let ops: Vec<&Operation> = plan.operations().map(|(_, op)| op).collect();
    assert_eq!(ops.len(), 2, "{plan}");
    let (lsp, _) = by_name(&db, "Logical_Switch_Port", "k8s-net1_node1");
    assert!(ops.iter().any(|op| matches!(op,
        Operation::Mutate { table, mutations, .. } if table == "Logical_Switch"
            && mutations.len() == 1
            && mutations[0].mutator == Mutator::Delete
            && mutations[0].value == Value::Set(vec![Atom::Uuid(lsp)]))));
    assert!(ops.iter().any(|op| matches!(op,
        Operation::Delete { table, where_ } if table == "Port_Group"
            && where_[0].value == Value::Atom(Atom::Uuid(pg)))));
    // No explicit delete of the ACLs or the port: the server collects them.
    let text = plan.to_string();
    assert!(text.contains("release ACL id=\"net1_acl_in\""), "{text}");
    assert!(
        text.contains("release Logical_Switch_Port id=\"k8s-net1_node1\""),
        "{text}"
    );
    converge(&mut db, vec![unit.clone()], &Scope::Units);
    assert_eq!(db.count("ACL"), 0);
    assert_eq!(db.count("Port_Group"), 0);
    assert_eq!(db.count("Logical_Switch_Port"), 3);
    assert!(
        engine()
            .plan(&db, vec![unit], &Scope::Units)
            .unwrap()
            .is_empty()
    );
}

fn foreign_ids() -> Value {
    Value::Map(vec![
        (s("k8s.ovn.org/owner-controller"), s("other-controller")),
        (s("k8s.ovn.org/owner"), s("net1")),
        (s("k8s.ovn.org/owner-type"), s("Network")),
        (s("k8s.ovn.org/id"), s("k8s-net1_node0")),
    ])
}

#[test]
fn foreign_rows_and_foreign_set_elements_are_left_alone() {
    let mut db = MemoryDb::nb();
    converge(&mut db, vec![network("net1", 1)], &Scope::Units);
    // Another controller's pod port on our switch, claiming the same owner and id, and a
    // foreign switch of the same name.
    let pod = db.put(
        "Logical_Switch_Port",
        Row::from([
            ("name".into(), Value::Atom(s("pod1"))),
            ("external_ids".into(), foreign_ids()),
        ]),
    );
    let (switch, _) = by_name(&db, "Logical_Switch", "net1_node0");
    let row = db
        .tables
        .get_mut("Logical_Switch")
        .unwrap()
        .get_mut(&switch)
        .unwrap();
    if let Some(Value::Set(ports)) = row.get_mut("ports") {
        ports.push(Atom::Uuid(pod));
        ports.sort_by(crate::schema::atom_cmp);
    }
    let foreign_switch = db.put(
        "Logical_Switch",
        Row::from([
            ("name".into(), Value::Atom(s("net1_node0"))),
            ("external_ids".into(), foreign_ids()),
        ]),
    );
    let plan = engine()
        .plan(&db, vec![network("net1", 1)], &Scope::Units)
        .unwrap();
    assert!(plan.is_empty(), "{plan}");
    // Deleting the whole unit leaves the foreign rows, and detaches nothing foreign.
    let plan = engine()
        .plan(&db, vec![DesiredUnit::new(key("net1"))], &Scope::Units)
        .unwrap();
    for (_, op) in plan.operations() {
        if let Operation::Delete { where_, .. } | Operation::Mutate { where_, .. } = op {
            assert_ne!(where_[0].value, Value::Atom(Atom::Uuid(foreign_switch)));
        }
    }
    converge(&mut db, vec![DesiredUnit::new(key("net1"))], &Scope::Units);
    assert_eq!(rows_owned_by(&db, "net1"), 0);
    assert!(db.row_exists("Logical_Switch", foreign_switch));
    assert_eq!(db.count("Logical_Switch"), 1);
}

#[test]
fn a_stale_child_held_by_a_foreign_row_is_detached_from_it() {
    let mut db = MemoryDb::nb();
    converge(&mut db, vec![network("net1", 1)], &Scope::Units);
    let (lsp, _) = by_name(&db, "Logical_Switch_Port", "k8s-net1_node0");
    let foreign = db.put(
        "Logical_Switch",
        Row::from([
            ("name".into(), Value::Atom(s("foreign"))),
            ("ports".into(), Value::Set(vec![Atom::Uuid(lsp)])),
        ]),
    );
    let plan = converge(&mut db, vec![DesiredUnit::new(key("net1"))], &Scope::Units);
    assert!(
        plan.operations().any(
            |(_, op)| matches!(op, Operation::Mutate { table, where_, .. }
            if table == "Logical_Switch" && where_[0].value == Value::Atom(Atom::Uuid(foreign)))
        ),
        "{plan}"
    );
    assert_eq!(db.count("Logical_Switch_Port"), 0);
    assert_eq!(rows_owned_by(&db, "net1"), 0);
    assert!(db.row_exists("Logical_Switch", foreign));
}

#[test]
fn scope_by_owner_type_deletes_units_no_longer_desired() {
    let mut db = MemoryDb::nb();
    converge(
        &mut db,
        vec![network("net1", 1), network("net2", 1)],
        &Scope::Units,
    );
    let other_type = DesiredUnit::new(UnitKey::new("Cluster", "shared"))
        .row(DesiredRow::new("Port_Group", "cluster_pg").string("name", "cluster_pg"));
    converge(&mut db, vec![other_type], &Scope::Units);
    let plan = engine()
        .plan(
            &db,
            vec![network("net1", 1)],
            &Scope::OwnerType("Network".into()),
        )
        .unwrap();
    let units: Vec<&UnitKey> = plan.units().collect();
    assert_eq!(units, vec![&key("net1"), &key("net2")]);
    // A view that cannot list owner names: the rows of the type are read instead.
    let unlisted = engine()
        .plan(
            &Unlisted(&db),
            vec![network("net1", 1)],
            &Scope::OwnerType("Network".into()),
        )
        .unwrap();
    assert_eq!(unlisted, plan);
    assert_eq!(plan.unit_operations(&key("net1")).count(), 0);
    assert!(
        plan.unit_operations(&key("net2"))
            .all(|op| matches!(op, Operation::Delete { .. }))
    );
    converge(
        &mut db,
        vec![network("net1", 1)],
        &Scope::OwnerType("Network".into()),
    );
    assert_eq!(rows_owned_by(&db, "net2"), 0);
    assert!(rows_owned_by(&db, "net1") > 0);
    assert_eq!(rows_owned_by(&db, "shared"), 1);
    // The given units only: net1 alone leaves other units of its type.
    converge(&mut db, vec![network("net2", 1)], &Scope::Units);
    assert!(
        engine()
            .plan(&db, vec![network("net1", 1)], &Scope::Units)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn duplicate_rows_of_one_id_are_reduced_to_one() {
    let mut db = MemoryDb::nb();
    converge(&mut db, vec![network("net1", 1)], &Scope::Units);
    let (_, row) = by_name(&db, "Logical_Router", "net1_ovn_cluster_router");
    let copy = row.clone();
    db.put("Logical_Router", copy);
    assert_eq!(db.count("Logical_Router"), 2);
    let plan = converge(&mut db, vec![network("net1", 1)], &Scope::Units);
    assert_eq!(plan.op_count(), 1, "{plan}");
    assert_eq!(db.count("Logical_Router"), 1);
}

#[test]
fn a_row_moving_between_units_is_updated_not_replaced() {
    let mut db = MemoryDb::nb();
    let shared = |owner: &str| {
        DesiredUnit::new(key(owner))
            .row(DesiredRow::new("Address_Set", "as1").string("name", "as1"))
    };
    converge(
        &mut db,
        vec![shared("net1"), DesiredUnit::new(key("net2"))],
        &Scope::Units,
    );
    let (uuid, _) = by_name(&db, "Address_Set", "as1");
    let plan = converge(
        &mut db,
        vec![DesiredUnit::new(key("net1")), shared("net2")],
        &Scope::Units,
    );
    assert_eq!(plan.op_count(), 1, "{plan}");
    let (moved, row) = by_name(&db, "Address_Set", "as1");
    assert_eq!(moved, uuid);
    assert_eq!(external_id(row, "k8s.ovn.org/owner"), Some("net2"));
}

#[test]
fn references_to_rows_of_other_units_order_the_units() {
    let mut db = MemoryDb::nb();
    // net2's switch refers to a new root row (Copp) of the "shared" unit given after it,
    // and holds a new port of unit "ports" (non-root: same transaction).
    let shared = DesiredUnit::new(UnitKey::new("Cluster", "shared"))
        .row(DesiredRow::new("Copp", "copp").string("name", "ovnkube-default"));
    let ports = DesiredUnit::new(key("ports"))
        .row(DesiredRow::new("Logical_Switch_Port", "p1").string("name", "p1"));
    let net2 = DesiredUnit::new(key("net2")).row(
        DesiredRow::new("Logical_Switch", "sw")
            .string("name", "sw")
            .refs("copp", [RowRef::desired("Copp", "copp")])
            .refs("ports", [RowRef::desired("Logical_Switch_Port", "p1")]),
    );
    let plan = engine()
        .plan(&db, vec![net2, shared, ports], &Scope::Units)
        .unwrap();
    assert_eq!(plan.groups.len(), 2);
    let first: Vec<&UnitKey> = plan.groups[0]
        .units
        .iter()
        .map(|u| &plan.units[*u as usize])
        .collect();
    assert_eq!(first, vec![&UnitKey::new("Cluster", "shared")]);
    let second: Vec<&UnitKey> = plan.groups[1]
        .units
        .iter()
        .map(|u| &plan.units[*u as usize])
        .collect();
    assert_eq!(second, vec![&key("net2"), &key("ports")]);
    assert_eq!(plan.groups[1].needs, vec![0]);
    let ops: Vec<Operation> = plan.operations().map(|(_, op)| op.clone()).collect();
    assert_names_defined_before_use(&ops);
    db.transact(ops).unwrap();
    let (_, sw) = by_name(&db, "Logical_Switch", "sw");
    let (copp, _) = by_name(&db, "Copp", "ovnkube-default");
    assert_eq!(sw.get("copp"), Some(&Value::Set(vec![Atom::Uuid(copp)])));
}

#[test]
fn references_to_existing_rows_use_their_uuid() {
    let mut db = MemoryDb::nb();
    let foreign_copp = db.put(
        "Copp",
        Row::from([("name".into(), Value::Atom(s("theirs")))]),
    );
    let unit = |copp: RowRef| {
        DesiredUnit::new(key("net1")).row(
            DesiredRow::new("Logical_Router", "r")
                .string("name", "r")
                .refs("copp", [copp]),
        )
    };
    let plan = converge(
        &mut db,
        vec![unit(RowRef::Existing(foreign_copp))],
        &Scope::Units,
    );
    let Some((_, Operation::Insert { row, .. })) = plan.operations().next() else {
        panic!()
    };
    assert_eq!(
        row.get("copp"),
        Some(&Value::Set(vec![Atom::Uuid(foreign_copp)]))
    );
    // Switching the scalar reference is an update of the column.
    let ours = db.put(
        "Copp",
        Row::from([("name".into(), Value::Atom(s("other")))]),
    );
    let plan = engine()
        .plan(&db, vec![unit(RowRef::Existing(ours))], &Scope::Units)
        .unwrap();
    let Some((_, Operation::Update { row, .. })) = plan.operations().next() else {
        panic!("{plan}")
    };
    assert_eq!(row.get("copp"), Some(&Value::Set(vec![Atom::Uuid(ours)])));
}

#[test]
fn dry_run_display_is_stable_and_readable() {
    let mut db = MemoryDb::nb();
    converge(&mut db, vec![network("net1", 1)], &Scope::Units);
    let mut unit = network("net1", 1);
    unit.rows
        .retain(|r| r.id != "net1_pg" && r.id != "net1_nat" && !r.id.starts_with("net1_acl"));
    for row in &mut unit.rows {
        if row.id == "net1_ovn_cluster_router" {
            row.refs.insert("nat".into(), Vec::new());
            row.columns.insert(
                "options".into(),
                Value::Map(vec![(s("mcast_relay"), s("true"))]),
            );
        }
    }
    unit.rows
        .push(DesiredRow::new("Address_Set", "as1").string("name", "as1"));
    let plan = engine()
        .plan(
            &db,
            vec![unit, DesiredUnit::new(key("net0"))],
            &Scope::Units,
        )
        .unwrap();
    let pg = by_name(&db, "Port_Group", "net1_pg").0;
    let text = plan.to_string().replace(&pg.to_string(), "<pg>");
    let expected = r#"plan: 4 operations in 1 of 2 units
unit Network/net1:
  insert Address_Set id="as1" as r0_6: external_ids, name
  update Logical_Router id="net1_ovn_cluster_router": options
  mutate Logical_Router id="net1_ovn_cluster_router": nat delete 1
  delete Port_Group id="net1_pg"
  release ACL id="net1_acl_in" (garbage collected once unreferenced)
  release ACL id="net1_acl_out" (garbage collected once unreferenced)
  release NAT id="net1_nat" (garbage collected once unreferenced)
"#;
    assert_eq!(text, expected);
    let empty = engine()
        .plan(&db, vec![network("net1", 1)], &Scope::Units)
        .unwrap();
    assert_eq!(empty.to_string(), "plan: no changes (1 units)\n");
}

/// The memory database without [`OwnedRowsView::values`].
pub(crate) struct Unlisted<'d>(pub(crate) &'d MemoryDb);

impl OwnedRowsView for Unlisted<'_> {
    fn schema(&self) -> &crate::schema::DbSchema {
        self.0.schema()
    }
    fn row(&self, table: &str, uuid: &crate::protocol::Uuid) -> Option<&Row> {
        self.0.row(table, uuid)
    }
    fn find(&self, table: &str, key: &str, value: &str) -> Vec<crate::protocol::Uuid> {
        self.0.find(table, key, value)
    }
    fn referrers(
        &self,
        target: &crate::protocol::Uuid,
    ) -> Vec<(String, crate::protocol::Uuid, String)> {
        self.0.referrers(target)
    }
}

#[test]
fn rows_written_ahead_are_referred_to_before_they_exist() {
    use crate::protocol::Uuid;
    let mut db = MemoryDb::nb();
    let chosen = Uuid::from_u128(0x1234_5678_9abc_4def_8123_4567_89ab_cdef);
    // Another controller's unit inserts the COPP with the chosen UUID...
    let shared = DesiredUnit::new(key("shared")).row(
        DesiredRow::new("Copp", "copp")
            .string("name", "ovnkube-default")
            .insert_uuid(chosen),
    );
    // ... and this network, planned before that commit, refers to it ahead.
    let unit = DesiredUnit::new(key("net1")).row(
        DesiredRow::new("Logical_Router", "r")
            .string("name", "r")
            .refs("copp", [RowRef::Ahead(chosen)]),
    );
    let first = engine().plan(&db, vec![shared], &Scope::Units).unwrap();
    let second = engine()
        .plan(&db, vec![unit.clone()], &Scope::Units)
        .unwrap();
    let ops = |plan: &crate::engine::Plan| -> Vec<Operation> {
        plan.operations().map(|(_, op)| op.clone()).collect()
    };
    assert!(
        matches!(ops(&first).as_slice(), [Operation::Insert { uuid: Some(u), .. }] if *u == chosen),
        "{first}"
    );
    db.transact(ops(&first)).unwrap();
    db.transact(ops(&second)).unwrap();
    let (copp, _) = by_name(&db, "Copp", "ovnkube-default");
    assert_eq!(copp, chosen);
    let (_, router) = by_name(&db, "Logical_Router", "r");
    assert_eq!(
        router.get("copp"),
        Some(&Value::Set(vec![Atom::Uuid(chosen)]))
    );
    // Once it exists, the same unit with an existing reference has nothing to do.
    let existing = DesiredUnit::new(key("net1")).row(
        DesiredRow::new("Logical_Router", "r")
            .string("name", "r")
            .refs("copp", [RowRef::Existing(chosen)]),
    );
    let again = engine().plan(&db, vec![existing], &Scope::Units).unwrap();
    assert!(again.is_empty(), "{again}");
    // Planned against a view without the row, an existing reference dangles; ahead does not.
    let empty = MemoryDb::nb();
    assert!(engine().plan(&empty, vec![unit], &Scope::Units).is_ok());
}
