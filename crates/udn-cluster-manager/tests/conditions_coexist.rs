//! The UDN controller (`NetworkCreated`, field manager `user-defined-network-controller`)
//! and the node-subnets controller (`NetworkAllocationSucceeded`, field manager
//! `NetworkClusterController`) each apply only their own condition to a UDN's
//! `status.conditions` (a list map keyed by `type`): both conditions end up present, each
//! owned by its writer, and the object stops changing (no flapping between the writers).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use udn_api::crd::UserDefinedNetwork;
use udn_cluster_manager::config::Config;
use udn_cluster_manager::context::{Context, UDN_CONTROLLER};
use udn_cluster_manager::metrics::Metrics;
use udn_cluster_manager::node_subnets::status::FIELD_MANAGER as CLUSTER_CONTROLLER;
use udn_kube_sim::{PatchKind, ResourceKey, Subresource, WriteOptions};
use udn_test_support::TestCluster;

const WAIT: Duration = Duration::from_secs(20);
/// How long the object must stay unchanged to count as stable.
const QUIET: Duration = Duration::from_secs(2);

fn udns() -> ResourceKey {
    ResourceKey {
        group: "k8s.ovn.org".to_owned(),
        plural: "userdefinednetworks".to_owned(),
    }
}

/// Both controllers running until the returned sender fires (or is dropped).
fn start(
    cluster: &TestCluster,
) -> (
    tokio::sync::watch::Sender<bool>,
    Vec<tokio::task::JoinHandle<()>>,
) {
    let ctx = Context::new(
        cluster.client(),
        Config::for_tests(),
        Metrics::unregistered(),
        None,
    );
    let (stop, rx) = tokio::sync::watch::channel(false);
    let signal = move || {
        let mut rx = rx.clone();
        async move {
            let _ = rx.wait_for(|stopped| *stopped).await;
        }
    };
    let network_ctx = ctx.clone();
    let network_stop = signal();
    let tasks = vec![
        tokio::spawn(async move {
            udn_cluster_manager::network::run(network_ctx, network_stop)
                .await
                .expect("network controllers");
        }),
        tokio::spawn(async move {
            udn_cluster_manager::node_subnets::run(ctx, signal())
                .await
                .expect("node-subnets controller");
        }),
    ];
    (stop, tasks)
}

async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn get_udn(cluster: &TestCluster) -> Value {
    cluster.sim.get(&udns(), Some("blue"), "net").unwrap()
}

/// `(type, status)` of the UDN's conditions, in order.
fn conditions(udn: &Value) -> Vec<(String, String)> {
    udn["status"]["conditions"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|c| {
                    (
                        c["type"].as_str().unwrap_or_default().to_owned(),
                        c["status"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn both_true(udn: &Value) -> bool {
    let mut found = conditions(udn);
    found.sort();
    found
        == [
            ("NetworkAllocationSucceeded".to_owned(), "True".to_owned()),
            ("NetworkCreated".to_owned(), "True".to_owned()),
        ]
}

/// The condition types `manager`'s apply entry on `/status` owns.
fn owned_types(udn: &Value, manager: &str) -> Vec<String> {
    let entries = udn["metadata"]["managedFields"].as_array().unwrap();
    let entry = entries
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == "Apply")
        .unwrap_or_else(|| panic!("no apply entry of {manager}: {entries:#?}"));
    assert_eq!(entry["subresource"], "status");
    entry["fieldsV1"]["f:status"]["f:conditions"]
        .as_object()
        .map(|items| {
            items
                .keys()
                .filter_map(|key| key.strip_prefix("k:"))
                .map(|key| {
                    let element: Value = serde_json::from_str(key).unwrap();
                    element["type"].as_str().unwrap().to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn resource_version(udn: &Value) -> String {
    udn["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Waits for both conditions, then for the UDN to stay unchanged for [`QUIET`].
async fn converged(cluster: &TestCluster) -> Value {
    eventually(
        "NetworkCreated and NetworkAllocationSucceeded both True",
        || async { both_true(&get_udn(cluster)).then_some(()) },
    )
    .await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut last = get_udn(cluster);
    let mut quiet_since = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = get_udn(cluster);
        if resource_version(&now) != resource_version(&last) {
            assert!(both_true(&now), "a condition flapped: {:#?}", now["status"]);
            last = now;
            quiet_since = tokio::time::Instant::now();
        } else if quiet_since.elapsed() >= QUIET {
            return last;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the UDN kept changing: {:#?}",
            last["status"]
        );
    }
}

async fn setup(client: &Client) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = serde_json::from_value(udn_test_support::namespace("blue", true)).unwrap();
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let nodes: Api<Node> = Api::all(client.clone());
    let node = serde_json::from_value(udn_test_support::node("n1")).unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    let udns: Api<UserDefinedNetwork> = Api::namespaced(client.clone(), "blue");
    let udn = serde_json::from_value(udn_test_support::l3_udn(
        "blue",
        "net",
        "Primary",
        &["10.128.0.0/16"],
    ))
    .unwrap();
    udns.create(&PostParams::default(), &udn).await.unwrap();
}

#[tokio::test]
async fn both_conditions_coexist_each_owned_by_its_controller_and_stay_put() {
    let cluster = TestCluster::new();
    setup(&cluster.client()).await;
    let (stop, tasks) = start(&cluster);

    let udn = converged(&cluster).await;
    assert_eq!(owned_types(&udn, UDN_CONTROLLER), ["NetworkCreated"]);
    assert_eq!(
        owned_types(&udn, CLUSTER_CONTROLLER),
        ["NetworkAllocationSucceeded"]
    );

    // NetworkCreated goes missing while NetworkAllocationSucceeded is there: the UDN
    // controller writes it back without taking the other condition along.
    let body = json!({"status": {"conditions": [
        udn["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "NetworkAllocationSucceeded")
            .unwrap()
    ]}});
    cluster
        .sim
        .patch(
            &udns(),
            Some("blue"),
            "net",
            PatchKind::Merge,
            &serde_json::to_vec(&body).unwrap(),
            Subresource::Status,
            &WriteOptions::default(),
        )
        .unwrap();
    let udn = converged(&cluster).await;
    assert_eq!(owned_types(&udn, UDN_CONTROLLER), ["NetworkCreated"]);
    assert_eq!(
        owned_types(&udn, CLUSTER_CONTROLLER),
        ["NetworkAllocationSucceeded"]
    );

    let _ = stop.send(true);
    for task in tasks {
        task.await.unwrap();
    }
}
