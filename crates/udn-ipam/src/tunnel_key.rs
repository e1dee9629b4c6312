//! OVN datapath tunnel keys for networks (upstream `allocator/id/tunnelkeyallocator.go`).
//!
//! The keys live in OVN's global key range `[BASE_TRANSIT_SWITCH_TUNNEL_KEY, 2^24-1]`. Key
//! `BASE_TRANSIT_SWITCH_TUNNEL_KEY + networkID` is the network's transit switch key, derived,
//! never stored; the other ("free") keys are handed out round-robin above the transit keys.
//!
//! Two layouts:
//! - upstream's ([`TunnelKeyAllocator::new`]): transit keys for IDs `0..4096`, free keys from
//!   [`FIRST_ALLOCATABLE_TUNNEL_KEY`] (16715779);
//! - udn's ([`TunnelKeyAllocator::for_network_id_pool`]): transit keys for IDs
//!   `0..NETWORK_ID_POOL_SIZE` (`..=16744449`), free keys from [`FIRST_FREE_TUNNEL_KEY`]
//!   (16744450), one per possible network. Keys an older layout handed out between 16715779
//!   and 16744449 are still accepted by [`TunnelKeyAllocator::reserve`] and kept; each one is
//!   the transit key of an ID that must then stay unused ([`TunnelKeyAllocator::network_of`]
//!   on the ID's transit key tells).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::id_pool::RoundRobinPool;
use crate::network_id::{MAX_NETWORKS, NetworkId};
use crate::network_id_limit::NETWORK_ID_POOL_SIZE;

/// The transit switch tunnel key of network 0; network N uses this plus N.
pub const BASE_TRANSIT_SWITCH_TUNNEL_KEY: u32 = 16_711_683;

/// First key of upstream's allocatable pool (`BASE_TRANSIT_SWITCH_TUNNEL_KEY + MAX_NETWORKS`),
/// and the lowest free key either layout accepts back from an annotation.
pub const FIRST_ALLOCATABLE_TUNNEL_KEY: u32 = BASE_TRANSIT_SWITCH_TUNNEL_KEY + MAX_NETWORKS;

/// First free key of udn's layout: just above the transit keys of every possible network ID.
pub const FIRST_FREE_TUNNEL_KEY: u32 = BASE_TRANSIT_SWITCH_TUNNEL_KEY + NETWORK_ID_POOL_SIZE;

/// Largest OVN datapath key (`2^24 - 1`).
pub const MAX_DATAPATH_TUNNEL_KEY: u32 = (1 << 24) - 1;

const POOL_SIZE: u32 = MAX_DATAPATH_TUNNEL_KEY - FIRST_ALLOCATABLE_TUNNEL_KEY + 1;

/// How many tunnel keys a network needs (upstream `getNumberOfTunnelKeys`): 2 for a primary
/// Layer2 UDN (its switch and its transit router), 0 for everything else.
pub fn required_tunnel_keys(is_default: bool, is_layer2: bool, is_primary: bool) -> usize {
    if !is_default && is_layer2 && is_primary {
        2
    } else {
        0
    }
}

/// Errors of the tunnel key allocator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TunnelKeyError {
    /// The pool has no free key.
    #[error("failed to allocate the id for the resource {network}: all tunnel keys are in use")]
    Exhausted {
        /// The network that asked.
        network: String,
    },
    /// The network holds more pool keys than it now asks for.
    #[error(
        "the resource {network} already has more ids allocated {} than requested {requested}",
        go_list(existing)
    )]
    MoreThanRequested {
        /// The network.
        network: String,
        /// Pool keys it holds.
        existing: Vec<u32>,
        /// Pool keys requested.
        requested: usize,
    },
    /// The network already holds other keys.
    #[error(
        "can't reserve ids {} for the resource {network}. It is already allocated with different ids {}",
        go_list(requested),
        go_list(existing)
    )]
    DifferentKeys {
        /// The network.
        network: String,
        /// Pool keys asked for.
        requested: Vec<u32>,
        /// Pool keys it holds.
        existing: Vec<u32>,
    },
    /// A key belongs to another network.
    #[error("id {key} is already reserved by another resource ({holder}), requested by {network}")]
    KeyTaken {
        /// The key.
        key: u32,
        /// The network that asked.
        network: String,
        /// The network holding it.
        holder: String,
    },
    /// A key is neither the network's preserved key nor in the pool.
    #[error(
        "can't reserve tunnel key {key} for {network}: allocatable keys are {FIRST_ALLOCATABLE_TUNNEL_KEY}..={MAX_DATAPATH_TUNNEL_KEY}"
    )]
    OutOfRange {
        /// The key.
        key: u32,
        /// The network that asked.
        network: String,
    },
}

/// Go's `%v` of an int slice: `[1 2 3]`.
fn go_list(values: &[u32]) -> String {
    let mut out = String::from("[");
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{v}");
    }
    out.push(']');
    out
}

/// Allocates tunnel keys per network name.
#[derive(Debug, Clone)]
pub struct TunnelKeyAllocator {
    /// Network IDs `0..transit_ids` have a derived transit key.
    transit_ids: u32,
    /// Keys `FIRST_ALLOCATABLE_TUNNEL_KEY + offset`; allocation starts at the layout's first
    /// free key, reservation accepts the whole range.
    pool: RoundRobinPool,
    /// Pool keys (absolute values) per network, in allocation order.
    by_network: BTreeMap<String, Vec<u32>>,
    holder: BTreeMap<u32, String>,
}

impl Default for TunnelKeyAllocator {
    fn default() -> Self {
        Self::new()
    }
}

impl TunnelKeyAllocator {
    /// An empty allocator with upstream's layout (transit keys for IDs below 4096, free keys
    /// from [`FIRST_ALLOCATABLE_TUNNEL_KEY`]).
    pub fn new() -> Self {
        Self::with_transit_ids(MAX_NETWORKS)
    }

    /// An empty allocator with udn's layout: transit keys for every ID below
    /// [`NETWORK_ID_POOL_SIZE`], free keys from [`FIRST_FREE_TUNNEL_KEY`].
    pub fn for_network_id_pool() -> Self {
        Self::with_transit_ids(NETWORK_ID_POOL_SIZE)
    }

    fn with_transit_ids(transit_ids: u32) -> Self {
        let floor = transit_ids.saturating_sub(MAX_NETWORKS);
        Self {
            transit_ids,
            pool: RoundRobinPool::with_floor(POOL_SIZE, floor),
            by_network: BTreeMap::new(),
            holder: BTreeMap::new(),
        }
    }

    /// The first key [`TunnelKeyAllocator::allocate`] hands out from the pool.
    pub fn first_free_key(&self) -> u32 {
        BASE_TRANSIT_SWITCH_TUNNEL_KEY + self.transit_ids.max(MAX_NETWORKS)
    }

    /// Number of keys [`TunnelKeyAllocator::allocate`] can hand out from the pool.
    pub fn free_capacity(&self) -> u32 {
        MAX_DATAPATH_TUNNEL_KEY + 1 - self.first_free_key()
    }

    /// The transit switch key of `network_id`, when the layout derives one for it.
    pub fn transit_key(&self, network_id: NetworkId) -> Option<u32> {
        (network_id < self.transit_ids).then(|| BASE_TRANSIT_SWITCH_TUNNEL_KEY + network_id)
    }

    /// The `count` keys of `network` (upstream `AllocateKeys`). With a network ID that has a
    /// transit key ([`TunnelKeyAllocator::transit_key`]) the first key is that one; the others
    /// come from the pool. Keys already held are kept and missing ones added; holding more pool keys
    /// than needed is an error. On error nothing new stays allocated.
    pub fn allocate(
        &mut self,
        network: &str,
        network_id: NetworkId,
        count: usize,
    ) -> Result<Vec<u32>, TunnelKeyError> {
        let mut keys = Vec::with_capacity(count);
        let mut from_pool = count;
        if let Some(transit) = self.transit_key(network_id).filter(|_| count > 0) {
            keys.push(transit);
            from_pool -= 1;
        }
        let mut held = self.by_network.get(network).cloned().unwrap_or_default();
        if held.len() > from_pool {
            return Err(TunnelKeyError::MoreThanRequested {
                network: network.to_owned(),
                existing: held,
                requested: from_pool,
            });
        }
        let already = held.len();
        while held.len() < from_pool {
            let Some(offset) = self.pool.allocate_next() else {
                for key in held.drain(already..) {
                    self.pool.release(key - FIRST_ALLOCATABLE_TUNNEL_KEY);
                }
                return Err(TunnelKeyError::Exhausted {
                    network: network.to_owned(),
                });
            };
            held.push(FIRST_ALLOCATABLE_TUNNEL_KEY + offset);
        }
        for key in &held[already..] {
            self.holder.insert(*key, network.to_owned());
        }
        keys.extend_from_slice(&held);
        if !held.is_empty() {
            self.by_network.insert(network.to_owned(), held);
        }
        Ok(keys)
    }

    /// Restores the keys annotated on a NAD of `network` (upstream `ReserveKeys`). A first key in
    /// the preserved transit-switch range is not stored; the rest must be pool keys (from
    /// [`FIRST_ALLOCATABLE_TUNNEL_KEY`] up, whatever the layout, so keys handed out by an older
    /// layout are kept). Idempotent for the same keys; all-or-nothing.
    pub fn reserve(&mut self, network: &str, keys: &[u32]) -> Result<(), TunnelKeyError> {
        let transit_end = BASE_TRANSIT_SWITCH_TUNNEL_KEY + self.transit_ids;
        let pool_keys = match keys.split_first() {
            Some((first, rest))
                if (BASE_TRANSIT_SWITCH_TUNNEL_KEY..transit_end).contains(first) =>
            {
                rest
            }
            _ => keys,
        };
        if let Some(existing) = self.by_network.get(network) {
            if existing.as_slice() == pool_keys {
                return Ok(());
            }
            return Err(TunnelKeyError::DifferentKeys {
                network: network.to_owned(),
                requested: pool_keys.to_vec(),
                existing: existing.clone(),
            });
        }
        for (i, key) in pool_keys.iter().enumerate() {
            if !(FIRST_ALLOCATABLE_TUNNEL_KEY..=MAX_DATAPATH_TUNNEL_KEY).contains(key) {
                return Err(TunnelKeyError::OutOfRange {
                    key: *key,
                    network: network.to_owned(),
                });
            }
            let taken = self
                .holder
                .get(key)
                .cloned()
                .or_else(|| pool_keys[..i].contains(key).then(|| network.to_owned()));
            if let Some(holder) = taken {
                return Err(TunnelKeyError::KeyTaken {
                    key: *key,
                    network: network.to_owned(),
                    holder,
                });
            }
        }
        for key in pool_keys {
            self.pool.reserve(key - FIRST_ALLOCATABLE_TUNNEL_KEY);
            self.holder.insert(*key, network.to_owned());
        }
        if !pool_keys.is_empty() {
            self.by_network
                .insert(network.to_owned(), pool_keys.to_vec());
        }
        Ok(())
    }

    /// Frees the pool keys of `network`, returning them.
    pub fn release(&mut self, network: &str) -> Vec<u32> {
        let keys = self.by_network.remove(network).unwrap_or_default();
        for key in &keys {
            self.pool.release(key - FIRST_ALLOCATABLE_TUNNEL_KEY);
            self.holder.remove(key);
        }
        keys
    }

    /// The pool keys held by `network` (the preserved key is not stored).
    pub fn pool_keys_of(&self, network: &str) -> &[u32] {
        self.by_network.get(network).map_or(&[], Vec::as_slice)
    }

    /// The network holding pool key `key`.
    pub fn network_of(&self, key: u32) -> Option<&str> {
        self.holder.get(&key).map(String::as_str)
    }

    /// Number of pool keys held.
    pub fn used(&self) -> u32 {
        self.pool.used()
    }

    /// Size of the pool (keys kept from an older layout included).
    pub fn capacity(&self) -> u32 {
        self.pool.size()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn constants() {
        assert_eq!(FIRST_ALLOCATABLE_TUNNEL_KEY, 16_715_779);
        assert_eq!(MAX_DATAPATH_TUNNEL_KEY, 16_777_215);
        assert_eq!(POOL_SIZE, 61_437);
    }

    #[test]
    fn required_keys() {
        assert_eq!(required_tunnel_keys(false, true, true), 2);
        assert_eq!(required_tunnel_keys(false, true, false), 0);
        assert_eq!(required_tunnel_keys(false, false, true), 0);
        assert_eq!(required_tunnel_keys(true, true, true), 0);
    }

    #[test]
    fn first_primary_layer2_network() {
        let mut keys = TunnelKeyAllocator::new();
        assert_eq!(
            keys.allocate("ns1_blue", 1, 2).unwrap(),
            vec![16_711_684, 16_715_779]
        );
        // Idempotent.
        assert_eq!(
            keys.allocate("ns1_blue", 1, 2).unwrap(),
            vec![16_711_684, 16_715_779]
        );
        assert_eq!(
            keys.allocate("ns2_red", 5, 2).unwrap(),
            vec![16_711_688, 16_715_780]
        );
        assert_eq!(keys.allocate("l3", 6, 0).unwrap(), Vec::<u32>::new());
        assert_eq!(keys.used(), 2);
        assert_eq!(keys.network_of(16_715_780), Some("ns2_red"));
    }

    #[test]
    fn more_than_requested() {
        let mut keys = TunnelKeyAllocator::new();
        keys.allocate("blue", 1, 3).unwrap();
        assert_eq!(
            keys.allocate("blue", 1, 2).unwrap_err().to_string(),
            "the resource blue already has more ids allocated [16715779 16715780] than requested 1"
        );
    }

    #[test]
    fn reserve_and_conflicts() {
        let mut keys = TunnelKeyAllocator::new();
        keys.reserve("blue", &[16_711_684, 16_715_790]).unwrap();
        keys.reserve("blue", &[16_711_684, 16_715_790]).unwrap();
        assert_eq!(keys.pool_keys_of("blue"), &[16_715_790]);
        assert_eq!(
            keys.reserve("red", &[16_711_685, 16_715_790])
                .unwrap_err()
                .to_string(),
            "id 16715790 is already reserved by another resource (blue), requested by red"
        );
        assert_eq!(
            keys.reserve("blue", &[16_711_684, 16_715_791])
                .unwrap_err()
                .to_string(),
            "can't reserve ids [16715791] for the resource blue. It is already allocated with different ids [16715790]"
        );
        assert_eq!(
            keys.reserve("green", &[16_711_690, 12])
                .unwrap_err()
                .to_string(),
            "can't reserve tunnel key 12 for green: allocatable keys are 16715779..=16777215"
        );
        // Failed reservations leave nothing behind.
        assert_eq!(keys.pool_keys_of("red"), &[] as &[u32]);
        assert_eq!(keys.used(), 1);
        // Reserving does not move the cursor: the first allocation still starts at the pool base.
        assert_eq!(
            keys.allocate("red", 2, 2).unwrap(),
            vec![16_711_685, 16_715_779]
        );
        assert_eq!(keys.release("blue"), vec![16_715_790]);
        assert_eq!(keys.used(), 1);
    }

    #[test]
    fn exhaustion_is_an_error_and_rolls_back() {
        let mut keys = TunnelKeyAllocator::new();
        keys.allocate("big", MAX_NETWORKS, POOL_SIZE as usize - 1)
            .unwrap();
        assert_eq!(keys.used(), POOL_SIZE - 1);
        let err = keys.allocate("late", 7, 3).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to allocate the id for the resource late: all tunnel keys are in use"
        );
        assert_eq!(keys.used(), POOL_SIZE - 1);
        assert_eq!(keys.pool_keys_of("late"), &[] as &[u32]);
        assert_eq!(keys.allocate("late", 7, 2).unwrap().len(), 2);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn no_duplicates_and_restore(
            ops in prop::collection::vec((any::<bool>(), 0u32..30, 0usize..4), 1..80),
            seed in any::<u64>(),
            more in 1u32..10,
        ) {
            let mut keys = TunnelKeyAllocator::new();
            let mut annotated: BTreeMap<String, Vec<u32>> = BTreeMap::new();
            for (allocate, n, count) in ops {
                let name = format!("net{n}");
                if allocate {
                    if let Ok(k) = keys.allocate(&name, n + 1, count) {
                        annotated.insert(name, k);
                    }
                } else {
                    keys.release(&name);
                    annotated.remove(&name);
                }
            }
            let mut order: Vec<(String, Vec<u32>)> = annotated.into_iter().collect();
            order.sort_by_key(|(name, _)| name.bytes().fold(seed, |h, b| h.rotate_left(5) ^ u64::from(b)));
            let mut restored = TunnelKeyAllocator::new();
            for (name, k) in &order {
                restored.reserve(name, k).unwrap();
            }
            for n in 0..more {
                restored.allocate(&format!("new{n}"), 100 + n, 2).unwrap();
            }
            let mut seen = BTreeSet::new();
            for (network, held) in &restored.by_network {
                for key in held {
                    prop_assert!(seen.insert(*key), "{} duplicate key {}", network, key);
                    prop_assert!((FIRST_ALLOCATABLE_TUNNEL_KEY..=MAX_DATAPATH_TUNNEL_KEY).contains(key));
                }
            }
            prop_assert_eq!(seen.len() as u32, restored.used());
        }
    }
}
