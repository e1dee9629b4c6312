//! Node IDs (upstream cluster-manager's `NodeIDs` allocator in
//! `node_allocation_controller.go`): IDs `0..=5000`, 0 and 1 never handed out, so the first
//! node gets 2; round-robin, one per node name.

use crate::id_pool::{IdError, NamedIds};

/// A node ID as carried by the `k8s.ovn.org/node-id` annotation.
pub type NodeId = u32;

/// Upstream `maxNodeIDs`: the largest node ID.
pub const MAX_NODE_ID: NodeId = 5000;

/// Size of the pool (`maxNodeIDs + 1`); IDs are `0..NODE_ID_POOL_SIZE`.
pub const NODE_ID_POOL_SIZE: u32 = MAX_NODE_ID + 1;

/// The first ID a node can get; 0 and 1 are reserved.
pub const FIRST_NODE_ID: NodeId = 2;

/// Holders of the reserved IDs. Upstream names them `zero` and `one`, which are also valid
/// node names; `:` cannot occur in a node name, so these never clash with a node.
const RESERVED: [(&str, NodeId); 2] = [("reserved:0", 0), ("reserved:1", 1)];

/// Allocates node IDs by node name.
///
/// Allocation is idempotent per name and round-robin: the scan starts after the last ID
/// handed out and wraps, so a released ID is reused only after the range wraps (or after a
/// restart, which starts the scan at the bottom again). [`NodeIdAllocator::reserve`] restores
/// IDs read back from node annotations and does not move the cursor.
#[derive(Debug, Clone)]
pub struct NodeIdAllocator {
    ids: NamedIds,
}

impl Default for NodeIdAllocator {
    fn default() -> Self {
        Self::new()
    }
}

impl NodeIdAllocator {
    /// A fresh allocator with IDs 0 and 1 reserved.
    pub fn new() -> Self {
        let mut ids = NamedIds::new("node", NODE_ID_POOL_SIZE);
        for (name, id) in RESERVED {
            // Cannot fail on a fresh pool; ignoring keeps `new` infallible.
            let _ = ids.reserve(name, id);
        }
        Self { ids }
    }

    /// The ID of `node`, allocating one when it has none.
    pub fn allocate(&mut self, node: &str) -> Result<NodeId, IdError> {
        self.ids.allocate(node)
    }

    /// Gives `id` to `node` (restore from the annotation). Idempotent for the same pair; an
    /// error when the ID is held by another node or reserved, the node holds another ID, or
    /// the ID is above [`MAX_NODE_ID`].
    pub fn reserve(&mut self, node: &str, id: NodeId) -> Result<(), IdError> {
        self.ids.reserve(node, id)
    }

    /// Frees the ID of `node` and returns it; `None` when it had none.
    pub fn release(&mut self, node: &str) -> Option<NodeId> {
        if RESERVED.iter().any(|(name, _)| *name == node) {
            return None;
        }
        self.ids.release(node)
    }

    /// The ID held by `node`.
    pub fn id_of(&self, node: &str) -> Option<NodeId> {
        if RESERVED.iter().any(|(name, _)| *name == node) {
            return None;
        }
        self.ids.get(node)
    }

    /// The node holding `id` (`None` for the reserved IDs).
    pub fn node_of(&self, id: NodeId) -> Option<&str> {
        if id < FIRST_NODE_ID {
            return None;
        }
        self.ids.name_of(id)
    }

    /// Every (node, ID) pair, ordered by node name; the reserved IDs are not listed.
    pub fn assignments(&self) -> impl Iterator<Item = (&str, NodeId)> {
        self.ids.iter().filter(|(_, id)| *id >= FIRST_NODE_ID)
    }

    /// Number of IDs nodes hold.
    pub fn used(&self) -> u32 {
        self.ids.used().saturating_sub(FIRST_NODE_ID)
    }

    /// Number of IDs still free for nodes.
    pub fn free(&self) -> u32 {
        (NODE_ID_POOL_SIZE - FIRST_NODE_ID).saturating_sub(self.used())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn first_node_gets_two_and_ids_go_up() {
        let mut ids = NodeIdAllocator::new();
        assert_eq!(ids.allocate("a").unwrap(), 2);
        assert_eq!(ids.allocate("a").unwrap(), 2);
        assert_eq!(ids.allocate("b").unwrap(), 3);
        assert_eq!(ids.allocate("c").unwrap(), 4);
        assert_eq!(ids.node_of(3), Some("b"));
        assert_eq!(ids.node_of(0), None);
        assert_eq!(ids.used(), 3);
        assert_eq!(ids.free(), 4996);
    }

    #[test]
    fn names_like_upstreams_reserved_holders_are_ordinary_nodes() {
        let mut ids = NodeIdAllocator::new();
        assert_eq!(ids.allocate("zero").unwrap(), 2);
        assert_eq!(ids.allocate("one").unwrap(), 3);
        assert_eq!(ids.id_of("reserved:0"), None);
        assert_eq!(ids.release("reserved:1"), None);
        assert!(ids.reserve("x", 1).is_err());
        assert!(ids.reserve("x", 0).is_err());
    }

    #[test]
    fn released_ids_wait_for_the_wrap_and_restore_keeps_the_cursor() {
        let mut ids = NodeIdAllocator::new();
        assert_eq!(ids.allocate("a").unwrap(), 2);
        assert_eq!(ids.allocate("b").unwrap(), 3);
        assert_eq!(ids.release("a"), Some(2));
        assert_eq!(ids.allocate("c").unwrap(), 4);
        // After a restart the annotated IDs are reserved; the scan starts at the bottom.
        let mut restored = NodeIdAllocator::new();
        restored.reserve("b", 3).unwrap();
        restored.reserve("c", 4).unwrap();
        assert_eq!(restored.allocate("d").unwrap(), 2);
        assert_eq!(restored.allocate("e").unwrap(), 5);
    }

    #[test]
    fn restore_errors() {
        let mut ids = NodeIdAllocator::new();
        ids.reserve("a", 7).unwrap();
        ids.reserve("a", 7).unwrap();
        assert_eq!(
            ids.reserve("b", 7).unwrap_err().to_string(),
            "id 7 is already reserved by another resource (a), requested by b"
        );
        assert_eq!(
            ids.reserve("b", 5001).unwrap_err().to_string(),
            "can't reserve id 5001 for the resource b: node ids are 0..5001"
        );
        ids.reserve("b", MAX_NODE_ID).unwrap();
    }

    #[test]
    fn exhaustion_is_an_error() {
        let mut ids = NodeIdAllocator::new();
        for n in FIRST_NODE_ID..=MAX_NODE_ID {
            assert_eq!(ids.allocate(&format!("n{n}")).unwrap(), n);
        }
        assert_eq!(ids.free(), 0);
        assert_eq!(
            ids.allocate("late").unwrap_err().to_string(),
            "failed to allocate the id for the resource late: all 5001 node ids are in use"
        );
        ids.release("n100");
        assert_eq!(ids.allocate("late").unwrap(), 100);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn restore_then_allocate_never_duplicates(
            ops in prop::collection::vec((any::<bool>(), 0u8..40), 1..120),
            seed in any::<u64>(),
            more in 1usize..20,
        ) {
            let mut ids = NodeIdAllocator::new();
            let mut held: BTreeMap<String, NodeId> = BTreeMap::new();
            for (allocate, n) in ops {
                let name = format!("node{n}");
                if allocate {
                    let id = ids.allocate(&name).unwrap();
                    prop_assert!(id >= FIRST_NODE_ID);
                    held.insert(name, id);
                } else {
                    prop_assert_eq!(ids.release(&name), held.remove(&name));
                }
            }
            let mut saved: Vec<(String, NodeId)> = held.clone().into_iter().collect();
            saved.sort_by_key(|(name, id)| (u64::from(*id) ^ seed).rotate_left(name.len() as u32));
            let mut restored = NodeIdAllocator::new();
            for (name, id) in &saved {
                restored.reserve(name, *id).unwrap();
            }
            let mut seen: BTreeSet<NodeId> = held.values().copied().collect();
            for n in 0..more {
                let id = restored.allocate(&format!("new{n}")).unwrap();
                prop_assert!((FIRST_NODE_ID..=MAX_NODE_ID).contains(&id));
                prop_assert!(seen.insert(id), "duplicate id {}", id);
            }
            for (name, id) in &held {
                prop_assert_eq!(restored.id_of(name), Some(*id));
            }
        }
    }
}
