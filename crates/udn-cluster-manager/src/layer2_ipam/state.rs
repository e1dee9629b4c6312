//! Per-network pod IP and tunnel-ID allocators, what each pod and each IPAMClaim holds, and
//! the per-pod plan (upstream `PodAllocator.reconcile` / `allocatePodAnnotationWithRollback`).
//! Synchronous; the controller holds it under a mutex and never across an await.
//!
//! Owners: a pod attachment owns its tunnel ID and (without a claim) its IPs as
//! `<nad key>/<pod uid>` (upstream's tunnel-ID owner name); IPs of a persistent attachment are
//! owned by the claim (`ipamclaim:<ns>/<name>`), so they outlive the pod. In the legacy Layer2
//! topology a node owns one tunnel ID per primary Layer2 network as `<network>_<node>`
//! (`node_tunnels`).

use std::collections::{BTreeMap, BTreeSet};

use ipnetwork::IpNetwork;
use tracing::{info, warn};
use udn_api::annotations::PodNetworks;
use udn_api::crd::NetworkTopology;
use udn_api::netconf::UserDefinedNetInfo;
use udn_ipam::{PodIpAllocator, PodIpConfig, PodTunnelIdAllocator};

use super::attachments::Attachment;
use super::plan::{AttachmentContext, plan_attachment};
use crate::dynamic_udn::scope::CurrentScope;

mod node_tunnels;

use node_tunnels::KnownNode;
pub(crate) use node_tunnels::Layer2Topology;

/// IP owner name of a claim.
pub(crate) fn claim_owner(claim_key: &str) -> String {
    format!("ipamclaim:{claim_key}")
}

/// `<ns>/<nad>` of a possibly indexed key `<ns>/<nad>/<i>`.
pub(crate) fn base_nad_key(key: &str) -> &str {
    match key.match_indices('/').nth(1) {
        Some((at, _)) => key.get(..at).unwrap_or(key),
        None => key,
    }
}

/// The allocators of one network.
#[derive(Debug)]
pub(crate) struct Pools {
    pub(crate) info: UserDefinedNetInfo,
    pub(crate) ips: Option<PodIpAllocator>,
    pub(crate) tunnels: Option<PodTunnelIdAllocator>,
    /// A UDN/CUDN owns every NAD: Dynamic UDN decides which nodes get a gateway router
    /// tunnel ID.
    pub(crate) gated: bool,
}

/// What one pod attachment holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holding {
    pub(crate) network: String,
    pub(crate) owner: String,
    /// The owner holds IPs (false for claim-owned or no-IPAM attachments).
    pub(crate) ips: bool,
    pub(crate) tunnel: bool,
}

#[derive(Debug, Default)]
struct PodRecord {
    uid: String,
    holdings: Vec<Holding>,
}

/// A pod as restore sees it.
#[derive(Debug, Clone)]
pub(crate) struct PodSnapshot {
    pub(crate) key: String,
    pub(crate) uid: String,
    /// Scheduled, not host-network, not completed.
    pub(crate) active: bool,
    pub(crate) networks: PodNetworks,
}

/// A claim as the allocator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaimView {
    pub(crate) key: String,
    pub(crate) network: String,
    pub(crate) ips: Vec<IpNetwork>,
}

/// A claim status to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaimWrite {
    pub(crate) key: String,
    pub(crate) pod: String,
    /// The allocated IPs (empty on failure).
    pub(crate) ips: Vec<IpNetwork>,
    /// `(reason, message)` of a failed allocation.
    pub(crate) failure: Option<(&'static str, String)>,
}

/// An allocation error of one attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AttachmentError {
    pub(crate) message: String,
    /// Worth retrying (a missing claim, an exhausted pool).
    pub(crate) retry: bool,
}

/// What one pod reconcile should write.
#[derive(Debug, Default)]
pub(crate) struct PodPlan {
    /// The whole `k8s.ovn.org/pod-networks` value.
    pub(crate) desired: PodNetworks,
    /// Allocations made by this plan (rolled back if the writes fail).
    pub(crate) new: Vec<Holding>,
    pub(crate) claim_writes: Vec<ClaimWrite>,
    pub(crate) errors: Vec<AttachmentError>,
    pub(crate) touched: BTreeSet<String>,
}

/// The pod being planned.
#[derive(Debug)]
pub(crate) struct PodInput<'a> {
    pub(crate) key: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
    pub(crate) uid: &'a str,
    pub(crate) existing: &'a PodNetworks,
    pub(crate) attachments: &'a [Attachment],
}

/// All pools and holdings.
#[derive(Debug, Default)]
pub(crate) struct IpamState {
    networks: BTreeMap<String, Pools>,
    pods: BTreeMap<String, PodRecord>,
    /// Claim key -> network of claims holding IPs.
    claims: BTreeMap<String, String>,
    /// Decides whether nodes get gateway router tunnel IDs and pods skip the platform IDs.
    topology: Layer2Topology,
    /// The nodes' gateway router tunnel ID annotations.
    nodes: BTreeMap<String, KnownNode>,
    /// The Dynamic UDN scope the node plans follow.
    scope: CurrentScope,
}

fn pool_config(info: &UserDefinedNetInfo) -> PodIpConfig {
    PodIpConfig {
        subnets: info.subnets.iter().map(|s| s.cidr).collect(),
        exclude_subnets: info.exclude_subnets.clone(),
        reserved_subnets: info.reserved_subnets.clone(),
        infrastructure_subnets: info.infrastructure_subnets.clone(),
        primary_layer2: info.primary && info.topology == NetworkTopology::Layer2,
        default_gateway_ips: info.default_gateway_ips.clone(),
    }
}

impl IpamState {
    /// Brings one network's pools in line with its definition, restoring new pools from the
    /// nodes' gateway router tunnel IDs (legacy topology), the claims, then the annotations
    /// of active pods (in key order), then reserving the platform tunnel IDs (transit router
    /// topology). Returns whether anything changed.
    pub(crate) fn sync_network(
        &mut self,
        name: &str,
        info: Option<&UserDefinedNetInfo>,
        nad_keys: &BTreeSet<String>,
        pods: &[PodSnapshot],
        claims: &[ClaimView],
    ) -> bool {
        let current = self.networks.get(name).map(|pools| &pools.info);
        if current == info {
            return false;
        }
        self.drop_network(name);
        let Some(info) = info else {
            info!(network = %name, "network gone: dropped its pod allocators");
            return true;
        };
        let ips = if info.subnets.is_empty() {
            None
        } else {
            match PodIpAllocator::new(name, &pool_config(info)) {
                Ok(pool) => Some(pool),
                Err(error) => {
                    warn!(network = %name, error = %error, "network has no usable pod IP pool");
                    return true;
                }
            }
        };
        let tunnels = (info.topology == NetworkTopology::Layer2).then(PodTunnelIdAllocator::new);
        self.networks.insert(
            name.to_owned(),
            Pools {
                info: info.clone(),
                ips,
                tunnels,
                gated: false,
            },
        );
        self.restore_node_tunnels(name);
        for claim in claims.iter().filter(|c| c.network == name) {
            self.ensure_claim(claim);
        }
        for pod in pods.iter().filter(|pod| pod.active) {
            self.restore_pod(name, nad_keys, pod);
        }
        if self.topology == Layer2Topology::TransitRouter
            && let Some(tunnels) = self.networks.get_mut(name).and_then(|p| p.tunnels.as_mut())
        {
            tunnels.reserve_platform_ports();
        }
        true
    }

    fn drop_network(&mut self, name: &str) {
        if self.networks.remove(name).is_none() {
            return;
        }
        for record in self.pods.values_mut() {
            record.holdings.retain(|h| h.network != name);
        }
        self.claims.retain(|_, network| network != name);
    }

    fn restore_pod(&mut self, name: &str, nad_keys: &BTreeSet<String>, pod: &PodSnapshot) {
        let Some(pools) = self.networks.get_mut(name) else {
            return;
        };
        let record = self.pods.entry(pod.key.clone()).or_default();
        record.uid.clone_from(&pod.uid);
        for (key, entry) in &pod.networks {
            if !nad_keys.contains(base_nad_key(key)) {
                continue;
            }
            let owner = format!("{key}/{}", pod.uid);
            let mut holding = Holding {
                network: name.to_owned(),
                owner: owner.clone(),
                ips: false,
                tunnel: false,
            };
            if let Some(pool) = pools.ips.as_mut()
                && !entry.ip_addresses.is_empty()
            {
                match pool.restore(&owner, &entry.ip_addresses) {
                    Ok(()) => holding.ips = true,
                    Err(error) if is_claim_held(pool, &entry.ip_addresses) => {
                        tracing::debug!(pod = %pod.key, error = %error, "IPs held by a claim");
                    }
                    Err(error) => {
                        warn!(pod = %pod.key, network = %name, error = %error, "cannot restore pod IPs");
                    }
                }
            }
            if let Some(tunnels) = pools.tunnels.as_mut()
                && entry.tunnel_id != 0
            {
                match tunnels.restore(&owner, entry.tunnel_id) {
                    Ok(()) => holding.tunnel = true,
                    Err(error) => {
                        warn!(pod = %pod.key, network = %name, error = %error, "cannot restore pod tunnel ID");
                    }
                }
            }
            if (holding.ips || holding.tunnel) && !record.holdings.contains(&holding) {
                record.holdings.push(holding);
            }
        }
    }

    /// Makes sure a claim's recorded IPs are held by the claim.
    pub(crate) fn ensure_claim(&mut self, claim: &ClaimView) -> bool {
        if claim.ips.is_empty() || self.claims.contains_key(&claim.key) {
            return false;
        }
        let Some(pool) = self
            .networks
            .get_mut(&claim.network)
            .and_then(|pools| pools.ips.as_mut())
        else {
            return false;
        };
        match pool.restore(&claim_owner(&claim.key), &claim.ips) {
            Ok(()) => {
                self.claims.insert(claim.key.clone(), claim.network.clone());
                true
            }
            Err(error) => {
                warn!(claim = %claim.key, error = %error, "cannot hold the claim's IPs");
                false
            }
        }
    }

    /// The claim is gone: its IPs are free. Returns the network touched.
    pub(crate) fn release_claim(&mut self, key: &str) -> Option<String> {
        let network = self.claims.remove(key)?;
        if let Some(pool) = self.networks.get_mut(&network).and_then(|p| p.ips.as_mut()) {
            let released = pool.release(&claim_owner(key));
            info!(claim = %key, network = %network, ips = released.len(), "claim gone: released its IPs");
        }
        Some(network)
    }

    /// Claims holding IPs.
    pub(crate) fn claim_keys(&self) -> Vec<String> {
        self.claims.keys().cloned().collect()
    }

    /// Pods with holdings.
    pub(crate) fn pod_keys(&self) -> Vec<String> {
        self.pods.keys().cloned().collect()
    }

    /// The uid the pod's holdings belong to.
    pub(crate) fn pod_uid(&self, key: &str) -> Option<&str> {
        self.pods.get(key).map(|record| record.uid.as_str())
    }

    /// The pod is gone or completed: free what it holds (claim-owned IPs stay). Returns the
    /// networks touched.
    pub(crate) fn release_pod(&mut self, key: &str) -> BTreeSet<String> {
        let Some(record) = self.pods.remove(key) else {
            return BTreeSet::new();
        };
        self.release_holdings(&record.holdings)
    }

    fn release_holdings(&mut self, holdings: &[Holding]) -> BTreeSet<String> {
        let mut touched = BTreeSet::new();
        for holding in holdings {
            let Some(pools) = self.networks.get_mut(&holding.network) else {
                continue;
            };
            if holding.ips
                && let Some(pool) = pools.ips.as_mut()
            {
                pool.release(&holding.owner);
            }
            if holding.tunnel
                && let Some(tunnels) = pools.tunnels.as_mut()
            {
                tunnels.release(&holding.owner);
            }
            touched.insert(holding.network.clone());
        }
        touched
    }

    /// Undoes a plan whose writes failed.
    pub(crate) fn rollback(&mut self, pod_key: &str, plan: &PodPlan) {
        for holding in &plan.new {
            if let Some(key) = holding.owner.strip_prefix("ipamclaim:") {
                self.claims.remove(key);
            }
        }
        self.release_holdings(&plan.new);
        let owners: Vec<(String, String)> = plan
            .new
            .iter()
            .map(|h| (h.network.clone(), h.owner.clone()))
            .collect();
        self.refresh_holdings(pod_key, &owners);
    }

    /// Re-reads from the allocators what the pod's `(network, owner)`s hold.
    fn refresh_holdings(&mut self, pod_key: &str, owners: &[(String, String)]) {
        let Some(record) = self.pods.get_mut(pod_key) else {
            return;
        };
        for (network, owner) in owners {
            if owner.starts_with("ipamclaim:") {
                continue;
            }
            record
                .holdings
                .retain(|h| &h.owner != owner || &h.network != network);
            let Some(pools) = self.networks.get(network) else {
                continue;
            };
            let holding = Holding {
                network: network.clone(),
                owner: owner.clone(),
                ips: pools.ips.as_ref().and_then(|p| p.ips_of(owner)).is_some(),
                tunnel: pools
                    .tunnels
                    .as_ref()
                    .and_then(|t| t.id_of(owner))
                    .is_some(),
            };
            if holding.ips || holding.tunnel {
                record.holdings.push(holding);
            }
        }
    }

    /// Pods that can still get IPs of the network: the fewest free automatically
    /// allocatable addresses over its subnets (one address per subnet per pod).
    pub(crate) fn free_ips(&self, network: &str) -> Option<u128> {
        let pool = self.networks.get(network)?.ips.as_ref()?;
        Some(
            pool.usage()
                .iter()
                .map(|usage| usage.free)
                .min()
                .unwrap_or(0),
        )
    }

    /// Computes the pod's annotation, allocating what its attachments miss.
    pub(crate) fn plan_pod(
        &mut self,
        pod: &PodInput<'_>,
        service_cidrs: &[IpNetwork],
        persistent_ips: bool,
        claims: &dyn Fn(&str) -> Option<ClaimView>,
    ) -> PodPlan {
        let mut plan = PodPlan {
            desired: pod.existing.clone(),
            ..PodPlan::default()
        };
        let record = self.pods.entry(pod.key.to_owned()).or_default();
        record.uid = pod.uid.to_owned();
        let cx = AttachmentContext {
            pod,
            service_cidrs,
            persistent_ips,
            claims,
        };
        for attachment in pod.attachments {
            let Some(pools) = self.networks.get_mut(&attachment.network) else {
                continue;
            };
            if let Err(error) = plan_attachment(pools, &cx, attachment, &mut plan) {
                plan.errors.push(error);
            }
        }
        for holding in &plan.new {
            if let Some(key) = holding.owner.strip_prefix("ipamclaim:") {
                self.claims.insert(key.to_owned(), holding.network.clone());
            }
        }
        let owners: Vec<(String, String)> = pod
            .attachments
            .iter()
            .map(|a| (a.network.clone(), format!("{}/{}", a.nad_key, pod.uid)))
            .collect();
        self.refresh_holdings(pod.key, &owners);
        plan
    }
}

fn is_claim_held(pool: &PodIpAllocator, ips: &[IpNetwork]) -> bool {
    ips.iter().any(|ip| {
        pool.owner_of(ip.ip())
            .is_some_and(|owner| owner.starts_with("ipamclaim:"))
    })
}

#[cfg(test)]
mod tests;
