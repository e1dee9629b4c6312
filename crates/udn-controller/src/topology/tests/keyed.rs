//! The keyed-rows plan: load balancer groups by upstream's names, static MAC bindings by
//! their logical port.

use udn_ovsdb::protocol::{Atom, Operation, Row, Uuid, Value};

use super::fixtures::*;
use crate::model::Network;
use crate::topology::keyed::{KeyedDesired, KeyedSnapshot, is_our_load_balancer_group, plan_keyed};

fn string(s: &str) -> Value {
    Value::Atom(Atom::String(s.to_owned()))
}

fn lb_group(name: &str) -> Row {
    Row::from([("name".to_owned(), string(name))])
}

fn binding(port: &str, ip: &str, mac: &str) -> Row {
    Row::from([
        ("logical_port".to_owned(), string(port)),
        ("ip".to_owned(), string(ip)),
        ("mac".to_owned(), string(mac)),
        (
            "override_dynamic_mac".to_owned(),
            Value::Atom(Atom::Boolean(true)),
        ),
    ])
}

fn router_port(name: &str, controller: Option<&str>) -> Row {
    let ids = controller
        .map(|c| {
            vec![(
                Atom::String("k8s.ovn.org/owner-controller".into()),
                Atom::String(c.into()),
            )]
        })
        .unwrap_or_default();
    Row::from([
        ("name".to_owned(), string(name)),
        ("external_ids".to_owned(), Value::Map(ids)),
    ])
}

fn desired() -> KeyedDesired {
    let config = zone_config();
    let default = render(&Network::default_network(), &config, &[node1()], &[]);
    let udn = render(&isolatednet(&config), &config, &[node1()], &[]);
    KeyedDesired::from_networks([&default, &udn])
}

fn uuid(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn deleted(plan_ops: &[Operation]) -> Vec<(String, Uuid)> {
    plan_ops
        .iter()
        .filter_map(|op| match op {
            Operation::Delete { table, where_ } => match &where_[0].value {
                Value::Atom(Atom::Uuid(u)) => Some((table.clone(), *u)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn everything_is_inserted_into_an_empty_database() {
    let desired = desired();
    assert_eq!(desired.load_balancer_groups.len(), 6);
    assert_eq!(desired.static_mac_bindings.len(), 3);
    assert_eq!(
        desired.controllers,
        [
            "default-network-controller",
            "isolatednet-network-controller"
        ]
        .map(String::from)
        .into()
    );
    let plan = plan_keyed(&desired, &KeyedSnapshot::default());
    assert!(plan.deletes.is_empty());
    let inserted: Vec<(String, Row)> = plan
        .upserts
        .iter()
        .map(|op| match op {
            Operation::Insert { table, row, .. } => (table.clone(), row.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(inserted.len(), 9);
    assert!(inserted.contains(&(
        "Load_Balancer_Group".into(),
        lb_group("isolatednet_clusterRouterLBGroup")
    )));
    assert!(inserted.contains(&(
        "Static_MAC_Binding".into(),
        binding(
            "rtoe-GR_isolatednet_node1",
            "169.254.169.2",
            "0a:58:a9:fe:a9:02"
        )
    )));
}

#[test]
fn converged_rows_give_an_empty_plan() {
    let desired = desired();
    let mut snapshot = KeyedSnapshot::default();
    let mut n = 0;
    let mut next = || {
        n += 1;
        uuid(n)
    };
    for name in &desired.load_balancer_groups {
        snapshot
            .tables
            .entry("Load_Balancer_Group".into())
            .or_default()
            .push((next(), lb_group(name)));
    }
    for ((port, ip), (mac, _)) in &desired.static_mac_bindings {
        snapshot
            .tables
            .entry("Static_MAC_Binding".into())
            .or_default()
            .push((next(), binding(port, &ip.to_string(), &mac.to_string())));
    }
    assert!(plan_keyed(&desired, &snapshot).is_empty());
}

#[test]
fn stale_and_garbage_rows_are_deleted_foreign_ones_kept() {
    let desired = desired();
    let mut snapshot = KeyedSnapshot::default();
    snapshot.tables.insert(
        "Load_Balancer_Group".into(),
        vec![
            (uuid(1), lb_group("clusterLBGroup")),
            (uuid(2), lb_group("gone.net_clusterSwitchLBGroup")),
            (uuid(3), lb_group("cnc_svc_blue")),
            (uuid(4), lb_group("myclusterLBGroup")),
        ],
    );
    snapshot.tables.insert(
        "Logical_Router_Port".into(),
        vec![
            (
                uuid(20),
                router_port("rtoe-GR_node1", Some("default-network-controller")),
            ),
            (
                uuid(21),
                router_port("rtoe-GR_foreign", Some("someone-else")),
            ),
        ],
    );
    snapshot.tables.insert(
        "Static_MAC_Binding".into(),
        vec![
            // Desired, MAC changed behind our back: updated.
            (
                uuid(10),
                binding("rtoe-GR_node1", "169.254.169.4", "0a:58:00:00:00:01"),
            ),
            // On our port, not desired (an old masquerade IP): deleted.
            (
                uuid(11),
                binding("rtoe-GR_node1", "169.254.0.4", "0a:58:a9:fe:00:04"),
            ),
            // On a gateway port that no longer exists: garbage.
            (
                uuid(12),
                binding("rtoe-GR_node9", "169.254.169.4", "0a:58:a9:fe:a9:04"),
            ),
            // On a foreign port that exists, and on an unrelated missing port: kept.
            (
                uuid(13),
                binding("rtoe-GR_foreign", "169.254.169.4", "0a:58:a9:fe:a9:04"),
            ),
            (
                uuid(14),
                binding("lrp-elsewhere", "10.0.0.1", "0a:58:0a:00:00:01"),
            ),
        ],
    );
    let plan = plan_keyed(&desired, &snapshot);
    assert_eq!(
        deleted(&plan.deletes),
        [
            ("Load_Balancer_Group".into(), uuid(2)),
            ("Static_MAC_Binding".into(), uuid(11)),
            ("Static_MAC_Binding".into(), uuid(12)),
        ]
    );
    let updates: Vec<(Uuid, Row)> = plan
        .upserts
        .iter()
        .filter_map(|op| match op {
            Operation::Update { where_, row, .. } => match &where_[0].value {
                Value::Atom(Atom::Uuid(u)) => Some((*u, row.clone())),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        updates,
        [(
            uuid(10),
            Row::from([("mac".to_owned(), string("0a:58:a9:fe:a9:04"))])
        )]
    );
    // 5 of 6 groups and 2 of 3 bindings are missing.
    let inserts = plan
        .upserts
        .iter()
        .filter(|op| matches!(op, Operation::Insert { .. }))
        .count();
    assert_eq!(inserts, 7);
}

#[test]
fn load_balancer_groups_are_ours_by_name() {
    for name in [
        "clusterLBGroup",
        "clusterSwitchLBGroup",
        "clusterRouterLBGroup",
        "ns1_blue_clusterLBGroup",
        "l3.net_clusterRouterLBGroup",
    ] {
        assert!(is_our_load_balancer_group(name), "{name}");
    }
    for name in ["cnc_svc_x", "myclusterLBGroup", "clusterLBGroup2", ""] {
        assert!(!is_our_load_balancer_group(name), "{name}");
    }
}
