//! The Southbound rows udn writes, as typed rows, against a real ovsdb-server: a remote
//! zone's `Chassis` with its `Encap` (referred to by named UUID) and `other_config:is-remote`,
//! and the `chassis` of a `Port_Binding` (inserted here with its `Datapath_Binding`, as
//! ovn-northd would) set to it; read back through the client's replica and by `ovn-sbctl`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet};

use support::{Txn, check, connect, read};
use udn_ovsdb::protocol::{Atom, Condition, ConditionFunction, Operation, Row, Value};
use udn_ovsdb::sb::{Chassis, DatapathBinding, Encap, PortBinding, Table, port_binding};
use udn_ovsdb::testing::{OvsdbServer, Vendored};

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_remote_chassis_and_a_port_binding_on_it_round_trip() {
    let server = OvsdbServer::start_sb().unwrap();
    let client = connect(&server, Vendored::Sb).await;
    let chassis_id = "4f3c5a7e-2d6b-4c1e-9a8f-0b1c2d3e4f50";

    // Upstream's remote zone chassis: name = the node's chassis id, hostname = node name,
    // one geneve Encap per encap IP with checksums on.
    let encap = Encap {
        type_: "geneve".into(),
        ip: "172.18.0.3".into(),
        chassis_name: chassis_id.into(),
        options: map(&[("csum", "true")]),
        ..Default::default()
    };
    let chassis = Chassis {
        name: chassis_id.into(),
        hostname: "node2".into(),
        other_config: map(&[("is-remote", "true")]),
        ..Default::default()
    };
    let datapath = DatapathBinding {
        tunnel_key: 5,
        external_ids: map(&[("logical-switch", "n1_join"), ("name", "n1_join")]),
        ..Default::default()
    };
    let binding = PortBinding {
        logical_port: "tstor-n1_node2".into(),
        type_: "remote".into(),
        tunnel_key: 3,
        options: map(&[("requested-chassis", "node2")]),
        mac: BTreeSet::from(["0a:58:64:58:00:03 100.88.0.3/16".to_owned()]),
        ..Default::default()
    };
    let mut txn = Txn::default();
    txn.insert("encap", &encap, &[]);
    txn.insert("chassis", &chassis, &[("encaps", &["encap"])]);
    txn.insert("datapath", &datapath, &[]);
    txn.insert("binding", &binding, &[("datapath", &["datapath"])]);
    let uuids = txn.commit(&client).await;

    check(&client, &uuids, "encap", encap, |_, _| {});
    check(&client, &uuids, "chassis", chassis, |c, u| {
        c.encaps = BTreeSet::from([u("encap")]);
    });
    check(&client, &uuids, "datapath", datapath, |_, _| {});
    check(&client, &uuids, "binding", binding.clone(), |b, u| {
        b.datapath = u("datapath");
    });

    // The NB controller binds the remote port to the remote chassis: one column updated.
    let results = client
        .transact(vec![Operation::Update {
            table: PortBinding::TABLE.to_owned(),
            where_: vec![Condition {
                column: "_uuid".into(),
                function: ConditionFunction::Equal,
                value: Value::Atom(Atom::Uuid(uuids["binding"])),
            }],
            row: Row::from([(
                port_binding::CHASSIS.to_owned(),
                Value::Set(vec![Atom::Uuid(uuids["chassis"])]),
            )]),
        }])
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    check(&client, &uuids, "binding", binding, |b, u| {
        b.datapath = u("datapath");
        b.chassis = Some(u("chassis"));
    });
    let bound: PortBinding = read(&client, uuids["binding"]);
    assert_eq!(bound.chassis, Some(uuids["chassis"]));

    // What ovn-sbctl (a separate IDL client) reads back agrees.
    let show = server.sbctl(&["show"]).unwrap();
    for expected in [
        &format!("Chassis \"{chassis_id}\""),
        "hostname: node2",
        "Encap geneve",
        "ip: \"172.18.0.3\"",
        "options: {csum=\"true\"}",
        "Port_Binding tstor-n1_node2",
    ] {
        assert!(show.contains(expected), "{expected:?} not in:\n{show}");
    }
    let remote = server
        .sbctl(&["get", "Chassis", chassis_id, "other_config:is-remote"])
        .unwrap();
    assert_eq!(remote.trim(), "\"true\"");
    let bound_to = server
        .sbctl(&[
            "--bare",
            "--columns=chassis",
            "find",
            "Port_Binding",
            "logical_port=tstor-n1_node2",
        ])
        .unwrap();
    assert_eq!(bound_to.trim(), uuids["chassis"].to_string());
}
