//! Network IDs and tunnel keys of every OVN-Kubernetes network and the NADs holding them
//! (upstream networkmanager's NAD controller in cluster-manager mode: `nads`,
//! `nadsByNetwork`, the `NetworkIDs` allocator and the tunnel-keys allocator). Pure.
//!
//! IDs are allocated once per network name and released only when the last NAD of the
//! network is gone. At start, [`NetworkIds::restore`] rebuilds everything from the NADs:
//! annotated tunnel keys first, then NADs that carry an ID (an ID already held by another
//! network is discarded), then the rest get new IDs.

use std::collections::{BTreeMap, BTreeSet};

use udn_api::annotations::NadNetworkAnnotations;
use udn_ipam::{IdError, NetworkId, NetworkIdAllocator, TunnelKeyAllocator, TunnelKeyError};

/// One OVN-Kubernetes NAD of a user-defined network, as the allocator sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NadIdentity {
    /// `namespace/name`.
    pub(crate) key: String,
    /// The network name from the config.
    pub(crate) network: String,
    /// Tunnel keys the network needs.
    pub(crate) tunnel_keys: usize,
    /// What the NAD's annotations say now.
    pub(crate) annotated: NadNetworkAnnotations,
}

/// Why a network has no ID or tunnel keys.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum IdsError {
    /// The network ID allocator refused.
    #[error("allocate network ID for network {network}")]
    Id {
        /// The network.
        network: String,
        /// The allocator's error.
        #[source]
        source: IdError,
    },
    /// The tunnel key allocator refused.
    #[error("allocate {count} tunnel keys for network {network}")]
    TunnelKeys {
        /// The network.
        network: String,
        /// Keys needed.
        count: usize,
        /// The allocator's error.
        #[source]
        source: TunnelKeyError,
    },
}

/// What a release freed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Released {
    /// The network.
    pub(crate) network: String,
    /// Its ID, if it had one.
    pub(crate) id: Option<NetworkId>,
    /// Its pool tunnel keys.
    pub(crate) tunnel_keys: Vec<u32>,
}

/// What [`NetworkIds::restore`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RestoreReport {
    /// NADs registered.
    pub(crate) nads: usize,
    /// Networks whose annotated ID was kept.
    pub(crate) kept: usize,
    /// NADs whose annotated ID clashed with another network's and was discarded.
    pub(crate) discarded: Vec<(String, NetworkId)>,
    /// NADs whose annotated tunnel keys could not be reserved.
    pub(crate) bad_tunnel_keys: Vec<String>,
    /// NADs that got a new assignment (to be written on them), with the error if it failed.
    pub(crate) failed: Vec<(String, IdsError)>,
}

/// The allocators plus which NADs reference which network.
#[derive(Debug, Default)]
pub(crate) struct NetworkIds {
    ids: NetworkIdAllocator,
    keys: TunnelKeyAllocator,
    nad_network: BTreeMap<String, String>,
    network_nads: BTreeMap<String, BTreeSet<String>>,
}

impl NetworkIds {
    /// Empty state (ID 0 held by the default network).
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Rebuild from the NADs found at start (see the module docs).
    pub(crate) fn restore(&mut self, nads: &[NadIdentity]) -> RestoreReport {
        let mut report = RestoreReport::default();
        let mut ordered: Vec<&NadIdentity> = nads.iter().collect();
        ordered.sort_by(|a, b| {
            (a.annotated.network_id.is_none(), &a.key)
                .cmp(&(b.annotated.network_id.is_none(), &b.key))
        });
        for nad in &ordered {
            if !nad.annotated.tunnel_keys.is_empty()
                && self
                    .keys
                    .reserve(&nad.network, &nad.annotated.tunnel_keys)
                    .is_err()
            {
                report.bad_tunnel_keys.push(nad.key.clone());
            }
        }
        for nad in &ordered {
            self.register(&nad.key, &nad.network);
            report.nads += 1;
            let Some(id) = nad.annotated.network_id else {
                continue;
            };
            match self.ids.id_of(&nad.network) {
                Some(held) if held == id => {}
                Some(_) => report.discarded.push((nad.key.clone(), id)),
                None => match self.ids.reserve(&nad.network, id) {
                    Ok(()) => report.kept += 1,
                    Err(_) => report.discarded.push((nad.key.clone(), id)),
                },
            }
        }
        for nad in ordered {
            if let Err(err) = self.assign(nad) {
                report.failed.push((nad.key.clone(), err));
            }
        }
        report
    }

    /// The identity annotations NAD `nad.key` must carry, allocating what is missing and
    /// registering the NAD as a holder of its network (upstream `handleNetworkAnnotations`).
    pub(crate) fn assign(&mut self, nad: &NadIdentity) -> Result<NadNetworkAnnotations, IdsError> {
        if self
            .nad_network
            .get(&nad.key)
            .is_some_and(|network| *network != nad.network)
        {
            self.forget(&nad.key);
        }
        let network = nad.network.as_str();
        let mut fresh_id = false;
        let id = match self.ids.id_of(network) {
            Some(id) => id,
            None => {
                let reserved = nad
                    .annotated
                    .network_id
                    .filter(|id| self.ids.reserve(network, *id).is_ok());
                match reserved {
                    Some(id) => id,
                    None => {
                        fresh_id = true;
                        self.ids.allocate(network).map_err(|source| IdsError::Id {
                            network: network.to_owned(),
                            source,
                        })?
                    }
                }
            }
        };
        let keys = match self.allocate_keys(network, id, nad.tunnel_keys) {
            Ok(keys) => keys,
            Err(err) => {
                if fresh_id && !self.network_nads.contains_key(network) {
                    self.ids.release(network);
                }
                return Err(err);
            }
        };
        self.register(&nad.key, network);
        Ok(NadNetworkAnnotations {
            network_name: Some(network.to_owned()),
            network_id: Some(id),
            tunnel_keys: keys,
        })
    }

    /// Tunnel keys of `network`; a network holding more pool keys than it needs now gives
    /// them back and starts over.
    fn allocate_keys(
        &mut self,
        network: &str,
        id: NetworkId,
        count: usize,
    ) -> Result<Vec<u32>, IdsError> {
        let error = |source| IdsError::TunnelKeys {
            network: network.to_owned(),
            count,
            source,
        };
        match self.keys.allocate(network, id, count) {
            Ok(keys) => Ok(keys),
            Err(TunnelKeyError::MoreThanRequested { .. }) => {
                self.keys.release(network);
                self.keys.allocate(network, id, count).map_err(error)
            }
            Err(other) => Err(error(other)),
        }
    }

    fn register(&mut self, key: &str, network: &str) {
        self.nad_network.insert(key.to_owned(), network.to_owned());
        self.network_nads
            .entry(network.to_owned())
            .or_default()
            .insert(key.to_owned());
    }

    /// NAD `key` is gone (or no longer an OVN-Kubernetes network): it stops holding its
    /// network, whose ID and keys are released when no NAD holds it any more.
    pub(crate) fn forget(&mut self, key: &str) -> Option<Released> {
        let network = self.nad_network.remove(key)?;
        let holders = self.network_nads.get_mut(&network)?;
        holders.remove(key);
        if !holders.is_empty() {
            return None;
        }
        self.network_nads.remove(&network);
        let id = self.ids.release(&network);
        let tunnel_keys = self.keys.release(&network);
        Some(Released {
            network,
            id,
            tunnel_keys,
        })
    }

    /// Forget every NAD not in `present` (after the NAD cache was relisted).
    pub(crate) fn retain(&mut self, present: &BTreeSet<String>) -> Vec<Released> {
        let gone: Vec<String> = self
            .nad_network
            .keys()
            .filter(|key| !present.contains(*key))
            .cloned()
            .collect();
        gone.iter().filter_map(|key| self.forget(key)).collect()
    }

    /// The ID of `network`.
    #[cfg(test)]
    pub(crate) fn id_of(&self, network: &str) -> Option<NetworkId> {
        self.ids.id_of(network)
    }

    /// Every (network, ID) pair, default network included.
    #[cfg(test)]
    pub(crate) fn assignments(&self) -> BTreeMap<String, NetworkId> {
        self.ids
            .assignments()
            .map(|(network, id)| (network.to_owned(), id))
            .collect()
    }
}

#[cfg(test)]
#[path = "ids_tests.rs"]
mod tests;
