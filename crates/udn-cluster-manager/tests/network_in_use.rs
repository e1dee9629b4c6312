//! Deleting a network while pods still use it: the finalizer stays, the condition says
//! which pods, and the deletion completes as soon as the last pod is gone.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod network_support;

use network_support::*;
use serde_json::json;
use udn_test_support::{cudn, l3_udn, namespace, pod_with_annotations};

fn pod_on(namespace: &str, name: &str, nad_keys: &[&str]) -> serde_json::Value {
    let networks: serde_json::Map<String, serde_json::Value> = nad_keys
        .iter()
        .map(|key| {
            (
                (*key).to_owned(),
                json!({"ip_addresses": ["10.10.1.5/24"], "mac_address": "0a:58:0a:0a:01:05"}),
            )
        })
        .collect();
    pod_with_annotations(
        namespace,
        name,
        Some("node1"),
        json!({"k8s.ovn.org/pod-networks": serde_json::Value::Object(networks).to_string()}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udn_deletion_waits_for_its_pods() {
    let cluster = Cluster::new();
    cluster.create(Kind::Namespace, None, namespace("blue", true));
    let manager = Manager::start(&cluster);
    cluster.create(
        Kind::Udn,
        Some("blue"),
        l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]),
    );
    eventually("the NAD", || cluster.get(Kind::Nad, Some("blue"), "net")).await;
    cluster.create(Kind::Pod, Some("blue"), pod_on("blue", "p2", &["blue/net"]));
    cluster.create(
        Kind::Pod,
        Some("blue"),
        pod_on("blue", "p1", &["default", "blue/net"]),
    );
    cluster.create(
        Kind::Pod,
        Some("blue"),
        pod_on("blue", "other", &["blue/else"]),
    );
    cluster.delete(Kind::Udn, Some("blue"), "net");
    wait_condition(
        &cluster,
        Kind::Udn,
        Some("blue"),
        "net",
        (
            "False",
            "SyncError",
            "failed to delete NetworkAttachmentDefinition [blue/net]: network in use by the \
             following pods: [blue/p1 blue/p2]",
        ),
    )
    .await;
    let udn = cluster.get(Kind::Udn, Some("blue"), "net").unwrap();
    assert!(udn["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(udn["metadata"]["finalizers"], json!([FINALIZER]));
    let nad = cluster.get(Kind::Nad, Some("blue"), "net").unwrap();
    assert_eq!(nad["metadata"]["finalizers"], json!([FINALIZER]));
    cluster.delete(Kind::Pod, Some("blue"), "p1");
    wait_condition(
        &cluster,
        Kind::Udn,
        Some("blue"),
        "net",
        (
            "False",
            "SyncError",
            "failed to delete NetworkAttachmentDefinition [blue/net]: network in use by the \
             following pods: [blue/p2]",
        ),
    )
    .await;
    cluster.delete(Kind::Pod, Some("blue"), "p2");
    eventually("the UDN and its NAD are gone", || {
        (cluster.get(Kind::Udn, Some("blue"), "net").is_none()
            && cluster.get(Kind::Nad, Some("blue"), "net").is_none())
        .then_some(())
    })
    .await;
    assert!(cluster.get(Kind::Pod, Some("blue"), "other").is_some());
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cudn_keeps_a_used_nad_of_an_unselected_namespace_until_the_pod_goes() {
    let cluster = Cluster::new();
    for (name, tenant) in [("a", "x"), ("b", "x")] {
        cluster.create(
            Kind::Namespace,
            None,
            namespace_with_labels(name, json!({"tenant": tenant})),
        );
    }
    let manager = Manager::start(&cluster);
    cluster.create(
        Kind::Cudn,
        None,
        cudn(
            "shared",
            json!({"matchLabels": {"tenant": "x"}}),
            json!({"topology": "Layer2", "layer2": {"role": "Secondary", "subnets": ["10.40.0.0/16"]}}),
        ),
    );
    wait_condition(
        &cluster,
        Kind::Cudn,
        None,
        "shared",
        (
            "True",
            "NetworkAttachmentDefinitionCreated",
            "NetworkAttachmentDefinition has been created in following namespaces: [a, b]",
        ),
    )
    .await;
    cluster.create(Kind::Pod, Some("b"), pod_on("b", "web", &["b/shared"]));
    cluster.merge_patch(
        Kind::Namespace,
        None,
        "b",
        json!({"metadata": {"labels": {"tenant": "y"}}}),
    );
    wait_condition(
        &cluster,
        Kind::Cudn,
        None,
        "shared",
        (
            "False",
            "NetworkAttachmentDefinitionSyncError",
            "failed to delete NetworkAttachmentDefinition [b/shared]: network in use by the \
             following pods: [b/web]",
        ),
    )
    .await;
    assert!(cluster.get(Kind::Nad, Some("b"), "shared").is_some());
    cluster.delete(Kind::Pod, Some("b"), "web");
    wait_condition(
        &cluster,
        Kind::Cudn,
        None,
        "shared",
        (
            "True",
            "NetworkAttachmentDefinitionCreated",
            "NetworkAttachmentDefinition has been created in following namespaces: [a]",
        ),
    )
    .await;
    assert!(cluster.get(Kind::Nad, Some("b"), "shared").is_none());
    // Deleting the CUDN while a pod uses its NAD in `a`.
    cluster.create(Kind::Pod, Some("a"), pod_on("a", "db", &["a/shared"]));
    cluster.delete(Kind::Cudn, None, "shared");
    wait_condition(
        &cluster,
        Kind::Cudn,
        None,
        "shared",
        (
            "False",
            "NetworkAttachmentDefinitionSyncError",
            "failed to delete NetworkAttachmentDefinition [a/shared]: network in use by the \
             following pods: [a/db]",
        ),
    )
    .await;
    cluster.delete(Kind::Pod, Some("a"), "db");
    eventually("the CUDN and its NADs are gone", || {
        (cluster.get(Kind::Cudn, None, "shared").is_none()
            && cluster.list(Kind::Nad, None).is_empty())
        .then_some(())
    })
    .await;
    manager.stop().await;
}
