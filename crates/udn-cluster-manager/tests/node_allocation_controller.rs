//! Node IDs, transit switch port addresses and default-network host subnets against the
//! in-memory API server: the exact annotations of three nodes, one write per node for both
//! node-allocation annotations, the obsolete annotation removed, restarts that keep every
//! value without rewriting, IDs released by node deletion, duplicate annotated IDs, and no
//! UDN allocation without network segmentation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "node_subnets_support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::watcher;
use serde_json::json;
use support::*;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::{
    ANNOTATION_NETWORK_ID, ANNOTATION_NODE_GATEWAY_ROUTER_LRP_IFADDRS, ANNOTATION_NODE_ID,
    ANNOTATION_NODE_SUBNETS, ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR,
};
use udn_cluster_manager::config::Config;
use udn_cluster_manager::context::Context;
use udn_cluster_manager::metrics::Metrics;
use udn_cluster_manager::run::run_controllers;
use udn_runtime::Shutdown;
use udn_test_support::TestCluster;

/// The three annotations the allocation writes, as `(node-id, transit, node-subnets)`.
type Allocated = (Option<String>, Option<String>, Option<String>);

async fn allocated(client: &kube::Client, node: &str) -> Allocated {
    (
        node_annotation(client, node, ANNOTATION_NODE_ID).await,
        node_annotation(client, node, ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR).await,
        node_annotation(client, node, ANNOTATION_NODE_SUBNETS).await,
    )
}

/// Waits until the node carries all three annotations and returns them.
async fn wait_allocated(client: &kube::Client, node: &str) -> Allocated {
    eventually(&format!("{node} allocated"), WAIT, || async {
        let found = allocated(client, node).await;
        (found.0.is_some() && found.1.is_some() && found.2.is_some()).then_some(found)
    })
    .await
}

async fn wait_node_id(client: &kube::Client, node: &str, id: &str) {
    eventually(&format!("node-id of {node} = {id}"), WAIT, || async {
        let current = node_annotation(client, node, ANNOTATION_NODE_ID).await?;
        (current == id).then_some(())
    })
    .await;
}

fn expected(id: u32, v4_subnet: &str, v6_subnet: &str) -> Allocated {
    (
        Some(id.to_string()),
        Some(format!(
            r#"{{"ipv4":"100.88.0.{id}/16","ipv6":"fd97::{id:x}/64"}}"#
        )),
        Some(format!(r#"{{"default":["{v4_subnet}","{v6_subnet}"]}}"#)),
    )
}

async fn resource_version(client: &kube::Client, node: &str) -> String {
    let api: Api<Node> = Api::all(client.clone());
    api.get(node)
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}

/// `(node-id, transit)` of one node as one watch event showed it.
type IdState = (Option<String>, Option<String>);

/// Every node state the watch saw: node name -> states per event, in order.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<BTreeMap<String, Vec<IdState>>>>);

impl Seen {
    fn record(client: &kube::Client) -> (Self, tokio::task::JoinHandle<()>) {
        let seen = Self::default();
        let sink = seen.clone();
        let api: Api<Node> = Api::all(client.clone());
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()));
            while let Some(Ok(event)) = stream.next().await {
                if let watcher::Event::Apply(node) | watcher::Event::InitApply(node) = event {
                    let annotations = node.metadata.annotations.unwrap_or_default();
                    let get = |key: &str| annotations.get(key).cloned();
                    sink.0
                        .lock()
                        .unwrap()
                        .entry(node.metadata.name.unwrap_or_default())
                        .or_default()
                        .push((
                            get(ANNOTATION_NODE_ID),
                            get(ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR),
                        ));
                }
            }
        });
        (seen, task)
    }

    /// How many events changed the node's (node-id, transit) pair, and whether any showed
    /// only one of the two.
    fn changes(&self, node: &str) -> (usize, bool) {
        let seen = self.0.lock().unwrap();
        let states = seen.get(node).cloned().unwrap_or_default();
        let changes = states.windows(2).filter(|w| w[0] != w[1]).count();
        let half = states.iter().any(|(id, ts)| id.is_some() != ts.is_some());
        (changes, half)
    }
}

#[tokio::test]
async fn three_nodes_get_ids_transit_addresses_and_default_subnets() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let (seen, watch) = Seen::record(&client);
    // An upgraded node still carrying the obsolete annotation.
    create_node_with_annotations(
        &client,
        "n1",
        json!({ANNOTATION_NODE_GATEWAY_ROUTER_LRP_IFADDRS: r#"{"default":{"ipv4":"100.64.0.2/16"}}"#}),
    )
    .await;
    let running = Running::start(&cluster, Controllers::All, config());
    assert_eq!(
        wait_allocated(&client, "n1").await,
        expected(2, "10.244.0.0/24", "fd00:10:244:1::/64")
    );
    create_node(&client, "n2").await;
    assert_eq!(
        wait_allocated(&client, "n2").await,
        expected(3, "10.244.1.0/24", "fd00:10:244:2::/64")
    );
    create_node(&client, "n3").await;
    assert_eq!(
        wait_allocated(&client, "n3").await,
        expected(4, "10.244.2.0/24", "fd00:10:244:3::/64")
    );
    eventually("obsolete annotation removed", WAIT, || async {
        node_annotation(&client, "n1", ANNOTATION_NODE_GATEWAY_ROUTER_LRP_IFADDRS)
            .await
            .is_none()
            .then_some(())
    })
    .await;
    // One write per node set both annotations: the watch never saw one without the other.
    for node in ["n1", "n2", "n3"] {
        let changes = eventually("the watch saw the write", WAIT, || async {
            let changes = seen.changes(node);
            (changes.0 > 0).then_some(changes)
        })
        .await;
        assert_eq!(changes, (1, false), "{node}");
    }
    let free = running.metrics.free_node_ids.get();
    assert_eq!(free, 4996);
    running.stop().await;
    watch.abort();
}

#[tokio::test]
async fn restart_keeps_every_value_without_rewriting() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let running = Running::start(&cluster, Controllers::All, config());
    let mut before = BTreeMap::new();
    for node in ["n1", "n2", "n3"] {
        create_node(&client, node).await;
        let values = wait_allocated(&client, node).await;
        before.insert(node, (values, resource_version(&client, node).await));
    }
    running.kill().await;

    let running = Running::start(&cluster, Controllers::All, config());
    create_node(&client, "n4").await;
    // The first free ID and subnets: every earlier value was restored before allocating.
    assert_eq!(
        wait_allocated(&client, "n4").await,
        expected(5, "10.244.3.0/24", "fd00:10:244:4::/64")
    );
    for (node, (values, version)) in &before {
        assert_eq!(&allocated(&client, node).await, values, "{node}");
        assert_eq!(
            &resource_version(&client, node).await,
            version,
            "{node} rewritten"
        );
    }
    running.stop().await;
}

#[tokio::test]
async fn a_deleted_nodes_id_is_reused_only_after_release() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let running = Running::start(&cluster, Controllers::NodeAllocation, config());
    for (node, id) in [("n1", "2"), ("n2", "3"), ("n3", "4")] {
        create_node(&client, node).await;
        wait_node_id(&client, node, id).await;
    }
    delete_node(&client, "n2").await;
    // Round-robin: the released 3 is not next while the manager runs.
    create_node(&client, "n4").await;
    wait_node_id(&client, "n4", "5").await;
    running.stop().await;

    // After a restart the scan starts at the bottom: the free 3 goes to the next node.
    let running = Running::start(&cluster, Controllers::NodeAllocation, config());
    create_node(&client, "n5").await;
    wait_node_id(&client, "n5", "3").await;
    assert_eq!(
        node_annotation(&client, "n5", ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR)
            .await
            .as_deref(),
        Some(r#"{"ipv4":"100.88.0.3/16","ipv6":"fd97::3/64"}"#)
    );
    // IDs held by live nodes never moved.
    for (node, id) in [("n1", "2"), ("n3", "4"), ("n4", "5")] {
        assert_eq!(
            node_annotation(&client, node, ANNOTATION_NODE_ID)
                .await
                .as_deref(),
            Some(id)
        );
    }
    running.stop().await;
}

#[tokio::test]
async fn duplicate_and_unreadable_annotated_ids_are_replaced() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let transit = |id: u32| format!(r#"{{"ipv4":"100.88.0.{id}/16","ipv6":"fd97::{id:x}/64"}}"#);
    for node in ["na", "nb"] {
        create_node_with_annotations(
            &client,
            node,
            json!({ANNOTATION_NODE_ID: "7", ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR: transit(7)}),
        )
        .await;
    }
    create_node_with_annotations(&client, "nc", json!({ANNOTATION_NODE_ID: "seven"})).await;
    let running = Running::start(&cluster, Controllers::NodeAllocation, config());
    // Name order: na keeps 7; nb, whose 7 is taken, gets the first free ID; nc's unreadable
    // ID is replaced too.
    wait_node_id(&client, "nb", "2").await;
    wait_node_id(&client, "nc", "3").await;
    assert_eq!(
        node_annotation(&client, "na", ANNOTATION_NODE_ID)
            .await
            .as_deref(),
        Some("7")
    );
    for (node, id) in [("na", 7), ("nb", 2), ("nc", 3)] {
        let found = eventually("transit address follows the ID", WAIT, || async {
            let value =
                node_annotation(&client, node, ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR).await?;
            (value == transit(id)).then_some(value)
        })
        .await;
        assert_eq!(found, transit(id));
    }
    running.stop().await;
}

#[tokio::test]
async fn without_segmentation_only_the_default_network_is_allocated() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = config();
    create_namespace(&client, "blue", false).await;
    udn_with_nad(
        &client,
        udn_test_support::l3_udn("blue", "net", "Secondary", &["10.128.0.0/16"]),
        &config,
    )
    .await;
    create_node(&client, "n1").await;
    let off = Config {
        segmentation: false,
        ..config
    };
    let ctx = Context::new(client.clone(), off, Metrics::unregistered(), None);
    let shutdown = Shutdown::new();
    let manager = tokio::spawn(run_controllers(ctx, shutdown.clone()));
    assert_eq!(
        wait_allocated(&client, "n1").await,
        expected(2, "10.244.0.0/24", "fd00:10:244:1::/64")
    );
    // No NAD got a network ID: the UDN controllers did not run.
    let nads: Api<NetworkAttachmentDefinition> = Api::namespaced(client.clone(), "blue");
    let nad = nads.get("net").await.unwrap();
    assert!(
        !nad.metadata
            .annotations
            .unwrap_or_default()
            .contains_key(ANNOTATION_NETWORK_ID)
    );
    shutdown.trigger();
    manager.await.unwrap().unwrap();
}
