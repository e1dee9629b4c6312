//! The Kubernetes side: reflector stores of the objects the zone reads (Nodes, Pods,
//! Namespaces, NetworkAttachmentDefinitions, Services, EndpointSlices) and a stream of what changed, so that a pass
//! re-renders only the networks a change can affect.

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Client;
use kube::api::Api;
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::watcher;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use udn_api::nad::NetworkAttachmentDefinition;

/// One changed object (by key).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// A node (name).
    Node(String),
    /// A pod (`namespace/name`).
    Pod(String),
    /// A namespace (name).
    Namespace(String),
    /// A NAD (`namespace/name`).
    Nad(String),
    /// A Service (`namespace/name`).
    Service(String),
    /// An EndpointSlice (`namespace/name`).
    EndpointSlice(String),
    /// A watch (re)listed: anything may have changed.
    Relist,
}

/// The caches.
#[derive(Clone, Debug)]
pub struct Stores {
    /// Nodes.
    pub nodes: Store<Node>,
    /// Pods (all namespaces: remote Layer2 pods are ports here too).
    pub pods: Store<Pod>,
    /// Namespaces.
    pub namespaces: Store<Namespace>,
    /// NADs.
    pub nads: Store<NetworkAttachmentDefinition>,
    /// Services.
    pub services: Store<Service>,
    /// EndpointSlices.
    pub slices: Store<EndpointSlice>,
}

/// A watch ended before listing once.
#[derive(Debug, thiserror::Error)]
#[error("watch of {resource} ended before its first list")]
pub struct WatchError {
    /// The resource.
    pub resource: &'static str,
}

fn key_of(meta: &kube::api::ObjectMeta) -> String {
    match &meta.namespace {
        Some(ns) => format!("{ns}/{}", meta.name.as_deref().unwrap_or_default()),
        None => meta.name.clone().unwrap_or_default(),
    }
}

async fn pump<K>(
    resource: &'static str,
    api: Api<K>,
    writer: Writer<K>,
    changes: UnboundedSender<Change>,
    change: fn(String) -> Change,
) where
    K: udn_runtime::watch::Watched,
{
    udn_runtime::watch::reflect(resource, api, writer, |event| {
        let sent = match event {
            watcher::Event::Apply(obj) | watcher::Event::Delete(obj) => {
                changes.send(change(key_of(obj.meta())))
            }
            watcher::Event::InitDone => changes.send(Change::Relist),
            watcher::Event::Init | watcher::Event::InitApply(_) => Ok(()),
        };
        sent.is_ok()
    })
    .await;
}

/// Starts the watches on `tasks`; changes go to `changes`. Returns once every store holds its
/// first complete list.
pub async fn start(
    client: &Client,
    tasks: &mut JoinSet<()>,
    changes: UnboundedSender<Change>,
) -> Result<Stores, WatchError> {
    let (nodes, node_writer) = reflector::store();
    let (pods, pod_writer) = reflector::store();
    let (namespaces, namespace_writer) = reflector::store();
    let (nads, nad_writer) = reflector::store();
    let (services, service_writer) = reflector::store();
    let (slices, slice_writer) = reflector::store();
    tasks.spawn(pump(
        "services",
        Api::<Service>::all(client.clone()),
        service_writer,
        changes.clone(),
        Change::Service,
    ));
    tasks.spawn(pump(
        "endpointslices",
        Api::<EndpointSlice>::all(client.clone()),
        slice_writer,
        changes.clone(),
        Change::EndpointSlice,
    ));
    tasks.spawn(pump(
        "nodes",
        Api::<Node>::all(client.clone()),
        node_writer,
        changes.clone(),
        Change::Node,
    ));
    tasks.spawn(pump(
        "pods",
        Api::<Pod>::all(client.clone()),
        pod_writer,
        changes.clone(),
        Change::Pod,
    ));
    tasks.spawn(pump(
        "namespaces",
        Api::<Namespace>::all(client.clone()),
        namespace_writer,
        changes.clone(),
        Change::Namespace,
    ));
    tasks.spawn(pump(
        "network-attachment-definitions",
        Api::<NetworkAttachmentDefinition>::all(client.clone()),
        nad_writer,
        changes,
        Change::Nad,
    ));
    let stores = Stores {
        nodes,
        pods,
        namespaces,
        nads,
        services,
        slices,
    };
    for (resource, ready) in [
        ("nodes", stores.nodes.wait_until_ready().await.is_ok()),
        ("pods", stores.pods.wait_until_ready().await.is_ok()),
        (
            "namespaces",
            stores.namespaces.wait_until_ready().await.is_ok(),
        ),
        (
            "network-attachment-definitions",
            stores.nads.wait_until_ready().await.is_ok(),
        ),
        ("services", stores.services.wait_until_ready().await.is_ok()),
        (
            "endpointslices",
            stores.slices.wait_until_ready().await.is_ok(),
        ),
    ] {
        if !ready {
            return Err(WatchError { resource });
        }
    }
    Ok(stores)
}
