//! NAD recovery against the in-memory API server: a NetworkAttachmentDefinition deleted
//! while a pod names it comes back (same spec, labels, annotations) with a Normal Event; once
//! no pod names it, a deletion stands.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod network_support;

use std::time::Duration;

use network_support::*;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use udn_cluster_manager::config::Config;
use udn_cluster_manager::context::Context;
use udn_cluster_manager::metrics::Metrics;
use udn_test_support::{namespace, pod_with_annotations};

/// The seed's bridge NAD (`foo-network`), with a label and an annotation to carry over.
fn foo_network(namespace: &str) -> Value {
    json!({
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {
            "name": "foo-network",
            "namespace": namespace,
            "labels": {"team": "storage"},
            "annotations": {"k8s.v1.cni.cncf.io/resourceName": "example.com/nic"},
        },
        "spec": {"config": "{\n  \"cniVersion\": \"0.3.0\",\n  \"name\": \"foo-network\",\n  \"type\": \"bridge\",\n  \"bridge\": \"br0\",\n  \"isGateway\": true,\n  \"ipam\": {\"type\": \"host-local\", \"subnet\": \"172.36.0.0/24\"}\n}"},
    })
}

fn pod_using(namespace: &str, name: &str, networks: &str) -> Value {
    pod_with_annotations(
        namespace,
        name,
        Some("node1"),
        json!({"k8s.v1.cni.cncf.io/networks": networks}),
    )
}

/// NAD recovery running in a task until dropped.
struct Recovery(Option<oneshot::Sender<()>>);

impl Recovery {
    fn start(cluster: &Cluster) -> Self {
        let ctx = Context::new(
            cluster.0.client(),
            Config::for_tests(),
            Metrics::unregistered(),
            Some("test".to_owned()),
        );
        let (stop, stopped) = oneshot::channel::<()>();
        let stopped = futures::FutureExt::shared(async move {
            let _ = stopped.await;
        });
        tokio::spawn(udn_cluster_manager::nad_recovery::run(ctx, stopped));
        Self(Some(stop))
    }
}

impl Drop for Recovery {
    fn drop(&mut self) {
        if let Some(stop) = self.0.take() {
            let _ = stop.send(());
        }
    }
}

/// Waits until the recovery's watches have listed (a NAD created now is seen).
async fn settled(cluster: &Cluster) {
    // The watch lists within milliseconds; the probe NAD shows it has.
    cluster.create(
        Kind::Nad,
        Some("default"),
        json!({
        "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": "probe", "namespace": "default"}, "spec": {"config": "{}"}}),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// The NAD stays absent for `period`.
async fn stays_gone(cluster: &Cluster, namespace: &str, name: &str, period: Duration) {
    let end = tokio::time::Instant::now() + period;
    while tokio::time::Instant::now() < end {
        assert!(
            cluster.get(Kind::Nad, Some(namespace), name).is_none(),
            "{namespace}/{name} came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_use_nad_comes_back_and_an_unused_one_stays_deleted() {
    let cluster = Cluster::new();
    cluster.try_create(Kind::Namespace, None, namespace("default", false));
    let original = cluster.create(Kind::Nad, Some("default"), foo_network("default"));
    // The seed's pod: a bare name, twice.
    cluster.create(
        Kind::Pod,
        Some("default"),
        pod_using("default", "demo", "foo-network, foo-network"),
    );
    let _recovery = Recovery::start(&cluster);
    settled(&cluster).await;

    cluster.delete(Kind::Nad, Some("default"), "foo-network");
    let started = std::time::Instant::now();
    let back = eventually("foo-network recreated", || {
        cluster.get(Kind::Nad, Some("default"), "foo-network")
    })
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(back["spec"], original["spec"]);
    assert_eq!(back["metadata"]["labels"], original["metadata"]["labels"]);
    assert_eq!(
        back["metadata"]["annotations"],
        original["metadata"]["annotations"]
    );
    assert_ne!(back["metadata"]["uid"], original["metadata"]["uid"]);
    let event = eventually("the Normal Event", || {
        cluster
            .events_for("foo-network")
            .into_iter()
            .find(|e| e["reason"] == "NetworkAttachmentDefinitionRecovered")
    })
    .await;
    assert_eq!(event["type"], "Normal");
    assert_eq!(event["regarding"]["uid"], back["metadata"]["uid"]);
    assert!(
        event["note"].as_str().unwrap().contains("pod default/demo"),
        "{event}"
    );

    // Without its pod, a deletion stands.
    cluster.delete(Kind::Pod, Some("default"), "demo");
    eventually("the pod gone", || {
        cluster
            .get(Kind::Pod, Some("default"), "demo")
            .is_none()
            .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.delete(Kind::Nad, Some("default"), "foo-network");
    stays_gone(&cluster, "default", "foo-network", Duration::from_secs(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_of_other_namespaces_count_by_namespaced_reference_only() {
    let cluster = Cluster::new();
    for name in ["default", "apps", "other"] {
        cluster.try_create(Kind::Namespace, None, namespace(name, false));
    }
    cluster.create(Kind::Nad, Some("apps"), foo_network("apps"));
    cluster.create(Kind::Nad, Some("other"), foo_network("other"));
    // A bare name in "other" means other/foo-network; JSON names apps/foo-network.
    cluster.create(
        Kind::Pod,
        Some("other"),
        pod_using("other", "bare", "foo-network"),
    );
    cluster.create(
        Kind::Pod,
        Some("default"),
        pod_using(
            "default",
            "json",
            r#"[{"name":"foo-network","namespace":"apps","interface":"net1"}]"#,
        ),
    );
    let _recovery = Recovery::start(&cluster);
    settled(&cluster).await;

    cluster.delete(Kind::Nad, Some("apps"), "foo-network");
    eventually("apps/foo-network recreated", || {
        cluster.get(Kind::Nad, Some("apps"), "foo-network")
    })
    .await;
    // other/foo-network is used by "bare": it comes back too; then without users it goes.
    cluster.delete(Kind::Pod, Some("other"), "bare");
    eventually("the pod gone", || {
        cluster
            .get(Kind::Pod, Some("other"), "bare")
            .is_none()
            .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.delete(Kind::Nad, Some("other"), "foo-network");
    stays_gone(&cluster, "other", "foo-network", Duration::from_secs(1)).await;
    // An unused NAD (the probe) stays deleted as well.
    cluster.delete(Kind::Nad, Some("default"), "probe");
    stays_gone(&cluster, "default", "probe", Duration::from_millis(500)).await;
}
