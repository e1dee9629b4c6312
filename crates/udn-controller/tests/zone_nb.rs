//! The zone controller against the in-memory API server and real Northbound and Southbound
//! ovsdb-servers (no northd, no dataplane): pod addresses, rows, remote chassis, restarts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;
use udn_api::annotations::PodNetworkRole;
use udn_ovsdb::testing::OvsdbServer;
use udn_test_support::TestCluster;

const WAIT: Duration = Duration::from_secs(30);

fn nbctl(nb: &OvsdbServer, args: &[&str]) -> String {
    nb.nbctl(args).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_get_addresses_ports_and_a_restart_changes_nothing() {
    let nb = OvsdbServer::start_nb().unwrap();
    let sb = OvsdbServer::start_sb().unwrap();
    let cluster = TestCluster::new();
    let client = cluster.client();
    put_node(
        &client,
        &node(
            "node1",
            2,
            &[("default", "10.244.0.0/24"), ("blue_net", "10.128.1.0/24")],
        ),
    )
    .await;
    put_node(
        &client,
        &node(
            "node2",
            3,
            &[("default", "10.244.1.0/24"), ("blue_net", "10.128.2.0/24")],
        ),
    )
    .await;
    put_namespace(&client, "plain", false).await;
    put_namespace(&client, "blue", true).await;
    put_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "blue_net",
            json!({"topology": "layer3", "role": "primary", "subnets": "10.128.0.0/16/24", "mtu": 1400}),
            1,
        ),
    )
    .await;
    put_pod(&client, "plain", "a", "node1", json!({})).await;
    put_pod(&client, "blue", "b", "node1", json!({})).await;
    put_pod(&client, "blue", "remote", "node2", json!({})).await;

    let mut zone = start_zone(&cluster, zone_config("node1"), nb.endpoint(), sb.endpoint()).await;
    let a = pod_networks(&client, "plain", "a", &["default"], WAIT).await;
    // Allocation follows pod keys: blue/b first.
    assert_eq!(a["default"].ip_addresses, [net("10.244.0.4/24")]);
    assert_eq!(a["default"].role, Some(PodNetworkRole::Primary));
    let b = pod_networks(&client, "blue", "b", &["default", "blue/net"], WAIT).await;
    assert_eq!(b["default"].ip_addresses, [net("10.244.0.3/24")]);
    assert_eq!(
        b["default"].role,
        Some(PodNetworkRole::InfrastructureLocked)
    );
    assert_eq!(b["blue/net"].ip_addresses, [net("10.128.1.3/24")]);
    assert_eq!(b["blue/net"].role, Some(PodNetworkRole::Primary));
    zone.converged(WAIT).await;

    // The remote pod is the remote zone's business.
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client.clone(), "blue");
    let remote = api.get("remote").await.unwrap();
    assert!(
        !remote
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key("k8s.ovn.org/pod-networks")
    );

    let switches = nbctl(&nb, &["--bare", "--columns=name", "list", "Logical_Switch"]);
    for name in [
        "node1",
        "join",
        "transit_switch",
        "ext_node1",
        "blue_net_node1",
        "blue_net_join",
        "blue_net_transit_switch",
        "ext_blue_net_node1",
    ] {
        assert!(
            switches.lines().any(|l| l == name),
            "switch {name} missing:\n{switches}"
        );
    }
    assert!(
        !switches
            .lines()
            .any(|l| l == "node2" || l == "blue_net_node2"),
        "{switches}"
    );
    let ports = nbctl(
        &nb,
        &["--bare", "--columns=name", "list", "Logical_Switch_Port"],
    );
    for name in [
        "plain_a",
        "blue_b",
        "blue.net_blue_b",
        "k8s-node1",
        "k8s-blue_net_node1",
        "tstor-node2",
        "blue_net_tstor-node2",
    ] {
        assert!(
            ports.lines().any(|l| l == name),
            "port {name} missing:\n{ports}"
        );
    }
    let addresses = nbctl(
        &nb,
        &["get", "Logical_Switch_Port", "blue.net_blue_b", "addresses"],
    );
    assert_eq!(addresses.trim(), r#"["0a:58:0a:80:01:03 10.128.1.3"]"#);
    let chassis = sb
        .sbctl(&["--bare", "--columns=name,hostname", "list", "Chassis"])
        .unwrap();
    assert!(
        chassis.contains("chassis-node2") && chassis.contains("node2"),
        "{chassis}"
    );

    // A new pod re-renders its own network only: blue's render is left as it is.
    put_pod(&client, "plain", "late", "node1", json!({})).await;
    let seen = zone.converged_seeing(WAIT).await;
    assert!(
        seen.iter().all(|r| r.rendered <= 1 && r.networks == 2),
        "{seen:#?}"
    );
    assert!(seen.iter().any(|r| r.rendered == 1), "{seen:#?}");
    let ports = nbctl(
        &nb,
        &["--bare", "--columns=name", "list", "Logical_Switch_Port"],
    );
    assert!(ports.lines().any(|l| l == "plain_late"), "{ports}");

    // A restarted controller finds everything in place and writes nothing.
    zone.stop().await;
    let mut zone = start_zone(&cluster, zone_config("node1"), nb.endpoint(), sb.endpoint()).await;
    let first = zone.first_pass(WAIT).await;
    assert_eq!(
        (
            first.nb_ops,
            first.sb_ops,
            first.pods_annotated,
            first.failures
        ),
        (0, 0, 0, 0),
        "{first:?}"
    );
    let b_again = pod_networks(&client, "blue", "b", &["default", "blue/net"], WAIT).await;
    assert_eq!(b_again, b);
    zone.stop().await;
}
