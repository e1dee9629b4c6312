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

mod topology_support;

use udn_controller::model::Network;
use udn_ovsdb::client::Client;
use udn_ovsdb::testing::OvsdbServer;

use checks::{check_default_network, check_layer2_and_localnet, check_layer3};
use inputs::{networks, nodes, pods, zone_config};
use topology_support::{
    ZoneSnapshot, config, delete_network, engines, nbctl, pass, rows_by_controller,
};

#[tokio::test]
async fn four_networks_converge_read_back_and_delete_cleanly() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    let config = zone_config();
    let networks = networks(&config);
    let nodes = nodes();
    let zone = ZoneSnapshot {
        config: &config,
        nodes: &nodes,
        pods: &pods,
    };
    let engines = engines(&networks);
    let first = pass(&client, &engines, &networks, &zone).await;
    assert!(first > 100, "{first} operations");
    let again = pass(&client, &engines, &networks, &zone).await;
    assert_eq!(again, 0, "a second reconcile sends nothing");

    check_layer3(&server);
    check_default_network(&server);
    check_layer2_and_localnet(&server);

    // Deleting ns1_blue: its engine reconciles no units in its scope, then the keyed rows
    // of the remaining networks are planned.
    let before = rows_by_controller(&client);
    assert!(before["ns1_blue-network-controller"] > 40, "{before:?}");
    let blue = networks.iter().find(|n| n.name == "ns1_blue").unwrap();
    delete_network(&client, &engines, blue).await;
    let remaining: Vec<Network> = networks
        .iter()
        .filter(|n| n.name != "ns1_blue")
        .cloned()
        .collect();
    pass(&client, &engines, &remaining, &zone).await;
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
    assert_eq!(pass(&client, &engines, &remaining, &zone).await, 0);
}
