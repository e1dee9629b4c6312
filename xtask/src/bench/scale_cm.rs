//! The scale bench's view of cluster-manager: watches of NADs and nodes (each change
//! arrives once) until every UDN's NAD carries its network ID, every node carries its node
//! ID and the per-node state (`k8s.ovn.org/node-subnets`) of the default network and of
//! every network with a pod on it, and then nothing of that changed for [`QUIET`]:
//! converged at the last change. What each node carries then says whether cluster-manager
//! gated the networks (Dynamic UDN: exactly the networks with pods there) or gave every
//! node every network.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::runtime::watcher::{self, Event};
use udn_api::nad::NetworkAttachmentDefinition;

use super::cluster_manager_watch::Change;
use udn_api::dynamic_udn::networks_with_node_state;
use udn_api::names::{ANNOTATION_NETWORK_ID, ANNOTATION_NODE_ID};

/// How long nothing may change before the state counts as converged.
pub const QUIET: Duration = Duration::from_secs(3);
/// How often a long wait says how far it got (on stderr).
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// What the watches showed at convergence.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CmState {
    /// Seconds from `start` to the last change before the quiet period.
    pub converge_s: f64,
    /// NADs with a network ID.
    pub nads_with_id: usize,
    /// Per node (by name), the UDN networks it carries per-node state of (default left
    /// out).
    pub networks: BTreeMap<String, BTreeSet<String>>,
    /// Node changes seen (any annotation write).
    pub node_updates: usize,
}

impl CmState {
    /// Whether every node carries exactly its `expected` networks (Dynamic UDN gating in
    /// effect).
    pub fn gated(&self, expected: &BTreeMap<String, BTreeSet<String>>) -> bool {
        expected
            .iter()
            .all(|(node, want)| self.networks.get(node) == Some(want))
    }

    /// Networks per node: mean and max.
    pub fn per_node(&self) -> (f64, usize) {
        let counts: Vec<usize> = self.networks.values().map(BTreeSet::len).collect();
        let sum: usize = counts.iter().sum();
        (
            sum as f64 / counts.len().max(1) as f64,
            counts.into_iter().max().unwrap_or(0),
        )
    }
}

#[derive(Debug, Default)]
struct Progress {
    nads_with_id: BTreeSet<String>,
    nodes_with_id: BTreeSet<String>,
    networks: BTreeMap<String, BTreeSet<String>>,
    node_updates: usize,
}

impl Progress {
    /// Whether anything the bench waits for changed.
    fn nad(&mut self, nad: &NetworkAttachmentDefinition) -> bool {
        let has_id = nad
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(ANNOTATION_NETWORK_ID));
        let key = format!(
            "{}/{}",
            nad.metadata.namespace.as_deref().unwrap_or_default(),
            nad.metadata.name.as_deref().unwrap_or_default()
        );
        has_id && self.nads_with_id.insert(key)
    }

    fn node(&mut self, node: &Node) -> bool {
        let Some(name) = node.metadata.name.clone() else {
            return false;
        };
        self.node_updates += 1;
        let annotations = node.metadata.annotations.clone().unwrap_or_default();
        let mut changed = false;
        if annotations.contains_key(ANNOTATION_NODE_ID) {
            changed |= self.nodes_with_id.insert(name.clone());
        }
        let networks = networks_with_node_state(&annotations);
        let entry = self.networks.entry(name).or_default();
        if *entry != networks {
            *entry = networks;
            changed = true;
        }
        changed
    }

    fn complete(&self, nads: usize, expected: &BTreeMap<String, BTreeSet<String>>) -> bool {
        self.nads_with_id.len() >= nads
            && expected.iter().all(|(node, want)| {
                self.nodes_with_id.contains(node)
                    && self.networks.get(node).is_some_and(|have| {
                        have.contains(udn_api::names::DEFAULT_NETWORK_NAME)
                            && have.is_superset(want)
                    })
            })
    }
}

type Changes = std::pin::Pin<Box<dyn Stream<Item = Result<Change, watcher::Error>> + Send>>;

/// NAD and node events, as the cluster-manager bench watches them.
fn changes(client: &Client) -> Changes {
    Box::pin(super::cluster_manager_watch::changes(client))
}

/// Waits until `nads` NADs carry their network ID and every node of `expected` carries its
/// node ID, the default network and (at least) its expected networks, and nothing changed
/// for [`QUIET`]; gives up `deadline` after `start`.
pub async fn wait(
    client: &Client,
    nads: usize,
    expected: &BTreeMap<String, BTreeSet<String>>,
    start: Instant,
    deadline: Duration,
) -> anyhow::Result<CmState> {
    let mut stream = changes(client);
    let mut progress = Progress::default();
    let mut last_change = start;
    let mut reported = Instant::now();
    loop {
        let complete = progress.complete(nads, expected);
        if complete && last_change.elapsed() >= QUIET {
            let mut networks = progress.networks;
            for set in networks.values_mut() {
                set.remove(udn_api::names::DEFAULT_NETWORK_NAME);
            }
            return Ok(CmState {
                converge_s: last_change.saturating_duration_since(start).as_secs_f64(),
                nads_with_id: progress.nads_with_id.len(),
                networks,
                node_updates: progress.node_updates,
            });
        }
        let left = deadline.saturating_sub(start.elapsed());
        let wait = if complete {
            QUIET.saturating_sub(last_change.elapsed()).min(left)
        } else {
            left
        };
        match tokio::time::timeout(wait, stream.next()).await {
            Err(_) if start.elapsed() >= deadline => bail!(
                "cluster-manager not converged after {} s: {} NADs with IDs of {nads}, {} nodes with IDs of {}",
                deadline.as_secs(),
                progress.nads_with_id.len(),
                progress.nodes_with_id.len(),
                expected.len()
            ),
            Err(_) => {}
            Ok(None) => bail!("the watches ended"),
            Ok(Some(change)) => {
                let changed = match change.context("watching NADs and nodes")? {
                    Change::Nad(event) => match *event {
                        Event::Apply(nad) | Event::InitApply(nad) => progress.nad(&nad),
                        _ => false,
                    },
                    Change::Node(event) => match *event {
                        Event::Apply(node) | Event::InitApply(node) => progress.node(&node),
                        _ => false,
                    },
                };
                if changed {
                    last_change = Instant::now();
                }
            }
        }
        if reported.elapsed() >= PROGRESS_EVERY {
            reported = Instant::now();
            eprintln!(
                "  cluster-manager at {:.0} s: {} NADs with IDs, {} nodes with IDs, node1 carries {} networks",
                start.elapsed().as_secs_f64(),
                progress.nads_with_id.len(),
                progress.nodes_with_id.len(),
                progress.networks.get("node1").map_or(0, BTreeSet::len)
            );
        }
    }
}
