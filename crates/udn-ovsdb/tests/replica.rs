//! The replica: canonical rows, update2 diff semantics, external_ids and reverse-reference
//! indexes. Pure: updates are built from JSON as the server sends them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::{Value as Json, json};
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{Atom, TableUpdates, Uuid, Value};
use udn_ovsdb::replica::{Replica, ReplicaError};
use udn_ovsdb::schema::{DbSchema, Requirements};

const LS: &str = "00000000-0000-0000-0000-00000000000a";
const P1: &str = "00000000-0000-0000-0000-000000000001";
const P2: &str = "00000000-0000-0000-0000-000000000002";
const P3: &str = "00000000-0000-0000-0000-000000000003";
const ACL: &str = "00000000-0000-0000-0000-0000000000ac";
const PG: &str = "00000000-0000-0000-0000-0000000000b0";
const LR: &str = "00000000-0000-0000-0000-0000000000c0";
const RT: &str = "00000000-0000-0000-0000-0000000000c1";

fn u(s: &str) -> Uuid {
    Uuid::parse(s).unwrap()
}

fn s(text: &str) -> Atom {
    Atom::String(text.to_owned())
}

fn nb_schema() -> DbSchema {
    DbSchema::from_text(nb::SCHEMA_JSON).unwrap()
}

fn replica(keys: &[&str]) -> Replica {
    let schema = nb_schema();
    let wanted = Requirements::default()
        .with("Logical_Switch", ["name", "ports", "acls", "external_ids"])
        .with(
            "Logical_Switch_Port",
            ["name", "addresses", "type", "options", "external_ids"],
        )
        .with("ACL", ["priority", "match", "action", "external_ids"])
        .with("Port_Group", ["name", "ports", "acls", "external_ids"])
        .with("Logical_Router", ["name", "static_routes", "options"])
        .with(
            "Logical_Router_Static_Route",
            ["ip_prefix", "nexthop", "bfd"],
        );
    Replica::new(Arc::new(schema.restricted_to(&wanted)), keys)
}

fn v2(j: &Json) -> TableUpdates {
    TableUpdates::from_v2_json(j).unwrap()
}

fn uuids(items: &[&str]) -> Value {
    Value::Set(items.iter().map(|i| Atom::Uuid(u(i))).collect())
}

fn initial() -> Json {
    json!({
        "Logical_Switch": {LS: {"initial": {
            "name": "sw", "ports": ["set", [["uuid", P2], ["uuid", P1]]], "acls": ["uuid", ACL],
            "external_ids": ["map", [["k8s.ovn.org/network", "blue"], ["k8s.ovn.org/owner", "x"]]],
        }}},
        "Logical_Switch_Port": {
            P1: {"initial": {"name": "p1", "addresses": "0a:58:0a:80:00:05 10.128.0.5"}},
            P2: {"initial": {"name": "p2", "external_ids": ["map", [["k8s.ovn.org/network", "blue"]]]}},
        },
        "ACL": {ACL: {"initial": {"priority": 1000, "match": "ip4", "action": "allow"}}},
        "Port_Group": {PG: {"initial": {"name": "pg", "ports": ["set", [["uuid", P1]]]}}},
        "NB_Global": {LR: {"initial": {"name": "not monitored"}}},
    })
}

#[test]
fn initial_rows_are_canonical_with_defaults() {
    let mut r = replica(&[]);
    r.apply(&v2(&initial())).unwrap();
    assert_eq!(r.len(), 5);
    let ls = r.get("Logical_Switch", &u(LS)).unwrap();
    // Sorted sets, a bare atom read as a one-element set.
    assert_eq!(ls["ports"], uuids(&[P1, P2]));
    assert_eq!(ls["acls"], uuids(&[ACL]));
    assert_eq!(ls["name"], Value::Atom(s("sw")));
    let p1 = r.get("Logical_Switch_Port", &u(P1)).unwrap();
    // Columns the update omits hold their defaults; unmonitored columns are absent.
    assert_eq!(p1["type"], Value::Atom(s("")));
    assert_eq!(p1["options"], Value::Map(vec![]));
    assert_eq!(p1["external_ids"], Value::Map(vec![]));
    assert_eq!(
        p1["addresses"],
        Value::Set(vec![s("0a:58:0a:80:00:05 10.128.0.5")])
    );
    assert!(!p1.contains_key("enabled"));
    assert_eq!(
        r.get("ACL", &u(ACL)).unwrap()["priority"],
        Value::Atom(Atom::Integer(1000))
    );
    // Tables outside the replica's schema are ignored.
    assert_eq!(r.rows("NB_Global").count(), 0);
}

#[test]
fn modify_toggles_sets_and_merges_maps() {
    let mut r = replica(&[]);
    r.apply(&v2(&initial())).unwrap();
    r.apply(&v2(&json!({"Logical_Switch": {LS: {"modify": {
        "ports": ["set", [["uuid", P1], ["uuid", P3]]],
        "external_ids": ["map", [["k8s.ovn.org/owner", "x"], ["k8s.ovn.org/network", "red"], ["new", "v"]]],
        "name": "sw2",
        "not_a_column": 1,
    }}}})))
    .unwrap();
    let ls = r.get("Logical_Switch", &u(LS)).unwrap();
    assert_eq!(ls["ports"], uuids(&[P2, P3]));
    assert_eq!(
        ls["external_ids"],
        Value::Map(vec![
            (s("k8s.ovn.org/network"), s("red")),
            (s("new"), s("v"))
        ])
    );
    assert_eq!(ls["name"], Value::Atom(s("sw2")));
    assert!(!ls.contains_key("not_a_column"));
}

#[test]
fn v1_replace_overwrites_columns_and_delete_removes() {
    let mut r = replica(&[]);
    r.apply(&v2(&initial())).unwrap();
    let replace = TableUpdates::from_v1_json(&json!({"Logical_Switch": {LS: {
        "old": {"ports": ["set", []]},
        "new": {"ports": ["uuid", P3], "name": "sw"},
    }}, "ACL": {ACL: {"old": {"priority": 1000}}}}))
    .unwrap();
    r.apply(&replace).unwrap();
    assert_eq!(
        r.get("Logical_Switch", &u(LS)).unwrap()["ports"],
        uuids(&[P3])
    );
    assert!(r.get("ACL", &u(ACL)).is_none());
    assert_eq!(r.len(), 4);
}

#[test]
fn modify_of_unknown_row_and_bad_values_are_errors() {
    let mut r = replica(&[]);
    let err = r
        .apply(&v2(&json!({"ACL": {ACL: {"modify": {"priority": 1}}}})))
        .unwrap_err();
    assert_eq!(
        err,
        ReplicaError::MissingRow {
            table: "ACL".into(),
            uuid: u(ACL),
            kind: "modify"
        }
    );
    assert!(matches!(
        r.apply(&v2(&json!({"ACL": {ACL: {"delete": null}}}))),
        Err(ReplicaError::MissingRow { kind: "delete", .. })
    ));
    let err = r
        .apply(&v2(
            &json!({"ACL": {ACL: {"insert": {"priority": "high"}}}}),
        ))
        .unwrap_err();
    assert!(
        matches!(&err, ReplicaError::Value { table, column, .. } if table == "ACL" && column == "priority"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("table ACL row {ACL} column priority: value does not fit the column type")
    );
}

#[test]
fn external_ids_lookups_indexed_and_scanned() {
    for keys in [&["k8s.ovn.org/network"][..], &[]] {
        let mut r = replica(keys);
        r.apply(&v2(&initial())).unwrap();
        assert_eq!(
            r.find("Logical_Switch", "k8s.ovn.org/network", "blue"),
            vec![u(LS)]
        );
        assert_eq!(
            r.find("Logical_Switch_Port", "k8s.ovn.org/network", "blue"),
            vec![u(P2)]
        );
        r.apply(&v2(&json!({
            "Logical_Switch": {LS: {"modify": {"external_ids": ["map", [["k8s.ovn.org/network", "red"]]]}}},
            "Logical_Switch_Port": {P2: {"delete": null}, P3: {"insert": {"name": "p3",
                "external_ids": ["map", [["k8s.ovn.org/network", "blue"]]]}}},
        })))
        .unwrap();
        assert_eq!(
            r.find("Logical_Switch", "k8s.ovn.org/network", "blue"),
            Vec::<Uuid>::new()
        );
        assert_eq!(
            r.find("Logical_Switch", "k8s.ovn.org/network", "red"),
            vec![u(LS)]
        );
        assert_eq!(
            r.find("Logical_Switch_Port", "k8s.ovn.org/network", "blue"),
            vec![u(P3)]
        );
        assert_eq!(r.find("Nope", "k8s.ovn.org/network", "blue"), vec![]);
        r.clear();
        assert!(r.is_empty());
        assert_eq!(
            r.find("Logical_Switch", "k8s.ovn.org/network", "red"),
            vec![]
        );
    }
}

#[test]
fn referrers_follow_strong_weak_set_and_scalar_refs() {
    let mut r = replica(&[]);
    r.apply(&v2(&initial())).unwrap();
    let referrers = |r: &Replica, target| {
        r.referrers(&u(target))
            .into_iter()
            .map(|(t, row, c)| format!("{t}/{row}/{c}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        referrers(&r, P1),
        vec![
            format!("Logical_Switch/{LS}/ports"),
            format!("Port_Group/{PG}/ports")
        ]
    );
    // Port_Group.ports is a weak reference; Logical_Router_Static_Route.bfd an optional one.
    r.apply(&v2(&json!({
        "Logical_Router": {LR: {"insert": {"name": "lr", "static_routes": ["uuid", RT]}}},
        "Logical_Router_Static_Route": {RT: {"insert": {"ip_prefix": "0.0.0.0/0", "nexthop": "10.0.0.1",
            "bfd": ["uuid", P3]}}},
        "Port_Group": {PG: {"modify": {"ports": ["set", [["uuid", P1], ["uuid", P2]]]}}},
    })))
    .unwrap();
    assert_eq!(
        referrers(&r, P1),
        vec![format!("Logical_Switch/{LS}/ports")]
    );
    assert_eq!(
        referrers(&r, P2),
        vec![
            format!("Logical_Switch/{LS}/ports"),
            format!("Port_Group/{PG}/ports")
        ]
    );
    assert_eq!(
        referrers(&r, RT),
        vec![format!("Logical_Router/{LR}/static_routes")]
    );
    assert_eq!(
        referrers(&r, P3),
        vec![format!("Logical_Router_Static_Route/{RT}/bfd")]
    );
    r.apply(&v2(&json!({"Logical_Switch": {LS: {"delete": null}}})))
        .unwrap();
    assert_eq!(referrers(&r, P1), Vec::<String>::new());
    assert_eq!(referrers(&r, P2), vec![format!("Port_Group/{PG}/ports")]);
}

#[test]
fn replicas_compare_by_rows() {
    let mut a = replica(&[]);
    let mut b = replica(&["k8s.ovn.org/network"]);
    a.apply(&v2(&initial())).unwrap();
    assert_ne!(a, b);
    b.apply(&v2(&initial())).unwrap();
    assert_eq!(a, b);
    a.apply(&v2(&json!({"ACL": {ACL: {"delete": null}}})))
        .unwrap();
    b.apply(&v2(&json!({"ACL": {ACL: {"delete": null}}})))
        .unwrap();
    assert_eq!(a, b);
}

#[test]
fn referrers_from_scalar_and_map_reference_columns() {
    let schema = DbSchema::parse(&json!({"name": "T", "version": "1.0.0", "tables": {
        "Target": {"columns": {"n": {"type": "integer"}}, "isRoot": true},
        "Holder": {"columns": {
            "one": {"type": {"key": {"type": "uuid", "refTable": "Target"}}},
            "by_name": {"type": {"key": "string",
                "value": {"type": "uuid", "refTable": "Target", "refType": "weak"},
                "min": 0, "max": "unlimited"}},
            "by_ref": {"type": {"key": {"type": "uuid", "refTable": "Target"}, "value": "string",
                "min": 0, "max": "unlimited"}},
            "plain": {"type": "uuid"}}}}}))
    .unwrap();
    let mut r = Replica::new(Arc::new(schema), &[]);
    r.apply(&v2(&json!({"Holder": {LS: {"insert": {
        "one": ["uuid", P1],
        "by_name": ["map", [["a", ["uuid", P2]]]],
        "by_ref": ["map", [[["uuid", P3], "x"]]],
        "plain": ["uuid", ACL],
    }}}})))
    .unwrap();
    let holder = |column: &str| vec![("Holder".to_owned(), u(LS), column.to_owned())];
    assert_eq!(r.referrers(&u(P1)), holder("one"));
    assert_eq!(r.referrers(&u(P2)), holder("by_name"));
    assert_eq!(r.referrers(&u(P3)), holder("by_ref"));
    // A uuid column without refTable is not a reference.
    assert_eq!(r.referrers(&u(ACL)), vec![]);
    r.apply(&v2(&json!({"Holder": {LS: {"modify": {
        "one": ["uuid", P2],
        "by_name": ["map", [["a", ["uuid", P2]]]],
    }}}})))
    .unwrap();
    assert_eq!(r.referrers(&u(P1)), vec![]);
    assert_eq!(r.referrers(&u(P2)), holder("one"));
}

const OWNER: &str = "k8s.ovn.org/owner";

/// Versions of owner names `x` and `y` and of a name never seen.
fn versions(r: &Replica) -> [Option<u64>; 3] {
    [
        r.version(OWNER, "x"),
        r.version(OWNER, "y"),
        r.version(OWNER, "never"),
    ]
}

#[test]
fn owner_versions_move_on_every_change_of_a_row_carrying_the_owner() {
    let mut r = replica(&[OWNER, "k8s.ovn.org/network"]);
    assert_eq!(r.versioned_key(), Some(OWNER));
    assert_eq!(r.version("k8s.ovn.org/network", "blue"), None);
    let [x0, y0, never0] = versions(&r);
    assert!(x0.is_some() && x0 == y0 && y0 == never0);
    r.apply(&v2(&initial())).unwrap();
    let [x1, y1, never1] = versions(&r);
    assert_ne!(x1, x0, "insert");
    assert_eq!(
        (y1, never1),
        (y0, never0),
        "untouched names keep their version"
    );
    let mut seen = vec![x0, x1];
    let mut step = |r: &mut Replica, update: Json, x_moves: bool, y_moves: bool, what: &str| {
        let [x_before, y_before, never] = versions(r);
        r.apply(&v2(&update)).unwrap();
        let [x, y, never_after] = versions(r);
        assert_eq!(x != x_before, x_moves, "{what}: x");
        assert_eq!(y != y_before, y_moves, "{what}: y");
        assert_eq!(never, never_after, "{what}");
        let moved: Vec<Option<u64>> = [(x_moves, x), (y_moves, y)]
            .into_iter()
            .filter_map(|(moved, v)| moved.then_some(v))
            .collect();
        assert!(
            moved.iter().all(|v| !seen.contains(v)),
            "{what}: a version came back"
        );
        seen.extend(moved);
    };
    // Any column of a row carrying x, also one far from external_ids (a reference the server
    // drops, as for a weak reference to a deleted row).
    step(
        &mut r,
        json!({"Logical_Switch": {LS: {"modify": {"name": "sw2"}}}}),
        true,
        false,
        "name",
    );
    step(
        &mut r,
        json!({"Logical_Switch": {LS: {"modify": {"acls": ["uuid", ACL]}}}}),
        true,
        false,
        "reference dropped",
    );
    // A row of another owner: x keeps its version.
    step(
        &mut r,
        json!({"Logical_Switch_Port": {P1: {"modify": {"name": "p1b"}}}}),
        false,
        false,
        "unowned",
    );
    // The owner stamp moves from x to y: both move, once for one update.
    step(
        &mut r,
        json!({"Logical_Switch": {LS: {"modify": {"external_ids": ["map", [["k8s.ovn.org/owner", "y"]]]}}}}),
        true,
        true,
        "owner changed",
    );
    // A row inserted with y's stamp (e.g. a duplicate), then y's rows deleted.
    step(
        &mut r,
        json!({"Logical_Switch_Port": {P3: {"insert": {"name": "p3", "external_ids": ["map", [["k8s.ovn.org/owner", "y"]]]}}}}),
        false,
        true,
        "inserted",
    );
    step(
        &mut r,
        json!({"Logical_Switch_Port": {P3: {"delete": null}}}),
        false,
        true,
        "deleted",
    );
    // One update touching x and y twice stamps both with one version.
    r.apply(&v2(&json!({
        "Logical_Switch": {LS: {"modify": {"external_ids": ["map", [["k8s.ovn.org/owner", "x"]]]}}},
        "Logical_Switch_Port": {P2: {"modify": {"external_ids": ["map", [["k8s.ovn.org/owner", "y"]]]}}},
    })))
    .unwrap();
    let [x, y, _] = versions(&r);
    assert_eq!(x, y);
    // A full resync: every name, seen or not, gets a version never handed out before.
    r.clear();
    let [x2, y2, never2] = versions(&r);
    assert!(x2 == y2 && y2 == never2);
    assert!(!seen.contains(&x2) && x2 != x);
    // Another replica (the client replaces its replica on a full resync) never repeats one.
    let other = replica(&[OWNER]);
    assert_ne!(other.version(OWNER, "x"), x2);
    // Without the owner key indexed nothing is versioned, unless asked for.
    assert_eq!(replica(&[]).version(OWNER, "x"), None);
    let custom = replica(&[]).with_versioned_key(Some("k8s.ovn.org/network"));
    assert!(custom.version("k8s.ovn.org/network", "blue").is_some());
}

#[test]
fn indexed_values_list_the_distinct_values_present() {
    let mut r = replica(&[OWNER]);
    assert!(
        r.indexed_values("Logical_Switch", "k8s.ovn.org/network")
            .is_none()
    );
    let listed = |r: &Replica, table: &str| {
        let mut values: Vec<String> = r
            .indexed_values(table, OWNER)
            .unwrap()
            .map(str::to_owned)
            .collect();
        values.sort();
        values
    };
    assert!(listed(&r, "Logical_Switch").is_empty());
    r.apply(&v2(&initial())).unwrap();
    r.apply(&v2(&json!({"Logical_Switch_Port": {
        P1: {"modify": {"external_ids": ["map", [["k8s.ovn.org/owner", "x"]]]}},
        P3: {"insert": {"name": "p3", "external_ids": ["map", [["k8s.ovn.org/owner", "z"]]]}},
    }})))
    .unwrap();
    assert_eq!(listed(&r, "Logical_Switch"), vec!["x"]);
    assert_eq!(listed(&r, "Logical_Switch_Port"), vec!["x", "z"]);
    r.apply(&v2(&json!({"Logical_Switch_Port": {P3: {"delete": null}}})))
        .unwrap();
    assert_eq!(listed(&r, "Logical_Switch_Port"), vec!["x"]);
    assert!(listed(&r, "ACL").is_empty());
}
