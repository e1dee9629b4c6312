//! Dynamic UDN against the in-memory API server: the `NodesSelected` condition and the
//! `udn_nodes_rendered` metric follow the nodes where a network's pods run, a node keeps the
//! network for the grace period after its last pod left, and nothing is reported while the
//! feature is off. The per-node allocations follow the same nodes: a Layer3 network's host
//! subnet in `k8s.ovn.org/node-subnets` and a primary Layer2 network's gateway router tunnel
//! ID, allocated once a pod of the network runs on the node and removed a grace period after
//! its last pod left (not before); a restart while pods run changes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "node_subnets_support/mod.rs"]
mod support;

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use support::*;
use udn_api::annotations::{parse_node_layer2_tunnel_ids, parse_node_subnets};
use udn_api::crd::UserDefinedNetwork;
use udn_api::names::{ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS, ANNOTATION_NODE_SUBNETS};
use udn_cluster_manager::config::Config;
use udn_cluster_manager::context::Context;
use udn_cluster_manager::metrics::{Metrics, NetworkNameLabels};
use udn_cluster_manager::run::run_controllers;
use udn_runtime::Shutdown;
use udn_test_support::TestCluster;

const CONDITION: &str = "NodesSelected";

async fn create_pod(client: &kube::Client, namespace: &str, name: &str, node: &str) {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pod: Pod =
        serde_json::from_value(udn_test_support::pod(namespace, name, Some(node))).unwrap();
    api.create(&PostParams::default(), &pod).await.unwrap();
}

async fn delete_pod(client: &kube::Client, namespace: &str, name: &str) {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    api.delete(name, &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
}

async fn wait_condition(client: &kube::Client, expected: (&str, &str)) {
    eventually(&format!("NodesSelected {expected:?}"), WAIT, || async {
        udn_condition(client, "blue", "net", CONDITION)
            .await
            .filter(|(status, reason, message)| {
                status == expected.0 && reason == "DynamicAllocation" && message == expected.1
            })
    })
    .await;
}

/// `lastTransitionTime` of blue/net's `NodesSelected`.
async fn transition_time(client: &kube::Client) -> String {
    let api: Api<UserDefinedNetwork> = Api::namespaced(client.clone(), "blue");
    let udn = api.get("net").await.unwrap();
    let condition = udn
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == CONDITION)
        .unwrap();
    serde_json::to_string(&condition.last_transition_time).unwrap()
}

fn rendered(metrics: &Metrics) -> i64 {
    metrics
        .udn_nodes_rendered
        .get_or_create(&NetworkNameLabels {
            network_name: "blue_net".to_owned(),
        })
        .get()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_selected_follows_the_pods_and_the_grace_period() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let mut config = config();
    config.dynamic_udn.enabled = true;
    config.dynamic_udn.grace_period = Duration::from_secs(2);
    create_namespace(&client, "blue", true).await;
    for node in ["n1", "n2"] {
        create_node(&client, node).await;
    }
    udn_with_nad(
        &client,
        udn_test_support::l3_udn("blue", "net", "Primary", &["10.128.0.0/16"]),
        &config,
    )
    .await;
    let metrics = Metrics::unregistered();
    let ctx = Context::new(client.clone(), config, metrics.clone(), None);
    let shutdown = Shutdown::new();
    let manager = tokio::spawn(run_controllers(ctx, shutdown.clone()));

    wait_condition(
        &client,
        ("False", "no nodes currently rendered with network"),
    )
    .await;
    create_pod(&client, "blue", "a", "n1").await;
    create_pod(&client, "blue", "b", "n2").await;
    wait_condition(&client, ("True", "2 node(s) rendered with network")).await;
    assert_eq!(rendered(&metrics), 2);
    let became_true = transition_time(&client).await;
    // b leaves: n2 keeps the network for the grace period, then it goes.
    delete_pod(&client, "blue", "b").await;
    let left = std::time::Instant::now();
    wait_condition(&client, ("True", "1 node(s) rendered with network")).await;
    assert!(
        left.elapsed() >= Duration::from_millis(1500),
        "n2 went after {:?}, before the grace period",
        left.elapsed()
    );
    assert_eq!(rendered(&metrics), 1);
    // Still True: the transition time stays (meta.SetStatusCondition).
    assert_eq!(transition_time(&client).await, became_true);
    shutdown.trigger();
    manager.await.unwrap().unwrap();
}

const GRACE: Duration = Duration::from_secs(2);

/// Dynamic UDN on, with a short grace period.
fn dynamic_config() -> Config {
    let mut config = config();
    config.dynamic_udn.enabled = true;
    config.dynamic_udn.grace_period = GRACE;
    config
}

/// The whole cluster-manager, started and stopped.
struct Manager {
    shutdown: Shutdown,
    task: tokio::task::JoinHandle<Result<(), udn_cluster_manager::run::RunError>>,
}

impl Manager {
    fn start(client: &kube::Client, config: Config) -> Self {
        let ctx = Context::new(client.clone(), config, Metrics::unregistered(), None);
        let shutdown = Shutdown::new();
        let task = tokio::spawn(run_controllers(ctx, shutdown.clone()));
        Self { shutdown, task }
    }

    async fn stop(self) {
        self.shutdown.trigger();
        self.task.await.unwrap().unwrap();
    }

    /// Crash: abort wherever it is.
    async fn kill(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

/// The node's host subnets of `network`, as CIDR texts.
async fn subnets_of(client: &kube::Client, node: &str, network: &str) -> Option<Vec<String>> {
    let value = node_annotation(client, node, ANNOTATION_NODE_SUBNETS).await?;
    let subnets = parse_node_subnets(&value).unwrap();
    Some(
        subnets
            .get(network)?
            .iter()
            .map(ToString::to_string)
            .collect(),
    )
}

/// The node's gateway router tunnel ID on `network`.
async fn tunnel_of(client: &kube::Client, node: &str, network: &str) -> Option<u32> {
    let value = node_annotation(
        client,
        node,
        ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS,
    )
    .await?;
    parse_node_layer2_tunnel_ids(&value)
        .unwrap()
        .get(network)
        .copied()
}

/// Fails unless `check` stays true for `duration`.
async fn holds_for<F, Fut>(what: &str, duration: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    while start.elapsed() < duration {
        assert!(
            check().await,
            "{what} stopped holding after {:?}",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A primary UDN `blue/net` (`udn`), nodes n1 and n2, Dynamic UDN on; the manager started
/// and the first scope published (`NodesSelected` says no node renders it yet).
async fn one_network(cluster: &TestCluster, udn: serde_json::Value) -> Manager {
    let client = cluster.client();
    let config = dynamic_config();
    create_namespace(&client, "blue", true).await;
    for node in ["n1", "n2"] {
        create_node(&client, node).await;
    }
    udn_with_nad(&client, udn, &config).await;
    let manager = Manager::start(&client, config);
    wait_condition(
        &client,
        ("False", "no nodes currently rendered with network"),
    )
    .await;
    manager
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer3_host_subnet_follows_the_pods_and_the_grace_period() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let manager = one_network(
        &cluster,
        udn_test_support::l3_udn("blue", "net", "Primary", &["10.128.0.0/16"]),
    )
    .await;
    // The default network is on every node; the UDN on none yet.
    for node in ["n1", "n2"] {
        eventually(&format!("default subnet of {node}"), WAIT, || async {
            default_subnets(&client, node).await
        })
        .await;
    }
    holds_for(
        "no node has blue_net",
        Duration::from_millis(500),
        || async {
            subnets_of(&client, "n1", "blue_net").await.is_none()
                && subnets_of(&client, "n2", "blue_net").await.is_none()
        },
    )
    .await;

    create_pod(&client, "blue", "a", "n1").await;
    let n1 = eventually("n1's blue_net subnet", WAIT, || async {
        subnets_of(&client, "n1", "blue_net").await
    })
    .await;
    holds_for(
        "n2 without blue_net",
        Duration::from_millis(500),
        || async { subnets_of(&client, "n2", "blue_net").await.is_none() },
    )
    .await;

    create_pod(&client, "blue", "b", "n2").await;
    let n2 = eventually("n2's blue_net subnet", WAIT, || async {
        subnets_of(&client, "n2", "blue_net").await
    })
    .await;
    assert_ne!(n1, n2);

    // b leaves: n2 keeps its subnet for the grace period, then loses it; n1 keeps its own.
    delete_pod(&client, "blue", "b").await;
    let left = Instant::now();
    holds_for(
        "n2 keeps blue_net during the grace period",
        GRACE - Duration::from_millis(500),
        || async { subnets_of(&client, "n2", "blue_net").await.as_ref() == Some(&n2) },
    )
    .await;
    eventually("n2 without blue_net", WAIT, || async {
        subnets_of(&client, "n2", "blue_net")
            .await
            .is_none()
            .then_some(())
    })
    .await;
    assert!(left.elapsed() >= GRACE - Duration::from_millis(200));
    assert_eq!(subnets_of(&client, "n1", "blue_net").await, Some(n1));
    // The default network stays.
    assert!(default_subnets(&client, "n2").await.is_some());

    // A pod comes back: so does a subnet.
    create_pod(&client, "blue", "c", "n2").await;
    eventually("n2's blue_net subnet again", WAIT, || async {
        subnets_of(&client, "n2", "blue_net").await
    })
    .await;
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer2_gateway_router_tunnel_id_follows_the_pods_and_the_grace_period() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let manager = one_network(
        &cluster,
        udn_test_support::l2_udn("blue", "net", "Primary", &["10.100.0.0/24"]),
    )
    .await;
    holds_for(
        "no node has a tunnel ID",
        Duration::from_millis(500),
        || async {
            tunnel_of(&client, "n1", "blue_net").await.is_none()
                && tunnel_of(&client, "n2", "blue_net").await.is_none()
        },
    )
    .await;

    create_pod(&client, "blue", "a", "n1").await;
    let n1 = eventually("n1's tunnel ID", WAIT, || async {
        tunnel_of(&client, "n1", "blue_net").await
    })
    .await;
    holds_for(
        "n2 without a tunnel ID",
        Duration::from_millis(500),
        || async { tunnel_of(&client, "n2", "blue_net").await.is_none() },
    )
    .await;

    create_pod(&client, "blue", "b", "n2").await;
    let n2 = eventually("n2's tunnel ID", WAIT, || async {
        tunnel_of(&client, "n2", "blue_net").await
    })
    .await;
    assert_ne!(n1, n2);

    delete_pod(&client, "blue", "b").await;
    let left = Instant::now();
    holds_for(
        "n2 keeps its tunnel ID during the grace period",
        GRACE - Duration::from_millis(500),
        || async { tunnel_of(&client, "n2", "blue_net").await == Some(n2) },
    )
    .await;
    eventually("n2 without a tunnel ID", WAIT, || async {
        tunnel_of(&client, "n2", "blue_net")
            .await
            .is_none()
            .then_some(())
    })
    .await;
    assert!(left.elapsed() >= GRACE - Duration::from_millis(200));
    assert_eq!(tunnel_of(&client, "n1", "blue_net").await, Some(n1));
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_while_pods_run_changes_no_allocation() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = dynamic_config();
    for node in ["n1", "n2"] {
        create_node(&client, node).await;
    }
    create_namespace(&client, "blue", true).await;
    udn_with_nad(
        &client,
        udn_test_support::l3_udn("blue", "net", "Primary", &["10.128.0.0/16"]),
        &config,
    )
    .await;
    create_namespace(&client, "green", true).await;
    udn_with_nad(
        &client,
        udn_test_support::l2_udn("green", "net", "Primary", &["10.100.0.0/24"]),
        &config,
    )
    .await;
    create_pod(&client, "blue", "a", "n1").await;
    create_pod(&client, "blue", "b", "n2").await;
    create_pod(&client, "green", "c", "n1").await;
    let manager = Manager::start(&client, config.clone());
    let annotations = || async {
        let mut all = Vec::new();
        for node in ["n1", "n2"] {
            for key in [
                ANNOTATION_NODE_SUBNETS,
                ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS,
            ] {
                all.push(node_annotation(&client, node, key).await);
            }
        }
        all
    };
    eventually("allocations where the pods run", WAIT, || async {
        let ready = subnets_of(&client, "n1", "blue_net").await.is_some()
            && subnets_of(&client, "n2", "blue_net").await.is_some()
            && tunnel_of(&client, "n1", "green_net").await.is_some();
        ready.then_some(())
    })
    .await;
    // Settled: nothing moves for a while.
    let before = annotations().await;
    holds_for(
        "the allocations settled",
        Duration::from_millis(500),
        || async { annotations().await == before },
    )
    .await;
    assert!(tunnel_of(&client, "n2", "green_net").await.is_none());

    // A crash and a restart: for longer than the grace period, nothing is removed,
    // reallocated or added.
    manager.kill().await;
    let manager = Manager::start(&client, config);
    wait_condition(&client, ("True", "2 node(s) rendered with network")).await;
    holds_for(
        "the allocations across a restart",
        GRACE + Duration::from_secs(1),
        || async { annotations().await == before },
    )
    .await;
    manager.stop().await;
}
