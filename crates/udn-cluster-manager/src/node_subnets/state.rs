//! The node controller's in-memory state: one host-subnet allocator per network (the default
//! network and every Layer3 network), the last known `node-subnets` annotation of every node
//! (to restore a network's allocator before it hands anything out), and per-network node
//! errors for the status condition.
//! Synchronous; the controller holds it under a mutex and never across an await.
//!
//! Plans are incremental: every network change (new, grown, rebuilt, removed) bumps a state
//! generation, and a node whose annotation is still the one its last plan left complete only
//! looks again at the networks changed since that plan (and the ones it failed in). A node
//! with nothing new costs a string comparison, not a pass over every network.
//!
//! Dynamic UDN: a gated network's entry follows the [`CurrentScope`] (allocated where the
//! node renders the network, removed elsewhere, left alone before the first scope); see
//! `rescope` for scope changes and the release of removed entries.

use std::collections::{BTreeMap, BTreeSet};

use ipnetwork::IpNetwork;
use tracing::{info, warn};
use udn_api::annotations::{NodeSubnets, parse_node_subnets};
use udn_api::netconf::SubnetEntry;
use udn_ipam::HostSubnetAllocator;

use super::networks::Layer3Network;
use super::plan::{ensure_node_network, rollback};
use crate::dynamic_udn::scope::{CurrentScope, NodeNetwork};

mod rescope;

#[derive(Debug, Clone)]
struct NetworkSubnets {
    ranges: Vec<SubnetEntry>,
    ipv4: bool,
    ipv6: bool,
    allocator: HostSubnetAllocator,
    /// State generation of the allocator's last change (created, rebuilt, grown or gated).
    generation: u64,
    /// Dynamic UDN decides which nodes get a subnet (see [`Layer3Network::gated`]).
    gated: bool,
}

/// Node errors of one network and the node the condition names (upstream keeps naming the
/// first failing node until it recovers).
#[derive(Debug, Clone, Default)]
struct NetworkErrors {
    nodes: BTreeMap<String, String>,
    reported: Option<String>,
}

/// What the state knows of one node's annotation.
#[derive(Debug, Clone, Default)]
struct KnownNode {
    subnets: NodeSubnets,
    /// The annotation text `subnets` was read from or written as (`Some(None)`: no
    /// annotation); `None` when not known, so the next observation parses again.
    text: Option<Option<String>>,
    /// Set when `subnets` is the complete plan of the node at that state generation.
    planned: Option<Planned>,
}

/// A plan that left a node's annotation complete.
#[derive(Debug, Clone)]
struct Planned {
    /// The state generation it was computed at.
    generation: u64,
    /// Networks the node got no complete allocation in (looked at again every time).
    failing: BTreeSet<String>,
}

/// What [`SubnetState::sync_networks`] changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct NetworkSync {
    /// Networks with a new allocator (restored from the known annotations).
    pub(crate) added: Vec<String>,
    /// Networks gone (no NAD left): allocator dropped.
    pub(crate) removed: Vec<String>,
    /// Networks whose ranges changed (appended, or rebuilt on any other change).
    pub(crate) changed: Vec<String>,
}

impl NetworkSync {
    /// Whether nothing changed.
    pub(crate) fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// The annotation one node should carry, and what computing it did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct NodePlan {
    /// The full annotation: one entry per network with an allocator (the default network and
    /// every Layer3 network).
    pub(crate) desired: NodeSubnets,
    /// Whether `desired` differs from the annotation the plan started from.
    pub(crate) write: bool,
    /// Subnets newly allocated for the node (rolled back if the write fails).
    pub(crate) allocated: Vec<(String, IpNetwork)>,
    /// Networks whose allocator changed (for the free-subnets gauge).
    pub(crate) touched: BTreeSet<String>,
    /// Network -> error text for networks the node got no complete allocation in.
    pub(crate) errors: BTreeMap<String, String>,
    /// The state generation the plan was computed at.
    pub(crate) generation: u64,
    /// Subnets of networks the node no longer carries (Dynamic UDN), released once the
    /// annotation without them is written.
    pub(crate) released: Vec<(String, IpNetwork)>,
}

/// A node annotation write in flight: what the state knew before, and what the plan
/// allocated.
#[derive(Debug)]
pub(crate) struct Writing {
    previous: Option<KnownNode>,
    allocated: Vec<(String, IpNetwork)>,
    released: Vec<(String, IpNetwork)>,
    generation: u64,
}

/// A change of one network's per-node error state.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ErrorChange {
    pub(crate) network: String,
    /// The node's new error (an event is published for it), `None` when it recovered.
    pub(crate) error: Option<String>,
    /// Whether the node named by the condition changed.
    pub(crate) condition_changed: bool,
}

/// All allocators and bookkeeping.
#[derive(Debug, Clone, Default)]
pub(crate) struct SubnetState {
    networks: BTreeMap<String, NetworkSubnets>,
    known: BTreeMap<String, KnownNode>,
    errors: BTreeMap<String, NetworkErrors>,
    /// Bumped by every network change and every scope change that moves a node.
    generation: u64,
    /// Generation of the last change every older plan starts over from (a network removal,
    /// the first Dynamic UDN scope).
    restart_at: u64,
    /// Network name by the generation of its last change.
    changed_at: BTreeMap<u64, String>,
    /// The Dynamic UDN scope the plans follow.
    scope: CurrentScope,
    /// Node -> gated network -> generation of the last scope change that moved the pair.
    rescoped: BTreeMap<String, BTreeMap<String, u64>>,
}

fn build_allocator(name: &str, network: &Layer3Network) -> HostSubnetAllocator {
    let mut allocator = HostSubnetAllocator::new();
    for range in &network.ranges {
        if let Err(error) = allocator.add_range(range.cidr, range.host_subnet_length) {
            warn!(network = %name, range = %range, error = %error, "skipping invalid cluster subnet");
        }
    }
    allocator
}

/// The node's annotation text parsed, empty when absent or unparsable.
fn parse_annotation(node: &str, text: Option<&str>) -> NodeSubnets {
    match text {
        None => NodeSubnets::new(),
        Some(value) => parse_node_subnets(value).unwrap_or_else(|error| {
            warn!(node = %node, error = %error, "ignoring unparsable node-subnets annotation");
            NodeSubnets::new()
        }),
    }
}

/// Plans one network for the node into `plan`: for a node that carries the network the
/// entry `ensure_node_network` settles on (on failure the current entry and the error); for
/// one that does not, no entry (its subnets are released after the write); before the first
/// scope, the current entry.
fn plan_network(
    plan: &mut NodePlan,
    name: &str,
    network: &mut NetworkSubnets,
    node: &str,
    existing: &NodeSubnets,
    scope: &CurrentScope,
) {
    let current = existing.get(name).map(Vec::as_slice).unwrap_or_default();
    let entry = match scope.decide(network.gated, name, node) {
        NodeNetwork::Allocate => allocate_network(plan, name, network, node, current),
        NodeNetwork::Keep => current.to_vec(),
        NodeNetwork::Release => {
            let held = network.allocator.subnets_of(node);
            if !held.is_empty() {
                plan.touched.insert(name.to_owned());
            }
            plan.released
                .extend(held.into_iter().map(|s| (name.to_owned(), s)));
            Vec::new()
        }
    };
    if entry.is_empty() {
        plan.desired.remove(name);
    } else {
        plan.desired.insert(name.to_owned(), entry);
    }
}

/// The entry of a node that carries the network.
fn allocate_network(
    plan: &mut NodePlan,
    name: &str,
    network: &mut NetworkSubnets,
    node: &str,
    current: &[IpNetwork],
) -> Vec<IpNetwork> {
    let families = (network.ipv4, network.ipv6);
    match ensure_node_network(&mut network.allocator, name, families, node, current) {
        Ok(outcome) => {
            if !outcome.allocated.is_empty() || !outcome.released.is_empty() {
                plan.touched.insert(name.to_owned());
            }
            plan.allocated
                .extend(outcome.allocated.iter().map(|s| (name.to_owned(), *s)));
            outcome.subnets
        }
        Err(error) => {
            plan.errors.insert(name.to_owned(), error.to_string());
            current.to_vec()
        }
    }
}

impl SubnetState {
    /// Brings every allocator in line with `desired`: the default network and the Layer3
    /// networks the NADs define.
    pub(crate) fn sync_networks(
        &mut self,
        desired: &BTreeMap<String, Layer3Network>,
    ) -> NetworkSync {
        let mut sync = NetworkSync::default();
        let names: BTreeSet<String> = self
            .networks
            .keys()
            .chain(desired.keys())
            .cloned()
            .collect();
        for name in names {
            self.sync_network(&name, desired.get(&name), &mut sync);
        }
        sync
    }

    /// A new generation for network `name` (whose previous one was `previous`).
    fn bump(&mut self, name: &str, previous: Option<u64>) -> u64 {
        if let Some(previous) = previous {
            self.changed_at.remove(&previous);
        }
        self.generation = self.generation.saturating_add(1);
        self.changed_at.insert(self.generation, name.to_owned());
        self.generation
    }

    /// Brings one network's allocator in line with its definition (`None`: no NAD left).
    pub(crate) fn sync_network(
        &mut self,
        name: &str,
        desired: Option<&Layer3Network>,
        sync: &mut NetworkSync,
    ) {
        let Some(network) = desired else {
            if let Some(removed) = self.networks.remove(name) {
                self.changed_at.remove(&removed.generation);
                self.generation = self.generation.saturating_add(1);
                self.restart_at = self.generation;
                self.errors.remove(name);
                info!(network = %name, "network gone: released its node subnets");
                sync.removed.push(name.to_owned());
            }
            return;
        };
        match self.networks.get_mut(name) {
            Some(current) if current.ranges == network.ranges && current.gated == network.gated => {
            }
            // Ranges appended (expansion) or the gating changed: the same allocator.
            Some(current) if network.ranges.starts_with(&current.ranges) => {
                for range in network.ranges.iter().skip(current.ranges.len()) {
                    match current
                        .allocator
                        .add_range(range.cidr, range.host_subnet_length)
                    {
                        Ok(()) => info!(network = %name, range = %range, "cluster subnet added"),
                        Err(error) => {
                            warn!(network = %name, range = %range, error = %error, "skipping invalid cluster subnet");
                        }
                    }
                }
                current.ranges.clone_from(&network.ranges);
                current.ipv4 = network.ipv4;
                current.ipv6 = network.ipv6;
                if current.gated != network.gated {
                    info!(network = %name, gated = network.gated, "network gating changed");
                    current.gated = network.gated;
                }
                let previous = current.generation;
                let generation = self.bump(name, Some(previous));
                if let Some(current) = self.networks.get_mut(name) {
                    current.generation = generation;
                }
                sync.changed.push(name.to_owned());
            }
            existing => {
                let previous = existing.map(|e| e.generation);
                let mut entry = self.restored(name, network);
                entry.generation = self.bump(name, previous);
                self.networks.insert(name.to_owned(), entry);
                if previous.is_some() {
                    sync.changed.push(name.to_owned());
                } else {
                    sync.added.push(name.to_owned());
                }
            }
        }
    }

    /// A new allocator for `name`, with every known node annotation entry marked (nodes in
    /// name order; a subnet claimed twice stays with the first node).
    fn restored(&self, name: &str, network: &Layer3Network) -> NetworkSubnets {
        let mut allocator = build_allocator(name, network);
        for (node, known) in &self.known {
            for subnet in known.subnets.get(name).into_iter().flatten() {
                let _ = allocator.mark_allocated(node, &[*subnet]);
            }
        }
        NetworkSubnets {
            ranges: network.ranges.clone(),
            ipv4: network.ipv4,
            ipv6: network.ipv6,
            allocator,
            generation: 0,
            gated: network.gated,
        }
    }

    /// Records a node's annotation as observed or written.
    #[cfg(test)]
    pub(crate) fn observe(&mut self, node: &str, subnets: NodeSubnets) {
        self.known.insert(
            node.to_owned(),
            KnownNode {
                subnets,
                ..KnownNode::default()
            },
        );
    }

    /// Records a node's annotation text as observed, parsing it only when it differs from
    /// the text last observed or written (an unparsable one counts as empty).
    pub(crate) fn observe_text(&mut self, node: &str, text: Option<&str>) {
        if let Some(known) = self.known.get(node)
            && known.text.as_ref().is_some_and(|t| t.as_deref() == text)
        {
            return;
        }
        let known = KnownNode {
            subnets: parse_annotation(node, text),
            text: Some(text.map(str::to_owned)),
            planned: None,
        };
        self.known.insert(node.to_owned(), known);
    }

    /// Whether `text` is the node's annotation as its last complete plan left it.
    pub(crate) fn is_planned(&self, node: &str, text: Option<&str>) -> bool {
        self.known.get(node).is_some_and(|known| {
            known.planned.is_some() && known.text.as_ref().is_some_and(|t| t.as_deref() == text)
        })
    }

    /// Nodes the state knows of (to detect deletions missed while not watching).
    pub(crate) fn known_nodes(&self) -> Vec<String> {
        self.known.keys().cloned().collect()
    }

    /// Network names with an allocator.
    pub(crate) fn network_names(&self) -> Vec<String> {
        self.networks.keys().cloned().collect()
    }

    /// Computes the node's full annotation, allocating and releasing as needed.
    pub(crate) fn plan_node(&mut self, node: &str, existing: &NodeSubnets) -> NodePlan {
        let mut plan = NodePlan {
            generation: self.generation,
            ..NodePlan::default()
        };
        for (name, network) in &mut self.networks {
            plan_network(&mut plan, name, network, node, existing, &self.scope);
        }
        plan.write = plan.desired != *existing;
        plan
    }

    /// Observes the node's annotation `text` and computes the node's plan, as
    /// [`plan_node`](Self::plan_node) would. `None` when the annotation is still the one the
    /// node's last plan left complete and no network changed since (nothing to do). A plan
    /// that writes nothing is recorded as complete right away; one that writes is recorded by
    /// [`writing`](Self::writing).
    pub(crate) fn plan_observed(&mut self, node: &str, text: Option<&str>) -> Option<NodePlan> {
        self.observe_text(node, text);
        let mut known = self.known.remove(node).unwrap_or_default();
        let since = known
            .planned
            .as_ref()
            .filter(|planned| planned.generation >= self.restart_at);
        let plan = match since {
            Some(planned) => {
                let mut dirty: BTreeSet<String> = self
                    .changed_at
                    .range(planned.generation.saturating_add(1)..)
                    .map(|(_, name)| name.clone())
                    .collect();
                dirty.extend(planned.failing.iter().cloned());
                dirty.extend(self.rescoped_since(node, planned.generation));
                if dirty.is_empty() {
                    self.known.insert(node.to_owned(), known);
                    return None;
                }
                self.plan_networks(node, &known.subnets, &dirty)
            }
            None => self.plan_node(node, &known.subnets),
        };
        if !plan.write {
            known.planned = Some(Planned {
                generation: plan.generation,
                failing: plan.errors.keys().cloned().collect(),
            });
            // Nothing to write: subnets of networks the node left go back now.
            self.release_left(node, &plan.released);
            self.rescope_done(node, plan.generation);
        }
        self.known.insert(node.to_owned(), known);
        Some(plan)
    }

    /// The plan of a node whose annotation `existing` was complete except for `names`.
    fn plan_networks(
        &mut self,
        node: &str,
        existing: &NodeSubnets,
        names: &BTreeSet<String>,
    ) -> NodePlan {
        let mut plan = NodePlan {
            desired: existing.clone(),
            generation: self.generation,
            ..NodePlan::default()
        };
        for name in names {
            if let Some(network) = self.networks.get_mut(name) {
                plan_network(&mut plan, name, network, node, existing, &self.scope);
            }
        }
        plan.write = plan.desired != *existing;
        plan
    }

    /// Records `plan` as the node's annotation, written as `text`, before the write is sent
    /// (so that the write's echo is recognised as planned). If the write fails, hand the
    /// returned [`Writing`] to [`unwritten`](Self::unwritten).
    pub(crate) fn writing(
        &mut self,
        node: &str,
        plan: NodePlan,
        mut text: Option<String>,
    ) -> Writing {
        // Kept for every node: without the encoder's spare capacity.
        if let Some(text) = &mut text {
            text.shrink_to_fit();
        }
        let known = KnownNode {
            planned: Some(Planned {
                generation: plan.generation,
                failing: plan.errors.into_keys().collect(),
            }),
            subnets: plan.desired,
            text: Some(text),
        };
        Writing {
            previous: self.known.insert(node.to_owned(), known),
            allocated: plan.allocated,
            released: plan.released,
            generation: plan.generation,
        }
    }

    /// The write begun by [`writing`](Self::writing) failed: the node's annotation is what
    /// it was; with `rollback`, the subnets the plan allocated are released too (after a
    /// conflict they are kept for the next attempt).
    pub(crate) fn unwritten(&mut self, node: &str, writing: Writing, rollback: bool) {
        match writing.previous {
            Some(previous) => self.known.insert(node.to_owned(), previous),
            None => self.known.remove(node),
        };
        if rollback {
            self.rollback(node, &writing.allocated);
        }
    }

    /// Releases subnets allocated by a plan whose annotation was not written.
    fn rollback(&mut self, node: &str, allocated: &[(String, IpNetwork)]) {
        for (name, subnet) in allocated {
            if let Some(network) = self.networks.get_mut(name) {
                rollback(&mut network.allocator, node, &[*subnet]);
            }
        }
    }

    /// The node is gone: release its subnets everywhere and forget its errors. Returns the
    /// networks whose allocator changed and the error changes.
    pub(crate) fn forget_node(&mut self, node: &str) -> (BTreeSet<String>, Vec<ErrorChange>) {
        self.known.remove(node);
        self.rescoped.remove(node);
        let mut touched = BTreeSet::new();
        for (name, network) in &mut self.networks {
            let released = network.allocator.release_owner(node);
            if !released.is_empty() {
                info!(network = %name, node = %node, "node gone: released its subnets");
                touched.insert(name.clone());
            }
        }
        let changes = self.record_errors(node, &BTreeMap::new());
        (touched, changes)
    }

    /// Records the node's errors per network (an empty map means all succeeded). Only
    /// networks the node fails in now or failed in before can change.
    pub(crate) fn record_errors(
        &mut self,
        node: &str,
        errors: &BTreeMap<String, String>,
    ) -> Vec<ErrorChange> {
        let failed_before = self
            .errors
            .iter()
            .filter(|(_, state)| state.nodes.contains_key(node))
            .map(|(name, _)| name);
        let names: BTreeSet<String> = errors
            .keys()
            .chain(failed_before)
            .filter(|name| self.networks.contains_key(*name))
            .cloned()
            .collect();
        let mut changes = Vec::new();
        for name in names {
            let new = errors.get(&name);
            let state = self.errors.entry(name.clone()).or_default();
            if state.nodes.get(node) == new {
                continue;
            }
            match new {
                Some(message) => {
                    state.nodes.insert(node.to_owned(), message.clone());
                }
                None => {
                    state.nodes.remove(node);
                }
            }
            let before = state.reported.clone();
            if state.reported.is_none() && new.is_some() {
                state.reported = Some(node.to_owned());
            }
            if state.reported.as_deref() == Some(node) && new.is_none() {
                state.reported = state.nodes.keys().next().cloned();
            }
            let condition_changed = before != state.reported;
            if state.nodes.is_empty() && state.reported.is_none() {
                self.errors.remove(&name);
            }
            changes.push(ErrorChange {
                network: name,
                error: new.cloned(),
                condition_changed,
            });
        }
        changes
    }

    /// The node the network's condition names as failing, if any.
    pub(crate) fn reported_error_node(&self, network: &str) -> Option<&str> {
        self.errors.get(network)?.reported.as_deref()
    }

    /// Nodes that can still get a subnet of the network: free host subnets summed over the
    /// ranges of each family, the smaller family count when dual-stack.
    pub(crate) fn free_subnets(&self, network: &str) -> Option<u128> {
        let network = self.networks.get(network)?;
        let mut per_family: BTreeMap<bool, u128> = BTreeMap::new();
        for usage in network.allocator.usage() {
            let free = per_family.entry(usage.range.is_ipv6()).or_insert(0);
            *free = free.saturating_add(usage.free());
        }
        Some(per_family.into_values().min().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests;
