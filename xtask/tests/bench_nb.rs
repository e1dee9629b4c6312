//! `cargo xtask bench nb` on a small topology against real ovsdb-servers: the engine and the
//! raw baseline write the same database, `ovn-nbctl show` shows the Layer3 objects, and
//! re-applying sends nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use serde_json::Value as Json;
use udn_ovsdb::client::Client;
use udn_ovsdb::engine::{ApplyPolicy, Engine};
use udn_ovsdb::testing::OvsdbServer;
use xtask::bench::nb::{TABLES, client_config, engine_columns, engine_pass};
use xtask::bench::nb_raw::{self, Batching};
use xtask::bench::nb_topology::{CONTROLLER, Topology};

/// Every row of every written table as `ovn-nbctl --format=json list` prints it, UUIDs
/// (row ids and references) replaced by `<uuid>`, rows sorted: equal for equal contents.
fn contents(server: &OvsdbServer) -> BTreeMap<String, Vec<String>> {
    TABLES
        .iter()
        .map(|table| {
            let out = server.nbctl(&["--format=json", "list", table]).unwrap();
            let json: Json = serde_json::from_str(&out).unwrap();
            let mut rows: Vec<String> = json["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| uuids_hidden(row).to_string())
                .collect();
            rows.sort();
            ((*table).to_owned(), rows)
        })
        .collect()
}

fn uuids_hidden(value: &Json) -> Json {
    match value {
        Json::Array(items) if items.len() == 2 && items[0] == "uuid" => Json::from("<uuid>"),
        Json::Array(items) => Json::Array(items.iter().map(uuids_hidden).collect()),
        other => other.clone(),
    }
}

fn mask_uuids(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            if word.len() == 36 && word.chars().filter(|c| *c == '-').count() == 4 {
                "<uuid>"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `ovn-nbctl show` with the UUIDs it prints for switches, routers and NATs masked, one
/// line per object and detail (order as printed).
fn show(server: &OvsdbServer) -> String {
    let out = server.nbctl(&["show"]).unwrap();
    mask_uuids(&out.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `ovn-nbctl show` as a tree (by indentation) with every level sorted: independent of the
/// order the server lists rows in.
fn show_tree(server: &OvsdbServer) -> Vec<String> {
    fn render(lines: &[(usize, String)]) -> Vec<String> {
        let mut nodes = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let (indent, head) = &lines[i];
            let end = lines[i + 1..]
                .iter()
                .position(|(d, _)| d <= indent)
                .map_or(lines.len(), |p| i + 1 + p);
            let children = render(&lines[i + 1..end]);
            nodes.push(format!("{head} {{{}}}", children.join("; ")));
            i = end;
        }
        nodes.sort();
        nodes
    }
    let out = server.nbctl(&["show"]).unwrap();
    let lines: Vec<(usize, String)> = out
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| (l.len() - l.trim_start().len(), mask_uuids(l.trim())))
        .collect();
    render(&lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_and_raw_write_the_same_layer3_topology() {
    let topology = Topology::new(2, 2).unwrap();
    let units = topology.units();

    let engine_server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(client_config(&engine_server, &engine_columns().unwrap()))
        .await
        .unwrap();
    let policy = ApplyPolicy::default();
    let engine = Engine::new(CONTROLLER);
    let first = engine_pass(
        &engine,
        &client,
        engine_server.pid(),
        || topology.units(),
        &policy,
    )
    .await
    .unwrap();
    assert_eq!(first.ops, topology.rows());
    assert_eq!(client.replica().len(), topology.rows());
    let again = engine_pass(
        &engine,
        &client,
        engine_server.pid(),
        || topology.units(),
        &policy,
    )
    .await
    .unwrap();
    assert_eq!((again.ops, again.transactions), (0, 0));

    let raw_server = OvsdbServer::start_nb().unwrap();
    let transactions = nb_raw::encode(&units, Batching::Networks(1), CONTROLLER).unwrap();
    assert_eq!(transactions.len(), 2);
    let run = nb_raw::send(
        raw_server.socket(),
        &transactions,
        None,
        nb_raw::MonitorMethod::Cond,
    )
    .unwrap();
    assert_eq!(run.rows, topology.rows());

    let engine_rows = contents(&engine_server);
    let counted: usize = engine_rows.values().map(Vec::len).sum();
    assert_eq!(counted, topology.rows());
    assert_eq!(engine_rows, contents(&raw_server));

    assert_eq!(show_tree(&engine_server), show_tree(&raw_server));
    let shown = show(&engine_server);
    for expected in [
        "router <uuid> (cluster_udn_net0_ovn_cluster_router)",
        "router <uuid> (GR_cluster_udn_net1_node2)",
        "switch <uuid> (cluster_udn_net0_join)",
        "switch <uuid> (cluster_udn_net1_node1)",
        "switch <uuid> (ext_cluster_udn_net0_node2)",
        "port rtos-cluster_udn_net0_node1 mac: \"0a:58:0a:40:01:01\" networks: [\"10.64.1.1/24\"]",
        "port rtoj-cluster_udn_net1_ovn_cluster_router mac: \"0a:58:64:41:00:01\" networks: [\"100.65.0.1/16\"]",
        "port rtoj-GR_cluster_udn_net0_node2 mac: \"0a:58:64:41:00:03\" networks: [\"100.65.0.3/16\"]",
        "port rtoe-GR_cluster_udn_net1_node1 mac: \"02:42:ac:12:00:02\" networks: [\"169.254.0.13/32\", \"172.18.0.2/16\"]",
        "port stor-cluster_udn_net1_node2 type: router router-port: rtos-cluster_udn_net1_node2",
        "port k8s-cluster_udn_net0_node1 addresses: [\"0a:58:0a:40:01:02 10.64.1.2\"]",
        "port jtor-GR_cluster_udn_net0_node1 type: router router-port: rtoj-GR_cluster_udn_net0_node1",
        "port breth0_cluster_udn_net0_node1 type: localnet addresses: [\"unknown\"]",
        "port etor-GR_cluster_udn_net1_node2 type: router addresses: [\"02:42:ac:12:00:03\"]",
        "nat <uuid> external ip: \"169.254.0.12\" logical ip: \"10.64.1.0/24\" type: \"snat\"",
    ] {
        assert!(shown.contains(expected), "{expected:?} not in {shown}");
    }
    assert_eq!(shown.matches("router <uuid>").count(), 2 * (1 + 2));
    assert_eq!(shown.matches("switch <uuid>").count(), 2 * (1 + 2 + 2));
}
