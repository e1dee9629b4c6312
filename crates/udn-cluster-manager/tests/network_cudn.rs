//! CUDN controller against the in-memory API server: selector changes, new and
//! terminating namespaces, Localnet, per-namespace errors, deletion.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod network_support;

use network_support::*;
use serde_json::{Value, json};
use udn_test_support::cudn;

fn created_in(namespaces: &str) -> (String, String, String) {
    (
        "True".to_owned(),
        "NetworkAttachmentDefinitionCreated".to_owned(),
        format!(
            "NetworkAttachmentDefinition has been created in following namespaces: [{namespaces}]"
        ),
    )
}

async fn wait_cudn(cluster: &Cluster, name: &str, expected: (String, String, String)) -> Value {
    wait_condition(
        cluster,
        Kind::Cudn,
        None,
        name,
        (&expected.0, &expected.1, &expected.2),
    )
    .await
}

fn tenant_ns(cluster: &Cluster, name: &str, tenant: &str) {
    cluster.create(
        Kind::Namespace,
        None,
        namespace_with_labels(name, json!({"tenant": tenant})),
    );
}

fn nad_namespaces(cluster: &Cluster, name: &str) -> Vec<String> {
    cluster
        .list(Kind::Nad, None)
        .into_iter()
        .filter(|nad| nad["metadata"]["name"] == name)
        .filter_map(|nad| nad["metadata"]["namespace"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_drives_the_namespaces_with_a_nad() {
    let cluster = Cluster::new();
    tenant_ns(&cluster, "a", "x");
    tenant_ns(&cluster, "b", "x");
    tenant_ns(&cluster, "c", "y");
    let manager = Manager::start(&cluster);
    let object = cluster.create(
        Kind::Cudn,
        None,
        cudn(
            "tenant",
            json!({"matchLabels": {"tenant": "x"}}),
            json!({"topology": "Layer2", "layer2": {"role": "Secondary", "subnets": ["10.10.10.0/24"]}}),
        ),
    );
    wait_cudn(&cluster, "tenant", created_in("a, b")).await;
    let nad = eventually("NAD a/tenant with an ID", || {
        cluster
            .get(Kind::Nad, Some("a"), "tenant")
            .filter(|nad| nad["metadata"]["annotations"]["k8s.ovn.org/network-id"].is_string())
    })
    .await;
    assert_eq!(
        nad["spec"]["config"],
        r#"{"cniVersion":"1.1.0","name":"cluster_udn_tenant","netAttachDefName":"a/tenant","role":"secondary","subnets":"10.10.10.0/24","topology":"layer2","type":"ovn-k8s-cni-overlay"}"#
    );
    assert_eq!(
        stable_metadata(&nad),
        json!({
            "name": "tenant",
            "namespace": "a",
            "labels": {"k8s.ovn.org/user-defined-network": ""},
            "annotations": {
                "k8s.ovn.org/network-id": "1",
                "k8s.ovn.org/network-name": "cluster_udn_tenant",
                "k8s.ovn.org/tunnel-keys": "[]",
            },
            "finalizers": [FINALIZER],
            "ownerReferences": [{
                "apiVersion": "k8s.ovn.org/v1",
                "kind": "ClusterUserDefinedNetwork",
                "name": "tenant",
                "uid": object["metadata"]["uid"],
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        })
    );
    let b = eventually("NAD b/tenant with an ID", || {
        cluster
            .get(Kind::Nad, Some("b"), "tenant")
            .filter(|nad| nad["metadata"]["annotations"]["k8s.ovn.org/network-id"].is_string())
    })
    .await;
    assert_eq!(b["metadata"]["annotations"]["k8s.ovn.org/network-id"], "1");
    let cudn = cluster.get(Kind::Cudn, None, "tenant").unwrap();
    assert_eq!(cudn["metadata"]["finalizers"], json!([FINALIZER]));

    // A namespace created later that matches.
    tenant_ns(&cluster, "d", "x");
    wait_cudn(&cluster, "tenant", created_in("a, b, d")).await;
    // A namespace that stops matching.
    cluster.merge_patch(
        Kind::Namespace,
        None,
        "a",
        json!({"metadata": {"labels": {"tenant": "y"}}}),
    );
    wait_cudn(&cluster, "tenant", created_in("b, d")).await;
    eventually("NAD a/tenant is gone", || {
        cluster
            .get(Kind::Nad, Some("a"), "tenant")
            .is_none()
            .then_some(())
    })
    .await;
    // The selector itself changes.
    cluster.merge_patch(
        Kind::Cudn,
        None,
        "tenant",
        json!({"spec": {"namespaceSelector": {"matchLabels": {"tenant": "y"}}}}),
    );
    wait_cudn(&cluster, "tenant", created_in("a, c")).await;
    eventually("NADs follow the selector", || {
        let mut namespaces = nad_namespaces(&cluster, "tenant");
        namespaces.sort();
        (namespaces == ["a", "c"]).then_some(())
    })
    .await;
    // Every NAD of the network carries the same ID.
    let ids: Vec<Value> = cluster
        .list(Kind::Nad, None)
        .into_iter()
        .map(|nad| nad["metadata"]["annotations"]["k8s.ovn.org/network-id"].clone())
        .collect();
    assert!(ids.iter().all(|id| *id == json!("1")), "{ids:?}");
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminating_namespace_loses_its_nad_and_goes() {
    let cluster = Cluster::new();
    tenant_ns(&cluster, "a", "x");
    tenant_ns(&cluster, "b", "x");
    let manager = Manager::start(&cluster);
    cluster.create(
        Kind::Cudn,
        None,
        cudn(
            "tenant",
            json!({"matchLabels": {"tenant": "x"}}),
            json!({"topology": "Layer3", "layer3": {"role": "Secondary", "subnets": [{"cidr": "10.50.0.0/16"}]}}),
        ),
    );
    wait_cudn(&cluster, "tenant", created_in("a, b")).await;
    cluster.delete(Kind::Namespace, None, "b");
    wait_cudn(&cluster, "tenant", created_in("a")).await;
    eventually("namespace b is gone", || {
        cluster
            .get(Kind::Namespace, None, "b")
            .is_none()
            .then_some(())
    })
    .await;
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn localnet_and_per_namespace_errors() {
    let cluster = Cluster::new();
    tenant_ns(&cluster, "a", "x");
    tenant_ns(&cluster, "b", "x");
    cluster.create(
        Kind::Nad,
        Some("b"),
        json!({
            "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": "phys", "namespace": "b"},
            "spec": {"config": "{\"type\":\"macvlan\"}"},
        }),
    );
    let manager = Manager::start(&cluster);
    cluster.create(
        Kind::Cudn,
        None,
        cudn(
            "phys",
            json!({"matchLabels": {"tenant": "x"}}),
            json!({"topology": "Localnet", "localnet": {
                "role": "Secondary", "physicalNetworkName": "physnet1",
                "subnets": ["192.168.10.0/24"], "excludeSubnets": ["192.168.10.0/30"],
                "vlan": {"mode": "Access", "access": {"id": 200}},
            }}),
        ),
    );
    wait_condition(
        &cluster,
        Kind::Cudn,
        None,
        "phys",
        (
            "False",
            "NetworkAttachmentDefinitionSyncError",
            "foreign NetworkAttachmentDefinition with the desired name already exist [b/phys]",
        ),
    )
    .await;
    let nad = cluster.get(Kind::Nad, Some("a"), "phys").unwrap();
    assert_eq!(
        nad["spec"]["config"],
        r#"{"cniVersion":"1.1.0","excludeSubnets":"192.168.10.0/30","mtu":1500,"name":"cluster_udn_phys","netAttachDefName":"a/phys","physicalNetworkName":"physnet1","role":"secondary","subnets":"192.168.10.0/24","topology":"localnet","type":"ovn-k8s-cni-overlay","vlanID":200}"#
    );
    cluster.delete(Kind::Nad, Some("b"), "phys");
    wait_cudn(&cluster, "phys", created_in("a, b")).await;
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_cudn_needs_labelled_namespaces_and_deletion_cleans_up() {
    let cluster = Cluster::new();
    cluster.create(
        Kind::Namespace,
        None,
        namespace_with_labels(
            "red",
            json!({"tenant": "x", "k8s.ovn.org/primary-user-defined-network": ""}),
        ),
    );
    tenant_ns(&cluster, "plain", "x");
    let manager = Manager::start(&cluster);
    cluster.create(
        Kind::Cudn,
        None,
        cudn(
            "prim",
            json!({"matchLabels": {"tenant": "x"}}),
            json!({"topology": "Layer2", "layer2": {"role": "Primary", "subnets": ["10.60.0.0/16"]}}),
        ),
    );
    wait_condition(
        &cluster,
        Kind::Cudn,
        None,
        "prim",
        (
            "False",
            "NetworkAttachmentDefinitionSyncError",
            "invalid primary network state for namespace \"plain\": a valid primary user \
             defined network or network attachment definition custom resource, and required \
             namespace label \"k8s.ovn.org/primary-user-defined-network\" must both be present",
        ),
    )
    .await;
    let nad = eventually("NAD red/prim with tunnel keys", || {
        cluster
            .get(Kind::Nad, Some("red"), "prim")
            .filter(|nad| nad["metadata"]["annotations"]["k8s.ovn.org/tunnel-keys"].is_string())
    })
    .await;
    assert_eq!(
        nad["metadata"]["annotations"]["k8s.ovn.org/tunnel-keys"],
        "[16711684,16744450]"
    );
    assert!(cluster.get(Kind::Nad, Some("plain"), "prim").is_none());
    cluster.delete(Kind::Cudn, None, "prim");
    eventually("the CUDN and its NAD are gone", || {
        (cluster.get(Kind::Cudn, None, "prim").is_none()
            && cluster.get(Kind::Nad, Some("red"), "prim").is_none())
        .then_some(())
    })
    .await;
    manager.stop().await;
}
