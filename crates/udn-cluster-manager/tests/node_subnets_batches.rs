//! The node-subnets controller against the in-memory API server during a burst of new
//! networks: every node's `k8s.ovn.org/node-subnets` carries every network, so the number
//! of times each node's annotation is rewritten while the burst lasts must stay small
//! (it grows with the logarithm of the burst's length), not grow with the burst.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "node_subnets_support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, WatchEvent, WatchParams};
use serde_json::json;
use support::*;
use udn_api::names::ANNOTATION_NODE_SUBNETS;
use udn_test_support::TestCluster;

const NODES: [&str; 3] = ["n1", "n2", "n3"];
const NETWORKS: usize = 100;
/// Pace of the burst: one new network every this long (a 4 s burst; a fixed 250 ms batch
/// interval rewrote each node 16 times in it).
const PACE: Duration = Duration::from_millis(40);

fn subnets_text(node: &Node) -> Option<String> {
    node.metadata
        .annotations
        .as_ref()?
        .get(ANNOTATION_NODE_SUBNETS)
        .cloned()
}

/// How many times each node's annotation changed after resourceVersion `since` (the watch
/// replays the server's history, then ends after its timeout).
async fn annotation_writes(client: &kube::Client, since: &str) -> BTreeMap<String, usize> {
    let api: Api<Node> = Api::all(client.clone());
    let events: Vec<WatchEvent<Node>> = api
        .watch(&WatchParams::default().timeout(2), since)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut last: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut writes: BTreeMap<String, usize> = BTreeMap::new();
    for event in events {
        let WatchEvent::Modified(node) = event else {
            continue;
        };
        let name = node.metadata.name.clone().unwrap();
        let text = subnets_text(&node);
        if last.get(&name) != Some(&text) {
            *writes.entry(name.clone()).or_default() += 1;
            last.insert(name, text);
        }
    }
    writes
}

#[tokio::test]
async fn a_burst_of_networks_rewrites_each_node_a_bounded_number_of_times() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = config();
    for node in NODES {
        create_node(&client, node).await;
    }
    for i in 0..NETWORKS {
        create_namespace(&client, &format!("t{i}"), true).await;
    }
    let running = Running::start(&cluster, Controllers::NodeSubnets, config.clone());
    for node in NODES {
        eventually("default subnets", WAIT, || async {
            default_subnets(&client, node).await
        })
        .await;
    }
    let since = cluster.sim.resource_version().to_string();

    let started = Instant::now();
    for i in 0..NETWORKS {
        let udn = json!({
            "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
            "metadata": {"name": "net", "namespace": format!("t{i}")},
            "spec": {"topology": "Layer3", "layer3": {"role": "Primary",
                "subnets": [{"cidr": "10.132.0.0/16", "hostSubnet": 24}]}},
        });
        udn_with_nad(&client, udn, &config).await;
        tokio::time::sleep(PACE).await;
    }
    let burst = started.elapsed();
    for node in NODES {
        eventually("every network on the node", WAIT, || async {
            let value = node_annotation(&client, node, ANNOTATION_NODE_SUBNETS).await?;
            let subnets = udn_api::annotations::parse_node_subnets(&value).unwrap();
            (subnets.len() == NETWORKS + 1).then_some(())
        })
        .await;
    }
    let writes = annotation_writes(&client, &since).await;
    running.stop().await;

    // Batches at 0, 0.25, 0.5, 1, 2, 4, ... s into the burst, one more when it goes quiet:
    // 7 in a 4 s burst, 9 if a loaded machine stretched it to 16 s; the rest is slack for
    // pauses in the burst (each can release one batch early). A batch per 250 ms would be
    // 16 or more.
    assert_eq!(writes.len(), NODES.len(), "{writes:?}");
    for (node, count) in &writes {
        assert!(
            *count <= 12,
            "{node}: {count} writes for {NETWORKS} networks in {burst:?}"
        );
    }
}
