//! Network IDs (upstream `networkmanager`'s `NetworkIDs` allocator): IDs `0..size`, 0 held by
//! the default network, the rest handed out round-robin, one per network name. Upstream's
//! size is 4096; [`NetworkIdAllocator::with_size`] sizes it for more (see
//! [`crate::NetworkIdLimit`]).

use crate::id_pool::{IdError, NamedIds};

/// A network ID as carried by the `k8s.ovn.org/network-id` NAD annotation.
pub type NetworkId = u32;

/// Upstream's number of network IDs (`networkmanager.MaxNetworks`): [`NetworkIdAllocator::new`]
/// hands out `0..MAX_NETWORKS`.
pub const MAX_NETWORKS: u32 = 4096;

/// The ID of the default network (`types.DefaultNetworkID`).
pub const DEFAULT_NETWORK_ID: NetworkId = 0;

/// The name of the default network (`types.DefaultNetworkName`).
pub const DEFAULT_NETWORK_NAME: &str = "default";

/// Allocates network IDs by network name.
///
/// Allocation is idempotent per name and round-robin: the scan starts after the last ID handed
/// out, so the first UDN gets 1, then 2, 3, … and a freed ID is only reused after the range
/// wraps. [`NetworkIdAllocator::reserve`] restores IDs read back from NAD annotations.
#[derive(Debug, Clone)]
pub struct NetworkIdAllocator {
    ids: NamedIds,
}

impl Default for NetworkIdAllocator {
    fn default() -> Self {
        Self::new()
    }
}

impl NetworkIdAllocator {
    /// A fresh allocator of upstream's size ([`MAX_NETWORKS`]) with ID 0 held by `default`.
    pub fn new() -> Self {
        Self::with_size(MAX_NETWORKS)
    }

    /// A fresh allocator of IDs `0..size` with ID 0 held by `default` (a size of 0 or 1
    /// leaves nothing to hand out).
    pub fn with_size(size: u32) -> Self {
        let mut ids = NamedIds::new("network", size.max(1));
        // Cannot fail on an empty pool of at least one ID; ignoring keeps this infallible.
        let _ = ids.reserve(DEFAULT_NETWORK_NAME, DEFAULT_NETWORK_ID);
        Self { ids }
    }

    /// The ID of `network`, allocating one when it has none.
    pub fn allocate(&mut self, network: &str) -> Result<NetworkId, IdError> {
        self.ids.allocate(network)
    }

    /// The ID of `network`, allocating one that `skip` does not reject when it has none
    /// (IDs whose derived values are taken by something else).
    pub fn allocate_skipping(
        &mut self,
        network: &str,
        skip: impl Fn(NetworkId) -> bool,
    ) -> Result<NetworkId, IdError> {
        self.ids.allocate_skipping(network, skip)
    }

    /// Number of IDs, the default network's included: IDs are `0..size`.
    pub fn size(&self) -> u32 {
        self.ids.size()
    }

    /// Gives `id` to `network` (restore from an annotation). Idempotent for the same pair; an
    /// error when the ID is held by another network, the network holds another ID, or the ID is
    /// not below [`NetworkIdAllocator::size`].
    pub fn reserve(&mut self, network: &str, id: NetworkId) -> Result<(), IdError> {
        self.ids.reserve(network, id)
    }

    /// Frees the ID of `network` and returns it; `None` when it had none.
    pub fn release(&mut self, network: &str) -> Option<NetworkId> {
        self.ids.release(network)
    }

    /// The ID held by `network`.
    pub fn id_of(&self, network: &str) -> Option<NetworkId> {
        self.ids.get(network)
    }

    /// The network holding `id`.
    pub fn network_of(&self, id: NetworkId) -> Option<&str> {
        self.ids.name_of(id)
    }

    /// Every (network, ID) pair, ordered by network name.
    pub fn assignments(&self) -> impl Iterator<Item = (&str, NetworkId)> {
        self.ids.iter()
    }

    /// Number of IDs held, including the default network's.
    pub fn used(&self) -> u32 {
        self.ids.used()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn first_udn_gets_one_and_ids_go_up() {
        let mut ids = NetworkIdAllocator::new();
        assert_eq!(ids.id_of("default"), Some(0));
        assert_eq!(ids.allocate("default").unwrap(), 0);
        assert_eq!(ids.allocate("ns1_blue").unwrap(), 1);
        assert_eq!(ids.allocate("ns1_blue").unwrap(), 1);
        assert_eq!(ids.allocate("cluster_udn_red").unwrap(), 2);
        assert_eq!(ids.allocate("ns2_green").unwrap(), 3);
        assert_eq!(ids.network_of(2), Some("cluster_udn_red"));
    }

    #[test]
    fn freed_ids_are_not_reused_until_wrap() {
        let mut ids = NetworkIdAllocator::new();
        assert_eq!(ids.allocate("a").unwrap(), 1);
        assert_eq!(ids.allocate("b").unwrap(), 2);
        assert_eq!(ids.release("a"), Some(1));
        assert_eq!(ids.allocate("c").unwrap(), 3);
        assert_eq!(ids.id_of("a"), None);
    }

    #[test]
    fn reserve_from_annotations() {
        let mut ids = NetworkIdAllocator::new();
        ids.reserve("blue", 3).unwrap();
        ids.reserve("blue", 3).unwrap();
        assert_eq!(
            ids.reserve("red", 3).unwrap_err().to_string(),
            "id 3 is already reserved by another resource (blue), requested by red"
        );
        assert_eq!(
            ids.reserve("blue", 4).unwrap_err().to_string(),
            "can't reserve id 4 for the resource blue. It is already allocated with a different id 3"
        );
        assert_eq!(
            ids.reserve("red", 4096).unwrap_err().to_string(),
            "can't reserve id 4096 for the resource red: network ids are 0..4096"
        );
        assert!(matches!(
            ids.reserve("red", 0),
            Err(IdError::IdTaken { holder, .. }) if holder == "default"
        ));
        // Reserving does not move the round-robin cursor.
        assert_eq!(ids.allocate("red").unwrap(), 1);
        assert_eq!(ids.allocate("green").unwrap(), 2);
        assert_eq!(ids.allocate("yellow").unwrap(), 4);
    }

    #[test]
    fn exhaustion_is_an_error() {
        let mut ids = NetworkIdAllocator::new();
        for n in 1..MAX_NETWORKS {
            assert_eq!(ids.allocate(&format!("net{n}")).unwrap(), n);
        }
        assert_eq!(ids.used(), MAX_NETWORKS);
        assert_eq!(
            ids.allocate("one-too-many").unwrap_err().to_string(),
            "failed to allocate the id for the resource one-too-many: all 4096 network ids are in use"
        );
        ids.release("net7");
        // After the wrap the scan finds the only free ID.
        assert_eq!(ids.allocate("one-too-many").unwrap(), 7);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn restore_then_allocate_never_duplicates(
            ops in prop::collection::vec((any::<bool>(), 0u8..40), 1..120),
            seed in any::<u64>(),
            more in 1usize..20,
        ) {
            let mut ids = NetworkIdAllocator::new();
            for (allocate, n) in ops {
                let name = format!("net{n}");
                if allocate {
                    ids.allocate(&name).unwrap();
                } else {
                    ids.release(&name);
                }
            }
            let mut saved: Vec<(String, NetworkId)> =
                ids.assignments().map(|(n, i)| (n.to_owned(), i)).collect();
            saved.sort_by_key(|(name, id)| (u64::from(*id) ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ name.len() as u64);
            let mut restored = NetworkIdAllocator::new();
            for (name, id) in &saved {
                restored.reserve(name, *id).unwrap();
            }
            for n in 0..more {
                restored.allocate(&format!("new{n}")).unwrap();
            }
            let mut seen = BTreeSet::new();
            for (name, id) in restored.assignments() {
                prop_assert!(seen.insert(id), "{} got duplicate id {}", name, id);
                prop_assert!(id < MAX_NETWORKS);
            }
            for (name, id) in &saved {
                prop_assert_eq!(restored.id_of(name), Some(*id));
            }
        }
    }
}
