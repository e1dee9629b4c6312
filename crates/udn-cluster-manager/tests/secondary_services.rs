//! Services on secondary networks against the in-memory API server: both seeds' opt-ins get
//! EndpointSlices with the pods' IPs on the NAD (ports resolved, one slice per family,
//! conditions as Kubernetes sets them), kept current as pods change (within 2 s), removed
//! with the annotation, left alone by a malformed annotation, and never fed by another
//! namespace's pods.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod network_support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use network_support::*;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use udn_cluster_manager::config::Config;
use udn_cluster_manager::context::Context;
use udn_cluster_manager::metrics::Metrics;
use udn_cluster_manager::secondary_services::{
    ANNOTATION_NETWORKS_STATUS_LEGACY, LABEL_ENDPOINT_CONTROLLER_NAME, MANAGED_BY,
};
use udn_kube_sim::{DeleteOptions, PatchKind, ResourceKey, Subresource, WriteOptions};
use udn_test_support::{namespace, pod_with_annotations};

const NETWORK_STATUS: &str = "k8s.v1.cni.cncf.io/network-status";
const NETWORKS: &str = "k8s.v1.cni.cncf.io/networks";
const ISIM: &str = "isim.dev/network";
const SERVICE_NAME: &str = "kubernetes.io/service-name";
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";

/// The controller running in a task until dropped.
struct Controller(Option<oneshot::Sender<()>>);

impl Controller {
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
        tokio::spawn(udn_cluster_manager::secondary_services::run(ctx, stopped));
        Self(Some(stop))
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if let Some(stop) = self.0.take() {
            let _ = stop.send(());
        }
    }
}

fn cluster(namespaces: &[&str]) -> Cluster {
    let cluster = Cluster::new();
    for name in namespaces {
        cluster.try_create(Kind::Namespace, None, namespace(name, false));
    }
    cluster
}

/// A network-status value: the default network, then `(nad name as written, ips)`.
fn status(networks: &[(&str, &[&str])]) -> String {
    let mut entries = vec![
        json!({"name": "kindnet", "interface": "eth0", "ips": ["10.244.1.9"], "default": true}),
    ];
    for (i, (name, ips)) in networks.iter().enumerate() {
        entries.push(json!({"name": name, "interface": format!("net{}", i + 1), "ips": ips}));
    }
    Value::Array(entries).to_string()
}

/// Creates pod `namespace/name` on node1 with `labels`, the network-status `status` under
/// `status_key` and container `ports`, then makes it Running and Ready.
fn create_pod(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    labels: Value,
    status_key: &str,
    status: &str,
    ports: Value,
) -> Value {
    let mut pod = pod_with_annotations(namespace, name, Some("node1"), json!({status_key: status}));
    pod["metadata"]["labels"] = labels;
    pod["spec"]["containers"][0]["ports"] = ports;
    cluster.create(Kind::Pod, Some(namespace), pod);
    set_ready(cluster, namespace, name, true)
}

fn pods_key() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        plural: "pods".to_owned(),
    }
}

fn set_ready(cluster: &Cluster, namespace: &str, name: &str, ready: bool) -> Value {
    let body = json!({"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": if ready { "True" } else { "False" }},
    ]}});
    cluster
        .0
        .sim
        .patch(
            &pods_key(),
            Some(namespace),
            name,
            PatchKind::Merge,
            body.to_string().as_bytes(),
            Subresource::Status,
            &WriteOptions::default(),
        )
        .unwrap()
}

/// Deletes a bound pod gracefully: it stays, terminating, as no kubelet stops it.
fn delete_gracefully(cluster: &Cluster, namespace: &str, name: &str) {
    let options = DeleteOptions {
        grace_period_seconds: Some(30),
        ..DeleteOptions::default()
    };
    cluster
        .0
        .sim
        .delete(&pods_key(), Some(namespace), name, &options)
        .unwrap();
}

fn service(namespace: &str, name: &str, annotations: Value, labels: Value, spec: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations, "labels": labels},
        "spec": spec,
    })
}

/// Our slices of Service `namespace/name`, by name.
fn our_slices(cluster: &Cluster, namespace: &str, name: &str) -> Vec<Value> {
    let mut slices: Vec<Value> = cluster
        .list(Kind::EndpointSlice, Some(namespace))
        .into_iter()
        .filter(|s| {
            s["metadata"]["labels"][SERVICE_NAME] == name
                && s["metadata"]["labels"][MANAGED_BY_LABEL] == MANAGED_BY
        })
        .collect();
    slices.sort_by_key(|s| {
        s["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    });
    slices
}

/// Waits until `check` holds for our slices of the Service; returns them.
async fn slices_where(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    what: &str,
    check: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    eventually(what, || {
        let slices = our_slices(cluster, namespace, name);
        check(&slices).then_some(slices)
    })
    .await
}

/// Every address of `slices`, sorted.
fn addresses(slices: &[Value]) -> Vec<String> {
    let mut all: Vec<String> = slices
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    all.sort();
    all
}

fn has_addresses(expected: &[&str]) -> impl Fn(&[Value]) -> bool {
    let expected: Vec<String> = expected.iter().map(|a| (*a).to_owned()).collect();
    move |slices| addresses(slices) == expected
}

/// `(ready, serving, terminating)` of the only endpoint of `slices`.
fn conditions(slices: &[Value]) -> Option<(bool, bool, bool)> {
    let [slice] = slices else { return None };
    let [endpoint] = slice["endpoints"].as_array()?.as_slice() else {
        return None;
    };
    let c = &endpoint["conditions"];
    Some((
        c["ready"].as_bool()?,
        c["serving"].as_bool()?,
        c["terminating"].as_bool()?,
    ))
}

fn event(cluster: &Cluster, name: &str, reason: &str) -> Option<Value> {
    cluster
        .events_for(name)
        .into_iter()
        .find(|e| e["reason"] == reason)
}

/// Seed 002: the `nginx-nad` Deployment's two pods on `default/macvlan`, a client on the
/// network with another app label, and an `app: nginx-nad` pod not on the network.
fn seed_002(cluster: &Cluster) -> Vec<Value> {
    let ports = json!([{"containerPort": 80}, {"containerPort": 443}]);
    let on = |name: &str, app: &str, ip: &str| {
        create_pod(
            cluster,
            "default",
            name,
            json!({"app": app}),
            NETWORK_STATUS,
            &status(&[("default/macvlan", &[ip])]),
            ports.clone(),
        )
    };
    let pods = vec![
        on("nginx-nad-65c7f7c6dc-b4zg8", "nginx-nad", "192.168.2.4"),
        on("nginx-nad-65c7f7c6dc-jkx5z", "nginx-nad", "192.168.2.5"),
        on(
            "netutils-nad-6d66668db6-kxhsj",
            "netutils-nad",
            "192.168.2.6",
        ),
        create_pod(
            cluster,
            "default",
            "nginx-nad-65c7f7c6dc-off",
            json!({"app": "nginx-nad"}),
            NETWORK_STATUS,
            &status(&[]),
            ports.clone(),
        ),
    ];
    cluster.create(
        Kind::Service,
        Some("default"),
        service(
            "default",
            "nginx-nad",
            json!({ISIM: "macvlan"}),
            json!({"app": "nginx-nad"}),
            json!({"clusterIP": "None", "ports": [
                {"name": "http", "port": 80, "protocol": "TCP"},
                {"name": "https", "port": 443, "protocol": "TCP"},
            ]}),
        ),
    );
    pods
}

/// Seed 003's `hostnames` Service (selector `app: hostnames`, `networks: br0`, targetPort
/// 9376) in `namespace`, with `networks` as the annotation.
fn hostnames(cluster: &Cluster, namespace: &str, networks: &str, labels: Value) -> Value {
    cluster.create(
        Kind::Service,
        Some(namespace),
        service(
            namespace,
            "hostnames",
            json!({NETWORKS: networks}),
            labels,
            json!({"selector": {"app": "hostnames"}, "ports": [
                {"protocol": "TCP", "port": 80, "targetPort": 9376},
            ]}),
        ),
    )
}

fn hostnames_pod(cluster: &Cluster, namespace: &str, name: &str, key: &str, status: &str) -> Value {
    create_pod(
        cluster,
        namespace,
        name,
        json!({"app": "hostnames"}),
        key,
        status,
        json!([{"containerPort": 9376, "protocol": "TCP"}]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_002_headless_service_gets_one_ipv4_slice_of_the_macvlan_ips() {
    let cluster = cluster(&["default"]);
    let pods = seed_002(&cluster);
    let _controller = Controller::start(&cluster);
    let slices = slices_where(
        &cluster,
        "default",
        "nginx-nad",
        "the nginx-nad slice",
        has_addresses(&["192.168.2.4", "192.168.2.5"]),
    )
    .await;
    let [slice] = slices.as_slice() else {
        panic!("{slices:?}")
    };
    let svc = cluster
        .get(Kind::Service, Some("default"), "nginx-nad")
        .unwrap();
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(slice["metadata"]["generateName"], "nginx-nad-");
    assert_eq!(
        slice["metadata"]["labels"],
        json!({SERVICE_NAME: "nginx-nad", MANAGED_BY_LABEL: MANAGED_BY, "service.kubernetes.io/headless": ""})
    );
    assert_eq!(
        slice["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "Service", "name": "nginx-nad",
                "uid": svc["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}])
    );
    assert_eq!(
        slice["ports"],
        json!([{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "https", "port": 443, "protocol": "TCP"}])
    );
    let expected: Vec<Value> = pods[..2]
        .iter()
        .zip(["192.168.2.4", "192.168.2.5"])
        .map(|(pod, ip)| {
            json!({
                "addresses": [ip],
                "conditions": {"ready": true, "serving": true, "terminating": false},
                "nodeName": "node1",
                "targetRef": {"kind": "Pod", "namespace": "default",
                              "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]},
            })
        })
        .collect();
    assert_eq!(slice["endpoints"], Value::Array(expected));
    let event = eventually("the Normal Event", || {
        event(&cluster, "nginx-nad", "EndpointSlicesUpdated")
    })
    .await;
    assert_eq!(event["type"], "Normal");
    assert_eq!(event["regarding"]["kind"], "Service");
    assert!(
        event["note"].as_str().unwrap().contains("default/macvlan"),
        "{event}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_003_selector_service_reads_the_legacy_status_and_bare_names() {
    let cluster = cluster(&["default"]);
    // The 2019 Multus status: the plural key, the bare NAD name; and today's.
    hostnames_pod(
        &cluster,
        "default",
        "hostnames-7d4f9c-abcde",
        ANNOTATION_NETWORKS_STATUS_LEGACY,
        &status(&[("br0", &["192.168.0.51"])]),
    );
    hostnames_pod(
        &cluster,
        "default",
        "hostnames-7d4f9c-fghij",
        NETWORK_STATUS,
        &status(&[("default/br0", &["192.168.0.52"])]),
    );
    let created = hostnames(&cluster, "default", "br0", json!({}));
    let _controller = Controller::start(&cluster);
    let slices = slices_where(
        &cluster,
        "default",
        "hostnames",
        "the hostnames slice",
        has_addresses(&["192.168.0.51", "192.168.0.52"]),
    )
    .await;
    assert_eq!(slices.len(), 1);
    assert_eq!(slices[0]["addressType"], "IPv4");
    assert_eq!(
        slices[0]["ports"],
        json!([{"name": "", "port": 9376, "protocol": "TCP"}])
    );
    // Not headless: no headless label.
    assert!(slices[0]["metadata"]["labels"]["service.kubernetes.io/headless"].is_null());
    // Without the KEP-4770 label: a Warning telling what to set; the Service is not edited.
    let warning = eventually("the label Warning", || {
        event(&cluster, "hostnames", "EndpointControllerLabelMissing")
    })
    .await;
    assert_eq!(warning["type"], "Warning");
    let note = warning["note"].as_str().unwrap();
    assert!(
        note.contains(LABEL_ENDPOINT_CONTROLLER_NAME) && note.contains(MANAGED_BY),
        "{note}"
    );
    let svc = cluster
        .get(Kind::Service, Some("default"), "hostnames")
        .unwrap();
    assert_eq!(svc["metadata"]["labels"], created["metadata"]["labels"]);
    assert_eq!(
        svc["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_target_port_is_resolved_per_pod() {
    let cluster = cluster(&["default"]);
    let pod = |name: &str, ip: &str, port: i64| {
        create_pod(
            &cluster,
            "default",
            name,
            json!({"app": "web"}),
            NETWORK_STATUS,
            &status(&[("default/br0", &[ip])]),
            json!([{"name": "web", "containerPort": port, "protocol": "TCP"}]),
        );
    };
    pod("a", "192.168.0.1", 8080);
    pod("b", "192.168.0.2", 8080);
    pod("c", "192.168.0.3", 9090);
    cluster.create(
        Kind::Service,
        Some("default"),
        service(
            "default",
            "web",
            json!({NETWORKS: "br0"}),
            json!({LABEL_ENDPOINT_CONTROLLER_NAME: MANAGED_BY}),
            json!({"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "web"}]}),
        ),
    );
    let _controller = Controller::start(&cluster);
    let slices = slices_where(&cluster, "default", "web", "two slices", |s| s.len() == 2).await;
    let mut by_port: Vec<(i64, Vec<String>)> = slices
        .iter()
        .map(|s| {
            (
                s["ports"][0]["port"].as_i64().unwrap(),
                addresses(std::slice::from_ref(s)),
            )
        })
        .collect();
    by_port.sort();
    assert_eq!(
        by_port,
        [
            (
                8080,
                vec!["192.168.0.1".to_owned(), "192.168.0.2".to_owned()]
            ),
            (9090, vec!["192.168.0.3".to_owned()]),
        ]
    );
    assert!(slices.iter().all(|s| s["ports"][0]["name"] == "http"));
    // With the KEP-4770 label there is nothing to warn about.
    assert!(event(&cluster, "web", "EndpointControllerLabelMissing").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dual_stack_pod_gets_an_ipv4_and_an_ipv6_slice() {
    let cluster = cluster(&["default"]);
    create_pod(
        &cluster,
        "default",
        "dual",
        json!({"app": "dual"}),
        NETWORK_STATUS,
        &status(&[("default/macvlan", &["192.168.2.7/24", "fd00:2::7/64"])]),
        json!([]),
    );
    cluster.create(
        Kind::Service,
        Some("default"),
        service(
            "default",
            "dual",
            json!({ISIM: "macvlan"}),
            json!({"app": "dual"}),
            json!({"clusterIP": "None"}),
        ),
    );
    let _controller = Controller::start(&cluster);
    let slices = slices_where(&cluster, "default", "dual", "two slices", |s| s.len() == 2).await;
    let families: BTreeSet<(String, Vec<String>)> = slices
        .iter()
        .map(|s| {
            (
                s["addressType"].as_str().unwrap().to_owned(),
                addresses(std::slice::from_ref(s)),
            )
        })
        .collect();
    assert_eq!(
        families,
        BTreeSet::from([
            ("IPv4".to_owned(), vec!["192.168.2.7".to_owned()]),
            ("IPv6".to_owned(), vec!["fd00:2::7".to_owned()]),
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_and_termination_show_in_the_conditions() {
    let cluster = cluster(&["default"]);
    hostnames_pod(
        &cluster,
        "default",
        "h",
        NETWORK_STATUS,
        &status(&[("default/br0", &["192.168.0.51"])]),
    );
    hostnames(&cluster, "default", "br0", json!({}));
    let _controller = Controller::start(&cluster);
    let ready =
        |expected: (bool, bool, bool)| move |slices: &[Value]| conditions(slices) == Some(expected);
    slices_where(
        &cluster,
        "default",
        "hostnames",
        "ready",
        ready((true, true, false)),
    )
    .await;
    set_ready(&cluster, "default", "h", false);
    slices_where(
        &cluster,
        "default",
        "hostnames",
        "not ready",
        ready((false, false, false)),
    )
    .await;
    set_ready(&cluster, "default", "h", true);
    slices_where(
        &cluster,
        "default",
        "hostnames",
        "ready again",
        ready((true, true, false)),
    )
    .await;
    // A Ready pod being deleted: still serving, terminating, not ready (ihcsim swapped these).
    delete_gracefully(&cluster, "default", "h");
    slices_where(
        &cluster,
        "default",
        "hostnames",
        "terminating",
        ready((false, true, true)),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_pod_or_a_new_network_status_updates_the_slice_within_2_s() {
    let cluster = cluster(&["default"]);
    seed_002(&cluster);
    let _controller = Controller::start(&cluster);
    slices_where(
        &cluster,
        "default",
        "nginx-nad",
        "converged",
        has_addresses(&["192.168.2.4", "192.168.2.5"]),
    )
    .await;

    let started = Instant::now();
    cluster.delete(Kind::Pod, Some("default"), "nginx-nad-65c7f7c6dc-b4zg8");
    slices_where(
        &cluster,
        "default",
        "nginx-nad",
        "the pod gone",
        has_addresses(&["192.168.2.5"]),
    )
    .await;
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_secs(2),
        "pod deletion took {elapsed:?}"
    );

    let started = Instant::now();
    cluster.merge_patch(
        Kind::Pod,
        Some("default"),
        "nginx-nad-65c7f7c6dc-jkx5z",
        json!({"metadata": {"annotations": {NETWORK_STATUS: status(&[("default/macvlan", &["192.168.2.9"])])}}}),
    );
    slices_where(
        &cluster,
        "default",
        "nginx-nad",
        "the new IP",
        has_addresses(&["192.168.2.9"]),
    )
    .await;
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_secs(2),
        "network-status change took {elapsed:?}"
    );

    // Off the network: out of the slice; the last endpoint gone, the slice goes too.
    let started = Instant::now();
    cluster.merge_patch(
        Kind::Pod,
        Some("default"),
        "nginx-nad-65c7f7c6dc-jkx5z",
        json!({"metadata": {"annotations": {NETWORK_STATUS: status(&[])}}}),
    );
    slices_where(
        &cluster,
        "default",
        "nginx-nad",
        "no slice",
        <[Value]>::is_empty,
    )
    .await;
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_secs(2),
        "leaving the network took {elapsed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_the_annotation_deletes_our_slices_only() {
    let cluster = cluster(&["default"]);
    seed_002(&cluster);
    // Kubernetes' slice for the same Service name (someone else's): never touched.
    let foreign = cluster.create(
        Kind::EndpointSlice,
        Some("default"),
        json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "nginx-nad-kube", "namespace": "default", "labels": {
                SERVICE_NAME: "nginx-nad", MANAGED_BY_LABEL: "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.1.9"]}],
        }),
    );
    let _controller = Controller::start(&cluster);
    slices_where(&cluster, "default", "nginx-nad", "our slice", |s| {
        s.len() == 1
    })
    .await;
    cluster.merge_patch(
        Kind::Service,
        Some("default"),
        "nginx-nad",
        json!({"metadata": {"annotations": {ISIM: null}}}),
    );
    slices_where(
        &cluster,
        "default",
        "nginx-nad",
        "our slices gone",
        <[Value]>::is_empty,
    )
    .await;
    let event = eventually("the Normal Event", || {
        event(&cluster, "nginx-nad", "EndpointSlicesDeleted")
    })
    .await;
    assert_eq!(event["type"], "Normal");
    let kept = cluster
        .get(Kind::EndpointSlice, Some("default"), "nginx-nad-kube")
        .unwrap();
    assert_eq!(
        kept["metadata"]["resourceVersion"],
        foreign["metadata"]["resourceVersion"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_annotation_warns_once_and_leaves_the_slice_unchanged() {
    let cluster = cluster(&["default"]);
    hostnames_pod(
        &cluster,
        "default",
        "h1",
        NETWORK_STATUS,
        &status(&[("default/br0", &["192.168.0.51"])]),
    );
    hostnames_pod(
        &cluster,
        "default",
        "h2",
        NETWORK_STATUS,
        &status(&[("default/br0", &["192.168.0.52"])]),
    );
    hostnames(
        &cluster,
        "default",
        "br0",
        json!({LABEL_ENDPOINT_CONTROLLER_NAME: MANAGED_BY}),
    );
    let _controller = Controller::start(&cluster);
    let before = slices_where(
        &cluster,
        "default",
        "hostnames",
        "converged",
        has_addresses(&["192.168.0.51", "192.168.0.52"]),
    )
    .await;
    cluster.merge_patch(
        Kind::Service,
        Some("default"),
        "hostnames",
        json!({"metadata": {"annotations": {NETWORKS: "[{\"name\": "}}}),
    );
    let warning = eventually("the Warning", || {
        event(&cluster, "hostnames", "InvalidNetworkAnnotation")
    })
    .await;
    assert_eq!(warning["type"], "Warning");
    assert!(
        warning["note"].as_str().unwrap().contains(NETWORKS),
        "{warning}"
    );
    // Pods change meanwhile: still nothing changes, and the Warning is not repeated.
    cluster.delete(Kind::Pod, Some("default"), "h1");
    set_ready(&cluster, "default", "h2", false);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(our_slices(&cluster, "default", "hostnames"), before);
    let warnings: Vec<Value> = cluster
        .events_for("hostnames")
        .into_iter()
        .filter(|e| e["reason"] == "InvalidNetworkAnnotation")
        .collect();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0]["series"].is_null(), "repeated: {}", warnings[0]);
    // Fixed again: the slice follows the pods.
    cluster.merge_patch(
        Kind::Service,
        Some("default"),
        "hostnames",
        json!({"metadata": {"annotations": {NETWORKS: "default/br0"}}}),
    );
    let after = slices_where(
        &cluster,
        "default",
        "hostnames",
        "updated",
        has_addresses(&["192.168.0.52"]),
    )
    .await;
    assert_eq!(conditions(&after), Some((false, false, false)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_in_another_namespace_does_not_pick_up_these_pods() {
    let cluster = cluster(&["default", "other"]);
    hostnames_pod(
        &cluster,
        "default",
        "h",
        NETWORK_STATUS,
        &status(&[("default/br0", &["192.168.0.51"])]),
    );
    // The same selector, the same NAD (named with its namespace), in another namespace.
    hostnames(&cluster, "other", "default/br0", json!({}));
    hostnames(&cluster, "default", "br0", json!({}));
    let _controller = Controller::start(&cluster);
    slices_where(
        &cluster,
        "default",
        "hostnames",
        "this namespace's slice",
        has_addresses(&["192.168.0.51"]),
    )
    .await;
    // The other Service is served: a pod of its own namespace shows up, alone.
    hostnames_pod(
        &cluster,
        "other",
        "o",
        NETWORK_STATUS,
        &status(&[("default/br0", &["192.168.0.61"])]),
    );
    slices_where(
        &cluster,
        "other",
        "hostnames",
        "the other slice",
        has_addresses(&["192.168.0.61"]),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        addresses(&our_slices(&cluster, "other", "hostnames")),
        ["192.168.0.61"]
    );
}

/// The k8s-net-attach-def-controller's queue delayed every event for a Service more than the
/// last (issue #4: minutes after ~17 events); here the 20th change is as quick as the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_changes_in_a_row_are_each_reflected_promptly() {
    let cluster = cluster(&["default"]);
    hostnames_pod(
        &cluster,
        "default",
        "h",
        NETWORK_STATUS,
        &status(&[("default/br0", &["192.168.0.51"])]),
    );
    hostnames(&cluster, "default", "br0", json!({}));
    let _controller = Controller::start(&cluster);
    slices_where(&cluster, "default", "hostnames", "converged", |s| {
        conditions(s) == Some((true, true, false))
    })
    .await;
    for round in 0..20 {
        let ready = round % 2 == 1;
        let started = Instant::now();
        set_ready(&cluster, "default", "h", ready);
        slices_where(&cluster, "default", "hostnames", "the change", |s| {
            conditions(s) == Some((ready, ready, false))
        })
        .await;
        let elapsed = started.elapsed();
        assert!(
            elapsed < Duration::from_secs(2),
            "change {round} took {elapsed:?}"
        );
    }
}
