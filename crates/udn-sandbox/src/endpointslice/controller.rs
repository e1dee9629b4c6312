//! The controller's loop: reflector stores of Services, Pods and Nodes, a watch of the
//! slices it manages, and one worker that syncs the Services a change can affect, one at a
//! time, retrying a failed sync with upstream's backoff (1 s doubling to 1000 s).
//!
//! Each sync reads the Service's slices from the API server rather than from a cache: a
//! cache that has not seen the controller's own last write yet would make it create the
//! same slice twice (upstream guards its informer cache with a tracker of the generations
//! it wrote; a fresh list needs none).

use std::collections::{BTreeMap, BTreeSet};
use std::pin::pin;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::inputs::{Inputs, key};
use super::{
    CONTROLLER_NAME, EndpointSliceError, LABEL_MANAGED_BY, LABEL_SERVICE_NAME,
    MAX_ENDPOINTS_PER_SLICE, apply, desired, plan, trigger,
};

/// What changed, as far as the Services to sync go.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    /// One Service (`namespace/name`).
    Service(String),
    /// Any Service of a namespace (a pod there changed).
    Namespace(String),
    /// Every Service (a Node changed, or a watch listed again).
    All,
}

async fn pump<K>(
    api: Api<K>,
    writer: Writer<K>,
    changes: UnboundedSender<Change>,
    change: fn(&K) -> Change,
) where
    K: udn_runtime::watch::Watched,
{
    udn_runtime::watch::reflect(CONTROLLER_NAME, api, writer, |event| {
        let sent = match event {
            watcher::Event::Apply(obj) | watcher::Event::Delete(obj) => changes.send(change(&obj)),
            watcher::Event::InitDone => changes.send(Change::All),
            watcher::Event::Init | watcher::Event::InitApply(_) => Ok(()),
        };
        sent.is_ok()
    })
    .await;
}

/// Slices this controller manages: a change by someone else (an edit, a deletion) is undone
/// by the next sync of their Service.
async fn watch_slices(api: Api<EndpointSlice>, changes: UnboundedSender<Change>) {
    let config =
        watcher::Config::default().labels(&format!("{LABEL_MANAGED_BY}={CONTROLLER_NAME}"));
    let mut stream = pin!(watcher(api, config).default_backoff());
    while let Some(event) = stream.next().await {
        let slice = match event {
            Ok(watcher::Event::Apply(slice) | watcher::Event::Delete(slice)) => slice,
            Ok(_) => continue,
            Err(error) => {
                tracing::warn!(%error, "watch error");
                continue;
            }
        };
        let service = slice
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_SERVICE_NAME))
            .filter(|s| !s.is_empty());
        if let Some(service) = service {
            let namespace = slice.metadata.namespace.as_deref().unwrap_or_default();
            if changes
                .send(Change::Service(key(namespace, service)))
                .is_err()
            {
                return;
            }
        }
    }
}

fn object_key<K: Resource>(obj: &K) -> String {
    key(
        obj.meta().namespace.as_deref().unwrap_or_default(),
        obj.meta().name.as_deref().unwrap_or_default(),
    )
}

/// The syncing side: the caches and the trigger times.
struct Worker {
    client: Client,
    services: Store<Service>,
    pods: Store<Pod>,
    nodes: Store<Node>,
    triggers: trigger::TriggerTimes,
}

impl Worker {
    fn keys(&self, change: &Change) -> Vec<String> {
        match change {
            Change::Service(key) => vec![key.clone()],
            Change::Namespace(namespace) => self
                .services
                .state()
                .iter()
                .filter(|s| s.metadata.namespace.as_deref() == Some(namespace.as_str()))
                .map(|s| object_key(s.as_ref()))
                .collect(),
            Change::All => self
                .services
                .state()
                .iter()
                .map(|s| object_key(s.as_ref()))
                .collect(),
        }
    }

    /// One sync of the Service `key`.
    async fn sync(&mut self, service_key: &str) -> Result<(), EndpointSliceError> {
        let (namespace, name) = service_key.split_once('/').unwrap_or(("", service_key));
        let Some(service) = self.services.get(&ObjectRef::new(name).within(namespace)) else {
            // Gone: the garbage collector deletes its slices (they are owned by it).
            self.triggers.forget(service_key);
            return Ok(());
        };
        let pods = self.pods.state();
        let nodes = self.nodes.state();
        let inputs = Inputs::gather(
            &service,
            pods.iter().map(AsRef::as_ref),
            nodes.iter().map(AsRef::as_ref),
        );
        let Some(desired) = desired::desired(&inputs) else {
            return Ok(());
        };
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), namespace);
        let selector = format!("{LABEL_SERVICE_NAME}={name},{LABEL_MANAGED_BY}={CONTROLLER_NAME}");
        let existing: Vec<EndpointSlice> = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|source| EndpointSliceError::Api {
                what: format!("listing the EndpointSlices of Service {service_key}"),
                source,
            })?
            .items
            .into_iter()
            .filter(|s| s.metadata.deletion_timestamp.is_none())
            .collect();
        let trigger_time = self
            .triggers
            .compute(service_key, &service, &inputs.pods)
            .map(trigger::format);
        let plan = plan::plan(
            &desired,
            &existing,
            trigger_time.as_deref(),
            MAX_ENDPOINTS_PER_SLICE,
        );
        tracing::debug!(
            service = service_key,
            ops = plan.ops.len(),
            "EndpointSlice plan"
        );
        apply::apply(&api, service_key, &plan).await?;
        if desired.missing_nodes.is_empty() {
            Ok(())
        } else {
            Err(EndpointSliceError::MissingNodes {
                service: service_key.to_owned(),
                pods: desired.missing_nodes,
            })
        }
    }
}

/// Upstream's per-Service backoff: 1 s, doubling, at most 1000 s.
fn backoff(attempts: u32) -> Duration {
    Duration::from_secs(1u64 << attempts.saturating_sub(1).min(10)).min(Duration::from_secs(1000))
}

/// Runs the controller until `shutdown` completes.
pub async fn run(
    client: Client,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), EndpointSliceError> {
    let (services, service_writer) = reflector::store::<Service>();
    let (pods, pod_writer) = reflector::store::<Pod>();
    let (nodes, node_writer) = reflector::store::<Node>();
    let (changes, mut received) = unbounded_channel();
    let mut tasks = JoinSet::new();
    tasks.spawn(pump(
        Api::all(client.clone()),
        service_writer,
        changes.clone(),
        |s: &Service| Change::Service(object_key(s)),
    ));
    tasks.spawn(pump(
        Api::all(client.clone()),
        pod_writer,
        changes.clone(),
        |p: &Pod| Change::Namespace(p.metadata.namespace.clone().unwrap_or_default()),
    ));
    tasks.spawn(pump(
        Api::all(client.clone()),
        node_writer,
        changes.clone(),
        |_: &Node| Change::All,
    ));
    tasks.spawn(watch_slices(Api::all(client.clone()), changes));
    let mut shutdown = pin!(shutdown);
    let ready = async {
        services.wait_until_ready().await.map_err(|_| "services")?;
        pods.wait_until_ready().await.map_err(|_| "pods")?;
        nodes.wait_until_ready().await.map_err(|_| "nodes")?;
        Ok::<(), &'static str>(())
    };
    tokio::select! {
        () = &mut shutdown => return Ok(()),
        ready = ready => ready.map_err(|resource| EndpointSliceError::WatchNotReady { resource })?,
    }
    tracing::info!("EndpointSlice controller running");
    let mut worker = Worker {
        client,
        services,
        pods,
        nodes,
        triggers: trigger::TriggerTimes::default(),
    };
    let mut queue: BTreeSet<String> = worker.keys(&Change::All).into_iter().collect();
    let mut attempts: BTreeMap<String, u32> = BTreeMap::new();
    let mut due: BTreeMap<String, Instant> = BTreeMap::new();
    loop {
        while let Some(service_key) = queue.pop_first() {
            due.remove(&service_key);
            match worker.sync(&service_key).await {
                Ok(()) => {
                    attempts.remove(&service_key);
                }
                Err(error) => {
                    let count = attempts.entry(service_key.clone()).or_default();
                    *count += 1;
                    let delay = backoff(*count);
                    tracing::warn!(service = %service_key, %error, retry_in_s = delay.as_secs(), "EndpointSlice sync failed");
                    due.insert(service_key, Instant::now() + delay);
                }
            }
        }
        let next = due.values().min().copied();
        tokio::select! {
            () = &mut shutdown => break,
            change = received.recv() => match change {
                Some(change) => queue.extend(worker.keys(&change)),
                None => break,
            },
            () = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {
                let now = Instant::now();
                let ready: Vec<String> = due.iter().filter(|(_, at)| **at <= now).map(|(k, _)| k.clone()).collect();
                queue.extend(ready);
            }
        }
        while let Ok(change) = received.try_recv() {
            queue.extend(worker.keys(&change));
        }
    }
    tasks.shutdown().await;
    tracing::info!("EndpointSlice controller stopping");
    Ok(())
}
