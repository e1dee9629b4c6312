//! Skipping converged units: an unchanged desired state against an unchanged database is
//! not compared again, and nothing that changes what a unit owns or wants is ever skipped.

use std::sync::Mutex;

use super::memory::MemoryDb;
use super::synced::{Synced, version};
use super::{CONTROLLER, block_on, by_name, engine, key, network, s};
use crate::engine::{
    ApplyPolicy, DesiredRow, DesiredUnit, Engine, OwnedRowsView, PlanError, RowRef, Scope,
    TransactFailure, Transactor, UnitKey, UnitOutcome,
};
use crate::protocol::{
    Atom, Condition, ConditionFunction, Mutation, Mutator, Operation, OperationResult, Row, Uuid,
    Value,
};
use crate::replica::Replica;
use crate::schema::DbSchema;

fn nets(n: usize) -> Vec<DesiredUnit> {
    (0..n).map(|i| network(&format!("net{i}"), 2)).collect()
}

fn where_uuid(uuid: Uuid) -> Vec<Condition> {
    vec![Condition {
        column: "_uuid".into(),
        function: ConditionFunction::Equal,
        value: Value::Atom(Atom::Uuid(uuid)),
    }]
}

/// `external_ids` with our stamps for `owner` and `id` (`owner` left out when `None`).
fn stamps(owner: Option<&str>, id: &str) -> Value {
    let mut pairs = vec![
        (s("k8s.ovn.org/id"), s(id)),
        (s("k8s.ovn.org/owner-controller"), s(CONTROLLER)),
        (s("k8s.ovn.org/owner-type"), s("Network")),
    ];
    if let Some(owner) = owner {
        pairs.push((s("k8s.ovn.org/owner"), s(owner)));
    }
    Value::Map(pairs)
}

fn uuid_of(synced: &Synced, table: &str, name: &str) -> Uuid {
    by_name(&synced.db.db.lock().unwrap(), table, name).0
}

fn row_of(synced: &Synced, table: &str, name: &str) -> Row {
    by_name(&synced.db.db.lock().unwrap(), table, name)
        .1
        .clone()
}

#[test]
fn an_unchanged_reapply_compares_nothing_and_sends_nothing() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = engine();
    let scope = Scope::Units;
    let report = synced.reconcile(&engine, nets(3), &scope);
    assert!(report.ops > 0);
    let plan = synced.plan(&engine, nets(3), &scope);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (0, 3));
    assert_eq!(plan.units().count(), 3);
    assert_eq!(plan.to_string(), "plan: no changes (3 units)\n");
    let sent = synced.db.sent().len();
    let report = synced.reconcile(&engine, nets(3), &scope);
    assert_eq!((report.transactions, report.ops), (0, 0));
    assert_eq!(synced.db.sent().len(), sent);
    assert!(
        report
            .units
            .values()
            .all(|o| matches!(o, UnitOutcome::Unchanged))
    );
    // Clones share the memory, a new engine has none.
    let clone = engine.clone();
    assert_eq!(synced.plan(&clone, nets(3), &scope).skipped_units(), 3);
    assert_eq!(
        synced
            .plan(&super::engine(), nets(3), &scope)
            .compared_units(),
        3
    );
    engine.forget_converged();
    let plan = synced.plan(&engine, nets(3), &scope);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (3, 0));
    assert!(plan.is_empty());
    // That comparison found nothing to do: remembered.
    assert_eq!(synced.plan(&engine, nets(3), &scope).skipped_units(), 3);
}

/// Changes another writer makes to net1's rows (2 nodes), each in a transaction of its own.
fn drifts(synced: &Synced) -> Vec<(&'static str, Vec<Operation>)> {
    let switch = uuid_of(synced, "Logical_Switch", "net1_node0");
    let router = uuid_of(synced, "Logical_Router", "net1_ovn_cluster_router");
    let port = uuid_of(synced, "Logical_Switch_Port", "k8s-net1_node1");
    let pg = uuid_of(synced, "Port_Group", "net1_pg");
    let mut duplicate = row_of(synced, "Logical_Switch", "net1_node0");
    duplicate.remove("ports");
    let update = |table: &str, uuid, column: &str, value| Operation::Update {
        table: table.into(),
        where_: where_uuid(uuid),
        row: Row::from([(column.to_owned(), value)]),
    };
    vec![
        (
            "an owned column modified",
            vec![update(
                "Logical_Switch",
                switch,
                "other_config",
                Value::Map(vec![(s("subnet"), s("192.168.0.0/24"))]),
            )],
        ),
        (
            "a column of an owned non-root row modified",
            vec![update(
                "Logical_Switch_Port",
                port,
                "addresses",
                Value::Set(vec![s("dynamic")]),
            )],
        ),
        (
            "an owned root row deleted",
            vec![Operation::Delete {
                table: "Logical_Switch".into(),
                where_: where_uuid(switch),
            }],
        ),
        (
            "an element removed from an owned reference set",
            vec![Operation::Mutate {
                table: "Port_Group".into(),
                where_: where_uuid(pg),
                mutations: vec![Mutation {
                    column: "ports".into(),
                    mutator: Mutator::Delete,
                    value: Value::Set(vec![Atom::Uuid(port)]),
                }],
            }],
        ),
        (
            "a row inserted with our stamps",
            vec![Operation::Insert {
                table: "Logical_Switch".into(),
                row: Row::from([
                    ("name".into(), Value::Atom(s("intruder"))),
                    ("external_ids".into(), stamps(Some("net1"), "intruder")),
                ]),
                uuid_name: None,
                uuid: None,
            }],
        ),
        (
            "a duplicate of an owned row inserted",
            vec![Operation::Insert {
                table: "Logical_Switch".into(),
                row: duplicate,
                uuid_name: None,
                uuid: None,
            }],
        ),
        (
            "the owner stamp removed",
            vec![update(
                "Logical_Router",
                router,
                "external_ids",
                stamps(None, "net1_ovn_cluster_router"),
            )],
        ),
        (
            "a key added to external_ids",
            vec![Operation::Mutate {
                table: "Logical_Router".into(),
                where_: where_uuid(router),
                mutations: vec![Mutation {
                    column: "external_ids".into(),
                    mutator: Mutator::Insert,
                    value: Value::Map(vec![(s("extra"), s("x"))]),
                }],
            }],
        ),
    ]
}

#[test]
fn drift_behind_our_back_is_never_skipped() {
    for case in 0..8 {
        let synced = Synced::new(MemoryDb::nb());
        let engine = engine();
        let scope = Scope::OwnerType("Network".into());
        synced.reconcile(&engine, nets(3), &scope);
        assert_eq!(synced.plan(&engine, nets(3), &scope).skipped_units(), 3);
        let mut all = drifts(&synced);
        assert_eq!(all.len(), 8);
        let (what, ops) = all.swap_remove(case);
        let before = version(&synced, "net1");
        synced.drift(ops);
        assert_ne!(version(&synced, "net1"), before, "{what}");
        let plan = synced.plan(&engine, nets(3), &scope);
        assert_eq!(
            (plan.compared_units(), plan.skipped_units()),
            (1, 2),
            "{what}"
        );
        assert!(!plan.is_empty(), "{what}: nothing planned");
        assert!(
            plan.operations().all(|(unit, _)| *unit == key("net1")),
            "{what}: {plan}"
        );
        synced.reconcile(&engine, nets(3), &scope);
        synced
            .holds(nets(3), &scope)
            .unwrap_or_else(|plan| panic!("{what}: {plan}"));
        let plan = synced.plan(&engine, nets(3), &scope);
        assert_eq!(plan.skipped_units(), 3, "{what}");
    }
}

#[test]
fn a_foreign_element_added_to_our_set_is_compared_and_kept() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = engine();
    synced.reconcile(&engine, nets(2), &Scope::Units);
    let switch = uuid_of(&synced, "Logical_Switch", "net1_node0");
    synced.drift(vec![
        Operation::Insert {
            table: "Logical_Switch_Port".into(),
            row: Row::from([("name".into(), Value::Atom(s("pod1")))]),
            uuid_name: Some("pod".into()),
            uuid: None,
        },
        Operation::Mutate {
            table: "Logical_Switch".into(),
            where_: where_uuid(switch),
            mutations: vec![Mutation {
                column: "ports".into(),
                mutator: Mutator::Insert,
                value: Value::Set(vec![Atom::NamedUuid("pod".into())]),
            }],
        },
    ]);
    let plan = synced.plan(&engine, nets(2), &Scope::Units);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (1, 1));
    assert!(plan.is_empty(), "{plan}");
    assert_eq!(
        synced.plan(&engine, nets(2), &Scope::Units).skipped_units(),
        2
    );
    let ports = row_of(&synced, "Logical_Switch", "net1_node0");
    assert_eq!(
        ports
            .get("ports")
            .and_then(|p| p.clone().into_set())
            .map(|p| p.len()),
        Some(3)
    );
}

#[test]
fn a_changed_desired_unit_is_never_skipped() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = engine();
    synced.reconcile(&engine, nets(3), &Scope::Units);
    let mut units = nets(3);
    let row = units[1]
        .rows
        .iter_mut()
        .find(|r| r.id == "net1_node0")
        .unwrap();
    row.columns.insert(
        "other_config".into(),
        Value::Map(vec![(s("subnet"), s("10.9.0.0/24"))]),
    );
    let plan = synced.plan(&engine, units.clone(), &Scope::Units);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (1, 2));
    assert_eq!(plan.op_count(), 1, "{plan}");
    synced.reconcile(&engine, units.clone(), &Scope::Units);
    synced.holds(units.clone(), &Scope::Units).unwrap();
    assert_eq!(
        synced.plan(&engine, units, &Scope::Units).skipped_units(),
        3
    );
    // Back to the first state: compared again, changed back.
    let plan = synced.plan(&engine, nets(3), &Scope::Units);
    assert_eq!((plan.compared_units(), plan.op_count()), (1, 1));
    // Fewer rows wanted: compared.
    let mut units = nets(3);
    units[2]
        .rows
        .retain(|r| r.table != "Port_Group" && r.table != "ACL");
    let plan = synced.plan(&engine, units, &Scope::Units);
    assert_eq!(plan.compared_units(), 2, "{plan}");
}

#[test]
fn after_a_resync_nothing_is_skipped_until_compared_again() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = engine();
    synced.reconcile(&engine, nets(3), &Scope::Units);
    assert_eq!(
        synced.plan(&engine, nets(3), &Scope::Units).skipped_units(),
        3
    );
    for resync in [Synced::resync, Synced::replace_replica] {
        resync(&synced);
        let plan = synced.plan(&engine, nets(3), &Scope::Units);
        assert_eq!((plan.compared_units(), plan.skipped_units()), (3, 0));
        assert!(plan.is_empty());
        assert_eq!(
            synced.plan(&engine, nets(3), &Scope::Units).skipped_units(),
            3
        );
    }
}

/// A view counting the rows it is asked to find by owner name.
pub(crate) struct Counting<'r> {
    replica: &'r Replica,
    finds: Mutex<Vec<String>>,
}

impl OwnedRowsView for Counting<'_> {
    fn schema(&self) -> &DbSchema {
        self.replica.schema()
    }
    fn row(&self, table: &str, uuid: &Uuid) -> Option<&Row> {
        self.replica.get(table, uuid)
    }
    fn find(&self, table: &str, key: &str, value: &str) -> Vec<Uuid> {
        if key == crate::engine::OWNER_KEY {
            self.finds.lock().unwrap().push(value.to_owned());
        }
        self.replica.find(table, key, value)
    }
    fn referrers(&self, target: &Uuid) -> Vec<(String, Uuid, String)> {
        self.replica.referrers(target)
    }
    fn version(&self, key: &str, value: &str) -> Option<u64> {
        self.replica.version(key, value)
    }
    fn values(&self, table: &str, key: &str) -> Option<Vec<&str>> {
        Some(self.replica.indexed_values(table, key)?.collect())
    }
    fn controller_rows(&self, table: &str, controller: &str) -> Option<Vec<Uuid>> {
        self.replica
            .find_indexed(table, crate::engine::OWNER_CONTROLLER_KEY, controller)
    }
}

/// A plan of `units` against the replica, and the owner names whose rows it looked up.
pub(crate) fn owner_finds(
    synced: &Synced,
    units: Vec<DesiredUnit>,
    scope: &Scope,
    engine: &crate::engine::Engine,
) -> (crate::engine::Plan, Vec<String>) {
    let replica = synced.replica();
    let view = Counting {
        replica: &replica,
        finds: Mutex::new(Vec::new()),
    };
    let plan = engine.plan(&view, units, scope).unwrap();
    let mut finds = view.finds.into_inner().unwrap();
    finds.sort();
    finds.dedup();
    (plan, finds)
}

#[test]
fn a_whole_owner_type_deletes_gone_units_without_reading_converged_ones() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = engine();
    let scope = Scope::OwnerType("Network".into());
    let foreign = synced.db.db.lock().unwrap().put(
        "Logical_Switch",
        Row::from([
            ("name".into(), Value::Atom(s("theirs"))),
            (
                "external_ids".into(),
                Value::Map(vec![
                    (s("k8s.ovn.org/owner"), s("net9")),
                    (s("k8s.ovn.org/owner-controller"), s("other")),
                ]),
            ),
        ]),
    );
    synced.sync();
    let cluster = DesiredUnit::new(UnitKey::new("Cluster", "shared"))
        .row(DesiredRow::new("Port_Group", "cluster_pg").string("name", "cluster_pg"));
    synced.reconcile(&engine, vec![cluster], &Scope::Units);
    synced.reconcile(&engine, nets(3), &scope);
    // Converged units and names owning none of our Network rows are not read.
    let (plan, finds) = owner_finds(&synced, nets(3), &scope, &engine);
    assert_eq!(plan.skipped_units(), 3);
    assert!(finds.is_empty(), "{finds:?}");
    // net1 no longer desired: deleted whole, the others skipped.
    let mut units = nets(3);
    units.remove(1);
    let (plan, finds) = owner_finds(&synced, units.clone(), &scope, &engine);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (0, 2));
    assert_eq!(finds, vec!["net1".to_owned()]);
    assert!(plan.unit_operations(&key("net1")).count() > 0);
    assert!(
        plan.unit_operations(&key("net1"))
            .all(|op| matches!(op, Operation::Delete { .. }))
    );
    synced.reconcile(&engine, units.clone(), &scope);
    synced.holds(units.clone(), &scope).unwrap();
    assert!(
        synced
            .db
            .db
            .lock()
            .unwrap()
            .row_exists("Logical_Switch", foreign)
    );
    let (_, finds) = owner_finds(&synced, units.clone(), &scope, &engine);
    assert!(finds.is_empty(), "{finds:?}");
    // The foreign name becomes one of our units: its version moves, it is read and deleted.
    synced.drift(vec![Operation::Update {
        table: "Logical_Switch".into(),
        where_: where_uuid(foreign),
        row: Row::from([("external_ids".into(), stamps(Some("net9"), "theirs"))]),
    }]);
    let (plan, finds) = owner_finds(&synced, units.clone(), &scope, &engine);
    assert_eq!(finds, vec!["net9".to_owned()]);
    assert_eq!(plan.unit_operations(&key("net9")).count(), 1, "{plan}");
    synced.reconcile(&engine, units.clone(), &scope);
    assert!(
        !synced
            .db
            .db
            .lock()
            .unwrap()
            .row_exists("Logical_Switch", foreign)
    );
    // Another owner type is never in scope.
    by_name(&synced.db.db.lock().unwrap(), "Port_Group", "cluster_pg");
}

#[test]
fn duplicate_rows_across_a_skipped_and_a_changed_unit_are_refused() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = engine();
    synced.reconcile(&engine, nets(2), &Scope::Units);
    let mut units = nets(2);
    units[1] = units[1]
        .clone()
        .row(DesiredRow::new("Logical_Switch", "net0_node0"));
    let error = engine
        .plan(&*synced.replica(), units, &Scope::Units)
        .unwrap_err();
    assert!(
        matches!(&error, PlanError::DuplicateRow { at, first } if at.unit == key("net1") && *first == key("net0")),
        "{error}"
    );
}

#[test]
fn a_failing_plan_remembers_nothing() {
    let synced = Synced::new(MemoryDb::nb());
    synced.reconcile(&engine(), nets(1), &Scope::Units);
    let engine = engine();
    let bad = DesiredUnit::new(key("bad"))
        .row(DesiredRow::new("Logical_Switch", "bad").string("no_such_column", "x"));
    let mut units = nets(1);
    units.push(bad);
    assert!(
        engine
            .plan(&*synced.replica(), units, &Scope::Units)
            .is_err()
    );
    let plan = synced.plan(&engine, nets(1), &Scope::Units);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (1, 0));
    assert_eq!(
        synced.plan(&engine, nets(1), &Scope::Units).skipped_units(),
        1
    );
}

/// A unit "shared" with a Copp row, and a unit referring to it.
fn consumer(name: &str, extra: &str) -> DesiredUnit {
    DesiredUnit::new(key(name)).row(
        DesiredRow::new("Logical_Switch", name)
            .string("name", name)
            .map("other_config", [("extra", extra)])
            .refs("copp", [RowRef::desired("Copp", "copp")]),
    )
}

fn shared() -> DesiredUnit {
    DesiredUnit::new(UnitKey::new("Cluster", "shared"))
        .row(DesiredRow::new("Copp", "copp").string("name", "ovnkube-default"))
}

#[test]
fn references_to_rows_of_skipped_units_resolve_to_their_rows() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = engine();
    synced.reconcile(&engine, vec![shared(), consumer("c1", "a")], &Scope::Units);
    let units = vec![shared(), consumer("c1", "b"), consumer("c2", "a")];
    let plan = synced.plan(&engine, units.clone(), &Scope::Units);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (2, 1));
    assert!(
        plan.unit_operations(&UnitKey::new("Cluster", "shared"))
            .next()
            .is_none()
    );
    let copp = uuid_of(&synced, "Copp", "ovnkube-default");
    let inserted = plan.unit_operations(&key("c2")).find_map(|op| match op {
        Operation::Insert { row, .. } => row.get("copp").cloned(),
        _ => None,
    });
    assert_eq!(inserted, Some(Value::Set(vec![Atom::Uuid(copp)])));
    synced.reconcile(&engine, units.clone(), &Scope::Units);
    synced.holds(units.clone(), &Scope::Units).unwrap();
    assert_eq!(
        synced.plan(&engine, units, &Scope::Units).skipped_units(),
        3
    );
}

#[test]
fn a_skipped_unit_referring_to_a_row_the_plan_removes_is_compared() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = engine();
    let provider = || {
        DesiredUnit::new(key("p"))
            .row(DesiredRow::new("Logical_Switch_Port", "p").string("name", "p"))
    };
    let consumer = || {
        DesiredUnit::new(key("c")).row(
            DesiredRow::new("Logical_Switch", "c")
                .string("name", "c")
                .refs("ports", [RowRef::desired("Logical_Switch_Port", "p")]),
        )
    };
    synced.reconcile(&engine, vec![consumer(), provider()], &Scope::Units);
    assert_eq!(
        synced
            .plan(&engine, vec![consumer(), provider()], &Scope::Units)
            .skipped_units(),
        2
    );
    // Another writer adds a copy of p with a smaller UUID: p's plan keeps the copy and
    // removes the row c's switch holds.
    {
        let mut db = synced.db.db.lock().unwrap();
        let row = by_name(&db, "Logical_Switch_Port", "p").1.clone();
        db.tables
            .get_mut("Logical_Switch_Port")
            .unwrap()
            .insert(Uuid::from_u128(1), row);
    }
    synced.sync();
    let plan = synced.plan(&engine, vec![consumer(), provider()], &Scope::Units);
    assert_eq!(
        (plan.compared_units(), plan.skipped_units()),
        (2, 0),
        "{plan}"
    );
    synced.reconcile(&engine, vec![consumer(), provider()], &Scope::Units);
    synced
        .holds(vec![consumer(), provider()], &Scope::Units)
        .unwrap();
    assert_eq!(synced.db.db.lock().unwrap().count("Logical_Switch_Port"), 1);
}

#[test]
fn engines_are_shared_across_threads() {
    fn shareable<T: Send + Sync + Clone + 'static>() {}
    shareable::<Engine>();
}

/// Commits through `synced`, then lets another writer change net1's router before the
/// engine looks again.
struct Racing<'s> {
    synced: &'s Synced,
}

impl Transactor for Racing<'_> {
    async fn transact(&self, ops: Vec<Operation>) -> Result<Vec<OperationResult>, TransactFailure> {
        let result = self.synced.transact(ops).await;
        let router = uuid_of(self.synced, "Logical_Router", "net1_ovn_cluster_router");
        self.synced.drift(vec![Operation::Mutate {
            table: "Logical_Router".into(),
            where_: where_uuid(router),
            mutations: vec![Mutation {
                column: "external_ids".into(),
                mutator: Mutator::Insert,
                value: Value::Map(vec![(s("racing"), s("writer"))]),
            }],
        }]);
        result
    }
}

#[test]
fn a_change_racing_the_apply_is_not_remembered_as_converged() {
    let synced = Synced::new(MemoryDb::nb());
    let engine = engine();
    let racing = Racing { synced: &synced };
    let report = block_on(engine.reconcile_with(
        &racing,
        || synced.replica(),
        nets(2),
        &Scope::Units,
        &ApplyPolicy::default(),
    ))
    .unwrap();
    assert!(report.is_success(), "{report:?}");
    // The verification saw the racing change: net1 is compared again (and put back), net0
    // is remembered.
    let plan = synced.plan(&engine, nets(2), &Scope::Units);
    assert_eq!((plan.compared_units(), plan.skipped_units()), (1, 1));
    assert_eq!(plan.unit_operations(&key("net1")).count(), 1, "{plan}");
    synced.reconcile(&engine, nets(2), &Scope::Units);
    synced.holds(nets(2), &Scope::Units).unwrap();
    assert_eq!(
        synced.plan(&engine, nets(2), &Scope::Units).skipped_units(),
        2
    );
}
