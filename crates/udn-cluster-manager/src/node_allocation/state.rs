//! The node ID allocator and, per node, the annotations it implies: inputs (what a node's
//! annotations say), desired (`node-id`, `node-transit-switch-port-ifaddr`, no obsolete
//! `node-gateway-router-lrp-ifaddrs`) and the plan (the annotation changes, empty when the
//! node is converged). Synchronous; the controller holds it under a mutex, never across an
//! await.

use std::collections::{BTreeMap, BTreeSet};

use ipnetwork::IpNetwork;
use tracing::info;
use udn_api::annotations::{
    IfAddrs, format_node_id, format_node_transit_switch_port_ifaddr, parse_node_id,
};
use udn_api::cluster::ClusterConfig;
use udn_api::names::{
    ANNOTATION_NODE_GATEWAY_ROUTER_LRP_IFADDRS, ANNOTATION_NODE_ID,
    ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR,
};
use udn_ipam::{IdError, NodeAddressError, NodeId, NodeIdAllocator, transit_switch_port_ips};

/// What the controller reads from one node's annotations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ObservedNode<'a> {
    /// `k8s.ovn.org/node-id` as written.
    pub(crate) node_id: Option<&'a str>,
    /// `k8s.ovn.org/node-transit-switch-port-ifaddr` as written.
    pub(crate) transit: Option<&'a str>,
    /// Whether the obsolete `k8s.ovn.org/node-gateway-router-lrp-ifaddrs` is present.
    pub(crate) obsolete_lrp_ifaddrs: bool,
}

impl<'a> ObservedNode<'a> {
    /// The inputs from a node's annotations.
    pub(crate) fn of(annotations: Option<&'a BTreeMap<String, String>>) -> Self {
        let get = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str);
        Self {
            node_id: get(ANNOTATION_NODE_ID),
            transit: get(ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR),
            obsolete_lrp_ifaddrs: get(ANNOTATION_NODE_GATEWAY_ROUTER_LRP_IFADDRS).is_some(),
        }
    }

    /// The annotated ID when it parses.
    fn annotated_id(&self) -> Option<NodeId> {
        self.node_id.and_then(|text| parse_node_id(text).ok())
    }
}

/// Why a node got no complete allocation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeAllocationPlanError {
    /// No node ID is free.
    #[error("failed to allocate an id to the node {node}")]
    Exhausted {
        /// Node name.
        node: String,
        /// The allocator's error.
        #[source]
        source: IdError,
    },
    /// The transit subnet has no address for the node's ID.
    #[error("failed to generate transit switch port address for node {node}")]
    TransitAddress {
        /// Node name.
        node: String,
        /// The generator's error.
        #[source]
        source: NodeAddressError,
    },
}

/// The annotation changes one node needs (`None` deletes the key), and its ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodePlan {
    pub(crate) node_id: NodeId,
    /// Whether this plan gave the node its ID.
    pub(crate) allocated: bool,
    /// Empty when the node is converged.
    pub(crate) changes: BTreeMap<&'static str, Option<String>>,
}

/// What [`NodeAllocations::restore`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Restored {
    /// Nodes whose annotated ID was kept.
    pub(crate) kept: usize,
    /// Nodes whose annotated ID was another node's (or out of range), with the new ID.
    pub(crate) reassigned: Vec<(String, NodeId)>,
}

/// The node ID allocator and the transit subnets of the cluster's IP families.
#[derive(Debug, Clone)]
pub(crate) struct NodeAllocations {
    ids: NodeIdAllocator,
    transit_subnets: Vec<IpNetwork>,
}

impl NodeAllocations {
    /// An empty allocator for `cluster`: transit addresses in the cluster's IP families.
    pub(crate) fn new(cluster: &ClusterConfig) -> Self {
        let mut transit_subnets = Vec::new();
        if cluster.ipv4_enabled() {
            transit_subnets.push(IpNetwork::V4(cluster.transit_subnet_v4));
        }
        if cluster.ipv6_enabled() {
            transit_subnets.push(IpNetwork::V6(cluster.transit_subnet_v6));
        }
        Self {
            ids: NodeIdAllocator::new(),
            transit_subnets,
        }
    }

    /// Restores the IDs of existing nodes (upstream `syncNodeIDs`): every annotated ID is
    /// reserved, nodes in name order; a node whose ID another node already holds (or that is
    /// out of range) then gets a new one, after all reservations. Nodes without a readable ID
    /// get one when they are planned.
    pub(crate) fn restore<'a>(
        &mut self,
        nodes: impl IntoIterator<Item = (&'a str, ObservedNode<'a>)>,
    ) -> Restored {
        let mut restored = Restored::default();
        let mut duplicates = BTreeSet::new();
        let mut annotated: Vec<(&str, NodeId)> = nodes
            .into_iter()
            .filter_map(|(name, observed)| Some((name, observed.annotated_id()?)))
            .collect();
        annotated.sort_unstable();
        for (name, id) in annotated {
            if self.ids.reserve(name, id).is_ok() {
                restored.kept += 1;
            } else {
                duplicates.insert(name);
            }
        }
        for name in duplicates {
            if let Ok(id) = self.ids.allocate(name) {
                info!(node = %name, node_id = id, "annotated node ID is not unique: new ID");
                restored.reassigned.push((name.to_owned(), id));
            }
        }
        restored
    }

    /// The node's ID: the one it holds, else its annotated one when free, else a new one.
    fn ensure_id(
        &mut self,
        node: &str,
        observed: &ObservedNode<'_>,
    ) -> Result<(NodeId, bool), NodeAllocationPlanError> {
        if let Some(id) = self.ids.id_of(node) {
            return Ok((id, false));
        }
        if let Some(id) = observed.annotated_id()
            && self.ids.reserve(node, id).is_ok()
        {
            return Ok((id, false));
        }
        let id = self
            .ids
            .allocate(node)
            .map_err(|source| NodeAllocationPlanError::Exhausted {
                node: node.to_owned(),
                source,
            })?;
        Ok((id, true))
    }

    /// The transit annotation value for `id`.
    fn transit_text(&self, node: &str, id: NodeId) -> Result<String, NodeAllocationPlanError> {
        let ips = transit_switch_port_ips(&self.transit_subnets, id).map_err(|source| {
            NodeAllocationPlanError::TransitAddress {
                node: node.to_owned(),
                source,
            }
        })?;
        Ok(format_node_transit_switch_port_ifaddr(
            &IfAddrs::from_cidrs(&ips),
        ))
    }

    /// Gives the node its ID (if it has none) and computes the annotation changes.
    pub(crate) fn plan(
        &mut self,
        node: &str,
        observed: &ObservedNode<'_>,
    ) -> Result<NodePlan, NodeAllocationPlanError> {
        let (node_id, allocated) = self.ensure_id(node, observed)?;
        let id_text = format_node_id(node_id);
        let transit = self.transit_text(node, node_id)?;
        let mut changes = BTreeMap::new();
        if observed.node_id != Some(id_text.as_str()) {
            changes.insert(ANNOTATION_NODE_ID, Some(id_text));
        }
        if observed.transit != Some(transit.as_str()) {
            changes.insert(ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR, Some(transit));
        }
        if observed.obsolete_lrp_ifaddrs {
            changes.insert(ANNOTATION_NODE_GATEWAY_ROUTER_LRP_IFADDRS, None);
        }
        Ok(NodePlan {
            node_id,
            allocated,
            changes,
        })
    }

    /// Whether the node's annotations are what its held ID implies (the echo of our own
    /// write, or any other change of the node): nothing to do.
    pub(crate) fn is_converged(&self, node: &str, observed: &ObservedNode<'_>) -> bool {
        let Some(id) = self.ids.id_of(node) else {
            return false;
        };
        !observed.obsolete_lrp_ifaddrs
            && observed.node_id == Some(format_node_id(id).as_str())
            && self
                .transit_text(node, id)
                .is_ok_and(|text| observed.transit == Some(text.as_str()))
    }

    /// The node is gone: its ID is free (round-robin: reused after the range wraps, or after a
    /// restart).
    pub(crate) fn forget(&mut self, node: &str) -> Option<NodeId> {
        self.ids.release(node)
    }

    /// Nodes holding an ID.
    pub(crate) fn nodes(&self) -> Vec<String> {
        self.ids
            .assignments()
            .map(|(node, _)| node.to_owned())
            .collect()
    }

    /// IDs still free.
    pub(crate) fn free(&self) -> u32 {
        self.ids.free()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed<'a>(id: Option<&'a str>, transit: Option<&'a str>) -> ObservedNode<'a> {
        ObservedNode {
            node_id: id,
            transit,
            obsolete_lrp_ifaddrs: false,
        }
    }

    fn changes(plan: &NodePlan) -> Vec<(&'static str, Option<&str>)> {
        plan.changes
            .iter()
            .map(|(k, v)| (*k, v.as_deref()))
            .collect()
    }

    #[test]
    fn new_nodes_get_two_three_four_and_both_annotations() {
        let mut state = NodeAllocations::new(&ClusterConfig::default());
        let a = state.plan("a", &ObservedNode::default()).unwrap();
        assert_eq!((a.node_id, a.allocated), (2, true));
        assert_eq!(
            changes(&a),
            [
                ("k8s.ovn.org/node-id", Some("2")),
                (
                    "k8s.ovn.org/node-transit-switch-port-ifaddr",
                    Some(r#"{"ipv4":"100.88.0.2/16","ipv6":"fd97::2/64"}"#)
                ),
            ]
        );
        assert_eq!(
            state.plan("b", &ObservedNode::default()).unwrap().node_id,
            3
        );
        assert_eq!(
            state.plan("c", &ObservedNode::default()).unwrap().node_id,
            4
        );
        // Planning again with the written annotations changes nothing.
        let written = observed(
            Some("2"),
            Some(r#"{"ipv4":"100.88.0.2/16","ipv6":"fd97::2/64"}"#),
        );
        assert!(state.is_converged("a", &written));
        let again = state.plan("a", &written).unwrap();
        assert!(!again.allocated && again.changes.is_empty());
        assert_eq!(state.free(), 4996);
    }

    #[test]
    fn single_stack_transit_address() {
        let mut state = NodeAllocations::new(&ClusterConfig::ipv6_only());
        let plan = state.plan("a", &ObservedNode::default()).unwrap();
        assert_eq!(
            plan.changes[ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR].as_deref(),
            Some(r#"{"ipv6":"fd97::2/64"}"#)
        );
    }

    #[test]
    fn restore_keeps_ids_and_reassigns_duplicates_after_all_reservations() {
        let mut state = NodeAllocations::new(&ClusterConfig::ipv4_only());
        let restored = state.restore([
            ("c", observed(Some("3"), None)),
            ("b", observed(Some("3"), None)),
            ("a", observed(Some("7"), None)),
            ("d", observed(Some("9000"), None)),
            ("e", observed(Some("x"), None)),
            ("f", observed(None, None)),
        ]);
        // Name order: b keeps 3, c's 3 is taken; d's is out of range. Both get new IDs from
        // the bottom (restoring does not move the round-robin cursor).
        assert_eq!(restored.kept, 2);
        assert_eq!(
            restored.reassigned,
            [("c".to_owned(), 2), ("d".to_owned(), 4)]
        );
        let c = state.plan("c", &observed(Some("3"), None)).unwrap();
        assert_eq!(changes(&c)[0], ("k8s.ovn.org/node-id", Some("2")));
        // An unreadable ID is replaced by a new one.
        assert_eq!(
            state.plan("e", &observed(Some("x"), None)).unwrap().node_id,
            5
        );
        assert_eq!(
            state.plan("a", &ObservedNode::default()).unwrap().node_id,
            7
        );
        assert_eq!(state.nodes(), ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn a_node_appearing_with_a_free_annotated_id_keeps_it() {
        let mut state = NodeAllocations::new(&ClusterConfig::ipv4_only());
        let plan = state
            .plan(
                "late",
                &observed(Some("42"), Some(r#"{"ipv4":"100.88.0.9/16"}"#)),
            )
            .unwrap();
        assert_eq!((plan.node_id, plan.allocated), (42, false));
        // The transit address follows the ID.
        assert_eq!(
            changes(&plan),
            [(
                "k8s.ovn.org/node-transit-switch-port-ifaddr",
                Some(r#"{"ipv4":"100.88.0.42/16"}"#)
            )]
        );
        let taken = state.plan("other", &observed(Some("42"), None)).unwrap();
        assert_eq!(taken.node_id, 2);
    }

    #[test]
    fn obsolete_annotation_is_deleted_and_ids_released() {
        let mut state = NodeAllocations::new(&ClusterConfig::ipv4_only());
        let text = r#"{"ipv4":"100.88.0.2/16"}"#;
        let mut with_old = observed(Some("2"), Some(text));
        with_old.obsolete_lrp_ifaddrs = true;
        state.restore([("a", with_old)]);
        assert!(!state.is_converged("a", &with_old));
        let plan = state.plan("a", &with_old).unwrap();
        assert_eq!(
            changes(&plan),
            [("k8s.ovn.org/node-gateway-router-lrp-ifaddrs", None)]
        );
        assert_eq!(state.forget("a"), Some(2));
        assert_eq!(state.forget("a"), None);
        assert!(!state.is_converged("a", &observed(Some("2"), Some(text))));
        // Restoring did not move the round-robin cursor, so the released ID is the next one.
        assert_eq!(
            state.plan("b", &ObservedNode::default()).unwrap().node_id,
            2
        );
        // Allocated ones move it: a released ID then waits for the wrap.
        assert_eq!(state.forget("b"), Some(2));
        assert_eq!(
            state.plan("c", &ObservedNode::default()).unwrap().node_id,
            3
        );
    }

    #[test]
    fn a_transit_subnet_without_room_is_an_error() {
        let mut cluster = ClusterConfig::ipv4_only();
        cluster.transit_subnet_v4 = "100.88.0.0/30".parse().unwrap();
        let mut state = NodeAllocations::new(&cluster);
        assert!(state.plan("a", &ObservedNode::default()).is_ok());
        assert!(state.plan("b", &ObservedNode::default()).is_ok());
        let error = state.plan("c", &ObservedNode::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "failed to generate transit switch port address for node c"
        );
    }
}
