//! The cluster-manager bench's view of convergence: watches of NADs and nodes (each change
//! arrives once) instead of listing every NAD and node again and again, which at thousands of
//! networks put the bench's own list parsing (growing with the square of the networks) on
//! the two cores beside the manager. Also counts the node-subnets annotation writes and
//! their bytes, as the nodes' watch events show them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::{ANNOTATION_NETWORK_ID, ANNOTATION_NODE_SUBNETS};

/// The node-subnets writes the bench saw.
#[derive(Debug, Default, Clone, Copy)]
pub struct Writes {
    /// Annotation changes over all nodes.
    pub patches: usize,
    /// Bytes of the annotation values written, over all nodes.
    pub bytes: usize,
}

/// What the watches have shown so far.
#[derive(Debug, Default)]
struct Progress {
    nads_with_id: BTreeSet<String>,
    /// Node -> (annotation text, networks in it).
    nodes: BTreeMap<String, (Option<String>, usize)>,
    writes: Writes,
}

impl Progress {
    fn nad(&mut self, nad: &NetworkAttachmentDefinition) {
        let key = format!(
            "{}/{}",
            nad.metadata.namespace.as_deref().unwrap_or_default(),
            nad.metadata.name.as_deref().unwrap_or_default()
        );
        let has_id = nad
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(ANNOTATION_NETWORK_ID));
        if has_id {
            self.nads_with_id.insert(key);
        }
    }

    fn node(&mut self, node: &Node) {
        let Some(name) = node.metadata.name.clone() else {
            return;
        };
        let text = node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_NODE_SUBNETS))
            .cloned();
        let entry = self.nodes.entry(name).or_insert((None, 0));
        if entry.0 == text {
            return;
        }
        let networks = text
            .as_deref()
            .and_then(|v| udn_api::annotations::parse_node_subnets(v).ok())
            .map_or(0, |subnets| subnets.len());
        if let Some(value) = &text {
            self.writes.patches += 1;
            self.writes.bytes += value.len();
        }
        *entry = (text, networks);
    }

    fn converged(&self, udns: usize, nodes: usize) -> bool {
        self.nads_with_id.len() >= udns
            && self.nodes.len() == nodes
            && self.nodes.values().all(|(_, networks)| *networks > udns)
    }
}

pub(super) enum Change {
    Nad(Box<Event<NetworkAttachmentDefinition>>),
    Node(Box<Event<Node>>),
}

pub(super) fn changes(
    client: &Client,
) -> impl Stream<Item = Result<Change, watcher::Error>> + use<> {
    let config = watcher::Config::default();
    let nads = watcher::watcher(
        Api::<NetworkAttachmentDefinition>::all(client.clone()),
        config.clone(),
    )
    .map(|e| e.map(|e| Change::Nad(Box::new(e))));
    let nodes = watcher::watcher(Api::<Node>::all(client.clone()), config)
        .map(|e| e.map(|e| Change::Node(Box::new(e))));
    futures::stream::select(nads.boxed(), nodes.boxed())
}

/// Watches NADs and nodes until every NAD carries its network ID and every node's
/// `node-subnets` has every UDN's network and the default network. Started before the first
/// create, it sees every write.
pub struct Convergence {
    stream: std::pin::Pin<Box<dyn Stream<Item = Result<Change, watcher::Error>> + Send>>,
    progress: Progress,
}

impl std::fmt::Debug for Convergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Convergence")
            .field("progress", &self.progress)
            .finish_non_exhaustive()
    }
}

impl Convergence {
    /// Starts the watches.
    pub fn start(client: &Client) -> Self {
        Self {
            stream: Box::pin(changes(client)),
            progress: Progress::default(),
        }
    }

    /// Waits for convergence (at most `deadline` after `start`); the writes seen until then.
    pub async fn wait(
        &mut self,
        udns: usize,
        nodes: usize,
        start: Instant,
        deadline: Duration,
    ) -> anyhow::Result<Writes> {
        let progress = std::env::var_os("UDN_BENCH_PROGRESS").is_some();
        let mut reported = Instant::now();
        loop {
            if self.progress.converged(udns, nodes) {
                return Ok(self.progress.writes);
            }
            let left = deadline.saturating_sub(start.elapsed());
            let next = tokio::time::timeout(left, self.stream.next()).await;
            let change = match next {
                Err(_) => bail!("not converged after {} s", deadline.as_secs()),
                Ok(None) => bail!("the watches ended"),
                Ok(Some(change)) => change.context("watching NADs and nodes")?,
            };
            match change {
                Change::Nad(event) => {
                    if let Event::Apply(nad) | Event::InitApply(nad) = *event {
                        self.progress.nad(&nad);
                    }
                }
                Change::Node(event) => {
                    if let Event::Apply(node) | Event::InitApply(node) = *event {
                        self.progress.node(&node);
                    }
                }
            }
            if progress && reported.elapsed() >= Duration::from_secs(1) {
                reported = Instant::now();
                eprintln!(
                    "at {:.1}s: nads_with_ids={} node_writes={} MiB={:.1}",
                    start.elapsed().as_secs_f64(),
                    self.progress.nads_with_id.len(),
                    self.progress.writes.patches,
                    self.progress.writes.bytes as f64 / 1_048_576.0
                );
            }
        }
    }
}
