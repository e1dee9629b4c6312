//! Dynamic UDN against the in-memory API server: the `NodesSelected` condition and the
//! `udn_nodes_rendered` metric follow the nodes where a network's pods run, a node keeps the
//! network for the grace period after its last pod left, and nothing is reported while the
//! feature is off.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "node_subnets_support/mod.rs"]
mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use support::*;
use udn_api::crd::UserDefinedNetwork;
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
