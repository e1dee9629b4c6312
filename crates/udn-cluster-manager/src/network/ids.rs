//! Network IDs and tunnel keys of every OVN-Kubernetes network and the NADs holding them
//! (upstream networkmanager's NAD controller in cluster-manager mode: `nads`,
//! `nadsByNetwork`, the `NetworkIDs` allocator and the tunnel-keys allocator). Pure.
//!
//! IDs are allocated once per network name and released only when the last NAD of the
//! network is gone. At start, [`NetworkIds::restore`] rebuilds everything from the NADs:
//! annotated tunnel keys first, then NADs that carry an ID (an ID already held by another
//! network is discarded), then the rest get new IDs.
//!
//! The pools ([`NetworkPools`]) are sized from the cluster's masquerade subnets. A NAD whose
//! network finds a pool exhausted is remembered as waiting; releasing a network hands the
//! waiters back ([`NetworkIds::take_waiters`]) so they are retried at once.

use std::collections::{BTreeMap, BTreeSet};

use udn_api::annotations::NadNetworkAnnotations;
use udn_api::cluster::ClusterConfig;
use udn_ipam::{NetworkId, NetworkIdLimit, NetworkPoolError, NetworkPools, Pool};

/// The network ID limit of `cluster`: the tunnel key layout's, lowered to what the
/// masquerade subnet of each IP family the cluster runs can hold.
pub(crate) fn pool_limit(cluster: &ClusterConfig) -> NetworkIdLimit {
    NetworkIdLimit::for_masquerade_subnets(cluster.masquerade_subnets())
}

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
    /// The network ID pool refused.
    #[error("allocate network ID for network {network}")]
    Id {
        /// The network.
        network: String,
        /// The pools' error.
        #[source]
        source: Box<NetworkPoolError>,
    },
    /// The tunnel key pool refused.
    #[error("allocate {count} tunnel keys for network {network}")]
    TunnelKeys {
        /// The network.
        network: String,
        /// Keys needed.
        count: usize,
        /// The pools' error.
        #[source]
        source: Box<NetworkPoolError>,
    },
}

impl IdsError {
    /// The pool that ran out, when this is an exhaustion.
    pub(crate) fn exhausted_pool(&self) -> Option<Pool> {
        match self {
            Self::Id { source, .. } | Self::TunnelKeys { source, .. } => source.exhausted_pool(),
        }
    }

    /// The pools' error (the text conditions carry).
    pub(crate) fn pool_error(&self) -> &NetworkPoolError {
        match self {
            Self::Id { source, .. } | Self::TunnelKeys { source, .. } => source,
        }
    }
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

/// The pools plus which NADs reference which network.
#[derive(Debug, Default)]
pub(crate) struct NetworkIds {
    pools: NetworkPools,
    nad_network: BTreeMap<String, String>,
    network_nads: BTreeMap<String, BTreeSet<String>>,
    /// NADs (`namespace/name`, created or not yet) whose network found a pool exhausted.
    waiting: BTreeSet<String>,
}

impl NetworkIds {
    /// Empty state with the largest pools (ID 0 held by the default network).
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Empty state with IDs up to `limit`.
    pub(crate) fn with_limit(limit: NetworkIdLimit) -> Self {
        Self {
            pools: NetworkPools::new(limit),
            ..Self::default()
        }
    }

    /// NADs that waited for an exhausted pool, to retry now that something was released;
    /// they are forgotten (a retry that fails again waits again).
    pub(crate) fn take_waiters(&mut self) -> BTreeSet<String> {
        std::mem::take(&mut self.waiting)
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
                    .pools
                    .reserve_keys(&nad.network, &nad.annotated.tunnel_keys)
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
            match self.pools.id_of(&nad.network) {
                Some(held) if held == id => {}
                Some(_) => report.discarded.push((nad.key.clone(), id)),
                None => match self.pools.reserve_id(&nad.network, id) {
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
        let result = self.assign_inner(nad);
        match &result {
            Err(err) if err.exhausted_pool().is_some() => {
                self.waiting.insert(nad.key.clone());
            }
            _ => {
                self.waiting.remove(&nad.key);
            }
        }
        result
    }

    fn assign_inner(&mut self, nad: &NadIdentity) -> Result<NadNetworkAnnotations, IdsError> {
        if self
            .nad_network
            .get(&nad.key)
            .is_some_and(|network| *network != nad.network)
        {
            self.forget(&nad.key);
        }
        let network = nad.network.as_str();
        let mut fresh_id = false;
        let id = match self.pools.id_of(network) {
            Some(id) => id,
            None => {
                let reserved = nad
                    .annotated
                    .network_id
                    .filter(|id| self.pools.reserve_id(network, *id).is_ok());
                match reserved {
                    Some(id) => id,
                    None => {
                        fresh_id = true;
                        self.pools
                            .allocate_id(network)
                            .map_err(|source| IdsError::Id {
                                network: network.to_owned(),
                                source: Box::new(source),
                            })?
                    }
                }
            }
        };
        let keys = match self.pools.allocate_keys(network, id, nad.tunnel_keys) {
            Ok(keys) => keys,
            Err(source) => {
                if fresh_id && !self.network_nads.contains_key(network) {
                    self.pools.release(network);
                }
                return Err(IdsError::TunnelKeys {
                    network: network.to_owned(),
                    count: nad.tunnel_keys,
                    source: Box::new(source),
                });
            }
        };
        self.register(&nad.key, network);
        Ok(NadNetworkAnnotations {
            network_name: Some(network.to_owned()),
            network_id: Some(id),
            tunnel_keys: keys,
        })
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
        let (id, tunnel_keys) = self.pools.release(&network);
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
        self.pools.id_of(network)
    }

    /// Every (network, ID) pair, default network included.
    #[cfg(test)]
    pub(crate) fn assignments(&self) -> BTreeMap<String, NetworkId> {
        self.pools
            .assignments()
            .map(|(network, id)| (network.to_owned(), id))
            .collect()
    }
}

#[cfg(test)]
#[path = "ids_tests.rs"]
mod tests;
