//! The imperative shell: watches of Services, Pods and our EndpointSlices (the reflector
//! stores are the cache), one work queue of Services (`ns/name`), the apply step and the
//! Events on the Service.
//!
//! - Triggers: a change of an opted-in Service (or one we have slices for), of any pod of
//!   an opted-in Service's namespace, or of one of our slices queues the Service at once;
//!   the queue collapses bursts. Every opted-in Service is also queued after each relist
//!   and every [`RESYNC`].
//! - Retries: a failed reconcile is queued again after a per-Service delay that doubles
//!   from [`RETRY_BASE`] to [`RETRY_CAP`] and is **forgotten on success**; triggers are
//!   never delayed by it (the k8s-net-attach-def-controller rate-limited every event and
//!   never forgot, so updates came minutes late).
//! - A plan is only made once the slice cache shows our last writes (else a slice just
//!   created would be created again), waiting at most [`CACHE_WAIT`].
//! - Warning Events are published when they first appear, not again while they stay.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::Api;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use tokio::task::JoinSet;
use tracing::{debug, info, instrument, warn};
use udn_api::names::ANNOTATION_NETWORKS;

use super::apply::{ApplyError, Written, apply_ops};
use super::plan::{ServicePlan, SliceOp, plan_service, plan_service_gone};
use super::{
    ANNOTATION_ISIM_NETWORK, CONTROLLER, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY,
};
use crate::context::Context;
use crate::events::{Note, publish};
use crate::node_subnets::queue::{Failures, WorkQueue};
use crate::node_subnets::watch::pump;

/// Concurrent reconciles (never two of one Service).
const WORKERS: usize = 2;
/// First retry delay after a failure.
const RETRY_BASE: Duration = Duration::from_millis(100);
/// Longest retry delay.
const RETRY_CAP: Duration = Duration::from_secs(60);
/// Every opted-in Service is reconciled this often without a trigger.
const RESYNC: Duration = Duration::from_secs(300);
/// Longest wait for the slice cache to show our writes.
const CACHE_WAIT: Duration = Duration::from_secs(2);
/// How soon a Service whose slices the cache does not show yet is looked at again.
const CACHE_POLL: Duration = Duration::from_millis(50);

/// Per-Service memory of the workers.
#[derive(Default)]
struct Memory {
    /// The Warnings last published, per Service: not repeated while they stay.
    warned: BTreeMap<String, BTreeSet<(&'static str, String)>>,
    /// Our last writes, per Service, until the slice cache shows them.
    pending: BTreeMap<String, (Written, Instant)>,
}

/// Shared by the watch callbacks and the workers.
struct Shared {
    ctx: Context,
    services: Store<Service>,
    pods: Store<Pod>,
    slices: Store<EndpointSlice>,
    queue: Arc<WorkQueue<String>>,
    failures: Failures<String>,
    recorder: Recorder,
    memory: Mutex<Memory>,
}

/// How a reconcile ended.
enum Progress {
    /// Converged (or written).
    Done,
    /// The slice cache does not show our last writes yet: look again shortly.
    CacheBehind,
}

fn key_of(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// Whether `service` carries one of the opt-in annotations.
fn annotated(service: &Service) -> bool {
    service.metadata.annotations.as_ref().is_some_and(|a| {
        [ANNOTATION_ISIM_NETWORK, ANNOTATION_NETWORKS]
            .iter()
            .any(|key| a.get(*key).is_some_and(|v| !v.trim().is_empty()))
    })
}

/// The Service an EndpointSlice names.
fn slice_service(slice: &EndpointSlice) -> Option<String> {
    let name = slice.metadata.labels.as_ref()?.get(LABEL_SERVICE_NAME)?;
    Some(key_of(slice.metadata.namespace.as_deref()?, name))
}

impl Shared {
    fn memory(&self) -> MutexGuard<'_, Memory> {
        // The memory is consistent between statements; a panic elsewhere must not stop us.
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The opted-in Services (of `namespace`, or all).
    fn opted_in(&self, namespace: Option<&str>) -> Vec<String> {
        self.services
            .state()
            .iter()
            .filter(|s| namespace.is_none_or(|ns| s.metadata.namespace.as_deref() == Some(ns)))
            .filter(|s| annotated(s))
            .map(|s| key_of(&s.namespace().unwrap_or_default(), &s.name_any()))
            .collect()
    }

    /// Every Service to look at: the opted-in ones and the ones we have slices for.
    fn all_keys(&self) -> BTreeSet<String> {
        let mut keys: BTreeSet<String> = self.opted_in(None).into_iter().collect();
        keys.extend(self.slices.state().iter().filter_map(|s| slice_service(s)));
        keys
    }

    fn on_service(&self, event: watcher::Event<Service>) {
        match event {
            watcher::Event::Apply(service) => {
                let key = key_of(
                    &service.namespace().unwrap_or_default(),
                    &service.name_any(),
                );
                let has_slices = || {
                    self.slices
                        .state()
                        .iter()
                        .any(|s| slice_service(s).as_deref() == Some(key.as_str()))
                };
                if annotated(&service) || has_slices() {
                    self.queue.add(key);
                }
            }
            watcher::Event::Delete(service) => {
                self.queue.add(key_of(
                    &service.namespace().unwrap_or_default(),
                    &service.name_any(),
                ));
            }
            watcher::Event::InitDone => self.queue.add_all(self.all_keys()),
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
        }
    }

    fn on_pod(&self, event: watcher::Event<Pod>) {
        match event {
            watcher::Event::Apply(pod) | watcher::Event::Delete(pod) => {
                let namespace = pod.namespace().unwrap_or_default();
                self.queue.add_all(self.opted_in(Some(&namespace)));
            }
            watcher::Event::InitDone => self.queue.add_all(self.all_keys()),
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
        }
    }

    fn on_slice(&self, event: watcher::Event<EndpointSlice>) {
        match event {
            watcher::Event::Apply(slice) | watcher::Event::Delete(slice) => {
                if let Some(key) = slice_service(&slice) {
                    self.queue.add(key);
                }
            }
            watcher::Event::InitDone => self.queue.add_all(self.all_keys()),
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
        }
    }

    /// Whether the slice cache shows our last writes for `key` (or waited long enough).
    fn caught_up(&self, key: &str, namespace: &str) -> bool {
        let mut memory = self.memory();
        let Some((written, since)) = memory.pending.get(key) else {
            return true;
        };
        let get = |name: &str| self.slices.get(&ObjectRef::new(name).within(namespace));
        let shown = written.created.iter().all(|name| get(name).is_some())
            && written.updated.iter().all(|(name, before)| {
                get(name).is_none_or(|s| s.metadata.resource_version.as_ref() != Some(before))
            })
            && written.deleted.iter().all(|name| get(name).is_none());
        if !shown && since.elapsed() < CACHE_WAIT {
            return false;
        }
        if !shown {
            debug!(service = %key, "EndpointSlice cache still without our writes; planning anyway");
        }
        memory.pending.remove(key);
        true
    }

    /// Publishes the Warnings of `warnings` that were not there at the last reconcile.
    async fn warn(&self, key: &str, service: &Service, warnings: &[Note]) {
        let fresh: Vec<Note> = {
            let mut memory = self.memory();
            let current: BTreeSet<(&'static str, String)> = warnings
                .iter()
                .map(|n| (n.reason, n.text.clone()))
                .collect();
            let before = memory.warned.remove(key).unwrap_or_default();
            if !current.is_empty() {
                memory.warned.insert(key.to_owned(), current);
            }
            warnings
                .iter()
                .filter(|n| !before.contains(&(n.reason, n.text.clone())))
                .cloned()
                .collect()
        };
        for note in &fresh {
            warn!(service = %key, reason = note.reason, text = %note.text, "secondary network Service not served as asked");
        }
        if !fresh.is_empty() {
            publish(&self.recorder, &service.object_ref(&()), fresh).await;
        }
    }
}

#[instrument(skip_all, fields(controller = CONTROLLER, service = %key))]
async fn reconcile(shared: &Shared, key: &str) -> Result<Progress, ApplyError> {
    let Some((namespace, name)) = key.split_once('/') else {
        return Ok(Progress::Done);
    };
    if !shared.caught_up(key, namespace) {
        return Ok(Progress::CacheBehind);
    }
    let slices = shared.slices.state();
    let slices: Vec<&EndpointSlice> = slices
        .iter()
        .map(AsRef::as_ref)
        .filter(|s: &&EndpointSlice| s.metadata.namespace.as_deref() == Some(namespace))
        .collect();
    let service = shared.services.get(&ObjectRef::new(name).within(namespace));
    let plan = match &service {
        None => {
            shared.memory().warned.remove(key);
            plan_service_gone(namespace, name, &slices)
        }
        Some(service) => {
            let pods = if annotated(service) {
                shared.pods.state()
            } else {
                Vec::new()
            };
            let pods: Vec<&Pod> = pods
                .iter()
                .map(AsRef::as_ref)
                .filter(|p: &&Pod| p.metadata.namespace.as_deref() == Some(namespace))
                .collect();
            plan_service(service, &pods, &slices)
        }
    };
    for skipped in &plan.skipped {
        debug!(pod = %skipped.pod, reason = %skipped.reason, "pod network-status unreadable; pod left out");
    }
    if let Some(service) = &service {
        shared.warn(key, service, &plan.warnings).await;
    }
    apply(shared, key, namespace, service.as_deref(), plan).await?;
    Ok(Progress::Done)
}

/// Writes `plan`, remembers the writes for the cache check, and publishes its Normal Event.
async fn apply(
    shared: &Shared,
    key: &str,
    namespace: &str,
    service: Option<&Service>,
    plan: ServicePlan,
) -> Result<(), ApplyError> {
    if plan.ops.is_empty() {
        return Ok(());
    }
    let api: Api<EndpointSlice> = Api::namespaced(shared.ctx.client.clone(), namespace);
    let mut written = Written::default();
    let result = apply_ops(&api, key, &plan.ops, &mut written).await;
    if !written.is_empty() {
        shared
            .memory()
            .pending
            .insert(key.to_owned(), (written, Instant::now()));
    }
    result?;
    let count = |f: fn(&SliceOp) -> bool| plan.ops.iter().filter(|op| f(op)).count();
    info!(
        service = %key,
        created = count(|op| matches!(op, SliceOp::Create(_))),
        updated = count(|op| matches!(op, SliceOp::Update(_))),
        deleted = count(|op| matches!(op, SliceOp::Delete { .. })),
        "secondary network EndpointSlices written"
    );
    if let (Some(service), Some(note)) = (service, plan.done) {
        publish(&shared.recorder, &service.object_ref(&()), vec![note]).await;
    }
    Ok(())
}

async fn worker(shared: Arc<Shared>) {
    while let Some(key) = shared.queue.next().await {
        let start = Instant::now();
        let result = reconcile(&shared, &key).await;
        shared.queue.done(&key);
        let outcome = match result {
            Ok(Progress::Done) => {
                shared.failures.clear(&key);
                "ok"
            }
            Ok(Progress::CacheBehind) => {
                shared.queue.add_after(key, CACHE_POLL);
                "requeue"
            }
            Err(error) => {
                shared.ctx.metrics.error(CONTROLLER, error.kind());
                warn!(controller = CONTROLLER, service = %key, error = %super::error_chain(&error), "reconcile failed; retrying");
                let delay = shared.failures.delay(&key, RETRY_BASE, RETRY_CAP);
                shared.queue.add_after(key, delay);
                "error"
            }
        };
        shared
            .ctx
            .metrics
            .observe(CONTROLLER, outcome, start.elapsed());
    }
}

/// Runs until `stop` resolves.
pub(super) async fn run(ctx: Context, stop: impl Future<Output = ()> + Send + Clone + 'static) {
    let client = ctx.client.clone();
    let (services, service_writer) = reflector::store();
    let (pods, pod_writer) = reflector::store();
    let (slices, slice_writer) = reflector::store();
    let shared = Arc::new(Shared {
        recorder: Recorder::new(client.clone(), ctx.reporter.clone()),
        ctx,
        services,
        pods,
        slices,
        queue: WorkQueue::new(),
        failures: Failures::default(),
        memory: Mutex::new(Memory::default()),
    });
    let mut tasks = JoinSet::new();
    spawn_watches(
        &shared,
        &mut tasks,
        service_writer,
        pod_writer,
        slice_writer,
    );
    let synced = async {
        shared.services.wait_until_ready().await?;
        shared.pods.wait_until_ready().await?;
        shared.slices.wait_until_ready().await
    };
    tokio::select! {
        () = stop.clone() => {
            tasks.shutdown().await;
            return;
        }
        result = synced => {
            if result.is_err() {
                warn!(controller = CONTROLLER, "watch ended before its first list");
                tasks.shutdown().await;
                return;
            }
        }
    }
    info!(
        controller = CONTROLLER,
        "caches synced; reconciling opted-in Services"
    );
    shared.queue.add_all(shared.all_keys());
    let s = Arc::clone(&shared);
    tasks.spawn(async move {
        let mut ticks = tokio::time::interval(RESYNC);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            s.queue.add_all(s.all_keys());
        }
    });
    let mut workers = JoinSet::new();
    for _ in 0..WORKERS {
        workers.spawn(worker(Arc::clone(&shared)));
    }
    stop.await;
    info!(controller = CONTROLLER, "shutting down");
    shared.queue.close();
    while workers.join_next().await.is_some() {}
    tasks.shutdown().await;
}

/// The three watches, each feeding its store and queueing the Services it concerns; our
/// slices only (by their managed-by label).
fn spawn_watches(
    shared: &Arc<Shared>,
    tasks: &mut JoinSet<()>,
    services: Writer<Service>,
    pods: Writer<Pod>,
    slices: Writer<EndpointSlice>,
) {
    let client = shared.ctx.client.clone();
    let s = Arc::clone(shared);
    let api = Api::all(client.clone());
    tasks.spawn(pump(CONTROLLER, api, services, move |e| s.on_service(e)));
    let s = Arc::clone(shared);
    let api = Api::all(client.clone());
    tasks.spawn(pump(CONTROLLER, api, pods, move |e| s.on_pod(e)));
    let s = Arc::clone(shared);
    let ours = watcher::Config::default().labels(&format!("{LABEL_MANAGED_BY}={MANAGED_BY}"));
    tasks.spawn(async move {
        udn_runtime::watch::reflect_with(CONTROLLER, Api::all(client), ours, slices, |e| {
            s.on_slice(e);
            true
        })
        .await;
    });
}
