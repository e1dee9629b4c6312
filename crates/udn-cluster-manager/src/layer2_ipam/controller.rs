//! The imperative shell of the Layer2 IPAM controller: watches (NADs, pods, IPAMClaims,
//! nodes), one work queue of pods, claims and nodes, and the apply steps (claim status, pod
//! patch, pod events, node tunnel IDs patch).

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use tokio::task::JoinSet;
use tracing::{debug, info, warn};
use udn_api::annotations::{PodNetworks, parse_pod_networks};
use udn_api::ipamclaim::IPAMClaim;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::{ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS, ANNOTATION_POD_NETWORKS};

use super::claims::claim_view;
use super::networks::{Layer2Index, layer2_nad};
use super::state::{ClaimView, IpamState, Layer2Topology, PodSnapshot};
use super::{CONTROLLER, Layer2IpamError, node_reconcile, reconcile};
use crate::context::Context;
use crate::dynamic_udn::scope::{CurrentScope, Rescope, ScopeReceiver};
use crate::metrics::NetworkLabels;
use crate::node_subnets::networks::nad_key_of;
use crate::node_subnets::queue::{Failures, WorkQueue};
use crate::node_subnets::watch::pump;

/// Concurrent reconciles (allocation is serialized; the writes overlap).
const WORKERS: usize = 4;

/// A unit of work.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// `namespace/name` of a pod.
    Pod(String),
    /// `namespace/name` of an IPAMClaim.
    Claim(String),
    /// Name of a node (its gateway router tunnel IDs).
    Node(String),
}

/// The index and the pools, under one lock.
pub(super) struct Inner {
    pub(super) index: Layer2Index,
    pub(super) state: IpamState,
    ready: bool,
}

/// Everything the workers and the watch callbacks share.
pub(super) struct Shared {
    pub(super) ctx: Context,
    pub(super) inner: Mutex<Inner>,
    nads: Store<NetworkAttachmentDefinition>,
    pub(super) pods: Store<Pod>,
    pub(super) claims: Option<Store<IPAMClaim>>,
    pub(super) nodes: Store<Node>,
    queue: Arc<WorkQueue<Key>>,
    pub(super) recorder: Recorder,
    failures: Failures<Key>,
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // State is consistent between statements; a panic elsewhere must not stop allocation.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn object_key(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

pub(super) fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

pub(super) fn pod_networks_of(
    pod: &Pod,
) -> Result<PodNetworks, udn_api::annotations::AnnotationError> {
    match pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(ANNOTATION_POD_NETWORKS))
    {
        None => Ok(PodNetworks::new()),
        Some(value) => parse_pod_networks(value),
    }
}

/// The node's gateway router tunnel IDs annotation.
pub(super) fn node_tunnels_text(node: &Node) -> Option<&str> {
    node.metadata
        .annotations
        .as_ref()?
        .get(ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS)
        .map(String::as_str)
}

pub(super) fn is_active(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref();
    let scheduled = spec
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let host_network = spec.and_then(|s| s.host_network).unwrap_or(false);
    scheduled && !host_network && !is_completed(pod)
}

pub(super) fn is_completed(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

impl Shared {
    pub(super) fn persistent_ips(&self) -> bool {
        self.claims.is_some()
    }

    fn pod_snapshots(&self) -> Vec<PodSnapshot> {
        let mut pods: Vec<PodSnapshot> = self
            .pods
            .state()
            .iter()
            .filter_map(|pod| {
                let networks = pod_networks_of(pod).ok()?;
                (!networks.is_empty()).then(|| PodSnapshot {
                    key: object_key(&pod.metadata),
                    uid: pod.metadata.uid.clone().unwrap_or_default(),
                    active: is_active(pod),
                    networks,
                })
            })
            .collect();
        pods.sort_by(|a, b| a.key.cmp(&b.key));
        pods
    }

    fn claim_views(&self) -> Vec<ClaimView> {
        let Some(claims) = &self.claims else {
            return Vec::new();
        };
        let mut views: Vec<ClaimView> = claims.state().iter().map(|c| claim_view(c)).collect();
        views.sort_by(|a, b| a.key.cmp(&b.key));
        views
    }

    fn all_keys(&self) -> Vec<Key> {
        let mut pods: BTreeSet<String> = self
            .pods
            .state()
            .iter()
            .map(|pod| object_key(&pod.metadata))
            .collect();
        let mut claims: BTreeSet<String> = self
            .claims
            .iter()
            .flat_map(|store| store.state())
            .map(|claim| object_key(&claim.metadata))
            .collect();
        let mut nodes: BTreeSet<String> = self
            .nodes
            .state()
            .iter()
            .filter_map(|node| node.metadata.name.clone())
            .collect();
        {
            let inner = lock(&self.inner);
            pods.extend(inner.state.pod_keys());
            claims.extend(inner.state.claim_keys());
            nodes.extend(inner.state.node_names());
        }
        pods.into_iter()
            .map(Key::Pod)
            .chain(claims.into_iter().map(Key::Claim))
            .chain(nodes.into_iter().map(Key::Node))
            .collect()
    }

    /// Syncs the pools of `networks` from the index (restoring new ones).
    fn sync_networks(&self, networks: &BTreeSet<String>) {
        if networks.is_empty() || !lock(&self.inner).ready {
            return;
        }
        let pods = self.pod_snapshots();
        let claims = self.claim_views();
        let mut changed = Vec::new();
        {
            let mut inner = lock(&self.inner);
            let Inner { index, state, .. } = &mut *inner;
            for name in networks {
                let nad_keys: BTreeSet<String> =
                    index.nads_of(name).into_iter().map(str::to_owned).collect();
                let synced =
                    state.sync_network(name, index.network(name), &nad_keys, &pods, &claims);
                let gating = state.set_gated(name, index.is_gated(name));
                if synced || gating {
                    changed.push(name.clone());
                }
            }
        }
        if changed.is_empty() {
            return;
        }
        self.update_gauges(changed.iter());
        self.queue.add_all(self.all_keys());
    }

    pub(super) fn update_gauges<'a>(&self, networks: impl IntoIterator<Item = &'a String>) {
        let inner = lock(&self.inner);
        for network in networks {
            let labels = NetworkLabels {
                network: network.clone(),
            };
            match inner.state.free_ips(network) {
                Some(free) => {
                    self.ctx
                        .metrics
                        .free_addresses
                        .get_or_create(&labels)
                        .set(i64::try_from(free).unwrap_or(i64::MAX));
                }
                None => {
                    self.ctx.metrics.free_addresses.remove(&labels);
                }
            }
        }
    }

    fn on_nad(&self, event: watcher::Event<NetworkAttachmentDefinition>) {
        let changed = match event {
            watcher::Event::Apply(nad) | watcher::Event::InitApply(nad) => {
                let entry = layer2_nad(&nad, &self.ctx.config.cluster).unwrap_or_else(|error| {
                    debug!(error = %error, "NAD not indexed");
                    None
                });
                lock(&self.inner).index.apply(&nad_key_of(&nad), entry)
            }
            watcher::Event::Delete(nad) => lock(&self.inner).index.apply(&nad_key_of(&nad), None),
            watcher::Event::InitDone => self.reset_index(),
            watcher::Event::Init => BTreeSet::new(),
        };
        self.sync_networks(&changed);
    }

    /// Rebuilds the index from the NAD store; every network before or after.
    fn reset_index(&self) -> BTreeSet<String> {
        let nads = self
            .nads
            .state()
            .iter()
            .filter_map(|nad| match layer2_nad(nad, &self.ctx.config.cluster) {
                Ok(entry) => entry.map(|entry| (nad_key_of(nad), entry)),
                Err(error) => {
                    debug!(error = %error, "NAD not indexed");
                    None
                }
            })
            .collect();
        let mut inner = lock(&self.inner);
        let mut names = inner.index.network_names();
        inner.index.reset(nads);
        names.extend(inner.index.network_names());
        names
    }

    fn on_pod(&self, event: watcher::Event<Pod>) {
        match event {
            watcher::Event::Apply(pod)
            | watcher::Event::InitApply(pod)
            | watcher::Event::Delete(pod) => self.queue.add(Key::Pod(object_key(&pod.metadata))),
            watcher::Event::InitDone => self.queue.add_all(self.all_keys()),
            watcher::Event::Init => {}
        }
    }

    fn on_claim(&self, event: watcher::Event<IPAMClaim>) {
        match event {
            watcher::Event::Apply(claim) | watcher::Event::InitApply(claim) => {
                let namespace = claim.metadata.namespace.clone().unwrap_or_default();
                self.queue.add(Key::Claim(object_key(&claim.metadata)));
                // Pods waiting for this claim can go on.
                let waiting =
                    self.pods.state().into_iter().filter(|pod| {
                        pod.metadata.namespace.as_deref() == Some(namespace.as_str())
                    });
                self.queue
                    .add_all(waiting.map(|pod| Key::Pod(object_key(&pod.metadata))));
            }
            watcher::Event::Delete(claim) => {
                self.queue.add(Key::Claim(object_key(&claim.metadata)))
            }
            watcher::Event::InitDone => self.queue.add_all(self.all_keys()),
            watcher::Event::Init => {}
        }
    }

    fn on_node(&self, event: watcher::Event<Node>) {
        match event {
            watcher::Event::Apply(node) | watcher::Event::InitApply(node) => {
                let Some(name) = node.metadata.name.as_deref() else {
                    return;
                };
                // The echo of our own write (or any change that leaves the annotation as
                // planned) needs no reconcile: network changes queue every node anyway.
                let text = node_tunnels_text(&node);
                let mut inner = lock(&self.inner);
                if !inner.ready {
                    return;
                }
                if !inner.state.node_is_planned(name, text) {
                    inner.state.observe_node(name, text);
                    drop(inner);
                    self.queue.add(Key::Node(name.to_owned()));
                }
            }
            watcher::Event::Delete(node) => {
                if let Some(name) = node.metadata.name {
                    self.queue.add(Key::Node(name));
                }
            }
            watcher::Event::InitDone => self.queue.add_all(self.all_keys()),
            watcher::Event::Init => {}
        }
    }

    /// Follows a new Dynamic UDN scope: queues the nodes it moved.
    fn rescope(&self, scope: CurrentScope) {
        let change = lock(&self.inner).state.set_scope(scope);
        match change {
            Rescope::Everything => {
                let nodes = self.nodes.state();
                let names = nodes.iter().filter_map(|node| node.metadata.name.clone());
                self.queue.add_all(names.map(Key::Node));
            }
            Rescope::Pairs(pairs) => {
                if !pairs.is_empty() {
                    debug!(nodes = pairs.len(), "Dynamic UDN scope moved nodes");
                }
                self.queue.add_all(pairs.into_keys().map(Key::Node));
            }
        }
    }

    /// Decides the Layer2 topology from the nodes, records their tunnel ID annotations (so
    /// new pools restore them before the pods'), then builds every pool; the node plans
    /// follow the Dynamic UDN scope as it is now.
    fn start(&self, scope: CurrentScope) {
        let nodes = self.nodes.state();
        let topology =
            Layer2Topology::of_nodes(nodes.iter().map(|n| n.metadata.annotations.as_ref()));
        {
            let mut inner = lock(&self.inner);
            inner.state.set_topology(topology);
            inner.state.set_scope(scope);
            for node in &nodes {
                if let Some(name) = node.metadata.name.as_deref() {
                    inner.state.observe_node(name, node_tunnels_text(node));
                }
            }
        }
        let names = self.reset_index();
        lock(&self.inner).ready = true;
        self.sync_networks(&names);
        info!(networks = names.len(), topology = ?topology, "layer2-ipam pools restored");
        self.queue.add_all(self.all_keys());
    }
}

/// Follows the Dynamic UDN scope until its sender is gone; runs until aborted.
async fn scope_worker(shared: Arc<Shared>, mut scope: ScopeReceiver) {
    while scope.changed().await.is_ok() {
        let current = CurrentScope(scope.borrow_and_update().clone());
        shared.rescope(current);
    }
}

async fn worker(shared: Arc<Shared>) {
    while let Some(key) = shared.queue.next().await {
        let start = Instant::now();
        let result = match &key {
            Key::Pod(pod) => reconcile::reconcile_pod(&shared, pod).await,
            Key::Claim(claim) => {
                reconcile::reconcile_claim(&shared, claim);
                Ok(false)
            }
            Key::Node(node) => node_reconcile::reconcile_node(&shared, node).await,
        };
        shared.queue.done(&key);
        let outcome = match result {
            Ok(false) => {
                shared.failures.clear(&key);
                "ok"
            }
            Ok(true) => {
                let delay = shared.failures.delay(
                    &key,
                    Duration::from_millis(250),
                    Duration::from_secs(120),
                );
                shared.queue.add_after(key, delay);
                "requeue"
            }
            Err(error) => {
                shared.ctx.metrics.error(CONTROLLER, error.kind());
                warn!(controller = CONTROLLER, key = ?key, error = %error, "reconcile failed");
                if error.is_retryable() {
                    let delay = shared.failures.delay(
                        &key,
                        Duration::from_millis(100),
                        Duration::from_secs(60),
                    );
                    shared.queue.add_after(key, delay);
                }
                "error"
            }
        };
        shared
            .ctx
            .metrics
            .observe(CONTROLLER, outcome, start.elapsed());
    }
}

pub(super) async fn run(
    ctx: Context,
    mut scope: ScopeReceiver,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Layer2IpamError> {
    let client = ctx.client.clone();
    let persistent = ctx.config.cluster.features.persistent_ips;
    let (nads, nad_writer) = reflector::store();
    let (pods, pod_writer) = reflector::store();
    let (claims, claim_writer) = reflector::store::<IPAMClaim>();
    let (nodes, node_writer) = reflector::store();
    let shared = Arc::new(Shared {
        recorder: Recorder::new(client.clone(), ctx.reporter.clone()),
        ctx,
        inner: Mutex::new(Inner {
            index: Layer2Index::default(),
            state: IpamState::default(),
            ready: false,
        }),
        nads,
        pods,
        claims: persistent.then_some(claims),
        nodes,
        queue: WorkQueue::new(),
        failures: Failures::default(),
    });
    let mut pumps = JoinSet::new();
    let s = Arc::clone(&shared);
    pumps.spawn(pump(
        CONTROLLER,
        Api::all(client.clone()),
        nad_writer,
        move |e| s.on_nad(e),
    ));
    let s = Arc::clone(&shared);
    pumps.spawn(pump(
        CONTROLLER,
        Api::all(client.clone()),
        pod_writer,
        move |e| s.on_pod(e),
    ));
    let s = Arc::clone(&shared);
    pumps.spawn(pump(
        CONTROLLER,
        Api::all(client.clone()),
        node_writer,
        move |e| s.on_node(e),
    ));
    if persistent {
        let s = Arc::clone(&shared);
        pumps.spawn(pump(CONTROLLER, Api::all(client), claim_writer, move |e| {
            s.on_claim(e)
        }));
    }

    let mut shutdown = pin!(shutdown);
    let ready = async {
        shared
            .nads
            .wait_until_ready()
            .await
            .map_err(|_| "network-attachment-definitions")?;
        shared.pods.wait_until_ready().await.map_err(|_| "pods")?;
        shared.nodes.wait_until_ready().await.map_err(|_| "nodes")?;
        if let Some(claims) = &shared.claims {
            claims.wait_until_ready().await.map_err(|_| "ipamclaims")?;
        }
        Ok::<(), &'static str>(())
    };
    tokio::select! {
        () = &mut shutdown => return Ok(()),
        result = ready => result.map_err(|resource| Layer2IpamError::WatchNotReady { resource })?,
    }
    shared.start(CurrentScope(scope.borrow_and_update().clone()));

    let mut workers = JoinSet::new();
    for _ in 0..WORKERS {
        workers.spawn(worker(Arc::clone(&shared)));
    }
    // In a set of its own: aborted on shutdown, and with the set when this task is aborted.
    let mut follower = JoinSet::new();
    follower.spawn(scope_worker(Arc::clone(&shared), scope));
    shutdown.await;
    info!(controller = CONTROLLER, "shutting down");
    shared.queue.close();
    follower.shutdown().await;
    while workers.join_next().await.is_some() {}
    pumps.shutdown().await;
    Ok(())
}
