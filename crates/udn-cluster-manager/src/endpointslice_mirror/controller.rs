//! The imperative shell of the mirror: the watches (EndpointSlices, Pods, Namespaces,
//! NADs), the work queue keyed by default slice (`ns/name`), the repair at start, and the
//! apply step (create / replace / delete one slice).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use tokio::task::JoinSet;
use tracing::{debug, info, warn};
use udn_api::nad::NetworkAttachmentDefinition;

use super::plan::{self, Action, Inputs};
use super::primary::primary_network;
use super::{
    ANNOTATION_SOURCE, CONTROLLER, DEFAULT_CONTROLLER, LABEL_MANAGED_BY, MIRROR_CONTROLLER,
    MirrorError, migration,
};
use crate::context::{CLUSTER_MANAGER, Context};
use crate::node_subnets::queue::{Failures, WorkQueue};

/// Concurrent syncs, as upstream (kube-controller-manager's default).
const WORKERS: usize = 5;

struct Shared {
    ctx: Context,
    slices: Store<EndpointSlice>,
    pods: Store<Pod>,
    namespaces: Store<PartialObjectMeta<Namespace>>,
    nads: Store<NetworkAttachmentDefinition>,
    queue: Arc<WorkQueue<String>>,
    failures: Failures<String>,
    /// Every cache has listed once; events before that are covered by the repair.
    ready: AtomicBool,
}

fn managed_by(slice: &EndpointSlice) -> Option<&str> {
    slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_MANAGED_BY))
        .map(String::as_str)
}

/// The queue key of a slice: a default slice's own, a mirror's source; others none.
fn slice_key(slice: &EndpointSlice) -> Option<String> {
    let namespace = slice.metadata.namespace.as_deref()?;
    let name = match managed_by(slice)? {
        DEFAULT_CONTROLLER => slice.metadata.name.clone()?,
        MIRROR_CONTROLLER => slice
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_SOURCE))
            .cloned()?,
        _ => return None,
    };
    Some(udn_api::names::nad_key(namespace, &name))
}

impl Shared {
    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Every default slice of `namespace`.
    fn namespace_keys(&self, namespace: &str) -> BTreeSet<String> {
        self.slices
            .state()
            .iter()
            .filter(|s| s.metadata.namespace.as_deref() == Some(namespace))
            .filter(|s| managed_by(s) == Some(DEFAULT_CONTROLLER))
            .filter_map(|s| slice_key(s))
            .collect()
    }

    fn on_slice(&self, event: &watcher::Event<EndpointSlice>) {
        if !self.is_ready() {
            return;
        }
        if let watcher::Event::Apply(slice) | watcher::Event::Delete(slice) = event
            && let Some(key) = slice_key(slice)
        {
            self.queue.add(key);
        }
    }

    /// A pod changed: the default slices naming it (or, for a VM's pod, any pod of the VM:
    /// a migration target appearing changes the source's endpoint) are synced again.
    fn on_pod(&self, event: &watcher::Event<Pod>) {
        if !self.is_ready() {
            return;
        }
        let (watcher::Event::Apply(pod) | watcher::Event::Delete(pod)) = event else {
            return;
        };
        let Some(namespace) = pod.metadata.namespace.as_deref() else {
            return;
        };
        let mut names = BTreeSet::from([pod.metadata.name.clone().unwrap_or_default()]);
        if let Some(vm) = migration::vm_of(pod) {
            names.extend(
                self.pods
                    .state()
                    .iter()
                    .filter(|p| p.metadata.namespace.as_deref() == Some(namespace))
                    .filter(|p| migration::vm_of(p) == Some(vm))
                    .filter_map(|p| p.metadata.name.clone()),
            );
        }
        let slices = self.slices.state();
        let keys = plan::slices_naming(
            slices
                .iter()
                .map(AsRef::as_ref)
                .filter(|s| managed_by(s) == Some(DEFAULT_CONTROLLER)),
            namespace,
            &names,
        );
        self.queue.add_all(keys);
    }

    fn on_namespace_of(&self, namespace: Option<&str>) {
        if self.is_ready()
            && let Some(namespace) = namespace
        {
            self.queue.add_all(self.namespace_keys(namespace));
        }
    }

    /// Queues every default slice and every mirror's source (the repair: stale mirrors go,
    /// missing ones come).
    fn start(&self) {
        self.ready.store(true, Ordering::Release);
        let keys: BTreeSet<String> = self
            .slices
            .state()
            .iter()
            .filter_map(|s| slice_key(s))
            .collect();
        info!(
            controller = CONTROLLER,
            slices = keys.len(),
            "repairing mirrors"
        );
        self.queue.add_all(keys);
    }
}

async fn sync(shared: &Shared, key: &str) -> Result<(), MirrorError> {
    let Some((namespace, name)) = key.split_once('/') else {
        return Ok(());
    };
    let labels = shared
        .namespaces
        .get(&ObjectRef::new(namespace))
        .and_then(|n| n.metadata.labels.clone());
    let nads = shared.nads.state();
    let Some(network) = primary_network(
        namespace,
        labels.as_ref(),
        nads.iter().map(AsRef::as_ref),
        shared.ctx.config.cluster.mtu,
    )?
    else {
        // The default network: no mirrors (existing ones are left, as upstream).
        return Ok(());
    };
    let slices = shared.slices.state();
    let in_namespace = || {
        slices
            .iter()
            .map(AsRef::as_ref)
            .filter(move |s| s.metadata.namespace.as_deref() == Some(namespace))
    };
    let source = in_namespace().find(|s| {
        s.metadata.name.as_deref() == Some(name) && managed_by(s) == Some(DEFAULT_CONTROLLER)
    });
    let mirrors: Vec<&EndpointSlice> = in_namespace()
        .filter(|s| managed_by(s) == Some(MIRROR_CONTROLLER))
        .filter(|s| {
            s.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANNOTATION_SOURCE))
                .map(String::as_str)
                == Some(name)
        })
        .collect();
    let all_pods = shared.pods.state();
    let pods: BTreeMap<String, &Pod> = all_pods
        .iter()
        .map(AsRef::as_ref)
        .filter(|p| p.metadata.namespace.as_deref() == Some(namespace))
        .filter_map(|p| Some((p.metadata.name.clone()?, p)))
        .collect();
    let mirror_count = mirrors.len();
    let action = plan::plan(&Inputs {
        namespace,
        name,
        source,
        mirrors,
        network: &network,
        pods: &pods,
    })?;
    apply(shared, namespace, name, action).await?;
    if mirror_count > 1 {
        // The retry creates the one mirror.
        return Err(MirrorError::Duplicates {
            namespace: namespace.to_owned(),
            slice: name.to_owned(),
            count: mirror_count,
        });
    }
    Ok(())
}

async fn apply(
    shared: &Shared,
    namespace: &str,
    source: &str,
    action: Action,
) -> Result<(), MirrorError> {
    let api: Api<EndpointSlice> = Api::namespaced(shared.ctx.client.clone(), namespace);
    let params = PostParams {
        field_manager: Some(CLUSTER_MANAGER.to_owned()),
        ..PostParams::default()
    };
    let failed = |name: &str, action: &'static str| {
        let (namespace, name) = (namespace.to_owned(), name.to_owned());
        move |source| MirrorError::Api {
            namespace,
            name,
            action,
            source: Box::new(source),
        }
    };
    match action {
        Action::None => {}
        Action::Create(mirror) => {
            let prefix = mirror.metadata.generate_name.clone().unwrap_or_default();
            let created = api
                .create(&params, &mirror)
                .await
                .map_err(failed(&prefix, "create"))?;
            info!(namespace, source, mirror = ?created.metadata.name, "EndpointSlice mirror created");
        }
        Action::Update(mirror) => {
            let name = mirror.metadata.name.clone().unwrap_or_default();
            api.replace(&name, &params, &mirror)
                .await
                .map_err(failed(&name, "update"))?;
            debug!(namespace, source, mirror = %name, "EndpointSlice mirror updated");
        }
        Action::Delete(names) => {
            for name in names {
                match api.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => {
                        info!(namespace, source, mirror = %name, "EndpointSlice mirror deleted")
                    }
                    Err(kube::Error::Api(status)) if status.is_not_found() => {}
                    Err(error) => return Err(failed(&name, "delete")(error)),
                }
            }
        }
    }
    Ok(())
}

async fn worker(shared: Arc<Shared>) {
    while let Some(key) = shared.queue.next().await {
        let start = Instant::now();
        let result = sync(&shared, &key).await;
        shared.queue.done(&key);
        let outcome = match result {
            Ok(()) => {
                shared.failures.clear(&key);
                "ok"
            }
            Err(error) => {
                shared.ctx.metrics.error(CONTROLLER, error.kind());
                warn!(controller = CONTROLLER, slice = %key, error = %error, "sync failed; retrying");
                let delay = shared.failures.delay(
                    &key,
                    Duration::from_millis(100),
                    Duration::from_secs(60),
                );
                shared.queue.add_after(key.clone(), delay);
                "error"
            }
        };
        shared
            .ctx
            .metrics
            .observe(CONTROLLER, outcome, start.elapsed());
    }
}

pub(super) async fn run(ctx: Context, stop: impl Future<Output = ()> + Send + 'static) {
    let client = ctx.client.clone();
    let (slices, slice_writer) = reflector::store();
    let (pods, pod_writer) = reflector::store();
    let (namespaces, namespace_writer) = reflector::store();
    let (nads, nad_writer) = reflector::store();
    let shared = Arc::new(Shared {
        ctx,
        slices,
        pods,
        namespaces,
        nads,
        queue: WorkQueue::new(),
        failures: Failures::default(),
        ready: AtomicBool::new(false),
    });
    let mut pumps = JoinSet::new();
    let s = Arc::clone(&shared);
    pumps.spawn(udn_runtime::watch::reflect(
        "EndpointSlice",
        Api::all(client.clone()),
        slice_writer,
        move |e| {
            s.on_slice(&e);
            true
        },
    ));
    let s = Arc::clone(&shared);
    pumps.spawn(udn_runtime::watch::reflect(
        "Pod",
        Api::all(client.clone()),
        pod_writer,
        move |e| {
            s.on_pod(&e);
            true
        },
    ));
    let s = Arc::clone(&shared);
    pumps.spawn(udn_runtime::watch::reflect(
        "Namespace",
        Api::<PartialObjectMeta<Namespace>>::all(client.clone()),
        namespace_writer,
        move |e| {
            if let watcher::Event::Apply(ns) = &e {
                s.on_namespace_of(ns.metadata.name.as_deref());
            }
            true
        },
    ));
    let s = Arc::clone(&shared);
    pumps.spawn(udn_runtime::watch::reflect(
        "NetworkAttachmentDefinition",
        Api::all(client),
        nad_writer,
        move |e| {
            if let watcher::Event::Apply(nad) | watcher::Event::Delete(nad) = &e {
                s.on_namespace_of(nad.metadata.namespace.as_deref());
            }
            true
        },
    ));
    let mut stop = pin!(stop);
    let ready = async {
        shared.slices.wait_until_ready().await?;
        shared.pods.wait_until_ready().await?;
        shared.namespaces.wait_until_ready().await?;
        shared.nads.wait_until_ready().await
    };
    tokio::select! {
        () = &mut stop => return,
        result = ready => if result.is_err() { return },
    }
    shared.start();
    let mut workers = JoinSet::new();
    for _ in 0..WORKERS {
        workers.spawn(worker(Arc::clone(&shared)));
    }
    stop.await;
    shared.queue.close();
    while workers.join_next().await.is_some() {}
    pumps.shutdown().await;
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::endpointslice_mirror::ANNOTATION_SOURCE;

    fn slice(name: &str, managed: &str, source: Option<&str>) -> EndpointSlice {
        let mut slice = EndpointSlice::default();
        slice.metadata.name = Some(name.to_owned());
        slice.metadata.namespace = Some("blue".to_owned());
        slice.metadata.labels = Some(BTreeMap::from([(
            LABEL_MANAGED_BY.to_owned(),
            managed.to_owned(),
        )]));
        slice.metadata.annotations =
            source.map(|s| BTreeMap::from([(ANNOTATION_SOURCE.to_owned(), s.to_owned())]));
        slice
    }

    #[test]
    fn mirrors_queue_their_source_and_foreign_slices_nothing() {
        assert_eq!(
            slice_key(&slice("svc-a", DEFAULT_CONTROLLER, None)).as_deref(),
            Some("blue/svc-a")
        );
        assert_eq!(
            slice_key(&slice("svc-x", MIRROR_CONTROLLER, Some("svc-a"))).as_deref(),
            Some("blue/svc-a")
        );
        assert_eq!(slice_key(&slice("own", "someone-else", None)), None);
    }
}
