use std::collections::BTreeMap;

use super::*;
use crate::sb::remote_binding_ops;

fn text(v: &str) -> Value {
    Value::Atom(Atom::String(v.to_owned()))
}

fn uuid(n: u128) -> Uuid {
    Uuid::parse(&format!("00000000-0000-0000-0000-{n:012x}")).unwrap()
}

fn node(name: &str, chassis: Option<&str>, ips: &[&str], local: bool) -> Node {
    let mut node = Node::new(name, local);
    node.chassis_id = chassis.map(str::to_owned);
    node.encap_ips = ips.iter().map(|ip| ip.parse().unwrap()).collect();
    node
}

fn chassis_row(name: &str, hostname: &str, remote: bool, encaps: &[Uuid]) -> Row {
    let mut other = BTreeMap::new();
    if remote {
        other.insert(IS_REMOTE.to_owned(), "true".to_owned());
    }
    Row::from([
        ("name".to_owned(), text(name)),
        ("hostname".to_owned(), text(hostname)),
        ("other_config".to_owned(), map_value(&other)),
        (
            "encaps".to_owned(),
            Value::Set(encaps.iter().map(|u| Atom::Uuid(*u)).collect()),
        ),
    ])
}

fn encap_row(ip: &str, chassis: &str) -> Row {
    Row::from([
        ("type".to_owned(), text("geneve")),
        ("ip".to_owned(), text(ip)),
        (
            "options".to_owned(),
            map_value(&BTreeMap::from([("csum".to_owned(), "true".to_owned())])),
        ),
        ("chassis_name".to_owned(), text(chassis)),
    ])
}

#[test]
fn remote_nodes_become_chassis_and_missing_annotations_are_reported() {
    let nodes = [
        node("node1", Some("c1"), &["172.18.0.2"], true),
        node("node2", Some("c2"), &["172.18.0.3"], false),
        node("node3", None, &["172.18.0.4"], false),
        node("node4", Some("c4"), &[], false),
    ];
    let (desired, missing) = remote_chassis(&nodes);
    assert_eq!(desired.len(), 1);
    assert_eq!(desired[0].name, "c2");
    assert_eq!(desired[0].hostname, "node2");
    assert_eq!(
        missing,
        [
            ("node3".to_owned(), "k8s.ovn.org/node-chassis-id"),
            ("node4".to_owned(), "k8s.ovn.org/node-encap-ips")
        ]
    );
    let empty: BTreeMap<String, Vec<(Uuid, Row)>> = BTreeMap::new();
    let ops = remote_chassis_ops(&desired, &empty);
    assert_eq!(ops.len(), 2, "{ops:?}");
    assert!(matches!(&ops[0], Operation::Insert { table, .. } if table == "Encap"));
    let Operation::Insert { table, row, .. } = &ops[1] else {
        panic!()
    };
    assert_eq!(table, "Chassis");
    assert_eq!(map_get(row, "other_config", IS_REMOTE), Some("true"));
}

#[test]
fn converged_chassis_need_nothing_changes_are_updates_and_stale_remote_ones_go() {
    let (desired, _) = remote_chassis(&[node("node2", Some("c2"), &["172.18.0.3"], false)]);
    let mut db: BTreeMap<String, Vec<(Uuid, Row)>> = BTreeMap::new();
    db.insert(
        "Chassis".into(),
        vec![
            (uuid(1), chassis_row("c2", "node2", true, &[uuid(10)])),
            (uuid(2), chassis_row("local", "node1", false, &[uuid(11)])),
        ],
    );
    db.insert(
        "Encap".into(),
        vec![
            (uuid(10), encap_row("172.18.0.3", "c2")),
            (uuid(11), encap_row("172.18.0.2", "local")),
        ],
    );
    assert_eq!(remote_chassis_ops(&desired, &db), []);
    // The remote node moved to another IP: its encaps are replaced.
    let (moved, _) = remote_chassis(&[node("node2", Some("c2"), &["172.18.0.9"], false)]);
    let ops = remote_chassis_ops(&moved, &db);
    assert!(
        matches!(&ops[..], [Operation::Insert { .. }, Operation::Update { row, .. }] if row.contains_key("encaps"))
    );
    // No remote node wanted: the remote chassis goes, the local one stays.
    let ops = remote_chassis_ops(&[], &db);
    assert_eq!(ops.len(), 1);
    assert!(
        matches!(&ops[0], Operation::Delete { where_, .. } if where_[0].value == Value::Atom(Atom::Uuid(uuid(1))))
    );
}

#[test]
fn remote_ports_are_bound_to_their_requested_chassis_once() {
    let mut db: BTreeMap<String, Vec<(Uuid, Row)>> = BTreeMap::new();
    db.insert(
        "Chassis".into(),
        vec![(uuid(1), chassis_row("c2", "node2", true, &[]))],
    );
    let port = |chassis: Option<Uuid>| {
        Row::from([
            ("type".to_owned(), text("remote")),
            ("logical_port".to_owned(), text("tstor-node2")),
            (
                "requested_chassis".to_owned(),
                Value::Set(vec![Atom::Uuid(uuid(1))]),
            ),
            (
                "chassis".to_owned(),
                Value::Set(chassis.map(Atom::Uuid).into_iter().collect()),
            ),
        ])
    };
    db.insert("Port_Binding".into(), vec![(uuid(5), port(None))]);
    let ops = remote_binding_ops(&db);
    assert_eq!(ops.len(), 1);
    db.insert("Port_Binding".into(), vec![(uuid(5), port(Some(uuid(1))))]);
    assert_eq!(remote_binding_ops(&db), []);
}
