//! Restart safety: a new controller rebuilds network IDs from the NADs, rewrites nothing,
//! never hands an ID out twice, and finishes work left over while it was down.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod network_support;

use std::collections::BTreeMap;

use network_support::*;
use serde_json::{Value, json};
use udn_test_support::{cudn, l2_udn, l3_udn, namespace};

/// `ns/name` -> (network-id, tunnel-keys, resourceVersion) of every NAD.
fn nad_identities(cluster: &Cluster) -> BTreeMap<String, (Value, Value, Value)> {
    cluster
        .list(Kind::Nad, None)
        .into_iter()
        .map(|nad| {
            let meta = &nad["metadata"];
            (
                format!(
                    "{}/{}",
                    meta["namespace"].as_str().unwrap(),
                    meta["name"].as_str().unwrap()
                ),
                (
                    meta["annotations"]["k8s.ovn.org/network-id"].clone(),
                    meta["annotations"]["k8s.ovn.org/tunnel-keys"].clone(),
                    meta["resourceVersion"].clone(),
                ),
            )
        })
        .collect()
}

async fn converged(
    cluster: &Cluster,
    expected_nads: usize,
) -> BTreeMap<String, (Value, Value, Value)> {
    eventually("every NAD has its identity", || {
        let nads = nad_identities(cluster);
        (nads.len() == expected_nads
            && nads
                .values()
                .all(|(id, keys, _)| id.is_string() && keys.is_string()))
        .then_some(nads)
    })
    .await
}

/// Wait until the manager's three controllers have each reconciled at least `n` objects.
async fn reconciled(manager: &Manager, udns: u64, cudns: u64, nads: u64) {
    let count = |controller: &'static str| {
        manager
            .metrics
            .reconciles
            .get_or_create(&udn_cluster_manager::metrics::ReconcileLabels {
                controller,
                result: "ok",
            })
            .get()
    };
    eventually("the new controllers reconciled everything", || {
        (count("udn") >= udns && count("cudn") >= cudns && count("network-ids") >= nads)
            .then_some(())
    })
    .await;
}

fn setup(cluster: &Cluster) {
    for ns in ["a", "b", "c"] {
        cluster.create(Kind::Namespace, None, namespace(ns, true));
    }
    cluster.create(
        Kind::Namespace,
        None,
        namespace_with_labels("shared1", json!({"tenant": "x"})),
    );
    cluster.create(
        Kind::Namespace,
        None,
        namespace_with_labels("shared2", json!({"tenant": "x"})),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_rebuilds_ids_and_rewrites_nothing() {
    let cluster = Cluster::new();
    setup(&cluster);
    let first = Manager::start(&cluster);
    cluster.create(
        Kind::Udn,
        Some("a"),
        l3_udn("a", "net", "Primary", &["10.1.0.0/16"]),
    );
    cluster.create(
        Kind::Udn,
        Some("b"),
        l2_udn("b", "net", "Primary", &["10.2.0.0/16"]),
    );
    cluster.create(
        Kind::Udn,
        Some("c"),
        l3_udn("c", "net", "Primary", &["10.3.0.0/16"]),
    );
    cluster.create(
        Kind::Cudn,
        None,
        cudn(
            "shared",
            json!({"matchLabels": {"tenant": "x"}}),
            json!({"topology": "Layer2", "layer2": {"role": "Secondary", "subnets": ["10.9.0.0/16"]}}),
        ),
    );
    let before = converged(&cluster, 5).await;
    first.stop().await;

    let second = Manager::start(&cluster);
    reconciled(&second, 3, 1, 5).await;
    assert_eq!(nad_identities(&cluster), before, "a restart rewrote NADs");
    // A new network gets an ID no existing network holds.
    cluster.create(Kind::Namespace, None, namespace("d", true));
    cluster.create(
        Kind::Udn,
        Some("d"),
        l2_udn("d", "net", "Primary", &["10.4.0.0/16"]),
    );
    let after = converged(&cluster, 6).await;
    let (new_id, new_keys, _) = after["d/net"].clone();
    for (key, (id, keys, _)) in &before {
        if key.starts_with("shared") {
            continue;
        }
        assert_ne!(*id, new_id, "{key} shares an ID with the new network");
        assert_ne!(
            *keys, new_keys,
            "{key} shares tunnel keys with the new network"
        );
    }
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clashing_id_is_reallocated_and_pending_deletion_completes() {
    let cluster = Cluster::new();
    setup(&cluster);
    let first = Manager::start(&cluster);
    cluster.create(
        Kind::Udn,
        Some("a"),
        l3_udn("a", "net", "Primary", &["10.1.0.0/16"]),
    );
    cluster.create(
        Kind::Udn,
        Some("b"),
        l3_udn("b", "net", "Primary", &["10.2.0.0/16"]),
    );
    cluster.create(
        Kind::Udn,
        Some("c"),
        l3_udn("c", "net", "Primary", &["10.3.0.0/16"]),
    );
    let before = converged(&cluster, 3).await;
    first.stop().await;

    // While nobody runs: b's NAD is made to claim a's ID, and c's UDN is deleted.
    let a_id = before["a/net"].0.clone();
    cluster.merge_patch(
        Kind::Nad,
        Some("b"),
        "net",
        json!({"metadata": {"annotations": {"k8s.ovn.org/network-id": a_id}}}),
    );
    cluster.delete(Kind::Udn, Some("c"), "net");

    let second = Manager::start(&cluster);
    eventually("b/net gets an ID of its own", || {
        let nads = nad_identities(&cluster);
        let b = nads.get("b/net")?.0.clone();
        (b != a_id && b.is_string()).then_some(())
    })
    .await;
    eventually("the deleted UDN and its NAD are gone", || {
        (cluster.get(Kind::Udn, Some("c"), "net").is_none()
            && cluster.get(Kind::Nad, Some("c"), "net").is_none())
        .then_some(())
    })
    .await;
    let after = nad_identities(&cluster);
    assert_eq!(after["a/net"].0, a_id, "the first holder keeps its ID");
    assert_eq!(
        after["a/net"].2, before["a/net"].2,
        "a/net was not rewritten"
    );
    second.stop().await;
}
