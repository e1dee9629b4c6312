//! The imperative shell of the node-subnets controller: watches (NADs, nodes, UDNs, CUDNs),
//! the node and status work queues, and the apply steps (node patch, condition, events).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tracing::{debug, info, warn};
use udn_api::crd::{ClusterUserDefinedNetwork, UserDefinedNetwork};
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::{ANNOTATION_NODE_SUBNETS, DEFAULT_NETWORK_NAME};

use super::batch::{Batch, BatchSchedule, BatchStep, PendingNodes};
use super::networks::{
    IndexChange, Layer3Network, NadIndex, OwnerKey, OwnerKind, nad_entry, nad_key_of,
};
use super::queue::{Failures, WorkQueue};
use super::state::{NetworkSync, SubnetState};
use super::watch::pump;
use super::{CONTROLLER, NodeSubnetsError, reconcile};
use crate::context::Context;
use crate::dynamic_udn::scope::{CurrentScope, Rescope, ScopeReceiver};
use crate::metrics::NetworkLabels;

/// Metrics name of the status reconciles.
const STATUS_CONTROLLER: &str = "node-subnets-status";
/// Concurrent node reconciles (allocation is serialized; the patches overlap).
const NODE_WORKERS: usize = 4;

/// Network changes waiting to queue every node and scope changes waiting to queue the nodes
/// they moved, on the schedule of [`BatchSchedule`].
#[derive(Debug, Default)]
pub(super) struct Batches {
    schedule: Mutex<BatchSchedule>,
    notify: Notify,
    /// Written before the schedule hears of the change, so a batch never misses it.
    pending: Mutex<PendingNodes>,
}

impl Batches {
    /// A network changed: every node needs another look, in the next batch.
    fn changed(&self) {
        lock(&self.pending).every();
        self.schedule_batch();
    }

    /// A scope change moved `nodes`: they need another look, in the next batch.
    fn moved(&self, nodes: impl IntoIterator<Item = String>) {
        lock(&self.pending).add(nodes);
        self.schedule_batch();
    }

    fn schedule_batch(&self) {
        lock(&self.schedule).changed(tokio::time::Instant::now());
        self.notify.notify_one();
    }
}

/// The index and the allocators, under one lock.
pub(super) struct Inner {
    pub(super) index: NadIndex,
    pub(super) state: SubnetState,
    ready: bool,
}

/// Everything the workers and the watch callbacks share.
pub(super) struct Shared {
    pub(super) ctx: Context,
    pub(super) inner: Mutex<Inner>,
    nads: Store<NetworkAttachmentDefinition>,
    pub(super) nodes: Store<Node>,
    pub(super) udns: Store<UserDefinedNetwork>,
    pub(super) cudns: Store<ClusterUserDefinedNetwork>,
    node_queue: Arc<WorkQueue<String>>,
    pub(super) status_queue: Arc<WorkQueue<OwnerKey>>,
    pub(super) recorder: Recorder,
    failures: Failures<String>,
    batches: Batches,
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // State is consistent between statements; a panic elsewhere must not stop allocation.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The `node-subnets` annotation text of `node`.
pub(super) fn annotation_text(node: &Node) -> Option<&str> {
    node.metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(ANNOTATION_NODE_SUBNETS))
        .map(String::as_str)
}

impl Shared {
    fn all_node_names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self
            .nodes
            .state()
            .iter()
            .filter_map(|node| node.metadata.name.clone())
            .collect();
        names.extend(lock(&self.inner).state.known_nodes());
        names
    }

    fn on_nad(&self, event: watcher::Event<NetworkAttachmentDefinition>) {
        match event {
            watcher::Event::Apply(nad) | watcher::Event::InitApply(nad) => {
                let entry = match nad_entry(&nad, &self.ctx.config.cluster) {
                    Ok(entry) => entry,
                    Err(error) => {
                        debug!(error = %error, "NAD not indexed");
                        None
                    }
                };
                let mut inner = lock(&self.inner);
                let change = inner.index.apply(&nad_key_of(&nad), entry);
                self.after_index_change(inner, change);
            }
            watcher::Event::Delete(nad) => {
                let mut inner = lock(&self.inner);
                let change = inner.index.apply(&nad_key_of(&nad), None);
                self.after_index_change(inner, change);
            }
            watcher::Event::InitDone => self.resync_networks(),
            watcher::Event::Init => {}
        }
    }

    /// Syncs the allocators of the networks an index update touched.
    fn after_index_change(&self, mut inner: MutexGuard<'_, Inner>, change: IndexChange) {
        if change.is_empty() || !inner.ready {
            return;
        }
        let mut sync = NetworkSync::default();
        for network in &change.networks {
            let desired = inner.index.layer3_network(network);
            inner
                .state
                .sync_network(network, desired.as_ref(), &mut sync);
        }
        drop(inner);
        self.after_sync(&sync);
        self.status_queue.add_all(change.owners);
    }

    /// Rebuilds the index from the NAD store and syncs every allocator.
    fn resync_networks(&self) {
        let entries: BTreeMap<String, _> = self
            .nads
            .state()
            .iter()
            .filter_map(|nad| match nad_entry(nad, &self.ctx.config.cluster) {
                Ok(entry) => entry.map(|entry| (nad_key_of(nad), entry)),
                Err(error) => {
                    debug!(error = %error, "NAD not indexed");
                    None
                }
            })
            .collect();
        let mut inner = lock(&self.inner);
        inner.index.reset(entries);
        if !inner.ready {
            return;
        }
        let mut desired = inner.index.layer3_networks();
        desired.insert(
            DEFAULT_NETWORK_NAME.to_owned(),
            Layer3Network::default_network(&self.ctx.config.cluster),
        );
        let sync = inner.state.sync_networks(&desired);
        let owners = inner.index.owners();
        drop(inner);
        self.after_sync(&sync);
        self.status_queue.add_all(owners);
    }

    fn after_sync(&self, sync: &NetworkSync) {
        if sync.is_empty() {
            return;
        }
        for removed in &sync.removed {
            self.ctx.metrics.free_addresses.remove(&NetworkLabels {
                network: removed.clone(),
            });
        }
        self.update_gauges(sync.added.iter().chain(&sync.changed));
        // New or grown networks: every node needs (another look at) its annotation; earlier
        // "full" failures are retried (upstream re-enqueues all nodes on expansion). Bursts
        // of network changes are batched, so each node writes many of them in one patch and
        // a burst writes each node a few times whatever its length (`batch`).
        self.batches.changed();
    }

    pub(super) fn update_gauges<'a>(&self, networks: impl IntoIterator<Item = &'a String>) {
        let inner = lock(&self.inner);
        for network in networks {
            if let Some(free) = inner.state.free_subnets(network) {
                self.ctx
                    .metrics
                    .free_addresses
                    .get_or_create(&NetworkLabels {
                        network: network.clone(),
                    })
                    .set(i64::try_from(free).unwrap_or(i64::MAX));
            }
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
                if !lock(&self.inner)
                    .state
                    .is_planned(name, annotation_text(&node))
                {
                    self.node_queue.add(name.to_owned());
                }
            }
            watcher::Event::Delete(node) => {
                if let Some(name) = node.metadata.name {
                    self.node_queue.add(name);
                }
            }
            watcher::Event::InitDone => self.node_queue.add_all(self.all_node_names()),
            watcher::Event::Init => {}
        }
    }

    /// Follows a new Dynamic UDN scope: the nodes it moved are queued with the next batch.
    fn rescope(&self, scope: CurrentScope) {
        let change = lock(&self.inner).state.set_scope(scope);
        match change {
            Rescope::Everything => self.batches.changed(),
            Rescope::Pairs(pairs) if pairs.is_empty() => {}
            Rescope::Pairs(pairs) => {
                debug!(nodes = pairs.len(), "Dynamic UDN scope moved nodes");
                self.batches.moved(pairs.into_keys());
            }
        }
    }

    /// Loads the known annotations and the networks, restoring every allocator, with the
    /// Dynamic UDN scope as it is now.
    fn start(&self, scope: CurrentScope) {
        let nodes = self.nodes.state();
        {
            let mut inner = lock(&self.inner);
            inner.state.set_scope(scope);
            for node in &nodes {
                if let Some(name) = node.metadata.name.as_deref() {
                    inner.state.observe_text(name, annotation_text(node));
                }
            }
            inner.ready = true;
        }
        self.resync_networks();
        let inner = lock(&self.inner);
        info!(
            networks = inner.state.network_names().len(),
            nodes = nodes.len(),
            "node-subnets allocators restored"
        );
        drop(inner);
        self.node_queue.add_all(self.all_node_names());
    }
}

async fn node_worker(shared: Arc<Shared>) {
    while let Some(name) = shared.node_queue.next().await {
        let start = Instant::now();
        let result = reconcile::reconcile_node(&shared, &name).await;
        shared.node_queue.done(&name);
        let outcome = match result {
            Ok(false) => {
                shared.failures.clear(&name);
                "ok"
            }
            Ok(true) => {
                let delay = shared.failures.delay(
                    &name,
                    Duration::from_millis(500),
                    Duration::from_secs(300),
                );
                shared.node_queue.add_after(name.clone(), delay);
                "requeue"
            }
            Err(error) => {
                shared.ctx.metrics.error(CONTROLLER, error.kind());
                warn!(controller = CONTROLLER, node = %name, error = %error, "reconcile failed");
                if error.is_retryable() {
                    let delay = shared.failures.delay(
                        &name,
                        Duration::from_millis(100),
                        Duration::from_secs(60),
                    );
                    shared.node_queue.add_after(name.clone(), delay);
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

/// Queues the pending nodes when the batch schedule says so; runs until aborted.
async fn batch_worker(shared: Arc<Shared>) {
    loop {
        let step = lock(&shared.batches.schedule).step(tokio::time::Instant::now());
        match step {
            BatchStep::Release => {
                let batch = lock(&shared.batches.pending).take();
                match batch {
                    Batch::Every => shared.node_queue.add_all(shared.all_node_names()),
                    Batch::Nodes(nodes) => shared.node_queue.add_all(nodes),
                }
            }
            BatchStep::WaitUntil(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = shared.batches.notify.notified() => {}
                }
            }
            BatchStep::Idle => shared.batches.notify.notified().await,
        }
    }
}

/// Follows the Dynamic UDN scope until its sender is gone; runs until aborted.
async fn scope_worker(shared: Arc<Shared>, mut scope: ScopeReceiver) {
    while scope.changed().await.is_ok() {
        let current = CurrentScope(scope.borrow_and_update().clone());
        shared.rescope(current);
    }
}

async fn status_worker(shared: Arc<Shared>) {
    while let Some(owner) = shared.status_queue.next().await {
        let start = Instant::now();
        let result = reconcile::reconcile_owner(&shared, &owner).await;
        shared.status_queue.done(&owner);
        let outcome = match result {
            Ok(()) => "ok",
            Err(error) => {
                shared.ctx.metrics.error(STATUS_CONTROLLER, error.kind());
                warn!(controller = STATUS_CONTROLLER, error = %error, "reconcile failed");
                shared.status_queue.add_after(owner, Duration::from_secs(1));
                "error"
            }
        };
        shared
            .ctx
            .metrics
            .observe(STATUS_CONTROLLER, outcome, start.elapsed());
    }
}

fn owner_of_udn(udn: &UserDefinedNetwork) -> Option<OwnerKey> {
    Some(OwnerKey {
        kind: OwnerKind::Udn,
        namespace: Some(udn.metadata.namespace.clone()?),
        name: udn.metadata.name.clone()?,
    })
}

fn owner_of_cudn(cudn: &ClusterUserDefinedNetwork) -> Option<OwnerKey> {
    Some(OwnerKey {
        kind: OwnerKind::Cudn,
        namespace: None,
        name: cudn.metadata.name.clone()?,
    })
}

/// The watches of the UDN side: NADs (the networks), UDNs and CUDNs (condition owners).
fn spawn_network_pumps(
    pumps: &mut JoinSet<()>,
    shared: &Arc<Shared>,
    client: &kube::Client,
    nad_writer: reflector::store::Writer<NetworkAttachmentDefinition>,
    udn_writer: reflector::store::Writer<UserDefinedNetwork>,
    cudn_writer: reflector::store::Writer<ClusterUserDefinedNetwork>,
) {
    let s = Arc::clone(shared);
    pumps.spawn(pump(
        CONTROLLER,
        Api::all(client.clone()),
        nad_writer,
        move |e| s.on_nad(e),
    ));
    let s = Arc::clone(shared);
    pumps.spawn(pump(
        CONTROLLER,
        Api::all(client.clone()),
        udn_writer,
        move |e| {
            if let watcher::Event::Apply(udn) | watcher::Event::InitApply(udn) = e
                && let Some(owner) = owner_of_udn(&udn)
            {
                s.status_queue.add(owner);
            }
        },
    ));
    let s = Arc::clone(shared);
    pumps.spawn(pump(
        CONTROLLER,
        Api::all(client.clone()),
        cudn_writer,
        move |e| {
            if let watcher::Event::Apply(cudn) | watcher::Event::InitApply(cudn) = e
                && let Some(owner) = owner_of_cudn(&cudn)
            {
                s.status_queue.add(owner);
            }
        },
    ));
}

pub(super) async fn run(
    ctx: Context,
    mut scope: ScopeReceiver,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), NodeSubnetsError> {
    let client = ctx.client.clone();
    let (nads, nad_writer) = reflector::store();
    let (nodes, node_writer) = reflector::store();
    let (udns, udn_writer) = reflector::store();
    let (cudns, cudn_writer) = reflector::store();
    let shared = Arc::new(Shared {
        recorder: Recorder::new(client.clone(), ctx.reporter.clone()),
        ctx,
        inner: Mutex::new(Inner {
            index: NadIndex::default(),
            state: SubnetState::default(),
            ready: false,
        }),
        nads,
        nodes,
        udns,
        cudns,
        node_queue: WorkQueue::new(),
        status_queue: WorkQueue::new(),
        failures: Failures::default(),
        batches: Batches::default(),
    });
    let mut pumps = JoinSet::new();
    let s = Arc::clone(&shared);
    pumps.spawn(pump(
        CONTROLLER,
        Api::all(client.clone()),
        node_writer,
        move |e| s.on_node(e),
    ));
    // Without segmentation only the default network is allocated: no NADs, UDNs or CUDNs
    // to watch (their CRDs need not exist).
    let udn = shared.ctx.config.segmentation;
    if udn {
        spawn_network_pumps(
            &mut pumps,
            &shared,
            &client,
            nad_writer,
            udn_writer,
            cudn_writer,
        );
    }

    let mut shutdown = pin!(shutdown);
    let ready = async {
        shared.nodes.wait_until_ready().await.map_err(|_| "nodes")?;
        if udn {
            shared
                .nads
                .wait_until_ready()
                .await
                .map_err(|_| "network-attachment-definitions")?;
            shared
                .udns
                .wait_until_ready()
                .await
                .map_err(|_| "userdefinednetworks")?;
            shared
                .cudns
                .wait_until_ready()
                .await
                .map_err(|_| "clusteruserdefinednetworks")?;
        }
        Ok::<(), &'static str>(())
    };
    tokio::select! {
        () = &mut shutdown => return Ok(()),
        result = ready => result.map_err(|resource| NodeSubnetsError::WatchNotReady { resource })?,
    }
    shared.start(CurrentScope(scope.borrow_and_update().clone()));

    let mut workers = JoinSet::new();
    for _ in 0..NODE_WORKERS {
        workers.spawn(node_worker(Arc::clone(&shared)));
    }
    workers.spawn(status_worker(Arc::clone(&shared)));
    // In a set of their own: aborted on shutdown, and with the set when this task is aborted.
    let mut batcher = JoinSet::new();
    batcher.spawn(batch_worker(Arc::clone(&shared)));
    batcher.spawn(scope_worker(Arc::clone(&shared), scope));
    shutdown.await;
    info!(controller = CONTROLLER, "shutting down");
    shared.node_queue.close();
    shared.status_queue.close();
    batcher.shutdown().await;
    while workers.join_next().await.is_some() {}
    pumps.shutdown().await;
    Ok(())
}
