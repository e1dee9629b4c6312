//! Shared by the `node_*` and `layer2_ipam_*` tests: a simulated cluster, the controllers
//! under test started and stopped (gracefully or by abort), NADs rendered from UDN/CUDN
//! objects that exist in the cluster, and polling.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use udn_api::crd::{ClusterUserDefinedNetwork, UserDefinedNetwork};
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::render::{NetworkSource, render_nad};
use udn_cluster_manager::config::Config;
use udn_cluster_manager::context::Context;
use udn_cluster_manager::metrics::Metrics;
use udn_test_support::TestCluster;

/// Which controllers a [`Running`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Controllers {
    NodeSubnets,
    Layer2Ipam,
    /// Node subnets and Layer2 pod IPAM.
    Both,
    NodeAllocation,
    /// Node allocation, node subnets and Layer2 pod IPAM.
    All,
}

impl Controllers {
    fn node_allocation(self) -> bool {
        matches!(self, Self::NodeAllocation | Self::All)
    }

    fn node_subnets(self) -> bool {
        matches!(self, Self::NodeSubnets | Self::Both | Self::All)
    }

    fn layer2_ipam(self) -> bool {
        matches!(self, Self::Layer2Ipam | Self::Both | Self::All)
    }
}

/// Controllers running against a cluster.
pub struct Running {
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    pub metrics: Metrics,
}

impl Running {
    /// Starts `which` with `config`.
    pub fn start(cluster: &TestCluster, which: Controllers, config: Config) -> Self {
        let metrics = Metrics::unregistered();
        let ctx = Context::new(cluster.client(), config, metrics.clone(), None);
        let (stop, rx) = tokio::sync::watch::channel(false);
        let signal = move || {
            let mut rx = rx.clone();
            async move {
                let _ = rx.wait_for(|stopped| *stopped).await;
            }
        };
        let mut tasks = Vec::new();
        if which.node_allocation() {
            let (ctx, stop) = (ctx.clone(), signal());
            tasks.push(tokio::spawn(async move {
                udn_cluster_manager::node_allocation::run(ctx, stop)
                    .await
                    .expect("node-allocation controller");
            }));
        }
        if which.node_subnets() {
            let (ctx, stop) = (ctx.clone(), signal());
            tasks.push(tokio::spawn(async move {
                udn_cluster_manager::node_subnets::run(ctx, stop)
                    .await
                    .expect("node-subnets controller");
            }));
        }
        if which.layer2_ipam() {
            let stop = signal();
            tasks.push(tokio::spawn(async move {
                udn_cluster_manager::layer2_ipam::run(ctx, stop)
                    .await
                    .expect("layer2-ipam controller");
            }));
        }
        Self {
            stop,
            tasks,
            metrics,
        }
    }

    /// Graceful stop.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        for task in self.tasks.drain(..) {
            task.await.expect("controller task");
        }
    }

    /// Crash: abort the tasks wherever they are.
    pub async fn kill(mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
            let _ = task.await;
        }
    }
}

/// Polls `check` until it returns `Some`, failing after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Default wait.
pub const WAIT: Duration = Duration::from_secs(15);

pub async fn create_namespace(client: &Client, name: &str, primary: bool) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(udn_test_support::namespace(name, primary)).unwrap();
    api.create(&PostParams::default(), &ns).await.unwrap();
}

pub async fn create_node(client: &Client, name: &str) {
    let api: Api<Node> = Api::all(client.clone());
    let node = serde_json::from_value(udn_test_support::node(name)).unwrap();
    api.create(&PostParams::default(), &node).await.unwrap();
}

pub async fn create_node_with_annotations(client: &Client, name: &str, annotations: Value) {
    let api: Api<Node> = Api::all(client.clone());
    let mut node = udn_test_support::node(name);
    node["metadata"]["annotations"] = annotations;
    let node = serde_json::from_value(node).unwrap();
    api.create(&PostParams::default(), &node).await.unwrap();
}

pub async fn delete_node(client: &Client, name: &str) {
    let api: Api<Node> = Api::all(client.clone());
    api.delete(name, &DeleteParams::default()).await.unwrap();
}

pub async fn node_annotation(client: &Client, name: &str, key: &str) -> Option<String> {
    let api: Api<Node> = Api::all(client.clone());
    let node = api.get_opt(name).await.unwrap()?;
    node.metadata.annotations?.get(key).cloned()
}

/// The node's `k8s.ovn.org/node-subnets` without the default network's entry (tested on its
/// own), as written; `None` when no other network is left.
pub async fn udn_subnets(client: &Client, name: &str) -> Option<String> {
    let value = node_annotation(client, name, udn_api::names::ANNOTATION_NODE_SUBNETS).await?;
    let mut subnets = udn_api::annotations::parse_node_subnets(&value).unwrap();
    subnets.remove("default");
    udn_api::annotations::format_node_subnets(&subnets).unwrap()
}

/// The default network's entry of the node's `k8s.ovn.org/node-subnets`, as CIDR texts.
pub async fn default_subnets(client: &Client, name: &str) -> Option<Vec<String>> {
    let value = node_annotation(client, name, udn_api::names::ANNOTATION_NODE_SUBNETS).await?;
    let subnets = udn_api::annotations::parse_node_subnets(&value).unwrap();
    Some(
        subnets
            .get("default")?
            .iter()
            .map(ToString::to_string)
            .collect(),
    )
}

pub async fn pod_annotations(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Option<BTreeMap<String, String>> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pod = api.get_opt(name).await.unwrap()?;
    Some(pod.metadata.annotations.unwrap_or_default())
}

/// Creates a UDN (as JSON) and returns it as stored (with its uid).
pub async fn create_udn(client: &Client, udn: Value) -> UserDefinedNetwork {
    let udn: UserDefinedNetwork = serde_json::from_value(udn).unwrap();
    let namespace = udn.metadata.namespace.clone().unwrap();
    let api: Api<UserDefinedNetwork> = Api::namespaced(client.clone(), &namespace);
    api.create(&PostParams::default(), &udn).await.unwrap()
}

/// Creates a CUDN (as JSON) and returns it as stored.
pub async fn create_cudn(client: &Client, cudn: Value) -> ClusterUserDefinedNetwork {
    let cudn: ClusterUserDefinedNetwork = serde_json::from_value(cudn).unwrap();
    let api: Api<ClusterUserDefinedNetwork> = Api::all(client.clone());
    api.create(&PostParams::default(), &cudn).await.unwrap()
}

/// The NAD upstream renders for `source`, without the finalizer (nothing removes it in
/// these tests).
pub fn rendered_nad(source: &NetworkSource<'_>, config: &Config) -> NetworkAttachmentDefinition {
    let mut nad = render_nad(source, &config.cluster).expect("renders");
    nad.metadata.finalizers = None;
    nad
}

pub async fn create_nad(client: &Client, nad: &NetworkAttachmentDefinition) {
    let namespace = nad.metadata.namespace.clone().unwrap();
    let api: Api<NetworkAttachmentDefinition> = Api::namespaced(client.clone(), &namespace);
    api.create(&PostParams::default(), nad).await.unwrap();
}

/// Replaces a NAD's `spec.config`.
pub async fn update_nad_config(client: &Client, namespace: &str, name: &str, config: &str) {
    let api: Api<NetworkAttachmentDefinition> = Api::namespaced(client.clone(), namespace);
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"config": config}})),
    )
    .await
    .unwrap();
}

pub async fn delete_nad(client: &Client, namespace: &str, name: &str) {
    let api: Api<NetworkAttachmentDefinition> = Api::namespaced(client.clone(), namespace);
    api.delete(name, &DeleteParams::default()).await.unwrap();
}

/// Creates the UDN in the cluster and its rendered NAD.
pub async fn udn_with_nad(client: &Client, udn: Value, config: &Config) -> UserDefinedNetwork {
    let udn = create_udn(client, udn).await;
    create_nad(client, &rendered_nad(&NetworkSource::Udn(&udn), config)).await;
    udn
}

/// Events in `namespace` with `reason`, as `note`s.
pub async fn event_notes(client: &Client, namespace: &str, reason: &str) -> Vec<String> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter_map(|e| e.note)
        .collect()
}

/// `(status, reason, message)` of a condition of a UDN.
pub async fn udn_condition(
    client: &Client,
    namespace: &str,
    name: &str,
    type_: &str,
) -> Option<(String, String, String)> {
    let api: Api<UserDefinedNetwork> = Api::namespaced(client.clone(), namespace);
    let udn = api.get(name).await.unwrap();
    udn.status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason, c.message))
}

/// `(status, reason, message)` of a condition of a CUDN.
pub async fn cudn_condition(
    client: &Client,
    name: &str,
    type_: &str,
) -> Option<(String, String, String)> {
    let api: Api<ClusterUserDefinedNetwork> = Api::all(client.clone());
    let cudn = api.get(name).await.unwrap();
    cudn.status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason, c.message))
}

/// kind's dual-stack cluster defaults, segmentation on, persistent IPs on.
pub fn config() -> Config {
    let mut config = Config::for_tests();
    config.cluster.features.persistent_ips = true;
    config
}
