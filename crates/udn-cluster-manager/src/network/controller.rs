//! [`run`]: the caches, the start-up restore and the three controllers of this module,
//! each a kube-runtime `applier` fed by the watch tasks.

use std::convert::Infallible;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use futures::future::{BoxFuture, Shared as SharedFuture};
use futures::{FutureExt, Stream, StreamExt};
use kube::Resource;
use kube::runtime::controller::{Action, Config as ApplierConfig, Error as ApplierError, applier};
use kube::runtime::events::Recorder;
use kube::runtime::reflector::ObjectRef;
use tracing::{debug, error, info, warn};
use udn_api::crd::{ClusterUserDefinedNetwork, UserDefinedNetwork};
use udn_api::nad::NetworkAttachmentDefinition;
use udn_ipam::NetworkIdLimit;

use super::RESYNC;
use super::apply::{error_chain, lock};
use super::cudn_reconcile::{self, reconcile_cudn};
use super::error::NetworkError;
use super::ids::{NetworkIds, pool_limit};
use super::nad_identity::{NadKind, nad_kind};
use super::nad_plan::has_finalizer;
use super::nad_reconcile::{self, reconcile_nad};
use super::shared::{Backoff, CreateLock, InUseWaiters, NetworkGauges, Owner, Shared, kind_labels};
use super::triggers::{Triggers, udn_owner};
use super::udn_reconcile::{self, reconcile_udn};
use super::watch::{caches, spawn_all, wait_ready};
use crate::context::Context;

/// The shutdown signal, shareable between tasks.
pub(crate) type Shutdown = SharedFuture<BoxFuture<'static, ()>>;

/// The receiving ends of the controllers' queues.
struct Queues {
    udns: mpsc::UnboundedReceiver<ObjectRef<UserDefinedNetwork>>,
    cudns: mpsc::UnboundedReceiver<ObjectRef<ClusterUserDefinedNetwork>>,
    nads: mpsc::UnboundedReceiver<ObjectRef<NetworkAttachmentDefinition>>,
}

/// Run the UDN, CUDN and NAD network-ID controllers until `shutdown` completes.
///
/// Network IDs are restored from the existing NADs before any reconcile starts. Without
/// network segmentation nothing runs and this returns once `shutdown` completes.
pub async fn run(
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), NetworkError> {
    let shutdown: Shutdown = shutdown.boxed().shared();
    if !ctx.config.segmentation {
        info!("network segmentation is disabled; user-defined network controllers not started");
        shutdown.await;
        return Ok(());
    }
    let client = ctx.client.clone();
    let (stores, writers) = caches();
    let (triggers, queues) = queues();
    let limit = pool_limit(&ctx.config.cluster);
    log_pool_limit(limit);
    let shared = Arc::new(Shared {
        recorder: Recorder::new(client.clone(), ctx.reporter.clone()),
        ctx,
        stores: stores.clone(),
        ids: Mutex::new(NetworkIds::with_limit(limit)),
        waiters: Mutex::new(InUseWaiters::default()),
        backoff: Mutex::new(Backoff::default()),
        gauges: Mutex::new(NetworkGauges::default()),
        create_lock: CreateLock::default(),
        triggers: triggers.clone(),
    });
    let watches = spawn_all(&client, &shared, writers, &triggers, &shutdown);
    drop(triggers);
    let ready = futures::select_biased! {
        ready = wait_ready(&stores).fuse() => Some(ready),
        () = shutdown.clone().fuse() => None,
    };
    let result = match ready {
        Some(Ok(())) => {
            restore(&shared);
            run_controllers(&shared, queues, &shutdown).await;
            Ok(())
        }
        // The watches end when shutdown fires, which drops the cache writers: a cache that
        // never became ready because of that is a clean stop, not an error.
        Some(Err(_)) if shutdown.clone().now_or_never().is_some() => Ok(()),
        Some(Err(err)) => Err(err),
        None => Ok(()),
    };
    for watch in watches {
        if let Err(err) = watch.await {
            warn!(error = %err, "watch task failed");
        }
    }
    info!("user-defined network controllers stopped");
    result
}

/// Say how many networks the pools hold, and loudly when none fits.
fn log_pool_limit(limit: NetworkIdLimit) {
    let bound = limit.bound.to_string();
    if limit.max_id == 0 {
        error!(
            pool = limit.pool().name(),
            bound, "no user-defined network fits the network ID pool"
        );
    } else {
        info!(
            max_network_id = limit.max_id,
            pool = limit.pool().name(),
            bound,
            "network ID pool sized"
        );
    }
}

fn queues() -> (Triggers, Queues) {
    let (udn_tx, udns) = mpsc::unbounded();
    let (cudn_tx, cudns) = mpsc::unbounded();
    let (nad_tx, nads) = mpsc::unbounded();
    let triggers = Triggers {
        udns: udn_tx,
        cudns: cudn_tx,
        nads: nad_tx,
    };
    (triggers, Queues { udns, cudns, nads })
}

/// UDNs reconciled at once. A UDN is never reconciled twice at once, and primary UDNs
/// serialise per namespace on the create lock, so different namespaces proceed together.
const UDN_CONCURRENCY: u16 = 8;

/// The three appliers until shutdown: CUDNs and NADs one reconcile at a time (upstream
/// threadiness 1), UDNs [`UDN_CONCURRENCY`] at a time.
async fn run_controllers(shared: &Arc<Shared>, queues: Queues, shutdown: &Shutdown) {
    let config = ApplierConfig::default().concurrency(1);
    let udns = applier(
        |udn, shared| Box::pin(reconcile_udn(udn, shared)),
        |udn: Arc<UserDefinedNetwork>, err, shared: Arc<Shared>| {
            let key = udn_reconcile::backoff_key(&udn_owner(&udn.metadata).to_string());
            retry_policy(&shared, udn_reconcile::METRIC, &key, err)
        },
        Arc::clone(shared),
        shared.stores.udns.clone(),
        queue(queues.udns, shutdown),
        config.clone().concurrency(UDN_CONCURRENCY),
    );
    let cudns = applier(
        |cudn, shared| Box::pin(reconcile_cudn(cudn, shared)),
        |cudn: Arc<ClusterUserDefinedNetwork>, err, shared: Arc<Shared>| {
            let name = cudn.metadata.name.clone().unwrap_or_default();
            let key = cudn_reconcile::backoff_key(&name);
            retry_policy(&shared, cudn_reconcile::METRIC, &key, err)
        },
        Arc::clone(shared),
        shared.stores.cudns.clone(),
        queue(queues.cudns, shutdown),
        config.clone(),
    );
    let nads = applier(
        |nad, shared| Box::pin(reconcile_nad(nad, shared)),
        |nad: Arc<NetworkAttachmentDefinition>, err, shared: Arc<Shared>| {
            let key = nad_reconcile::backoff_key(&udn_api::names::nad_key(
                nad.metadata.namespace.as_deref().unwrap_or_default(),
                nad.metadata.name.as_deref().unwrap_or_default(),
            ));
            retry_policy(&shared, nad_reconcile::METRIC, &key, err)
        },
        Arc::clone(shared),
        shared.stores.nads.clone(),
        queue(queues.nads, shutdown),
        config,
    );
    futures::join!(
        drive(udn_reconcile::METRIC, udns),
        drive(cudn_reconcile::METRIC, cudns),
        drive(nad_reconcile::METRIC, nads),
    );
}

/// A controller's queue: its triggers until shutdown.
fn queue<K: Resource>(
    rx: mpsc::UnboundedReceiver<ObjectRef<K>>,
    shutdown: &Shutdown,
) -> impl Stream<Item = Result<ObjectRef<K>, Infallible>> {
    rx.map(Ok).take_until(shutdown.clone())
}

/// Requeue after a failed reconcile: exponential backoff for retryable errors, the resync
/// period for invalid specs (they are on the status condition, and related changes
/// retrigger them).
fn retry_policy(
    shared: &Shared,
    controller: &'static str,
    key: &str,
    err: &NetworkError,
) -> Action {
    shared.ctx.metrics.error(controller, err.kind());
    if err.is_retryable() {
        let delay = shared.retry_after(key);
        warn!(controller, key, error = %error_chain(err), retry_in = ?delay, "reconcile failed");
        Action::requeue(delay)
    } else {
        debug!(controller, key, error = %err, "reconcile blocked by invalid state");
        Action::requeue(RESYNC)
    }
}

/// Poll a controller to completion, logging what it reports.
async fn drive<K, E, Q>(
    controller: &'static str,
    stream: impl Stream<Item = Result<(ObjectRef<K>, Action), ApplierError<E, Q>>>,
) where
    K: Resource,
    K::DynamicType: Debug,
    E: std::error::Error + 'static,
    Q: std::error::Error + 'static,
{
    stream
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => debug!(controller, object = %object, "reconciled"),
                Err(ApplierError::ObjectNotFound(object)) => {
                    debug!(controller, object = %object, "object gone before its reconcile");
                }
                Err(ApplierError::ReconcilerFailed(_, object)) => {
                    debug!(controller, object = %object, "reconcile failed");
                }
                Err(err) => warn!(controller, error = %err, "controller error"),
            }
        })
        .await;
}

/// Rebuild network IDs from the cached NADs and the network gauges from the cached
/// UDNs/CUDNs. The NAD snapshot is taken under the ID lock, so a deletion either is in it
/// or releases after the restore.
fn restore(shared: &Shared) {
    let report = {
        let mut ids = lock(&shared.ids);
        let identities: Vec<_> = shared
            .stores
            .nads
            .state()
            .iter()
            .filter_map(|nad| match nad_kind(nad, &shared.ctx.config.cluster) {
                NadKind::Network(identity) => Some(identity),
                NadKind::NotOvn | NadKind::Default | NadKind::Invalid(_) => None,
            })
            .collect();
        ids.restore(&identities)
    };
    for (key, id) in &report.discarded {
        warn!(nad = %key, id, "annotated network ID held by another network; reallocating");
    }
    for key in &report.bad_tunnel_keys {
        warn!(nad = %key, "annotated tunnel keys could not be reserved; reallocating");
    }
    for (key, err) in &report.failed {
        warn!(nad = %key, error = %error_chain(err), "no network ID at start");
    }
    info!(
        nads = report.nads,
        kept = report.kept,
        "restored network IDs"
    );
    let mut gauges = lock(&shared.gauges);
    for udn in shared.stores.udns.state() {
        if has_finalizer(&udn.metadata) {
            let labels = kind_labels((&udn.spec).into());
            gauges.set(&shared.ctx.metrics, udn_owner(&udn.metadata), Some(labels));
        }
    }
    for cudn in shared.stores.cudns.state() {
        if has_finalizer(&cudn.metadata) {
            let owner = Owner::Cudn {
                name: cudn.metadata.name.clone().unwrap_or_default(),
            };
            let labels = kind_labels((&cudn.spec.network).into());
            gauges.set(&shared.ctx.metrics, owner, Some(labels));
        }
    }
}
