//! The EndpointSlice mirror against the in-memory API server: a default slice in a
//! primary-UDN namespace gets a mirror with the pods' UDN addresses, per family; the mirror
//! follows the slice, comes back when deleted, goes with it; stale mirrors are removed at
//! start; namespaces on the default network get none.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod network_support;

use std::time::Duration;

use network_support::*;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use udn_cluster_manager::config::Config;
use udn_cluster_manager::context::Context;
use udn_cluster_manager::endpointslice_mirror::{
    ANNOTATION_NETWORK, ANNOTATION_SOURCE, DEFAULT_CONTROLLER, LABEL_MANAGED_BY,
    LABEL_SOURCE_VERSION, LABEL_UDN_SERVICE_NAME, MIRROR_CONTROLLER,
};
use udn_cluster_manager::metrics::Metrics;
use udn_kube_sim::{DeleteOptions, ListOptions, ResourceKey, WriteOptions};
use udn_test_support::{namespace, pod_with_annotations};

fn slices_key() -> ResourceKey {
    ResourceKey {
        group: "discovery.k8s.io".to_owned(),
        plural: "endpointslices".to_owned(),
    }
}

fn primary_nad(namespace: &str) -> Value {
    json!({
        "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": "net", "namespace": namespace},
        "spec": {"config": format!(
            r#"{{"cniVersion":"1.0.0","name":"{namespace}_net","type":"ovn-k8s-cni-overlay","topology":"layer3","subnets":"103.103.0.0/16/24,fd10::/48/64","mtu":1300,"netAttachDefName":"{namespace}/net","role":"primary"}}"#
        )},
    })
}

fn udn_pod(namespace: &str, name: &str, v4: &str, v6: &str) -> Value {
    let networks = json!({
        "default": {"ip_addresses": ["10.244.0.5/24"], "mac_address": "0a:58:0a:f4:00:05", "role": "infrastructure-locked"},
        format!("{namespace}/net"): {"ip_addresses": [v4, v6], "mac_address": "0a:58:67:67:00:05", "role": "primary"},
    });
    pod_with_annotations(
        namespace,
        name,
        Some("node1"),
        json!({"k8s.ovn.org/pod-networks": networks.to_string()}),
    )
}

fn services_key() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        plural: "services".to_owned(),
    }
}

/// Service `svc` in `namespace` (the slices' owner: the simulator's garbage collector
/// deletes slices whose owner does not exist); returns its UID.
fn service(cluster: &Cluster, namespace: &str) -> String {
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "svc", "namespace": namespace},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}});
    let created = cluster
        .0
        .sim
        .create(
            &services_key(),
            Some(namespace),
            svc,
            &WriteOptions::default(),
        )
        .unwrap();
    created["metadata"]["uid"].as_str().unwrap().to_owned()
}

/// A slice as Kubernetes' EndpointSlice controller writes it, owned by Service `svc`
/// (`owner` = its UID).
fn default_slice(
    namespace: &str,
    name: &str,
    family: &str,
    owner: &str,
    pods: &[(&str, &str)],
) -> Value {
    let endpoints: Vec<Value> = pods
        .iter()
        .map(|(pod, address)| {
            json!({"addresses": [address], "conditions": {"ready": true, "serving": true, "terminating": false},
                   "nodeName": "node1", "targetRef": {"kind": "Pod", "namespace": namespace, "name": pod}})
        })
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": namespace, "generateName": "svc-",
            "labels": {LABEL_MANAGED_BY: DEFAULT_CONTROLLER, "kubernetes.io/service-name": "svc"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "svc", "uid": owner, "controller": true, "blockOwnerDeletion": true}]},
        "addressType": family,
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    })
}

struct Env {
    cluster: Cluster,
}

impl Env {
    fn slices(&self, namespace: &str) -> Vec<Value> {
        let list = self
            .cluster
            .0
            .sim
            .list(&slices_key(), Some(namespace), &ListOptions::default())
            .unwrap();
        list["items"].as_array().cloned().unwrap_or_default()
    }

    fn mirrors_of(&self, namespace: &str, source: &str) -> Vec<Value> {
        self.slices(namespace)
            .into_iter()
            .filter(|s| s["metadata"]["labels"][LABEL_MANAGED_BY] == MIRROR_CONTROLLER)
            .filter(|s| s["metadata"]["annotations"][ANNOTATION_SOURCE] == source)
            .collect()
    }

    fn create_slice(&self, namespace: &str, slice: Value) -> Value {
        self.cluster
            .0
            .sim
            .create(
                &slices_key(),
                Some(namespace),
                slice,
                &WriteOptions::default(),
            )
            .unwrap()
    }

    fn delete_slice(&self, namespace: &str, name: &str) {
        self.cluster
            .0
            .sim
            .delete(
                &slices_key(),
                Some(namespace),
                name,
                &DeleteOptions::default(),
            )
            .unwrap();
    }
}

/// The mirror controller in a task until dropped.
struct Mirror(Option<oneshot::Sender<()>>);

impl Mirror {
    fn start(cluster: &Cluster) -> Self {
        let ctx = Context::new(
            cluster.0.client(),
            Config::for_tests(),
            Metrics::unregistered(),
            Some("test".to_owned()),
        );
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(udn_cluster_manager::endpointslice_mirror::run(
            ctx,
            async move {
                let _ = stopped.await;
            },
        ));
        Self(Some(stop))
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        if let Some(stop) = self.0.take() {
            let _ = stop.send(());
        }
    }
}

fn addresses(slice: &Value) -> Vec<String> {
    slice["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["addresses"][0].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_slices_of_a_primary_udn_namespace_are_mirrored_per_family() {
    let env = Env {
        cluster: Cluster::new(),
    };
    let c = &env.cluster;
    c.create(Kind::Namespace, None, namespace("blue", true));
    c.create(Kind::Namespace, None, namespace("plain", false));
    c.create(Kind::Nad, Some("blue"), primary_nad("blue"));
    c.create(
        Kind::Pod,
        Some("blue"),
        udn_pod("blue", "a", "103.103.1.5/24", "fd10:0:0:1::5/64"),
    );
    c.create(
        Kind::Pod,
        Some("blue"),
        udn_pod("blue", "b", "103.103.0.5/24", "fd10::5/64"),
    );
    c.create(
        Kind::Pod,
        Some("plain"),
        udn_pod("plain", "p", "103.103.1.7/24", "fd10::7/64"),
    );
    let (blue_svc, plain_svc) = (service(c, "blue"), service(c, "plain"));
    let _mirror = Mirror::start(c);
    let v4 = env.create_slice(
        "blue",
        default_slice(
            "blue",
            "svc-v4abc",
            "IPv4",
            &blue_svc,
            &[("a", "10.244.0.5"), ("b", "10.244.1.8")],
        ),
    );
    env.create_slice(
        "blue",
        default_slice(
            "blue",
            "svc-v6abc",
            "IPv6",
            &blue_svc,
            &[("a", "fd00:10:244::5")],
        ),
    );
    env.create_slice(
        "plain",
        default_slice(
            "plain",
            "svc-plain",
            "IPv4",
            &plain_svc,
            &[("p", "10.244.0.9")],
        ),
    );

    let mirror = eventually("the IPv4 mirror", || {
        env.mirrors_of("blue", "svc-v4abc").pop()
    })
    .await;
    assert_eq!(addresses(&mirror), ["103.103.1.5", "103.103.0.5"]);
    let meta = &mirror["metadata"];
    assert_eq!(meta["labels"][LABEL_UDN_SERVICE_NAME], "svc");
    assert_eq!(
        meta["labels"][LABEL_SOURCE_VERSION],
        v4["metadata"]["resourceVersion"]
    );
    assert_eq!(meta["labels"].get("kubernetes.io/service-name"), None);
    assert_eq!(meta["annotations"][ANNOTATION_NETWORK], "blue_net");
    assert_eq!(meta["ownerReferences"], v4["metadata"]["ownerReferences"]);
    assert!(meta["name"].as_str().unwrap().starts_with("svc-"), "{meta}");
    assert_eq!(mirror["ports"], v4["ports"]);
    let v6 = eventually("the IPv6 mirror", || {
        env.mirrors_of("blue", "svc-v6abc").pop()
    })
    .await;
    assert_eq!(v6["addressType"], "IPv6");
    assert_eq!(addresses(&v6), ["fd10:0:0:1::5"]);

    // Deleted by hand: it comes back.
    env.delete_slice("blue", mirror["metadata"]["name"].as_str().unwrap());
    eventually("the mirror back", || {
        env.mirrors_of("blue", "svc-v4abc").pop()
    })
    .await;
    // The source gone: the mirror goes.
    env.delete_slice("blue", "svc-v6abc");
    eventually("the IPv6 mirror gone", || {
        env.mirrors_of("blue", "svc-v6abc").is_empty().then_some(())
    })
    .await;
    // A namespace on the default network never gets one.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        env.slices("plain")
            .iter()
            .all(|s| s["metadata"]["labels"][LABEL_MANAGED_BY] != MIRROR_CONTROLLER)
    );
    // The mirror goes with the Service (its owner references are the source's).
    c.0.sim
        .delete(
            &services_key(),
            Some("blue"),
            "svc",
            &DeleteOptions::default(),
        )
        .unwrap();
    eventually("the mirrors gone with the Service", || {
        env.slices("blue").is_empty().then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_mirrors_go_and_missing_ones_come_at_start() {
    let env = Env {
        cluster: Cluster::new(),
    };
    let c = &env.cluster;
    c.create(Kind::Namespace, None, namespace("blue", true));
    c.create(Kind::Nad, Some("blue"), primary_nad("blue"));
    c.create(
        Kind::Pod,
        Some("blue"),
        udn_pod("blue", "a", "103.103.1.5/24", "fd10::5/64"),
    );
    let svc = service(c, "blue");
    env.create_slice(
        "blue",
        default_slice("blue", "svc-live", "IPv4", &svc, &[("a", "10.244.0.5")]),
    );
    // A mirror whose source is gone (made while the controller was down).
    let mut stale = default_slice(
        "blue",
        "svc-stale-mirror",
        "IPv4",
        &svc,
        &[("a", "103.103.1.5")],
    );
    stale["metadata"]["labels"] = json!({LABEL_MANAGED_BY: MIRROR_CONTROLLER});
    stale["metadata"]["annotations"] = json!({ANNOTATION_SOURCE: "svc-gone"});
    env.create_slice("blue", stale);
    let _mirror = Mirror::start(c);
    eventually("the missing mirror", || {
        env.mirrors_of("blue", "svc-live").pop()
    })
    .await;
    eventually("the stale mirror gone", || {
        env.mirrors_of("blue", "svc-gone").is_empty().then_some(())
    })
    .await;
}
