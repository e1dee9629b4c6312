//! The watch tasks: each applies its events to a reflector cache, then queues the objects
//! to reconcile ([`triggers`](super::triggers)), and keeps the network-ID bookkeeping in
//! step with NAD deletions.

use std::fmt::Debug;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, reflector};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tracing::{debug, warn};
use udn_api::crd::{ClusterUserDefinedNetwork, UserDefinedNetwork};
use udn_api::nad::NetworkAttachmentDefinition;

use super::apply::{lock, nad_keys};
use super::controller::Shutdown;
use super::error::NetworkError;
use super::nad_reconcile::log_released;
use super::shared::{Owner, Shared};
use super::stores::Stores;
use super::triggers::{Triggers, all_owners, nad_owners, namespace_owners, udn_owner};

/// The write halves of the caches, one per watch task.
pub(crate) struct Writers {
    udns: Writer<UserDefinedNetwork>,
    cudns: Writer<ClusterUserDefinedNetwork>,
    nads: Writer<NetworkAttachmentDefinition>,
    namespaces: Writer<PartialObjectMeta<Namespace>>,
    pods: Writer<PartialObjectMeta<Pod>>,
}

/// Empty caches: the read side and the write side.
pub(crate) fn caches() -> (Stores, Writers) {
    let (udns, udn_writer) = reflector::store();
    let (cudns, cudn_writer) = reflector::store();
    let (nads, nad_writer) = reflector::store();
    let (namespaces, namespace_writer) = reflector::store();
    let (pods, pod_writer) = reflector::store();
    let stores = Stores {
        udns,
        cudns,
        nads,
        namespaces,
        pods,
    };
    let writers = Writers {
        udns: udn_writer,
        cudns: cudn_writer,
        nads: nad_writer,
        namespaces: namespace_writer,
        pods: pod_writer,
    };
    (stores, writers)
}

/// Start the five watch tasks; they end at `shutdown`.
pub(crate) fn spawn_all(
    client: &Client,
    shared: &Arc<Shared>,
    writers: Writers,
    triggers: &Triggers,
    shutdown: &Shutdown,
) -> Vec<tokio::task::JoinHandle<()>> {
    vec![
        spawn_watch(
            "UserDefinedNetwork",
            Api::all(client.clone()),
            writers.udns,
            shutdown,
            udn_router(shared, triggers),
        ),
        spawn_watch(
            "ClusterUserDefinedNetwork",
            Api::all(client.clone()),
            writers.cudns,
            shutdown,
            cudn_router(shared, triggers),
        ),
        spawn_watch(
            "NetworkAttachmentDefinition",
            Api::all(client.clone()),
            writers.nads,
            shutdown,
            nad_router(shared, triggers),
        ),
        spawn_watch(
            "Namespace",
            Api::all(client.clone()),
            writers.namespaces,
            shutdown,
            namespace_router(shared, triggers),
        ),
        spawn_watch(
            "Pod",
            Api::all(client.clone()),
            writers.pods,
            shutdown,
            pod_router(shared, triggers),
        ),
    ]
}

/// Wait until every cache has its first full list.
pub(crate) async fn wait_ready(stores: &Stores) -> Result<(), NetworkError> {
    let not_ready = |resource| move |_| NetworkError::CacheNotReady { resource };
    stores
        .udns
        .wait_until_ready()
        .await
        .map_err(not_ready("UserDefinedNetwork"))?;
    stores
        .cudns
        .wait_until_ready()
        .await
        .map_err(not_ready("ClusterUserDefinedNetwork"))?;
    stores
        .nads
        .wait_until_ready()
        .await
        .map_err(not_ready("NetworkAttachmentDefinition"))?;
    stores
        .namespaces
        .wait_until_ready()
        .await
        .map_err(not_ready("Namespace"))?;
    stores
        .pods
        .wait_until_ready()
        .await
        .map_err(not_ready("Pod"))
}

/// A watch task feeding `writer` and calling `route` after each event is cached.
fn spawn_watch<K, F>(
    resource: &'static str,
    api: Api<K>,
    mut writer: Writer<K>,
    shutdown: &Shutdown,
    mut route: F,
) -> tokio::task::JoinHandle<()>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Default + Send + Sync,
    F: FnMut(&Event<K>) + Send + 'static,
{
    let stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .take_until(shutdown.clone());
    tokio::spawn(async move {
        let mut stream: Pin<Box<_>> = Box::pin(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => {
                    writer.apply_watcher_event(&event);
                    route(&event);
                }
                Err(err) => warn!(resource, error = %err, "watch failed; retrying"),
            }
        }
        debug!(resource, "watch stopped");
    })
}

fn udn_router(
    shared: &Arc<Shared>,
    triggers: &Triggers,
) -> impl FnMut(&Event<UserDefinedNetwork>) + Send + 'static {
    let shared = Arc::clone(shared);
    let triggers = triggers.clone();
    move |event| match event {
        Event::Apply(udn) | Event::InitApply(udn) => triggers.owners([udn_owner(&udn.metadata)]),
        Event::Delete(udn) => forget_owner(&shared, udn_owner(&udn.metadata)),
        Event::Init | Event::InitDone => {}
    }
}

fn cudn_router(
    shared: &Arc<Shared>,
    triggers: &Triggers,
) -> impl FnMut(&Event<ClusterUserDefinedNetwork>) + Send + 'static {
    let shared = Arc::clone(shared);
    let triggers = triggers.clone();
    let owner = |cudn: &ClusterUserDefinedNetwork| Owner::Cudn {
        name: cudn.metadata.name.clone().unwrap_or_default(),
    };
    move |event| match event {
        Event::Apply(cudn) | Event::InitApply(cudn) => triggers.owners([owner(cudn)]),
        Event::Delete(cudn) => forget_owner(&shared, owner(cudn)),
        Event::Init | Event::InitDone => {}
    }
}

/// An owner left the cache: it counts and waits no more.
fn forget_owner(shared: &Shared, owner: Owner) {
    lock(&shared.gauges).set(&shared.ctx.metrics, owner.clone(), None);
    lock(&shared.waiters).set(owner, Default::default());
}

/// NADs: the network-ID controller sees every change; a deletion releases the network's ID
/// when it was the last NAD (the cache already lacks it, see `reconcile_nad`); a relist
/// forgets NADs deleted while the watch was down.
fn nad_router(
    shared: &Arc<Shared>,
    triggers: &Triggers,
) -> impl FnMut(&Event<NetworkAttachmentDefinition>) + Send + 'static {
    let shared = Arc::clone(shared);
    let triggers = triggers.clone();
    move |event| match event {
        Event::Apply(nad) | Event::InitApply(nad) => {
            triggers.nad(nad);
            triggers.owners(nad_owners(&nad.metadata, false, &shared.stores));
        }
        Event::Delete(nad) => {
            let key = nad_keys([nad]).into_iter().next().unwrap_or_default();
            let released = lock(&shared.ids).forget(&key);
            if released.is_some() {
                shared.wake_pool_waiters();
            }
            log_released(released);
            triggers.owners(nad_owners(&nad.metadata, true, &shared.stores));
        }
        Event::InitDone => {
            let present = nad_keys(shared.stores.nads.state().iter().map(AsRef::as_ref));
            let released = lock(&shared.ids).retain(&present);
            let any = !released.is_empty();
            for released in released {
                log_released(Some(released));
            }
            if any {
                shared.wake_pool_waiters();
            }
            triggers.owners(all_owners(&shared.stores));
        }
        Event::Init => {}
    }
}

fn namespace_router(
    shared: &Arc<Shared>,
    triggers: &Triggers,
) -> impl FnMut(&Event<PartialObjectMeta<Namespace>>) + Send + 'static {
    let shared = Arc::clone(shared);
    let triggers = triggers.clone();
    move |event| match event {
        Event::Apply(ns) | Event::InitApply(ns) | Event::Delete(ns) => {
            triggers.owners(namespace_owners(ns, &shared.stores));
        }
        Event::InitDone => triggers.owners(all_owners(&shared.stores)),
        Event::Init => {}
    }
}

/// Pods only matter to owners waiting for pods to go.
fn pod_router(
    shared: &Arc<Shared>,
    triggers: &Triggers,
) -> impl FnMut(&Event<PartialObjectMeta<Pod>>) + Send + 'static {
    let shared = Arc::clone(shared);
    let triggers = triggers.clone();
    move |event| match event {
        Event::Apply(pod) | Event::InitApply(pod) | Event::Delete(pod) => {
            let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
            let waiting = lock(&shared.waiters).waiting_in(namespace);
            triggers.owners(waiting);
        }
        Event::InitDone => {
            let waiting = lock(&shared.waiters).all();
            triggers.owners(waiting);
        }
        Event::Init => {}
    }
}
