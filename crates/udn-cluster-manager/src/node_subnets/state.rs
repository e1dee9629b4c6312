//! The node controller's in-memory state: one host-subnet allocator per Layer3 network,
//! the last known `node-subnets` annotation of every node (to restore a network's allocator
//! before it hands anything out), and per-network node errors for the status condition.
//! Synchronous; the controller holds it under a mutex and never across an await.

use std::collections::{BTreeMap, BTreeSet};

use ipnetwork::IpNetwork;
use tracing::{info, warn};
use udn_api::annotations::NodeSubnets;
use udn_api::names::DEFAULT_NETWORK_NAME;
use udn_api::netconf::SubnetEntry;
use udn_ipam::HostSubnetAllocator;

use super::networks::Layer3Network;
use super::plan::{ensure_node_network, rollback};

#[derive(Debug)]
struct NetworkSubnets {
    ranges: Vec<SubnetEntry>,
    ipv4: bool,
    ipv6: bool,
    allocator: HostSubnetAllocator,
}

/// Node errors of one network and the node the condition names (upstream keeps naming the
/// first failing node until it recovers).
#[derive(Debug, Default)]
struct NetworkErrors {
    nodes: BTreeMap<String, String>,
    reported: Option<String>,
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
    /// The full annotation: the `default` entry untouched, one entry per Layer3 network.
    pub(crate) desired: NodeSubnets,
    /// Subnets newly allocated for the node (rolled back if the write fails).
    pub(crate) allocated: Vec<(String, IpNetwork)>,
    /// Networks whose allocator changed (for the free-subnets gauge).
    pub(crate) touched: BTreeSet<String>,
    /// Network -> error text for networks the node got no complete allocation in.
    pub(crate) errors: BTreeMap<String, String>,
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
#[derive(Debug, Default)]
pub(crate) struct SubnetState {
    networks: BTreeMap<String, NetworkSubnets>,
    known: BTreeMap<String, NodeSubnets>,
    errors: BTreeMap<String, NetworkErrors>,
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

impl SubnetState {
    /// Brings every allocator in line with the Layer3 networks the NADs define.
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

    /// Brings one network's allocator in line with its definition (`None`: no NAD left).
    pub(crate) fn sync_network(
        &mut self,
        name: &str,
        desired: Option<&Layer3Network>,
        sync: &mut NetworkSync,
    ) {
        let Some(network) = desired else {
            if self.networks.remove(name).is_some() {
                self.errors.remove(name);
                info!(network = %name, "network gone: released its node subnets");
                sync.removed.push(name.to_owned());
            }
            return;
        };
        match self.networks.get_mut(name) {
            Some(current) if current.ranges == network.ranges => {}
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
                sync.changed.push(name.to_owned());
            }
            existing => {
                let rebuilt = existing.is_some();
                let entry = self.restored(name, network);
                self.networks.insert(name.to_owned(), entry);
                if rebuilt {
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
        for (node, subnets) in &self.known {
            for subnet in subnets.get(name).into_iter().flatten() {
                let _ = allocator.mark_allocated(node, &[*subnet]);
            }
        }
        NetworkSubnets {
            ranges: network.ranges.clone(),
            ipv4: network.ipv4,
            ipv6: network.ipv6,
            allocator,
        }
    }

    /// Records a node's annotation as observed or written.
    pub(crate) fn observe(&mut self, node: &str, subnets: NodeSubnets) {
        self.known.insert(node.to_owned(), subnets);
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
        let mut plan = NodePlan::default();
        if let Some(default) = existing.get(DEFAULT_NETWORK_NAME) {
            plan.desired
                .insert(DEFAULT_NETWORK_NAME.to_owned(), default.clone());
        }
        for (name, network) in &mut self.networks {
            let current = existing.get(name).map(Vec::as_slice).unwrap_or_default();
            let families = (network.ipv4, network.ipv6);
            match ensure_node_network(&mut network.allocator, name, families, node, current) {
                Ok(outcome) => {
                    if !outcome.allocated.is_empty() || !outcome.released.is_empty() {
                        plan.touched.insert(name.clone());
                    }
                    plan.allocated
                        .extend(outcome.allocated.iter().map(|s| (name.clone(), *s)));
                    if !outcome.subnets.is_empty() {
                        plan.desired.insert(name.clone(), outcome.subnets);
                    }
                }
                Err(error) => {
                    if !current.is_empty() {
                        plan.desired.insert(name.clone(), current.to_vec());
                    }
                    plan.errors.insert(name.clone(), error.to_string());
                }
            }
        }
        plan
    }

    /// Releases subnets allocated by a plan whose annotation was not written.
    pub(crate) fn rollback(&mut self, node: &str, allocated: &[(String, IpNetwork)]) {
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

    /// Records the node's errors per network (an empty map means all succeeded).
    pub(crate) fn record_errors(
        &mut self,
        node: &str,
        errors: &BTreeMap<String, String>,
    ) -> Vec<ErrorChange> {
        let mut changes = Vec::new();
        let names: Vec<String> = self.networks.keys().cloned().collect();
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
            changes.push(ErrorChange {
                network: name.clone(),
                error: new.cloned(),
                condition_changed: before != state.reported,
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
mod tests {
    use super::*;

    fn net(text: &str) -> IpNetwork {
        text.parse().unwrap()
    }

    fn layer3(ranges: &[&str]) -> Layer3Network {
        let ranges: Vec<SubnetEntry> = ranges.iter().map(|r| r.parse().unwrap()).collect();
        Layer3Network {
            ipv4: ranges.iter().any(|r| r.cidr.is_ipv4()),
            ipv6: ranges.iter().any(|r| r.cidr.is_ipv6()),
            ranges,
        }
    }

    fn networks(items: &[(&str, &[&str])]) -> BTreeMap<String, Layer3Network> {
        items
            .iter()
            .map(|(name, ranges)| ((*name).to_owned(), layer3(ranges)))
            .collect()
    }

    #[test]
    fn plans_every_network_at_once_and_keeps_default() {
        let mut state = SubnetState::default();
        state.sync_networks(&networks(&[
            ("a_x", &["10.1.0.0/16/24"]),
            ("b_y", &["10.2.0.0/16/24", "fd02::/48/64"]),
        ]));
        let existing = NodeSubnets::from([
            ("default".to_owned(), vec![net("10.244.1.0/24")]),
            ("gone_z".to_owned(), vec![net("10.9.0.0/24")]),
        ]);
        let plan = state.plan_node("n1", &existing);
        assert_eq!(
            udn_api::annotations::format_node_subnets(&plan.desired)
                .unwrap()
                .unwrap(),
            r#"{"a_x":["10.1.0.0/24"],"b_y":["10.2.0.0/24","fd02:0:0:1::/64"],"default":["10.244.1.0/24"]}"#
        );
        assert_eq!(plan.allocated.len(), 3);
        assert!(plan.errors.is_empty());
        // Idempotent: the same annotation again allocates nothing.
        let again = state.plan_node("n1", &plan.desired);
        assert_eq!(again.desired, plan.desired);
        assert!(again.allocated.is_empty());
    }

    #[test]
    fn new_network_restores_known_annotations_before_allocating() {
        let mut state = SubnetState::default();
        state.observe(
            "b",
            NodeSubnets::from([("n_x".to_owned(), vec![net("10.1.0.0/24")])]),
        );
        let sync = state.sync_networks(&networks(&[("n_x", &["10.1.0.0/16/24"])]));
        assert_eq!(sync.added, ["n_x"]);
        let plan = state.plan_node("a", &NodeSubnets::new());
        assert_eq!(plan.desired["n_x"], [net("10.1.1.0/24")]);
    }

    #[test]
    fn expansion_appends_and_rebuild_on_other_changes() {
        let mut state = SubnetState::default();
        state.sync_networks(&networks(&[("n_x", &["10.1.0.0/24/25"])]));
        let a = state.plan_node("a", &NodeSubnets::new());
        let b = state.plan_node("b", &NodeSubnets::new());
        let c = state.plan_node("c", &NodeSubnets::new());
        assert_eq!(a.desired["n_x"], [net("10.1.0.0/25")]);
        assert_eq!(b.desired["n_x"], [net("10.1.0.128/25")]);
        assert_eq!(
            c.errors["n_x"],
            "error allocating network for node c, network name n_x: no subnets available"
        );
        state.observe("a", a.desired.clone());
        state.observe("b", b.desired);
        let sync =
            state.sync_networks(&networks(&[("n_x", &["10.1.0.0/24/25", "10.2.0.0/24/25"])]));
        assert_eq!(sync.changed, ["n_x"]);
        let c = state.plan_node("c", &NodeSubnets::new());
        assert_eq!(c.desired["n_x"], [net("10.2.0.0/25")]);
        assert_eq!(state.plan_node("a", &a.desired).desired, a.desired);
        // A removed range rebuilds from the known annotations.
        state.observe("c", c.desired);
        let sync = state.sync_networks(&networks(&[("n_x", &["10.1.0.0/24/25"])]));
        assert_eq!(sync.changed, ["n_x"]);
        assert_eq!(state.free_subnets("n_x"), Some(0));
    }

    #[test]
    fn error_tracking_names_the_first_failing_node_until_it_recovers() {
        let mut state = SubnetState::default();
        state.sync_networks(&networks(&[("n_x", &["10.1.0.0/16/24"])]));
        let fail = |m: &str| BTreeMap::from([("n_x".to_owned(), m.to_owned())]);
        let changes = state.record_errors("b", &fail("boom"));
        assert_eq!(
            changes,
            [ErrorChange {
                network: "n_x".into(),
                error: Some("boom".into()),
                condition_changed: true
            }]
        );
        assert!(state.record_errors("b", &fail("boom")).is_empty());
        let changes = state.record_errors("a", &fail("boom"));
        assert!(!changes[0].condition_changed);
        assert_eq!(state.reported_error_node("n_x"), Some("b"));
        let changes = state.record_errors("b", &BTreeMap::new());
        assert!(changes[0].condition_changed);
        assert_eq!(state.reported_error_node("n_x"), Some("a"));
        let (_, changes) = state.forget_node("a");
        assert!(changes[0].condition_changed);
        assert_eq!(state.reported_error_node("n_x"), None);
    }

    #[test]
    fn forgetting_a_node_frees_its_subnets_and_a_gone_network_drops_everything() {
        let mut state = SubnetState::default();
        state.sync_networks(&networks(&[("n_x", &["10.1.0.0/24/25"])]));
        state.plan_node("a", &NodeSubnets::new());
        assert_eq!(state.free_subnets("n_x"), Some(1));
        let (touched, _) = state.forget_node("a");
        assert!(touched.contains("n_x"));
        assert_eq!(state.free_subnets("n_x"), Some(2));
        let sync = state.sync_networks(&BTreeMap::new());
        assert_eq!(sync.removed, ["n_x"]);
        assert_eq!(state.free_subnets("n_x"), None);
    }
}
