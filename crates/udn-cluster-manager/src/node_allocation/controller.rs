//! The imperative shell of the node allocation controller: the node watch, the work queue,
//! and the apply step (one strategic-merge patch of both annotations, as upstream's
//! `SetAnnotationsOnNode`; a freshly allocated ID is guarded by the node's resourceVersion, so
//! a dead instance's write that lands late and this one's never both stand).

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use tokio::task::JoinSet;
use tracing::{info, warn};

use super::state::{NodeAllocations, ObservedNode};
use super::{CONTROLLER, NodeAllocationError};
use crate::context::Context;
use crate::node_patch::patch_node_annotations;
use crate::node_subnets::queue::{Failures, WorkQueue};
use crate::node_subnets::watch::pump;

/// Concurrent node reconciles (allocation is serialized; the patches overlap).
const WORKERS: usize = 4;

struct Inner {
    state: NodeAllocations,
    ready: bool,
}

struct Shared {
    ctx: Context,
    inner: Mutex<Inner>,
    nodes: Store<Node>,
    queue: Arc<WorkQueue<String>>,
    failures: Failures<String>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // State is consistent between statements; a panic elsewhere must not stop allocation.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn all_node_names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self
            .nodes
            .state()
            .iter()
            .filter_map(|node| node.metadata.name.clone())
            .collect();
        names.extend(lock(&self.inner).state.nodes());
        names
    }

    fn on_node(&self, event: watcher::Event<Node>) {
        match event {
            watcher::Event::Apply(node) | watcher::Event::InitApply(node) => {
                let Some(name) = node.metadata.name.as_deref() else {
                    return;
                };
                let observed = ObservedNode::of(node.metadata.annotations.as_ref());
                let inner = lock(&self.inner);
                if inner.ready && !inner.state.is_converged(name, &observed) {
                    drop(inner);
                    self.queue.add(name.to_owned());
                }
            }
            watcher::Event::Delete(node) => {
                if let Some(name) = node.metadata.name {
                    self.queue.add(name);
                }
            }
            // A relist: nodes deleted while the watch was down are released too.
            watcher::Event::InitDone => {
                if lock(&self.inner).ready {
                    self.queue.add_all(self.all_node_names());
                }
            }
            watcher::Event::Init => {}
        }
    }

    /// Restores the allocator from every node's annotations, then queues every node.
    fn start(&self) {
        let nodes = self.nodes.state();
        let restored = {
            let mut inner = lock(&self.inner);
            let restored = inner.state.restore(nodes.iter().filter_map(|node| {
                let name = node.metadata.name.as_deref()?;
                Some((name, ObservedNode::of(node.metadata.annotations.as_ref())))
            }));
            inner.ready = true;
            restored
        };
        info!(
            nodes = nodes.len(),
            kept = restored.kept,
            reassigned = restored.reassigned.len(),
            "node IDs restored"
        );
        self.update_gauge();
        self.queue.add_all(self.all_node_names());
    }

    fn update_gauge(&self) {
        let free = lock(&self.inner).state.free();
        self.ctx.metrics.free_node_ids.set(i64::from(free));
    }
}

async fn reconcile_node(shared: &Shared, name: &str) -> Result<(), NodeAllocationError> {
    let Some(node) = shared.nodes.get(&ObjectRef::new(name)) else {
        forget(shared, name);
        return Ok(());
    };
    let plan = {
        let mut inner = lock(&shared.inner);
        inner
            .state
            .plan(name, &ObservedNode::of(node.metadata.annotations.as_ref()))?
    };
    if plan.allocated {
        shared.update_gauge();
    }
    if plan.changes.is_empty() {
        return Ok(());
    }
    let api: Api<Node> = Api::all(shared.ctx.client.clone());
    let changes = plan.changes.iter().map(|(k, v)| (*k, v.as_deref()));
    // A fresh ID is written only onto the node as it was read: a previous instance's write
    // still in flight when it died (or one this instance has not seen yet) may have given the
    // node its ID meanwhile, and that one must stay.
    let guard = if plan.allocated {
        node.metadata.resource_version.as_deref()
    } else {
        None
    };
    match patch_node_annotations(&api, name, guard, changes).await {
        Ok(_) => {
            info!(node = %name, node_id = plan.node_id, "node ID and transit switch port address written");
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.is_not_found() => {
            forget(shared, name);
            Ok(())
        }
        Err(kube::Error::Api(status)) if plan.allocated && status.code == 409 => {
            // Let go of the fresh ID: the retry reads the node again and keeps the ID it
            // now carries, if it has one.
            lock(&shared.inner).state.forget(name);
            shared.update_gauge();
            Err(NodeAllocationError::Patch {
                node: name.to_owned(),
                source: kube::Error::Api(status),
            })
        }
        // The node keeps its ID (it still exists); the write is retried.
        Err(source) => Err(NodeAllocationError::Patch {
            node: name.to_owned(),
            source,
        }),
    }
}

fn forget(shared: &Shared, name: &str) {
    let released = lock(&shared.inner).state.forget(name);
    if let Some(id) = released {
        info!(node = %name, node_id = id, "node gone: released its ID");
        shared.update_gauge();
    }
}

async fn worker(shared: Arc<Shared>) {
    while let Some(name) = shared.queue.next().await {
        let start = Instant::now();
        let result = reconcile_node(&shared, &name).await;
        shared.queue.done(&name);
        let outcome = match result {
            Ok(()) => {
                shared.failures.clear(&name);
                "ok"
            }
            Err(error) => {
                shared.ctx.metrics.error(CONTROLLER, error.kind());
                warn!(controller = CONTROLLER, node = %name, error = %error, "reconcile failed");
                let delay = shared.failures.delay(
                    &name,
                    Duration::from_millis(100),
                    Duration::from_secs(60),
                );
                shared.queue.add_after(name.clone(), delay);
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
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), NodeAllocationError> {
    let client = ctx.client.clone();
    let (nodes, node_writer) = reflector::store();
    let shared = Arc::new(Shared {
        inner: Mutex::new(Inner {
            state: NodeAllocations::new(&ctx.config.cluster),
            ready: false,
        }),
        ctx,
        nodes,
        queue: WorkQueue::new(),
        failures: Failures::default(),
    });
    let mut pumps = JoinSet::new();
    let s = Arc::clone(&shared);
    pumps.spawn(pump(CONTROLLER, Api::all(client), node_writer, move |e| {
        s.on_node(e)
    }));
    let mut shutdown = pin!(shutdown);
    tokio::select! {
        () = &mut shutdown => return Ok(()),
        result = shared.nodes.wait_until_ready() => {
            result.map_err(|_| NodeAllocationError::WatchNotReady)?;
        }
    }
    shared.start();
    let mut workers = JoinSet::new();
    for _ in 0..WORKERS {
        workers.spawn(worker(Arc::clone(&shared)));
    }
    shutdown.await;
    info!(controller = CONTROLLER, "shutting down");
    shared.queue.close();
    while workers.join_next().await.is_some() {}
    pumps.shutdown().await;
    Ok(())
}
