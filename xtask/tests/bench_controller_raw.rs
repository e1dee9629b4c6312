//! The raw baseline of `cargo xtask bench controller` against real ovsdb-servers: rows of two
//! networks (written by the engine), of the default network (a COPP with its meter) and
//! unowned rows (a load balancer group) that the networks refer to, copied from a replica
//! and written raw in every batching, give the same database again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet};

use serde_json::Value as Json;
use udn_ovsdb::client::{Client, ClientConfig};
use udn_ovsdb::engine::{ApplyPolicy, Engine, OWNER_CONTROLLER_KEY, Scope};
use udn_ovsdb::nb;
use udn_ovsdb::testing::{OvsdbServer, sample_network};
use xtask::bench::controller::RAW_BATCHINGS;
use xtask::bench::controller_raw::{DEFAULT_CONTROLLER, copy};
use xtask::bench::controller_zone::{NB_TABLES, nb_monitor};
use xtask::bench::nb_raw;

/// Every row of the written tables as `ovn-nbctl --format=json list` prints it, UUIDs
/// replaced by `<uuid>`, rows sorted.
fn contents(server: &OvsdbServer) -> BTreeMap<String, Vec<String>> {
    fn hidden(value: &Json) -> Json {
        match value {
            Json::Array(items) if items.len() == 2 && items[0] == "uuid" => Json::from("<uuid>"),
            Json::Array(items) => Json::Array(items.iter().map(hidden).collect()),
            other => other.clone(),
        }
    }
    NB_TABLES
        .iter()
        .map(|table| {
            let out = server.nbctl(&["--format=json", "list", table]).unwrap();
            let json: Json = serde_json::from_str(&out).unwrap();
            let mut rows: Vec<String> = json["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| hidden(row).to_string())
                .collect();
            rows.sort();
            ((*table).to_owned(), rows)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copied_rows_written_raw_give_the_same_database() {
    let source = OvsdbServer::start_nb().unwrap();
    source.nbctl(&["init"]).unwrap();
    // A row from before the controller: not copied.
    source.nbctl(&["ls-add", "before"]).unwrap();
    let mut config = ClientConfig::new(source.endpoint(), nb::DATABASE);
    config.monitor = nb_monitor().unwrap();
    config.indexed_keys = udn_ovsdb::engine::INDEXED_KEYS
        .iter()
        .map(|k| (*k).to_owned())
        .collect();
    let client = Client::connect(config).await.unwrap();
    let before: HashSet<_> = {
        let replica = client.replica();
        replica.rows("Logical_Switch").map(|(u, _)| *u).collect()
    };
    for network in ["a", "b"] {
        let engine = Engine::new(&format!("{network}-network-controller"));
        let report = engine
            .reconcile(
                &client,
                vec![sample_network(network, 2)],
                &Scope::OwnerType("Network".to_owned()),
                &ApplyPolicy::default(),
            )
            .await
            .unwrap();
        assert!(report.is_success());
    }
    // The default network's COPP and meter, an unowned group, referred to by network b.
    let owner = format!("external_ids:{OWNER_CONTROLLER_KEY}={DEFAULT_CONTROLLER}");
    source
        .nbctl(&["meter-add", "arp-meter", "drop", "100", "pktps"])
        .unwrap();
    source
        .nbctl(&["set", "Meter", "arp-meter", &owner])
        .unwrap();
    source
        .nbctl(&[
            "--id=@c",
            "create",
            "Copp",
            "name=ovnkube-default",
            "meters:arp=arp-meter",
            &owner,
            "--",
            "set",
            "Logical_Router",
            "b_ovn_cluster_router",
            "copp=@c",
        ])
        .unwrap();
    source
        .nbctl(&[
            "--id=@g",
            "create",
            "Load_Balancer_Group",
            "name=clusterLBGroup",
            "--",
            "add",
            "Logical_Switch",
            "b_node0",
            "load_balancer_group",
            "@g",
            "--",
            "add",
            "Logical_Switch",
            "a_node1",
            "load_balancer_group",
            "@g",
        ])
        .unwrap();
    client.echo().await.unwrap();

    let copied = {
        let schema = client.schema();
        let replica = client.replica();
        copy(&replica, &schema, &NB_TABLES, &before).unwrap()
    };
    let controllers: Vec<&str> = copied
        .groups
        .iter()
        .map(|g| g.controller.as_str())
        .collect();
    assert_eq!(
        controllers,
        [
            "",
            DEFAULT_CONTROLLER,
            "a-network-controller",
            "b-network-controller"
        ]
    );
    assert_eq!(copied.tables["Meter"], 1);
    assert_eq!(copied.tables["Meter_Band"], 1);
    assert_eq!(copied.tables["Load_Balancer_Group"], 1);
    let mut expected = contents(&source);
    expected
        .get_mut("Logical_Switch")
        .unwrap()
        .retain(|row| !row.contains("\"before\""));
    assert_eq!(
        expected.values().map(Vec::len).sum::<usize>(),
        copied.rows()
    );
    for batching in RAW_BATCHINGS {
        let target = OvsdbServer::start_nb().unwrap();
        let transactions = copied.transactions(batching).unwrap();
        let run = nb_raw::send(
            target.socket(),
            &transactions,
            Some(&NB_TABLES[..]),
            nb_raw::MonitorMethod::CondSince,
        )
        .unwrap();
        assert_eq!(run.rows, copied.rows(), "{batching:?}");
        assert_eq!(contents(&target), expected, "{batching:?}");
    }
}
