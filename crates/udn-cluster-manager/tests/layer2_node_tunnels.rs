//! The legacy Layer2 topology's per-node gateway router tunnel IDs against the in-memory API
//! server: every node gets one per primary Layer2 network, from the pool the network's pods
//! take their tunnel IDs from (never the same ID twice), entries go with their network, a
//! deleted node's IDs are free again, a fresh cluster gets them (udn's zones render the legacy
//! topology), and a cluster whose zones all run the transit router gets none.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "node_subnets_support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::json;
use support::*;
use udn_api::annotations::{parse_node_layer2_tunnel_ids, parse_pod_networks};
use udn_api::names::{ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS, ANNOTATION_POD_NETWORKS};
use udn_test_support::TestCluster;

const KEY: &str = ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS;

async fn tunnel_ids(client: &kube::Client, node: &str) -> Option<BTreeMap<String, u32>> {
    let value = node_annotation(client, node, KEY).await?;
    Some(parse_node_layer2_tunnel_ids(&value).unwrap())
}

/// Waits until the node's tunnel IDs cover exactly `networks`.
async fn wait_tunnels(
    client: &kube::Client,
    node: &str,
    networks: &[&str],
) -> BTreeMap<String, u32> {
    let want: BTreeSet<&str> = networks.iter().copied().collect();
    eventually(
        &format!("tunnel IDs of {node} for {want:?}"),
        WAIT,
        || async {
            let ids = tunnel_ids(client, node).await.unwrap_or_default();
            (ids.keys().map(String::as_str).collect::<BTreeSet<_>>() == want).then_some(ids)
        },
    )
    .await
}

async fn create_pod(client: &kube::Client, namespace: &str, name: &str, node: &str) {
    let pod: Pod =
        serde_json::from_value(udn_test_support::pod(namespace, name, Some(node))).unwrap();
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    api.create(&PostParams::default(), &pod).await.unwrap();
}

async fn pod_tunnel(client: &kube::Client, namespace: &str, name: &str) -> u32 {
    let key = format!("{namespace}/net");
    eventually(
        &format!("tunnel ID of {namespace}/{name}"),
        WAIT,
        || async {
            let annotations = pod_annotations(client, namespace, name).await?;
            let networks = parse_pod_networks(annotations.get(ANNOTATION_POD_NETWORKS)?).unwrap();
            Some(networks.get(&key)?.tunnel_id)
        },
    )
    .await
}

/// Two primary Layer2 networks and a secondary one; a node left by a legacy cluster.
async fn legacy_cluster(cluster: &TestCluster) {
    let client = cluster.client();
    let config = config();
    for (namespace, role, subnet) in [
        ("a", "Primary", "10.10.0.0/24"),
        ("b", "Primary", "10.20.0.0/24"),
        ("c", "Secondary", "10.30.0.0/24"),
    ] {
        create_namespace(&client, namespace, role == "Primary").await;
        udn_with_nad(
            &client,
            udn_test_support::l2_udn(namespace, "net", role, &[subnet]),
            &config,
        )
        .await;
    }
    // Annotated by an earlier run for a network that is gone, no topology version: legacy.
    create_node_with_annotations(&client, "old", json!({KEY: r#"{"gone_net":"9"}"#})).await;
}

#[tokio::test]
async fn legacy_nodes_get_tunnel_ids_that_no_pod_holds() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    legacy_cluster(&cluster).await;
    for node in ["n1", "n2"] {
        create_node(&client, node).await;
    }
    let running = Running::start(&cluster, Controllers::Layer2Ipam, config());
    let mut held: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for node in ["old", "n1", "n2"] {
        let ids = wait_tunnels(&client, node, &["a_net", "b_net"]).await;
        for (network, id) in &ids {
            let network = if network == "a_net" { "a" } else { "b" };
            assert!(held.entry(network).or_default().insert(*id), "{ids:?}");
        }
    }
    for (namespace, pod, node) in [("a", "p1", "n1"), ("a", "p2", "n2"), ("b", "p1", "n1")] {
        create_pod(&client, namespace, pod, node).await;
        let id = pod_tunnel(&client, namespace, pod).await;
        assert!(id != 0, "{namespace}/{pod}");
        assert!(
            held.entry(namespace).or_default().insert(id),
            "pod {namespace}/{pod} got a node's tunnel ID {id}: {held:?}"
        );
    }
    // The legacy topology has no platform ports: IDs start at 1.
    assert_eq!(held["a"].iter().min(), Some(&1));

    // The network goes: its entry leaves every node.
    delete_nad(&client, "b", "net").await;
    for node in ["old", "n1", "n2"] {
        wait_tunnels(&client, node, &["a_net"]).await;
    }
    running.stop().await;
}

#[tokio::test]
async fn restart_keeps_node_ids_and_a_deleted_nodes_ids_are_free() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    legacy_cluster(&cluster).await;
    let running = Running::start(&cluster, Controllers::Layer2Ipam, config());
    let old = wait_tunnels(&client, "old", &["a_net", "b_net"]).await;
    create_node(&client, "n1").await;
    let n1 = wait_tunnels(&client, "n1", &["a_net", "b_net"]).await;
    delete_node(&client, "n1").await;
    running.stop().await;

    // Pods created while the manager is down: after the restart they are allocated before
    // the nodes are looked at, from a scan that starts at the bottom of the pool.
    for pod in ["p1", "p2", "p3"] {
        create_pod(&client, "a", pod, "old").await;
    }
    // The old node's annotation now only has live networks; the cluster stays legacy.
    let running = Running::start(&cluster, Controllers::Layer2Ipam, config());
    let mut pods = BTreeSet::new();
    for pod in ["p1", "p2", "p3"] {
        pods.insert(pod_tunnel(&client, "a", pod).await);
    }
    create_node(&client, "n2").await;
    let n2 = wait_tunnels(&client, "n2", &["a_net", "b_net"]).await;
    // Restored before allocating: the survivor keeps its IDs and no pod got them; the new
    // node gets free ones (the deleted node's are among them).
    assert_eq!(tunnel_ids(&client, "old").await.unwrap(), old);
    assert!(!pods.contains(&old["a_net"]), "{pods:?} {old:?}");
    assert!(!pods.contains(&n2["a_net"]), "{pods:?} {n2:?}");
    assert_eq!(pods.len(), 3);
    assert_eq!(n2["b_net"], n1["b_net"]);
    running.stop().await;
}

#[tokio::test]
async fn a_fresh_cluster_gets_legacy_tunnel_ids() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = config();
    create_namespace(&client, "a", true).await;
    udn_with_nad(
        &client,
        udn_test_support::l2_udn("a", "net", "Primary", &["10.10.0.0/24"]),
        &config,
    )
    .await;
    create_node(&client, "n1").await;
    let running = Running::start(&cluster, Controllers::Layer2Ipam, config);
    let ids = wait_tunnels(&client, "n1", &["a_net"]).await;
    create_pod(&client, "a", "p1", "n1").await;
    let pod = pod_tunnel(&client, "a", "p1").await;
    assert!(pod != 0 && pod != ids["a_net"], "pod {pod}, node {ids:?}");
    running.stop().await;
}

#[tokio::test]
async fn zones_that_all_run_the_transit_router_get_none() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = config();
    create_namespace(&client, "a", true).await;
    udn_with_nad(
        &client,
        udn_test_support::l2_udn("a", "net", "Primary", &["10.10.0.0/24"]),
        &config,
    )
    .await;
    // Migrated: tunnel IDs of a live network next to the transit router version.
    create_node_with_annotations(
        &client,
        "migrated",
        json!({KEY: r#"{"a_net":"4","gone_net":"5"}"#, "k8s.ovn.org/layer2-topology-version": "2.0"}),
    )
    .await;
    create_node_with_annotations(
        &client,
        "n1",
        json!({"k8s.ovn.org/layer2-topology-version": "2.0"}),
    )
    .await;
    let running = Running::start(&cluster, Controllers::Layer2Ipam, config);
    create_pod(&client, "a", "p1", "n1").await;
    assert_eq!(pod_tunnel(&client, "a", "p1").await, 10);
    // Only the stale entry goes.
    wait_tunnels(&client, "migrated", &["a_net"]).await;
    assert_eq!(tunnel_ids(&client, "migrated").await.unwrap()["a_net"], 4);
    assert_eq!(tunnel_ids(&client, "n1").await, None);
    running.stop().await;
}
