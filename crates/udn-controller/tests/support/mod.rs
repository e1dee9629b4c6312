//! Test support for the controller's integration tests: the in-memory API server with the
//! objects cluster-manager and the node agent would write (node annotations, NADs with
//! network IDs), zone controllers running in-process, and "CNI" wiring of lab pods from
//! their `k8s.ovn.org/pod-networks` annotation.

#![allow(dead_code, unreachable_pub, clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ipnetwork::IpNetwork;
use k8s_openapi::api::core::v1::{Namespace, Node as KubeNode, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use udn_api::annotations::{PodNetworkAnnotation, PodNetworks, parse_pod_networks};
use udn_api::cluster::ClusterConfig;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::{ANNOTATION_POD_NETWORKS, ovn_prefix};
use udn_controller::config::Config;
use udn_controller::metrics::Metrics;
use udn_controller::model::{Lean, ZoneConfig};
use udn_controller::zone::{PassReport, Zone};
use udn_ovsdb::client::Endpoint;
use udn_test_support::TestCluster;

/// A zone controller running in-process.
pub struct RunningZone {
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    reports: tokio::sync::watch::Receiver<(u64, PassReport)>,
}

impl RunningZone {
    /// The last pass's report and the number of passes.
    pub fn last(&self) -> (u64, PassReport) {
        self.reports.borrow().clone()
    }

    /// Waits until passes stop finding work: a pass with nothing pending, failed or
    /// annotated, and no further pass for a moment. Returns the report of that pass.
    pub async fn converged(&mut self, timeout: Duration) -> PassReport {
        let deadline = Instant::now() + timeout;
        loop {
            let (count, report) = self.reports.borrow().clone();
            if count > 0
                && report.failures == 0
                && report.pending == 0
                && report.pods_annotated == 0
            {
                let quiet =
                    tokio::time::timeout(Duration::from_millis(300), self.reports.changed()).await;
                if quiet.is_err() {
                    return report;
                }
                continue;
            }
            assert!(
                Instant::now() < deadline,
                "zone did not converge: last pass {count}: {report:?}"
            );
            let _ = tokio::time::timeout(Duration::from_millis(200), self.reports.changed()).await;
        }
    }

    /// Like [`Self::converged`], and also every pass report seen on the way (a pass that
    /// ends while another is being looked at may go unseen).
    pub async fn converged_seeing(&mut self, timeout: Duration) -> Vec<PassReport> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        let mut last_count = self.reports.borrow().0;
        loop {
            let (count, report) = self.reports.borrow_and_update().clone();
            if count != last_count {
                last_count = count;
                seen.push(report.clone());
            }
            if report.failures == 0 && report.pending == 0 && report.pods_annotated == 0 {
                let quiet =
                    tokio::time::timeout(Duration::from_millis(300), self.reports.changed()).await;
                if quiet.is_err() && !seen.is_empty() {
                    return seen;
                }
                continue;
            }
            assert!(
                Instant::now() < deadline,
                "zone did not converge: last pass {count}: {report:?}"
            );
            let _ = tokio::time::timeout(Duration::from_millis(200), self.reports.changed()).await;
        }
    }

    /// Waits for the first pass and returns its report.
    pub async fn first_pass(&mut self, timeout: Duration) -> PassReport {
        let deadline = Instant::now() + timeout;
        loop {
            let (count, report) = self.reports.borrow().clone();
            if count > 0 {
                return report;
            }
            assert!(Instant::now() < deadline, "no pass");
            let _ = tokio::time::timeout(Duration::from_millis(200), self.reports.changed()).await;
        }
    }

    /// Stops it at once (as a crash would: no goodbye, whatever was in flight is cut).
    pub fn abort(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    /// Stops it and waits.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for RunningZone {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The zone configuration of the tests: IPv4 single stack (the lab's underlay is IPv4), the
/// kind/Helm subnets, segmentation on.
pub fn zone_config(zone: &str) -> ZoneConfig {
    ZoneConfig {
        zone: zone.to_owned(),
        cluster: ClusterConfig::ipv4_only(),
        multi_network: true,
        segmentation: true,
        dynamic_udn: false,
        // Upstream's exact rows: the tests that read rows expect them.
        lean: Lean::UPSTREAM,
    }
}

/// [`zone_config`] with the default savings on (what `udn-controller` runs with).
pub fn lean_zone_config(zone: &str) -> ZoneConfig {
    ZoneConfig {
        lean: Lean::default(),
        ..zone_config(zone)
    }
}

/// Starts the zone controller of `zone` against `cluster` and the given databases.
pub async fn start_zone(
    cluster: &TestCluster,
    zone: ZoneConfig,
    nb: Endpoint,
    sb: Endpoint,
) -> RunningZone {
    let config = Config {
        zone,
        nb,
        sb,
        acl_logging_rate_limit: 20,
        ephemeral_port_range: None,
    };
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = Metrics::register(&mut registry);
    let mut tasks = JoinSet::new();
    let (zone, changes) = Zone::start(config, cluster.client(), metrics, &mut tasks)
        .await
        .expect("zone controller starts");
    let (tx, rx) = oneshot::channel();
    let reports = zone.reports();
    let task = tokio::spawn(async move {
        zone.run(changes, async {
            let _ = rx.await;
        })
        .await;
        drop(tasks);
    });
    RunningZone {
        stop: Some(tx),
        task: Some(task),
        reports,
    }
}

/// What cluster-manager and the node agent write on a node, in their formats.
#[derive(Clone, Debug)]
pub struct NodeAnnotations {
    pub name: String,
    pub id: u32,
    pub chassis: String,
    pub node_cidr: String,
    pub node_ip: String,
    pub mac: String,
    pub next_hop: String,
    /// network -> host subnets.
    pub subnets: BTreeMap<String, Vec<String>>,
    /// primary Layer2 network -> gateway router port tunnel ID.
    pub layer2_tunnel_ids: BTreeMap<String, u32>,
}

impl NodeAnnotations {
    pub fn to_json(&self) -> Value {
        let subnets: serde_json::Map<String, Value> = self
            .subnets
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        let gateway = json!({"default": {
            "mode": "shared", "bridge-id": "breth0",
            "interface-id": format!("breth0_{}", self.name),
            "mac-address": self.mac, "ip-addresses": [self.node_cidr], "ip-address": self.node_cidr,
            "next-hops": [self.next_hop], "next-hop": self.next_hop,
            "node-port-enable": "true", "vlan-id": "0"}});
        let mut annotations = json!({
            "k8s.ovn.org/node-id": self.id.to_string(),
            "k8s.ovn.org/node-transit-switch-port-ifaddr":
                json!({"ipv4": format!("100.88.0.{}/16", self.id)}).to_string(),
            "k8s.ovn.org/node-subnets": Value::Object(subnets).to_string(),
            "k8s.ovn.org/node-chassis-id": self.chassis,
            "k8s.ovn.org/l3-gateway-config": gateway.to_string(),
            "k8s.ovn.org/node-encap-ips": json!([self.node_ip]).to_string(),
            "k8s.ovn.org/host-cidrs": json!([self.node_cidr]).to_string(),
        });
        if !self.layer2_tunnel_ids.is_empty() {
            let ids: serde_json::Map<String, Value> = self
                .layer2_tunnel_ids
                .iter()
                .map(|(k, v)| (k.clone(), json!(v.to_string())))
                .collect();
            annotations["k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids"] =
                json!(Value::Object(ids).to_string());
        }
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": self.name, "annotations": annotations}})
    }
}

/// A node at `172.18.0.<id>` with one host subnet per (network, subnet), chassis
/// `chassis-<name>`, no Layer2 tunnel IDs.
pub fn node(name: &str, id: u32, subnets: &[(&str, &str)]) -> NodeAnnotations {
    NodeAnnotations {
        name: name.to_owned(),
        id,
        chassis: format!("chassis-{name}"),
        node_cidr: format!("172.18.0.{id}/16"),
        node_ip: format!("172.18.0.{id}"),
        mac: format!("02:00:ac:12:00:{id:02x}"),
        next_hop: "172.18.0.1".to_owned(),
        subnets: subnets
            .iter()
            .map(|(n, s)| ((*n).to_owned(), vec![(*s).to_owned()]))
            .collect(),
        layer2_tunnel_ids: BTreeMap::new(),
    }
}

/// Creates or replaces a node's annotations.
pub async fn put_node(client: &kube::Client, node: &NodeAnnotations) {
    let api: Api<KubeNode> = Api::all(client.clone());
    let body = node.to_json();
    if api.get_opt(&node.name).await.unwrap().is_some() {
        api.patch(&node.name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .unwrap();
    } else {
        let node: KubeNode = serde_json::from_value(body).unwrap();
        api.create(&PostParams::default(), &node).await.unwrap();
    }
}

pub async fn put_namespace(client: &kube::Client, name: &str, primary: bool) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(udn_test_support::namespace(name, primary)).unwrap();
    api.create(&PostParams::default(), &ns).await.unwrap();
}

/// A NAD as cluster-manager renders it, with its network ID.
pub fn nad_json(ns: &str, name: &str, network: &str, body: Value, id: u32) -> Value {
    let mut config = json!({"cniVersion": "1.1.0", "name": network, "type": "ovn-k8s-cni-overlay",
        "netAttachDefName": format!("{ns}/{name}")});
    for (k, v) in body.as_object().unwrap() {
        config[k] = v.clone();
    }
    json!({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": ns, "annotations": {
            "k8s.ovn.org/network-id": id.to_string(), "k8s.ovn.org/network-name": network}},
        "spec": {"config": config.to_string()}})
}

pub async fn put_nad(client: &kube::Client, nad: Value) {
    let ns = nad["metadata"]["namespace"].as_str().unwrap().to_owned();
    let api: Api<NetworkAttachmentDefinition> = Api::namespaced(client.clone(), &ns);
    let nad: NetworkAttachmentDefinition = serde_json::from_value(nad).unwrap();
    api.create(&PostParams::default(), &nad).await.unwrap();
}

pub async fn delete_nad(client: &kube::Client, ns: &str, name: &str) {
    let api: Api<NetworkAttachmentDefinition> = Api::namespaced(client.clone(), ns);
    api.delete(name, &Default::default()).await.unwrap();
}

pub async fn put_pod(client: &kube::Client, ns: &str, name: &str, node: &str, annotations: Value) {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod: Pod = serde_json::from_value(udn_test_support::pod_with_annotations(
        ns,
        name,
        Some(node),
        annotations,
    ))
    .unwrap();
    api.create(&PostParams::default(), &pod).await.unwrap();
}

pub async fn pod_uid(client: &kube::Client, ns: &str, name: &str) -> String {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    api.get(name)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap_or_default()
}

pub async fn delete_pod(client: &kube::Client, ns: &str, name: &str) {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    // No kubelet runs here to finish a graceful deletion of the bound pod.
    api.delete(name, &kube::api::DeleteParams::default().grace_period(0))
        .await
        .unwrap();
}

/// Waits until the pod's `k8s.ovn.org/pod-networks` has every key of `keys`.
pub async fn pod_networks(
    client: &kube::Client,
    ns: &str,
    name: &str,
    keys: &[&str],
    timeout: Duration,
) -> PodNetworks {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(pod) = api.get_opt(name).await.unwrap() {
            let value = pod
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANNOTATION_POD_NETWORKS))
                .cloned();
            if let Some(value) = value {
                let networks = parse_pod_networks(&value).unwrap();
                if keys.iter().all(|k| networks.contains_key(*k)) {
                    return networks;
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "pod {ns}/{name} never got {keys:?} in k8s.ovn.org/pod-networks"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Writes a Layer2 attachment's entry as cluster-manager would.
pub async fn annotate_layer2(
    client: &kube::Client,
    ns: &str,
    name: &str,
    nad_key: &str,
    entry: PodNetworkAnnotation,
) {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    for _ in 0..50 {
        let pod = api.get(name).await.unwrap();
        let existing = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_POD_NETWORKS))
            .cloned();
        let value =
            udn_api::annotations::update_pod_networks(existing.as_deref(), nad_key, entry.clone())
                .unwrap();
        let body = json!({"metadata": {"resourceVersion": pod.metadata.resource_version,
            "annotations": {ANNOTATION_POD_NETWORKS: value}}});
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&body))
            .await
        {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(error) => panic!("{error}"),
        }
    }
    panic!("pod {ns}/{name}: annotation kept conflicting");
}

/// The logical switch port of a pod's attachment (upstream names).
pub fn lsp_name(nad_key: &str, ns: &str, pod: &str) -> String {
    if nad_key == "default" {
        format!("{ns}_{pod}")
    } else {
        format!("{}{ns}_{pod}", ovn_prefix(nad_key))
    }
}

/// The CNI's view of one attachment: interface spec from the annotation entry.
pub fn interface(
    ifname: &str,
    nad_key: &str,
    (ns, pod, uid): (&str, &str, &str),
    entry: &PodNetworkAnnotation,
) -> udn_ovn_lab::InterfaceSpec {
    let mut spec = udn_ovn_lab::InterfaceSpec::new(
        ifname,
        &lsp_name(nad_key, ns, pod),
        &entry.mac_address.to_string(),
    )
    .external_id("iface-id-ver", uid);
    for ip in &entry.ip_addresses {
        spec = spec.ip(*ip);
    }
    if let Some(gateway) = entry.gateway_ips.first() {
        spec = spec.gateway(*gateway);
    }
    for route in &entry.routes {
        if let Some(via) = route.next_hop {
            spec = spec.route(route.dest, via);
        }
    }
    spec
}

pub fn net(text: &str) -> IpNetwork {
    text.parse().unwrap()
}
