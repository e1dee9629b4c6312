//! [`NetworkPools`]: network IDs and tunnel keys together, sized for tens of thousands of
//! networks (udn's layout), with exhaustion reported per [`Pool`].
//!
//! The two allocators share OVN's global tunnel key range: ID `N` implies the transit key
//! `16711683 + N`, and free keys are handed out above every possible transit key
//! ([`TunnelKeyAllocator::for_network_id_pool`]). Keys an older layout handed out inside today's transit range are
//! kept; the ID whose transit key such a key is stays unused while the key is held, so no
//! two datapaths ever get the same key.

use crate::id_pool::IdError;
use crate::network_id::{NetworkId, NetworkIdAllocator};
use crate::network_id_limit::{NetworkIdLimit, Pool};
use crate::tunnel_key::{
    BASE_TRANSIT_SWITCH_TUNNEL_KEY, MAX_DATAPATH_TUNNEL_KEY, TunnelKeyAllocator, TunnelKeyError,
};

/// Why [`NetworkPools`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkPoolError {
    /// A pool has nothing left for the network; it may have once a network is released.
    #[error("the {pool} pool is exhausted: {detail}")]
    Exhausted {
        /// The pool.
        pool: Pool,
        /// The network that asked.
        network: String,
        /// What is used up and what bounds it.
        detail: String,
    },
    /// An ID could not be given to the network (restore from an annotation).
    #[error("reserve network ID {id} for network {network}")]
    Id {
        /// The network.
        network: String,
        /// The ID asked for.
        id: NetworkId,
        /// The allocator's refusal.
        #[source]
        source: IdError,
    },
    /// The ID's transit key is held as a free key by a network (kept from an older layout).
    #[error(
        "network ID {id} of network {network} cannot be used: its transit tunnel key {key} is held by network {holder}"
    )]
    TransitKeyHeld {
        /// The ID.
        id: NetworkId,
        /// The network that asked.
        network: String,
        /// The transit key.
        key: u32,
        /// The network holding it.
        holder: String,
    },
    /// A kept free key is the transit key of an ID another network holds.
    #[error(
        "tunnel key {key} of network {network} is the transit tunnel key of network ID {id}, held by network {holder}"
    )]
    KeyIsHeldTransitKey {
        /// The key.
        key: u32,
        /// The network that asked.
        network: String,
        /// The ID whose transit key it is.
        id: NetworkId,
        /// The network holding that ID.
        holder: String,
    },
    /// The tunnel key allocator refused (not an exhaustion).
    #[error("tunnel keys of network {network}")]
    TunnelKeys {
        /// The network.
        network: String,
        /// The allocator's refusal.
        #[source]
        source: TunnelKeyError,
    },
}

impl NetworkPoolError {
    /// The pool that ran out, when this is an exhaustion.
    pub fn exhausted_pool(&self) -> Option<Pool> {
        match self {
            Self::Exhausted { pool, .. } => Some(*pool),
            Self::Id { .. }
            | Self::TransitKeyHeld { .. }
            | Self::KeyIsHeldTransitKey { .. }
            | Self::TunnelKeys { .. } => None,
        }
    }
}

/// Network IDs and tunnel keys by network name.
#[derive(Debug, Clone)]
pub struct NetworkPools {
    limit: NetworkIdLimit,
    ids: NetworkIdAllocator,
    keys: TunnelKeyAllocator,
}

impl Default for NetworkPools {
    fn default() -> Self {
        Self::new(NetworkIdLimit::default())
    }
}

impl NetworkPools {
    /// Empty pools: IDs `0..=limit.max_id` (0 held by the default network), udn's tunnel key
    /// layout.
    pub fn new(limit: NetworkIdLimit) -> Self {
        Self {
            limit,
            ids: NetworkIdAllocator::with_size(limit.pool_size()),
            keys: TunnelKeyAllocator::for_network_id_pool(),
        }
    }

    /// The ID pool's limit.
    pub fn limit(&self) -> NetworkIdLimit {
        self.limit
    }

    /// The ID of `network`.
    pub fn id_of(&self, network: &str) -> Option<NetworkId> {
        self.ids.id_of(network)
    }

    /// Every (network, ID) pair, default network included, ordered by network name.
    pub fn assignments(&self) -> impl Iterator<Item = (&str, NetworkId)> {
        self.ids.assignments()
    }

    /// IDs held, the default network's included.
    pub fn used_ids(&self) -> u32 {
        self.ids.used()
    }

    /// Free tunnel keys held.
    pub fn used_tunnel_keys(&self) -> u32 {
        self.keys.used()
    }

    /// The free (pool) tunnel keys of `network`.
    pub fn pool_keys_of(&self, network: &str) -> &[u32] {
        self.keys.pool_keys_of(network)
    }

    /// The network holding free key `key`.
    pub fn network_of_key(&self, key: u32) -> Option<&str> {
        self.keys.network_of(key)
    }

    /// The network whose free key is the transit key of `id`.
    fn transit_key_holder(&self, id: NetworkId) -> Option<(u32, &str)> {
        let key = BASE_TRANSIT_SWITCH_TUNNEL_KEY.checked_add(id)?;
        self.keys.network_of(key).map(|holder| (key, holder))
    }

    /// Gives `id` to `network` (restore from an annotation). Idempotent for the same pair.
    pub fn reserve_id(&mut self, network: &str, id: NetworkId) -> Result<(), NetworkPoolError> {
        if self.ids.id_of(network) != Some(id)
            && let Some((key, holder)) = self.transit_key_holder(id)
        {
            return Err(NetworkPoolError::TransitKeyHeld {
                id,
                network: network.to_owned(),
                key,
                holder: holder.to_owned(),
            });
        }
        self.ids
            .reserve(network, id)
            .map_err(|source| NetworkPoolError::Id {
                network: network.to_owned(),
                id,
                source,
            })
    }

    /// The ID of `network`, allocating the next free one (round-robin) when it has none. IDs
    /// whose transit key is held as a free key are skipped.
    pub fn allocate_id(&mut self, network: &str) -> Result<NetworkId, NetworkPoolError> {
        let keys = &self.keys;
        let blocked = |id: NetworkId| {
            BASE_TRANSIT_SWITCH_TUNNEL_KEY
                .checked_add(id)
                .is_none_or(|key| keys.network_of(key).is_some())
        };
        match self.ids.allocate_skipping(network, blocked) {
            Ok(id) => Ok(id),
            Err(IdError::Exhausted { .. }) => {
                let detail = match self.limit.max_id {
                    0 => format!("no network ID fits {}", self.limit.bound),
                    max => format!(
                        "network IDs 1..={max} are all taken (bounded by {})",
                        self.limit.bound
                    ),
                };
                Err(NetworkPoolError::Exhausted {
                    pool: self.limit.pool(),
                    network: network.to_owned(),
                    detail,
                })
            }
            Err(source) => Err(NetworkPoolError::Id {
                network: network.to_owned(),
                id: 0,
                source,
            }),
        }
    }

    /// Restores the tunnel keys annotated on a NAD of `network`. A kept free key that is the
    /// transit key of an ID another network holds is refused (the network then gets new keys).
    pub fn reserve_keys(&mut self, network: &str, keys: &[u32]) -> Result<(), NetworkPoolError> {
        for key in keys.iter().skip(1) {
            let id = key.saturating_sub(BASE_TRANSIT_SWITCH_TUNNEL_KEY);
            if self.keys.transit_key(id) == Some(*key)
                && let Some(holder) = self.ids.network_of(id)
            {
                return Err(NetworkPoolError::KeyIsHeldTransitKey {
                    key: *key,
                    network: network.to_owned(),
                    id,
                    holder: holder.to_owned(),
                });
            }
        }
        self.keys
            .reserve(network, keys)
            .map_err(|source| NetworkPoolError::TunnelKeys {
                network: network.to_owned(),
                source,
            })
    }

    /// The `count` tunnel keys of `network` with ID `id`: its transit key first, then free
    /// keys. Keys it holds are kept; a network holding more free keys than it now needs gives
    /// them back and gets new ones. On error nothing new stays allocated.
    pub fn allocate_keys(
        &mut self,
        network: &str,
        id: NetworkId,
        count: usize,
    ) -> Result<Vec<u32>, NetworkPoolError> {
        let result = match self.keys.allocate(network, id, count) {
            Err(TunnelKeyError::MoreThanRequested { .. }) => {
                self.keys.release(network);
                self.keys.allocate(network, id, count)
            }
            other => other,
        };
        result.map_err(|source| match source {
            TunnelKeyError::Exhausted { .. } => NetworkPoolError::Exhausted {
                pool: Pool::TunnelKeys,
                network: network.to_owned(),
                detail: format!(
                    "free tunnel keys {}..={MAX_DATAPATH_TUNNEL_KEY} are all taken",
                    self.keys.first_free_key()
                ),
            },
            source => NetworkPoolError::TunnelKeys {
                network: network.to_owned(),
                source,
            },
        })
    }

    /// Frees the ID and tunnel keys of `network`.
    pub fn release(&mut self, network: &str) -> (Option<NetworkId>, Vec<u32>) {
        (self.ids.release(network), self.keys.release(network))
    }
}

#[cfg(test)]
#[path = "network_pools/tests.rs"]
mod tests;
