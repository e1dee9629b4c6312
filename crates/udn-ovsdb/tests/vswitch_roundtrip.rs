//! The Open vSwitch rows the node agent writes, as typed rows, against a real ovsdb-server:
//! the `Open_vSwitch` row's `external_ids` (the chassis identity and encapsulation
//! ovn-controller reads) and a bridge with an internal port and a management port (`Bridge`
//! -> `Port` -> `Interface`, all non-root, held from `Open_vSwitch.bridges` in the same
//! transaction); read back through the client's replica and by `ovs-vsctl`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet};

use support::{Txn, check, connect, read};
use udn_ovsdb::protocol::{
    Atom, Condition, ConditionFunction, Mutation, Mutator, Operation, Row, Uuid, Value,
};
use udn_ovsdb::testing::{OvsdbServer, Vendored};
use udn_ovsdb::vswitch::{Bridge, Interface, OpenVswitch, Port, Table, open_vswitch};

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn where_uuid(uuid: Uuid) -> Vec<Condition> {
    vec![Condition {
        column: "_uuid".into(),
        function: ConditionFunction::Equal,
        value: Value::Atom(Atom::Uuid(uuid)),
    }]
}

#[tokio::test]
async fn open_vswitch_external_ids_and_a_bridge_with_ports_round_trip() {
    let server = OvsdbServer::start_vswitch().unwrap();
    let client = connect(&server, Vendored::Vswitch).await;
    // The one root row, as `ovs-vsctl init` leaves it.
    let root: Vec<Uuid> = client
        .replica()
        .rows(OpenVswitch::TABLE)
        .map(|(uuid, _)| *uuid)
        .collect();
    let [root] = root.as_slice() else {
        panic!("expected one Open_vSwitch row, got {root:?}");
    };
    let root = *root;

    // The chassis identity ovn-controller reads, written as one column.
    let identity = map(&[
        ("hostname", "node1"),
        ("ovn-encap-ip", "172.18.0.2"),
        ("ovn-encap-type", "geneve"),
        ("ovn-remote", "unix:/var/run/ovn/ovnsb_db.sock"),
        ("system-id", "4f3c5a7e-2d6b-4c1e-9a8f-0b1c2d3e4f50"),
    ]);
    let set_ids = OpenVswitch {
        external_ids: identity.clone(),
        ..Default::default()
    };
    client
        .transact(vec![Operation::Update {
            table: OpenVswitch::TABLE.to_owned(),
            where_: where_uuid(root),
            row: Row::from([(
                open_vswitch::EXTERNAL_IDS.to_owned(),
                set_ids.to_row()[open_vswitch::EXTERNAL_IDS].clone(),
            )]),
        }])
        .await
        .unwrap();
    let read_back: OpenVswitch = read(&client, root);
    assert_eq!(read_back.external_ids, identity);

    let bridge_iface = Interface {
        name: "br-int".into(),
        type_: "internal".into(),
        ..Default::default()
    };
    let mgmt_iface = Interface {
        name: "ovn-k8s-mp1".into(),
        type_: "internal".into(),
        mtu_request: Some(1400),
        external_ids: map(&[("iface-id", "k8s-n1_node1"), ("k8s.ovn.org/network", "n1")]),
        ..Default::default()
    };
    let bridge_port = Port {
        name: "br-int".into(),
        ..Default::default()
    };
    let mgmt_port = Port {
        name: "ovn-k8s-mp1".into(),
        external_ids: map(&[("k8s.ovn.org/network", "n1")]),
        ..Default::default()
    };
    let bridge = Bridge {
        name: "br-int".into(),
        fail_mode: Some("secure".into()),
        datapath_type: "system".into(),
        other_config: map(&[("disable-in-band", "true")]),
        protocols: BTreeSet::from(["OpenFlow13".to_owned(), "OpenFlow15".to_owned()]),
        ..Default::default()
    };
    let mut txn = Txn::default();
    txn.insert("bridge_iface", &bridge_iface, &[]);
    txn.insert("mgmt_iface", &mgmt_iface, &[]);
    txn.insert(
        "bridge_port",
        &bridge_port,
        &[("interfaces", &["bridge_iface"])],
    );
    txn.insert("mgmt_port", &mgmt_port, &[("interfaces", &["mgmt_iface"])]);
    txn.insert(
        "bridge",
        &bridge,
        &[("ports", &["bridge_port", "mgmt_port"])],
    );
    // Bridges are not root rows: the root row must hold the new one in the same transaction.
    txn.other(Operation::Mutate {
        table: OpenVswitch::TABLE.to_owned(),
        where_: where_uuid(root),
        mutations: vec![Mutation {
            column: open_vswitch::BRIDGES.to_owned(),
            mutator: Mutator::Insert,
            value: Value::Set(vec![Atom::NamedUuid("bridge".into())]),
        }],
    });
    let uuids = txn.commit(&client).await;

    check(&client, &uuids, "bridge_iface", bridge_iface, |_, _| {});
    check(&client, &uuids, "mgmt_iface", mgmt_iface, |_, _| {});
    check(&client, &uuids, "bridge_port", bridge_port, |p, u| {
        p.interfaces = BTreeSet::from([u("bridge_iface")]);
    });
    check(&client, &uuids, "mgmt_port", mgmt_port, |p, u| {
        p.interfaces = BTreeSet::from([u("mgmt_iface")]);
    });
    check(&client, &uuids, "bridge", bridge, |b, u| {
        b.ports = BTreeSet::from([u("bridge_port"), u("mgmt_port")]);
    });
    let root_row: OpenVswitch = read(&client, root);
    assert_eq!(root_row.bridges, BTreeSet::from([uuids["bridge"]]));
    assert_eq!(root_row.external_ids, identity);

    // What ovs-vsctl (a separate IDL client) reads back agrees.
    let show = server.vsctl(&["show"]).unwrap();
    for expected in [
        "Bridge br-int",
        "fail_mode: secure",
        "datapath_type: system",
        "Port br-int",
        "Interface br-int",
        "type: internal",
        "Port ovn-k8s-mp1",
        "Interface ovn-k8s-mp1",
    ] {
        assert!(show.contains(expected), "{expected:?} not in:\n{show}");
    }
    let encap_ip = server
        .vsctl(&["get", "Open_vSwitch", ".", "external_ids:ovn-encap-ip"])
        .unwrap();
    assert_eq!(encap_ip.trim(), "\"172.18.0.2\"");
    let iface_id = server
        .vsctl(&["get", "Interface", "ovn-k8s-mp1", "external_ids:iface-id"])
        .unwrap();
    assert_eq!(iface_id.trim(), "k8s-n1_node1");
    let ports = server.vsctl(&["list-ports", "br-int"]).unwrap();
    assert_eq!(
        ports.split_whitespace().collect::<Vec<_>>(),
        ["ovn-k8s-mp1"]
    );
}
