//! The topology of four networks (the default network, a dual-stack primary Layer3 UDN, a
//! primary Layer2 UDN and a localnet network with a VLAN) for one local and two remote nodes
//! and a few pods, written through one engine per network controller to a real
//! ovsdb-server: read back with ovn-nbctl, reconciled again as nothing, and one network's
//! deletion removing its rows and nothing else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "topology_nb/checks.rs"]
mod checks;
#[path = "topology_nb/inputs.rs"]
mod inputs;

use std::collections::BTreeMap;
use std::time::Duration;

use udn_controller::model::Network;
use udn_controller::topology::keyed::{KeyedDesired, plan_keyed};
use udn_controller::topology::{
    DEFAULT_COPP, NetworkDesired, SchemaFeatures, ZoneInputs, load_balancer_groups,
    network_desired, network_engine, network_scope,
};
use udn_ovsdb::client::{Client, ClientConfig};
use udn_ovsdb::engine::{ApplyPolicy, Engine, INDEXED_KEYS, OWNER_CONTROLLER_KEY};
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{Atom, Operation, Uuid, Value};
use udn_ovsdb::schema::Requirements;
use udn_ovsdb::testing::OvsdbServer;

use checks::{check_default_network, check_layer2_and_localnet, check_layer3};
use inputs::{networks, nodes, pods, zone_config};

fn config(server: &OvsdbServer) -> ClientConfig {
    let schema = nb::schema().unwrap();
    let mut config = ClientConfig::new(server.endpoint(), nb::DATABASE);
    config.monitor = Requirements::everything_in(&schema);
    config.indexed_keys = INDEXED_KEYS.iter().map(|k| (*k).to_owned()).collect();
    config.request_timeout = Duration::from_secs(60);
    config
}

fn string_column(row: &udn_ovsdb::protocol::Row, column: &str) -> Option<String> {
    match row.get(column) {
        Some(Value::Atom(Atom::String(s))) => Some(s.clone()),
        _ => None,
    }
}

/// UUIDs by name of the COPP and the load balancer groups in the replica.
fn shared_rows(client: &Client) -> (Option<Uuid>, BTreeMap<String, Uuid>) {
    let replica = client.replica();
    let copp = replica
        .rows(nb::copp::TABLE)
        .find(|(_, row)| string_column(row, "name").as_deref() == Some(DEFAULT_COPP))
        .map(|(uuid, _)| *uuid);
    let groups = replica
        .rows(nb::load_balancer_group::TABLE)
        .filter_map(|(uuid, row)| string_column(row, "name").map(|name| (name, *uuid)))
        .collect();
    (copp, groups)
}

async fn transact(client: &Client, ops: Vec<Operation>) {
    if !ops.is_empty() {
        client.transact(ops).await.unwrap();
    }
}

/// One reconcile of every network as the runtime does it: load balancer groups first, the
/// default network (owner of the COPP) before the others, static MAC bindings and stale
/// keyed rows after the units. Returns the operations sent.
async fn pass(client: &Client, engines: &BTreeMap<String, Engine>, networks: &[Network]) -> usize {
    let config = zone_config();
    let nodes = nodes();
    let mut ops = 0;
    let groups = KeyedDesired {
        load_balancer_groups: networks.iter().flat_map(load_balancer_groups).collect(),
        ..KeyedDesired::default()
    };
    let lb_plan = plan_keyed(&groups, &*client.replica());
    let lb_inserts: Vec<Operation> = lb_plan
        .upserts
        .into_iter()
        .filter(|op| matches!(op, Operation::Insert { table, .. } if table == nb::load_balancer_group::TABLE))
        .collect();
    ops += lb_inserts.len();
    transact(client, lb_inserts).await;
    let mut all = Vec::new();
    for network in networks {
        let (copp, groups) = shared_rows(client);
        let mut zone = ZoneInputs::new(&config, &nodes);
        zone.copp = copp;
        zone.load_balancer_groups = groups;
        zone.features = SchemaFeatures::of(client.replica().schema());
        let desired = network_desired(network, &zone, &pods(&network.name));
        assert!(
            desired.problems.is_empty(),
            "{}: {:?}",
            network.name,
            desired.problems
        );
        let engine = &engines[&desired.controller];
        let report = engine
            .reconcile(
                client,
                desired.units.clone(),
                &network_scope(),
                &ApplyPolicy::default(),
            )
            .await
            .unwrap();
        assert!(report.is_success(), "{}: {report:?}", network.name);
        ops += report.ops;
        all.push(desired);
    }
    ops + keyed(client, &all, engines).await
}

/// The keyed plan of `desired` (with every controller's ports counted as ours).
async fn keyed(
    client: &Client,
    desired: &[NetworkDesired],
    engines: &BTreeMap<String, Engine>,
) -> usize {
    let mut wanted = KeyedDesired::from_networks(desired);
    wanted.controllers.extend(engines.keys().cloned());
    let plan = plan_keyed(&wanted, &*client.replica());
    let count = plan.upserts.len() + plan.deletes.len();
    transact(client, plan.upserts).await;
    transact(client, plan.deletes).await;
    count
}

/// Rows per owner controller, over every table.
fn rows_by_controller(client: &Client) -> BTreeMap<String, usize> {
    let replica = client.replica();
    let mut counts = BTreeMap::new();
    for table in replica.schema().tables.keys() {
        for (_, row) in replica.rows(table) {
            if let Some(Value::Map(ids)) = row.get("external_ids") {
                for (k, v) in ids {
                    if let (Atom::String(k), Atom::String(v)) = (k, v)
                        && k == OWNER_CONTROLLER_KEY
                    {
                        *counts.entry(v.clone()).or_insert(0) += 1;
                    }
                }
            }
        }
    }
    counts
}

fn nbctl(server: &OvsdbServer, args: &[&str]) -> String {
    server.nbctl(args).unwrap()
}

#[tokio::test]
async fn four_networks_converge_read_back_and_delete_cleanly() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    let config = zone_config();
    let networks = networks(&config);
    let engines: BTreeMap<String, Engine> = networks
        .iter()
        .map(|n| (n.controller_name(), network_engine(&n.controller_name())))
        .collect();
    let first = pass(&client, &engines, &networks).await;
    assert!(first > 100, "{first} operations");
    let again = pass(&client, &engines, &networks).await;
    assert_eq!(again, 0, "a second reconcile sends nothing");

    check_layer3(&server);
    check_default_network(&server);
    check_layer2_and_localnet(&server);

    // Deleting ns1_blue: its engine reconciles no units in its scope, then the keyed rows
    // of the remaining networks are planned.
    let before = rows_by_controller(&client);
    assert!(before["ns1_blue-network-controller"] > 40, "{before:?}");
    let report = engines["ns1_blue-network-controller"]
        .reconcile(
            &client,
            Vec::new(),
            &network_scope(),
            &ApplyPolicy::default(),
        )
        .await
        .unwrap();
    assert!(report.is_success(), "{report:?}");
    let remaining: Vec<Network> = networks
        .iter()
        .filter(|n| n.name != "ns1_blue")
        .cloned()
        .collect();
    pass(&client, &engines, &remaining).await;
    let after = rows_by_controller(&client);
    let mut expected = before.clone();
    expected.remove("ns1_blue-network-controller");
    assert_eq!(after, expected, "only ns1_blue's rows are gone");
    for table in [
        "Logical_Router",
        "Logical_Switch",
        "Logical_Switch_Port",
        "Logical_Router_Port",
    ] {
        let names = nbctl(&server, &["--bare", "--columns=name", "list", table]);
        assert!(!names.contains("blue"), "{table}: {names}");
    }
    for table in [
        "NAT",
        "Logical_Router_Static_Route",
        "Logical_Router_Policy",
        "ACL",
        "Port_Group",
    ] {
        let ids = nbctl(
            &server,
            &["--bare", "--columns=external_ids", "list", table],
        );
        assert!(!ids.contains("ns1_blue"), "{table}: {ids}");
    }
    let groups = nbctl(
        &server,
        &["--bare", "--columns=name", "list", "Load_Balancer_Group"],
    );
    assert!(
        !groups.contains("blue") && groups.contains("ns2_green_clusterLBGroup"),
        "{groups}"
    );
    let bindings = nbctl(
        &server,
        &[
            "--bare",
            "--columns=logical_port",
            "list",
            "Static_MAC_Binding",
        ],
    );
    assert!(
        !bindings.contains("blue") && bindings.contains("rtoe-GR_node1"),
        "{bindings}"
    );
    assert_eq!(pass(&client, &engines, &remaining).await, 0);
}
