//! UDN controller against the in-memory API server: NAD JSON, finalizers, the
//! `NetworkCreated` condition and its upstream messages, reverts, events and metrics.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod network_support;

use network_support::*;
use serde_json::json;
use udn_api::cluster::ClusterConfig;
use udn_api::crd::UserDefinedNetwork;
use udn_api::render::{NetworkSource, render_nad};
use udn_test_support::{l2_udn, l3_udn, namespace};

const L3_BLUE: &str = r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"blue_net","netAttachDefName":"blue/net","role":"primary","subnets":"10.10.0.0/16","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#;

const CREATED: (&str, &str, &str) = (
    "True",
    "NetworkAttachmentDefinitionCreated",
    "NetworkAttachmentDefinition has been created",
);

fn nad_annotation(nad: &serde_json::Value, key: &str) -> Option<String> {
    nad["metadata"]["annotations"][key]
        .as_str()
        .map(str::to_owned)
}

async fn wait_nad_with_id(cluster: &Cluster, namespace: &str, name: &str) -> serde_json::Value {
    eventually(&format!("NAD {namespace}/{name} with a network ID"), || {
        cluster
            .get(Kind::Nad, Some(namespace), name)
            .filter(|nad| nad_annotation(nad, "k8s.ovn.org/network-id").is_some())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_layer3_udn_gets_its_nad_finalizer_condition_and_events() {
    let cluster = Cluster::new();
    cluster.create(Kind::Namespace, None, namespace("blue", true));
    let manager = Manager::start(&cluster);
    let udn = cluster.create(
        Kind::Udn,
        Some("blue"),
        l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]),
    );
    let condition = wait_condition(&cluster, Kind::Udn, Some("blue"), "net", CREATED).await;
    assert!(condition["lastTransitionTime"].is_string());
    let nad = wait_nad_with_id(&cluster, "blue", "net").await;
    assert_eq!(nad["spec"]["config"], L3_BLUE);
    assert_eq!(
        stable_metadata(&nad),
        json!({
            "name": "net",
            "namespace": "blue",
            "labels": {"k8s.ovn.org/user-defined-network": ""},
            "annotations": {
                "k8s.ovn.org/network-id": "1",
                "k8s.ovn.org/network-name": "blue_net",
                "k8s.ovn.org/tunnel-keys": "[]",
            },
            "finalizers": [FINALIZER],
            "ownerReferences": [{
                "apiVersion": "k8s.ovn.org/v1",
                "kind": "UserDefinedNetwork",
                "name": "net",
                "uid": udn["metadata"]["uid"],
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        })
    );
    let udn = cluster.get(Kind::Udn, Some("blue"), "net").unwrap();
    assert_eq!(udn["metadata"]["finalizers"], json!([FINALIZER]));
    let status_managers: Vec<&str> = udn["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["subresource"] == "status")
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(status_managers, ["user-defined-network-controller"]);
    let events = eventually("the NAD-created event", || {
        let events = cluster.events_for("net");
        (!events.is_empty()).then_some(events)
    })
    .await;
    assert!(
        events
            .iter()
            .any(|e| e["reason"] == "NetworkAttachmentDefinitionCreated"
                && e["type"] == "Normal"
                && e["note"] == "Created NetworkAttachmentDefinition [blue/net]")
    );
    let count = manager
        .metrics
        .user_defined_networks
        .get_or_create(&udn_cluster_manager::metrics::NetworkKindLabels {
            role: "Primary",
            topology: "Layer3",
        })
        .get();
    assert_eq!(count, 1);
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_per_network_and_primary_layer2_has_tunnel_keys() {
    let cluster = Cluster::new();
    cluster.create(Kind::Namespace, None, namespace("a", true));
    cluster.create(Kind::Namespace, None, namespace("b", true));
    let manager = Manager::start(&cluster);
    cluster.create(
        Kind::Udn,
        Some("a"),
        l3_udn("a", "net", "Primary", &["10.10.0.0/16"]),
    );
    let first = wait_nad_with_id(&cluster, "a", "net").await;
    cluster.create(
        Kind::Udn,
        Some("b"),
        l2_udn("b", "l2", "Primary", &["10.20.0.0/16", "fd20::/64"]),
    );
    let second = wait_nad_with_id(&cluster, "b", "l2").await;
    assert_eq!(
        nad_annotation(&first, "k8s.ovn.org/network-id").unwrap(),
        "1"
    );
    assert_eq!(
        nad_annotation(&second, "k8s.ovn.org/network-id").unwrap(),
        "2"
    );
    assert_eq!(
        nad_annotation(&second, "k8s.ovn.org/network-name").unwrap(),
        "b_l2"
    );
    assert_eq!(
        nad_annotation(&second, "k8s.ovn.org/tunnel-keys").unwrap(),
        "[16711685,16744450]"
    );
    assert_eq!(
        second["spec"]["config"],
        r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"b_l2","netAttachDefName":"b/l2","role":"primary","subnets":"10.20.0.0/16,fd20::/64","topology":"layer2","transitSubnet":"100.88.0.0/16,fd97::/64","type":"ovn-k8s-cni-overlay"}"#
    );
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_edited_nad_is_reverted_and_a_deleted_one_is_reported() {
    let cluster = Cluster::new();
    cluster.create(Kind::Namespace, None, namespace("blue", true));
    let manager = Manager::start(&cluster);
    cluster.create(
        Kind::Udn,
        Some("blue"),
        l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]),
    );
    wait_nad_with_id(&cluster, "blue", "net").await;
    cluster.merge_patch(
        Kind::Nad,
        Some("blue"),
        "net",
        json!({"spec": {"config": "{\"edited\":true}"}, "metadata": {"labels": {"extra": "x"}}}),
    );
    let reverted = eventually("the NAD config is reverted", || {
        cluster
            .get(Kind::Nad, Some("blue"), "net")
            .filter(|nad| nad["spec"]["config"] == L3_BLUE)
    })
    .await;
    assert_eq!(
        reverted["metadata"]["labels"],
        json!({"k8s.ovn.org/user-defined-network": ""})
    );
    assert_eq!(
        nad_annotation(&reverted, "k8s.ovn.org/network-id").as_deref(),
        Some("1")
    );
    // Deleting the NAD by hand: our finalizer keeps it, the condition says so.
    cluster.delete(Kind::Nad, Some("blue"), "net");
    wait_condition(
        &cluster,
        Kind::Udn,
        Some("blue"),
        "net",
        (
            "False",
            "NetworkAttachmentDefinitionDeleted",
            "NetworkAttachmentDefinition is being deleted",
        ),
    )
    .await;
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_nad_blocks_the_udn_and_is_never_touched() {
    let cluster = Cluster::new();
    cluster.create(Kind::Namespace, None, namespace("blue", true));
    let foreign = cluster.create(
        Kind::Nad,
        Some("blue"),
        json!({
            "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": "net", "namespace": "blue"},
            "spec": {"config": "{\"cniVersion\":\"0.3.1\",\"type\":\"bridge\"}"},
        }),
    );
    let manager = Manager::start(&cluster);
    cluster.create(
        Kind::Udn,
        Some("blue"),
        l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]),
    );
    wait_condition(
        &cluster,
        Kind::Udn,
        Some("blue"),
        "net",
        (
            "False",
            "SyncError",
            "foreign NetworkAttachmentDefinition with the desired name already exist [blue/net]",
        ),
    )
    .await;
    let udn = cluster.get(Kind::Udn, Some("blue"), "net").unwrap();
    assert_eq!(udn["metadata"]["finalizers"], json!([FINALIZER]));
    let warning = eventually("the sync-error event", || {
        cluster
            .events_for("net")
            .into_iter()
            .find(|e| e["reason"] == "SyncError")
    })
    .await;
    assert_eq!(warning["type"], "Warning");
    let untouched = cluster.get(Kind::Nad, Some("blue"), "net").unwrap();
    assert_eq!(
        untouched["metadata"]["resourceVersion"],
        foreign["metadata"]["resourceVersion"]
    );
    // The foreign NAD goes away: the UDN gets its own.
    cluster.delete(Kind::Nad, Some("blue"), "net");
    wait_condition(&cluster, Kind::Udn, Some("blue"), "net", CREATED).await;
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_primary_network_per_namespace() {
    let cluster = Cluster::new();
    cluster.create(Kind::Namespace, None, namespace("blue", true));
    let manager = Manager::start(&cluster);
    cluster.create(
        Kind::Udn,
        Some("blue"),
        l3_udn("blue", "first", "Primary", &["10.10.0.0/16"]),
    );
    wait_condition(&cluster, Kind::Udn, Some("blue"), "first", CREATED).await;
    cluster.create(
        Kind::Udn,
        Some("blue"),
        l2_udn("blue", "second", "Primary", &["10.20.0.0/16"]),
    );
    wait_condition(
        &cluster,
        Kind::Udn,
        Some("blue"),
        "second",
        (
            "False",
            "SyncError",
            "primary network already exist in namespace \"blue\": \"first\"",
        ),
    )
    .await;
    assert!(cluster.get(Kind::Nad, Some("blue"), "second").is_none());
    // A secondary network next to it is fine.
    cluster.create(
        Kind::Udn,
        Some("blue"),
        l2_udn("blue", "extra", "Secondary", &["10.30.0.0/16"]),
    );
    wait_condition(&cluster, Kind::Udn, Some("blue"), "extra", CREATED).await;
    // The first one goes: the second one takes its place.
    cluster.delete(Kind::Udn, Some("blue"), "first");
    wait_condition(&cluster, Kind::Udn, Some("blue"), "second", CREATED).await;
    eventually("the first UDN and its NAD are gone", || {
        (cluster.get(Kind::Udn, Some("blue"), "first").is_none()
            && cluster.get(Kind::Nad, Some("blue"), "first").is_none())
        .then_some(())
    })
    .await;
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_network_needs_the_namespace_label() {
    let cluster = Cluster::new();
    cluster.create(Kind::Namespace, None, namespace("plain", false));
    let manager = Manager::start(&cluster);
    cluster.create(
        Kind::Udn,
        Some("plain"),
        l3_udn("plain", "net", "Primary", &["10.10.0.0/16"]),
    );
    wait_condition(
        &cluster,
        Kind::Udn,
        Some("plain"),
        "net",
        (
            "False",
            "SyncError",
            "invalid primary network state for namespace \"plain\": a valid primary user \
             defined network or network attachment definition custom resource, and required \
             namespace label \"k8s.ovn.org/primary-user-defined-network\" must both be present",
        ),
    )
    .await;
    assert!(cluster.get(Kind::Nad, Some("plain"), "net").is_none());
    cluster.create(
        Kind::Udn,
        Some("plain"),
        l3_udn("plain", "side", "Secondary", &["10.20.0.0/16"]),
    );
    wait_condition(&cluster, Kind::Udn, Some("plain"), "side", CREATED).await;
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_errors_are_on_the_condition() {
    let cluster = Cluster::new();
    cluster.create(Kind::Namespace, None, namespace("blue", true));
    let manager = Manager::start(&cluster);
    // Overlaps the service CIDR: valid for the CRD schema, refused by the render.
    let builder = l3_udn("blue", "net", "Primary", &["10.96.0.0/16"]);
    let typed: UserDefinedNetwork = serde_json::from_value(builder.clone()).unwrap();
    let reason = render_nad(&NetworkSource::Udn(&typed), &ClusterConfig::default()).unwrap_err();
    let expected = format!("failed to generate NetworkAttachmentDefinition: {reason}");
    assert!(expected.contains("overlaps"), "{expected}");
    cluster.create(Kind::Udn, Some("blue"), builder);
    wait_condition(
        &cluster,
        Kind::Udn,
        Some("blue"),
        "net",
        ("False", "SyncError", expected.as_str()),
    )
    .await;
    assert!(cluster.get(Kind::Nad, Some("blue"), "net").is_none());
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_unused_udn_removes_nad_and_finalizer() {
    let cluster = Cluster::new();
    cluster.create(Kind::Namespace, None, namespace("blue", true));
    let manager = Manager::start(&cluster);
    cluster.create(
        Kind::Udn,
        Some("blue"),
        l3_udn("blue", "net", "Primary", &["10.10.0.0/16"]),
    );
    wait_nad_with_id(&cluster, "blue", "net").await;
    cluster.delete(Kind::Udn, Some("blue"), "net");
    eventually("the UDN and its NAD are gone", || {
        (cluster.get(Kind::Udn, Some("blue"), "net").is_none()
            && cluster.get(Kind::Nad, Some("blue"), "net").is_none())
        .then_some(())
    })
    .await;
    let deleted = eventually("the NAD-deleted event", || {
        cluster
            .events_for("net")
            .into_iter()
            .find(|e| e["reason"] == "NetworkAttachmentDefinitionDeleted")
    })
    .await;
    assert_eq!(
        deleted["note"],
        "Deleted NetworkAttachmentDefinition [blue/net]"
    );
    let count = manager
        .metrics
        .user_defined_networks
        .get_or_create(&udn_cluster_manager::metrics::NetworkKindLabels {
            role: "Primary",
            topology: "Layer3",
        })
        .get();
    assert_eq!(count, 0);
    manager.stop().await;
}
