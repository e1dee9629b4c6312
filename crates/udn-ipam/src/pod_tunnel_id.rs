//! Per-network logical port tunnel IDs of Layer2 pods (upstream cluster-manager
//! `tunnelIDAllocator` plus the pod allocator's platform-port reservation).

use crate::id_pool::{IdError, NamedIds};

/// Size of the per-network pool (`types.MaxLogicalPortTunnelKey`); IDs are `0..32767`.
pub const MAX_LOGICAL_PORT_TUNNEL_KEY: u32 = 32_767;

/// With the Layer2 transit router, IDs below this are OVN platform ports and pods start here.
pub const FIRST_POD_TUNNEL_ID_WITH_TRANSIT_ROUTER: u32 = 10;

const ZERO_NAME: &str = "zero";

fn platform_port_name(id: u32) -> String {
    format!("reserved-platform-port-{id}")
}

/// Allocates pod (or legacy per-node gateway router port) tunnel IDs of one network.
///
/// ID 0 is never handed out. After restoring existing pods, call
/// [`PodTunnelIdAllocator::reserve_platform_ports`] when the network uses the transit router:
/// IDs 1..9 then go to platform ports (those already held by pods are skipped, and taken back
/// for the platform when the pod releases them), so the first new pod gets 10.
#[derive(Debug, Clone)]
pub struct PodTunnelIdAllocator {
    ids: NamedIds,
    platform_ports: bool,
}

impl Default for PodTunnelIdAllocator {
    fn default() -> Self {
        Self::new()
    }
}

impl PodTunnelIdAllocator {
    /// A fresh allocator with ID 0 reserved.
    pub fn new() -> Self {
        let mut ids = NamedIds::new("pod tunnel", MAX_LOGICAL_PORT_TUNNEL_KEY);
        // Cannot fail on an empty pool; ignoring keeps `new` infallible.
        let _ = ids.reserve(ZERO_NAME, 0);
        Self {
            ids,
            platform_ports: false,
        }
    }

    /// Reserves IDs `1..FIRST_POD_TUNNEL_ID_WITH_TRANSIT_ROUTER` for platform ports and returns
    /// the ones skipped because an owner holds them.
    pub fn reserve_platform_ports(&mut self) -> Vec<u32> {
        self.platform_ports = true;
        (1..FIRST_POD_TUNNEL_ID_WITH_TRANSIT_ROUTER)
            .filter(|id| self.ids.reserve(&platform_port_name(*id), *id).is_err())
            .collect()
    }

    /// The ID of `owner`, allocating one when it has none.
    pub fn allocate(&mut self, owner: &str) -> Result<u32, IdError> {
        self.ids.allocate(owner)
    }

    /// Gives `id` to `owner` (restore from a pod annotation). Idempotent for the same pair.
    pub fn restore(&mut self, owner: &str, id: u32) -> Result<(), IdError> {
        self.ids.reserve(owner, id)
    }

    /// Frees the ID of `owner` and returns it. A platform-port ID goes back to its platform
    /// port when platform ports are reserved.
    pub fn release(&mut self, owner: &str) -> Option<u32> {
        let id = self.ids.release(owner)?;
        if self.platform_ports && (1..FIRST_POD_TUNNEL_ID_WITH_TRANSIT_ROUTER).contains(&id) {
            let _ = self.ids.reserve(&platform_port_name(id), id);
        }
        Some(id)
    }

    /// The ID held by `owner`.
    pub fn id_of(&self, owner: &str) -> Option<u32> {
        self.ids.get(owner)
    }

    /// The owner of `id` (`zero` and `reserved-platform-port-N` for the reserved ones).
    pub fn owner_of(&self, id: u32) -> Option<&str> {
        self.ids.name_of(id)
    }

    /// Number of IDs held, reserved ones included.
    pub fn used(&self) -> u32 {
        self.ids.used()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn without_platform_ports_pods_start_at_one() {
        let mut ids = PodTunnelIdAllocator::new();
        assert_eq!(ids.allocate("ns/a").unwrap(), 1);
        assert_eq!(ids.allocate("ns/a").unwrap(), 1);
        assert_eq!(ids.allocate("ns/b").unwrap(), 2);
        assert_eq!(ids.owner_of(0), Some("zero"));
    }

    #[test]
    fn with_platform_ports_pods_start_at_ten() {
        let mut ids = PodTunnelIdAllocator::new();
        assert!(ids.reserve_platform_ports().is_empty());
        assert_eq!(ids.allocate("ns/a").unwrap(), 10);
        assert_eq!(ids.allocate("ns/b").unwrap(), 11);
        assert_eq!(ids.owner_of(3), Some("reserved-platform-port-3"));
        assert_eq!(ids.used(), 12);
    }

    #[test]
    fn upgrade_keeps_pods_on_platform_ids_and_reclaims_them() {
        let mut ids = PodTunnelIdAllocator::new();
        ids.restore("ns/old", 4).unwrap();
        ids.restore("ns/other", 120).unwrap();
        assert_eq!(ids.reserve_platform_ports(), vec![4]);
        assert_eq!(ids.id_of("ns/old"), Some(4));
        assert_eq!(ids.release("ns/old"), Some(4));
        assert_eq!(ids.owner_of(4), Some("reserved-platform-port-4"));
        assert_eq!(ids.release("ns/other"), Some(120));
        assert_eq!(ids.owner_of(120), None);
    }

    #[test]
    fn restore_errors() {
        let mut ids = PodTunnelIdAllocator::new();
        assert!(matches!(
            ids.restore("ns/a", 0),
            Err(IdError::IdTaken { .. })
        ));
        assert_eq!(
            ids.restore("ns/a", 32_767).unwrap_err().to_string(),
            "can't reserve id 32767 for the resource ns/a: pod tunnel ids are 0..32767"
        );
    }

    #[test]
    fn exhaustion_is_an_error() {
        let mut ids = PodTunnelIdAllocator::new();
        ids.reserve_platform_ports();
        for n in 10..MAX_LOGICAL_PORT_TUNNEL_KEY {
            assert_eq!(ids.allocate(&format!("p{n}")).unwrap(), n);
        }
        assert_eq!(
            ids.allocate("late").unwrap_err().to_string(),
            "failed to allocate the id for the resource late: all 32767 pod tunnel ids are in use"
        );
        ids.release("p500");
        assert_eq!(ids.allocate("late").unwrap(), 500);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn restore_random_state_then_continue(
            ops in prop::collection::vec((any::<bool>(), 0u16..60), 1..150),
            seed in any::<u64>(),
            more in 1u16..40,
        ) {
            let mut ids = PodTunnelIdAllocator::new();
            ids.reserve_platform_ports();
            let mut pods: BTreeMap<String, u32> = BTreeMap::new();
            for (allocate, n) in ops {
                let owner = format!("ns/p{n}");
                if allocate {
                    let id = ids.allocate(&owner).unwrap();
                    prop_assert!(id >= FIRST_POD_TUNNEL_ID_WITH_TRANSIT_ROUTER);
                    pods.insert(owner, id);
                } else {
                    prop_assert_eq!(ids.release(&owner), pods.remove(&owner));
                }
            }
            let mut saved: Vec<(String, u32)> = pods.clone().into_iter().collect();
            saved.sort_by_key(|(o, id)| (u64::from(*id) ^ seed).rotate_left(o.len() as u32));
            let mut restored = PodTunnelIdAllocator::new();
            for (owner, id) in &saved {
                restored.restore(owner, *id).unwrap();
            }
            prop_assert!(restored.reserve_platform_ports().is_empty());
            let mut seen: BTreeSet<u32> = pods.values().copied().collect();
            for n in 0..more {
                let id = restored.allocate(&format!("ns/new{n}")).unwrap();
                prop_assert!(id >= FIRST_POD_TUNNEL_ID_WITH_TRANSIT_ROUTER);
                prop_assert!(seen.insert(id), "duplicate id {}", id);
            }
        }
    }
}
