//! The Kubernetes side: reflector stores of what the agent reads (this node's pods, its Node,
//! NetworkAttachmentDefinitions, Services of every namespace) and a generation counter that moves on every change, so
//! that a waiter (a CNI ADD waiting for its pod's annotation) wakes on changes instead of
//! polling.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Service};
use kube::Client;
use kube::api::Api;
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::watcher;
use tokio::sync::watch;
use tokio::task::JoinSet;
use udn_api::nad::NetworkAttachmentDefinition;

/// The caches and their change counter.
#[derive(Clone, Debug)]
pub struct Stores {
    /// Pods scheduled to this node.
    pub pods: Store<Pod>,
    /// This node's Node object.
    pub node: Store<Node>,
    /// NADs of every namespace.
    pub nads: Store<NetworkAttachmentDefinition>,
    /// Services of every namespace (the gateway's per-service flows and nftables).
    pub services: Store<Service>,
    generation: watch::Receiver<u64>,
}

/// A watch ended before listing once.
#[derive(Debug, thiserror::Error)]
#[error("watch of {resource} ended before its first list")]
pub struct WatchError {
    /// The resource.
    pub resource: &'static str,
}

impl Stores {
    /// Starts the watches (on `tasks`) and waits until each has listed once.
    pub async fn start(
        client: &Client,
        node: &str,
        tasks: &mut JoinSet<()>,
    ) -> Result<Self, WatchError> {
        let (bump, generation) = watch::channel(0u64);
        let on_node = watcher::Config::default().fields(&format!("spec.nodeName={node}"));
        let (pods, pods_writer) = reflector::store::<Pod>();
        tasks.spawn(pump(
            "pods",
            Api::all(client.clone()),
            on_node,
            pods_writer,
            bump.clone(),
        ));
        let (nodes, nodes_writer) = reflector::store::<Node>();
        tasks.spawn(pump(
            "nodes",
            Api::all(client.clone()),
            watcher::Config::default().fields(&format!("metadata.name={node}")),
            nodes_writer,
            bump.clone(),
        ));
        let (nads, nads_writer) = reflector::store::<NetworkAttachmentDefinition>();
        tasks.spawn(pump(
            "network-attachment-definitions",
            Api::all(client.clone()),
            watcher::Config::default(),
            nads_writer,
            bump.clone(),
        ));
        let (services, services_writer) = reflector::store::<Service>();
        tasks.spawn(pump(
            "services",
            Api::all(client.clone()),
            watcher::Config::default(),
            services_writer,
            bump,
        ));
        for (resource, ready) in [
            ("pods", pods.wait_until_ready().await.is_ok()),
            ("nodes", nodes.wait_until_ready().await.is_ok()),
            (
                "network-attachment-definitions",
                nads.wait_until_ready().await.is_ok(),
            ),
            ("services", services.wait_until_ready().await.is_ok()),
        ] {
            if !ready {
                return Err(WatchError { resource });
            }
        }
        Ok(Self {
            pods,
            node: nodes,
            nads,
            services,
            generation,
        })
    }

    /// A receiver of the change counter (`changed().await` wakes on the next change).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.clone()
    }

    /// The pod `namespace/name`, if cached.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<std::sync::Arc<Pod>> {
        self.pods
            .get(&reflector::ObjectRef::new(name).within(namespace))
    }

    /// This node, if cached.
    pub fn own_node(&self) -> Option<std::sync::Arc<Node>> {
        self.node.state().into_iter().next()
    }

    /// Waits until `check` returns `Some` (re-checked on every change of any store), for
    /// at most `timeout`; `None` on timeout.
    pub async fn wait_for<T>(
        &self,
        timeout: Duration,
        mut check: impl FnMut(&Self) -> Option<T>,
    ) -> Option<T> {
        let mut generation = self.generation.clone();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            generation.borrow_and_update();
            if let Some(found) = check(self) {
                return Some(found);
            }
            match tokio::time::timeout_at(deadline, generation.changed()).await {
                Ok(Ok(())) => {}
                // The watches are gone (shutting down) or the time is up.
                Ok(Err(_)) | Err(_) => return check(self),
            }
        }
    }
}

async fn pump<K>(
    resource: &'static str,
    api: Api<K>,
    config: watcher::Config,
    writer: Writer<K>,
    bump: watch::Sender<u64>,
) where
    K: udn_runtime::watch::Watched,
{
    udn_runtime::watch::reflect_with(resource, api, config, writer, |_| {
        bump.send_modify(|generation| *generation += 1);
        true
    })
    .await;
}
