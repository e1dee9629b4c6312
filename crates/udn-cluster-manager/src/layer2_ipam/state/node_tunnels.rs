//! The legacy Layer2 topology's per-node gateway router tunnel IDs
//! (`k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids`, upstream `NodeAllocator`
//! with `HasNodeTunnelIDAllocation`), taken from the same per-network pool as the pod tunnel
//! IDs under the owner `<network>_<node>`, so the two never collide.
//!
//! The topology is decided once at start. A zone controller that renders the transit router
//! says so on its node with `k8s.ovn.org/layer2-topology-version: "2.0"` (upstream); udn's
//! zone controllers render the legacy gateway topology and never do. So the transit router is
//! used only when every node says so, and the legacy topology otherwise, also on a fresh
//! cluster (upstream's `ClusterManager.setTopologyType` switches a fresh cluster to the
//! transit router, because upstream's zones run it). With the transit router nothing is
//! allocated, existing entries of live networks are kept and the platform tunnel IDs 1..9 are
//! reserved; in both topologies entries of networks that are not primary Layer2 networks are
//! removed (upstream `CleanupStaleNetworks`, `Cleanup`).
//!
//! Dynamic UDN: a gated network's entry follows the scope (allocated where the node renders
//! the network, removed elsewhere, left alone before the first scope); a removed entry's ID
//! goes back to the pool once the annotation without it is written.

use std::collections::{BTreeMap, BTreeSet};

use tracing::{info, warn};
use udn_api::annotations::{
    AnnotationError, NodeLayer2TunnelIds, format_node_layer2_tunnel_ids,
    parse_node_layer2_tunnel_ids,
};
use udn_api::crd::NetworkTopology;
use udn_api::names::{ANNOTATION_LAYER2_TOPOLOGY_VERSION, LAYER2_TRANSIT_ROUTER_TOPOLOGY_VERSION};

use super::{IpamState, Pools};
use crate::dynamic_udn::scope::{CurrentScope, NodeNetwork, Rescope, rescoped};

/// The Layer2 topology of primary Layer2 networks (upstream `config.Layer2UsesTransitRouter`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Layer2Topology {
    /// Transit router per network (every zone runs it): no per-node tunnel IDs. The default
    /// of a state built without nodes (unit tests); the controller decides with
    /// [`Layer2Topology::of_nodes`].
    #[default]
    TransitRouter,
    /// Gateway router peer ports keyed by per-node tunnel IDs (what udn's zones render).
    Legacy,
}

impl Layer2Topology {
    /// The topology the nodes' annotations ask for: the transit router when there are nodes
    /// and every one's zone says it runs it, else the legacy topology.
    pub(crate) fn of_nodes<'a>(
        nodes: impl IntoIterator<Item = Option<&'a BTreeMap<String, String>>>,
    ) -> Self {
        let mut any = false;
        let all_transit_router = nodes.into_iter().all(|annotations| {
            any = true;
            annotations
                .and_then(|a| a.get(ANNOTATION_LAYER2_TOPOLOGY_VERSION))
                .map(String::as_str)
                == Some(LAYER2_TRANSIT_ROUTER_TOPOLOGY_VERSION)
        });
        if any && all_transit_router {
            Self::TransitRouter
        } else {
            Self::Legacy
        }
    }
}

/// The tunnel ID owner of a node's gateway router port on a network (upstream's key).
pub(crate) fn node_tunnel_owner(network: &str, node: &str) -> String {
    format!("{network}_{node}")
}

/// What the state knows of one node's annotation.
#[derive(Debug, Default)]
pub(super) struct KnownNode {
    ids: NodeLayer2TunnelIds,
    /// The text `ids` was read from or written as (`None`: no annotation).
    text: Option<String>,
    /// Whether `text` is what the node's last plan left (echo suppression).
    planned: bool,
}

/// The annotation one node should carry.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct NodeTunnelPlan {
    /// The whole annotation value; `None` deletes it.
    pub(crate) value: Option<String>,
    /// Whether `value` differs from the annotation the plan started from.
    pub(crate) write: bool,
    /// `(network, owner)` of IDs this plan allocated (released if the write fails).
    pub(crate) allocated: Vec<(String, String)>,
    /// Networks that could not give the node an ID, with the reason.
    pub(crate) errors: Vec<String>,
    /// `(network, owner)` of IDs of networks the node left (Dynamic UDN), released once
    /// `value` is written.
    pub(crate) released: Vec<(String, String)>,
}

fn is_primary_layer2(pools: &Pools) -> bool {
    pools.info.primary && pools.info.topology == NetworkTopology::Layer2
}

fn parse_known(node: &str, text: Option<&str>) -> NodeLayer2TunnelIds {
    match text.map(parse_node_layer2_tunnel_ids) {
        None => NodeLayer2TunnelIds::new(),
        Some(Ok(ids)) => ids,
        Some(Err(error)) => {
            warn!(node = %node, error = %error, "ignoring unparsable Layer2 tunnel IDs annotation");
            NodeLayer2TunnelIds::new()
        }
    }
}

impl IpamState {
    /// Sets the topology; call before the first network sync.
    pub(crate) fn set_topology(&mut self, topology: Layer2Topology) {
        self.topology = topology;
    }

    /// Records a node's annotation text as observed (parsed only when it changed).
    pub(crate) fn observe_node(&mut self, node: &str, text: Option<&str>) {
        if let Some(known) = self.nodes.get(node)
            && known.text.as_deref() == text
        {
            return;
        }
        let known = KnownNode {
            ids: parse_known(node, text),
            text: text.map(str::to_owned),
            planned: false,
        };
        self.nodes.insert(node.to_owned(), known);
    }

    /// Whether `text` is the node's annotation as its last plan left it.
    pub(crate) fn node_is_planned(&self, node: &str, text: Option<&str>) -> bool {
        self.nodes
            .get(node)
            .is_some_and(|known| known.planned && known.text.as_deref() == text)
    }

    /// Sets whether Dynamic UDN gates network `name`; whether that changed.
    pub(crate) fn set_gated(&mut self, name: &str, gated: bool) -> bool {
        match self.networks.get_mut(name) {
            Some(pools) if pools.gated != gated => {
                pools.gated = gated;
                true
            }
            _ => false,
        }
    }

    /// Follows the Dynamic UDN scope from now on. Returns the nodes to look at again:
    /// every node, or those a gated primary Layer2 network moved on or off.
    pub(crate) fn set_scope(&mut self, scope: CurrentScope) -> Rescope {
        let change = rescoped(&self.scope, &scope);
        self.scope = scope;
        let is_gated = |name: &String| {
            self.networks
                .get(name)
                .is_some_and(|pools| pools.gated && is_primary_layer2(pools))
        };
        match change {
            Rescope::Everything if !self.networks.keys().any(is_gated) => {
                Rescope::Pairs(BTreeMap::new())
            }
            Rescope::Everything => Rescope::Everything,
            Rescope::Pairs(mut pairs) => {
                for networks in pairs.values_mut() {
                    networks.retain(is_gated);
                }
                pairs.retain(|_, networks| !networks.is_empty());
                Rescope::Pairs(pairs)
            }
        }
    }

    /// Nodes the state knows of.
    pub(crate) fn node_names(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    /// Legacy topology: gives every known node its annotated tunnel ID of the new network
    /// `name` (nodes in name order; a clash leaves the later node to get a new one). Runs
    /// before the pods are restored, as upstream's network init.
    pub(super) fn restore_node_tunnels(&mut self, name: &str) {
        if self.topology != Layer2Topology::Legacy {
            return;
        }
        let Some(pools) = self.networks.get_mut(name).filter(|p| is_primary_layer2(p)) else {
            return;
        };
        let Some(tunnels) = pools.tunnels.as_mut() else {
            return;
        };
        for (node, known) in &self.nodes {
            if let Some(id) = known.ids.get(name)
                && let Err(error) = tunnels.restore(&node_tunnel_owner(name, node), *id)
            {
                warn!(node = %node, network = %name, error = %error, "cannot restore node tunnel ID");
            }
        }
    }

    /// The node's tunnel ID on one primary Layer2 network: annotated (kept when it is or
    /// can be the node's), else held, else new; `None` in the transit router topology
    /// unless annotated.
    fn plan_node_network(
        pools: &mut Pools,
        topology: Layer2Topology,
        network: &str,
        node: &str,
        annotated: Option<u32>,
        plan: &mut NodeTunnelPlan,
    ) -> Option<u32> {
        if topology == Layer2Topology::TransitRouter {
            return annotated;
        }
        let tunnels = pools.tunnels.as_mut()?;
        let owner = node_tunnel_owner(network, node);
        if let Some(id) = annotated
            && tunnels.restore(&owner, id).is_ok()
        {
            return Some(id);
        }
        let held = tunnels.id_of(&owner).is_some();
        match tunnels.allocate(&owner) {
            Ok(id) => {
                if !held {
                    plan.allocated.push((network.to_owned(), owner));
                }
                Some(id)
            }
            Err(error) => {
                plan.errors.push(format!(
                    "failed to assign node {node} tunnel id for network {network}: {error}"
                ));
                annotated
            }
        }
    }

    /// Computes the node's annotation after observing `text`.
    pub(crate) fn plan_node(
        &mut self,
        node: &str,
        text: Option<&str>,
    ) -> Result<NodeTunnelPlan, AnnotationError> {
        self.observe_node(node, text);
        let existing = self
            .nodes
            .get(node)
            .map(|known| known.ids.clone())
            .unwrap_or_default();
        let mut plan = NodeTunnelPlan::default();
        let mut desired = NodeLayer2TunnelIds::new();
        let topology = self.topology;
        for (network, pools) in &mut self.networks {
            if !is_primary_layer2(pools) {
                continue;
            }
            let annotated = existing.get(network).copied();
            let id = match self.scope.decide(pools.gated, network, node) {
                NodeNetwork::Allocate => {
                    Self::plan_node_network(pools, topology, network, node, annotated, &mut plan)
                }
                NodeNetwork::Keep => annotated,
                NodeNetwork::Release => {
                    let owner = node_tunnel_owner(network, node);
                    if pools
                        .tunnels
                        .as_ref()
                        .and_then(|t| t.id_of(&owner))
                        .is_some()
                    {
                        plan.released.push((network.clone(), owner));
                    }
                    None
                }
            };
            if let Some(id) = id {
                desired.insert(network.clone(), id);
            }
        }
        plan.write = desired != existing;
        plan.value = format_node_layer2_tunnel_ids(&desired)?;
        if !plan.write {
            // Nothing to write: IDs of networks the node left go back now.
            self.release_left(&plan.released);
            if let Some(known) = self.nodes.get_mut(node) {
                known.planned = plan.errors.is_empty();
            }
        }
        Ok(plan)
    }

    /// Releases the IDs of networks a node left.
    fn release_left(&mut self, released: &[(String, String)]) {
        for (network, owner) in released {
            if let Some(tunnels) = self
                .networks
                .get_mut(network)
                .and_then(|p| p.tunnels.as_mut())
                && let Some(id) = tunnels.release(owner)
            {
                info!(network = %network, owner = %owner, id, "node left the network: released its tunnel ID");
            }
        }
    }

    /// The plan's value was written (IDs of networks the node left are free now).
    pub(crate) fn node_written(&mut self, node: &str, plan: &NodeTunnelPlan) {
        self.release_left(&plan.released);
        let known = KnownNode {
            ids: parse_known(node, plan.value.as_deref()),
            text: plan.value.clone(),
            planned: plan.errors.is_empty(),
        };
        self.nodes.insert(node.to_owned(), known);
    }

    /// The plan's write failed: release what it allocated.
    pub(crate) fn node_unwritten(&mut self, plan: &NodeTunnelPlan) {
        for (network, owner) in &plan.allocated {
            if let Some(tunnels) = self
                .networks
                .get_mut(network)
                .and_then(|p| p.tunnels.as_mut())
            {
                tunnels.release(owner);
            }
        }
    }

    /// The node is gone: its tunnel IDs are free. Returns the networks touched.
    pub(crate) fn forget_node(&mut self, node: &str) -> BTreeSet<String> {
        self.nodes.remove(node);
        let mut touched = BTreeSet::new();
        for (network, pools) in &mut self.networks {
            if let Some(tunnels) = pools.tunnels.as_mut()
                && tunnels.release(&node_tunnel_owner(network, node)).is_some()
            {
                touched.insert(network.clone());
            }
        }
        touched
    }

    /// The tunnel ID the pool of `network` holds for `node` (tests).
    #[cfg(test)]
    pub(crate) fn node_tunnel_id(&self, network: &str, node: &str) -> Option<u32> {
        self.networks
            .get(network)?
            .tunnels
            .as_ref()?
            .id_of(&node_tunnel_owner(network, node))
    }
}
