//! Pod IP allocation for one network's subnets (Layer2, Localnet with subnets), as
//! cluster-manager does it upstream (`allocator/ip/subnet`, `allocator/ip`, and
//! `clustermanager.newIPAllocatorForNetwork`).
//!
//! Per subnet, automatic allocation is round-robin over the addresses from base+1, never the
//! network address nor the IPv4 broadcast address; like upstream, an IPv6 pool spans at most
//! the first 65536 addresses of its subnet. Excluded addresses are never handed out; reserved
//! subnets only by static request. State is kept as ranges of offsets, so a /8 costs nothing
//! up front.
//!
//! Where upstream fails or lets a pod take an address meant to stay free, this allocator is
//! stricter or more lenient in the safe direction: overlapping exclusions are merged (upstream
//! fails to build the allocator), exclusions beyond the IPv6 span are clipped (upstream fails),
//! excluded and gateway/management addresses are refused for static requests in reserved
//! subnets too, and the IPv6 network address is never allocatable.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::family::{
    IpFamily, addr_at, addr_to_u128, canonical, contains_net, network_base, network_size,
};
use crate::gateway::{GatewayError, layer2_infrastructure_ips};
use crate::range_set::{RangeSet, first_free};

/// Upstream limits an IPv6 pool (its bitmap) to this many addresses from the subnet base.
const IPV6_POOL_SPAN: u128 = 65_536;

/// What a network's pod IP allocator is built from (the network's NAD settings).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodIpConfig {
    /// Network subnets (`subnets`); one address per subnet is allocated to each owner.
    pub subnets: Vec<IpNetwork>,
    /// `excludeSubnets`: never allocated.
    pub exclude_subnets: Vec<IpNetwork>,
    /// `reservedSubnets`: allocated only on static request.
    pub reserved_subnets: Vec<IpNetwork>,
    /// `infrastructureSubnets`: never allocated to pods.
    pub infrastructure_subnets: Vec<IpNetwork>,
    /// A primary Layer2 network: without infrastructure subnets, its gateway and management
    /// addresses (see [`crate::layer2_infrastructure_ips`]) are excluded.
    pub primary_layer2: bool,
    /// `defaultGatewayIPs`, used for the gateway exclusion of a primary Layer2 network. Leave
    /// empty when preconfigured UDN addresses are disabled (the gateway is then `.1`).
    pub default_gateway_ips: Vec<IpAddr>,
}

/// Errors of the pod IP allocator. [`PodIpError::is_already_allocated`] and
/// [`PodIpError::is_full`] match upstream `ErrAllocated` and `ErrFull`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodIpError {
    /// The network has no subnets.
    #[error("failed to allocate new IPs for {network}: has no IPAM")]
    NoSubnets {
        /// Network name.
        network: String,
    },
    /// Two network subnets overlap.
    #[error("invalid subnets for {network}: {subnet} overlaps {other}")]
    SubnetsOverlap {
        /// Network name.
        network: String,
        /// A subnet.
        subnet: IpNetwork,
        /// The subnet it overlaps.
        other: IpNetwork,
    },
    /// An excluded, reserved or infrastructure subnet lies outside every network subnet.
    #[error("failed to exclude subnet {subnet} for {network}: not contained in any of the subnets")]
    ExcludeNotContained {
        /// Network name.
        network: String,
        /// The subnet to exclude.
        subnet: IpNetwork,
    },
    /// The gateway/management addresses of a subnet cannot be computed.
    #[error("failed to compute the gateway and management IPs of subnet {subnet} for {network}")]
    Infrastructure {
        /// Network name.
        network: String,
        /// The network subnet.
        subnet: IpNetwork,
        /// Why.
        #[source]
        source: GatewayError,
    },
    /// A subnet has no free address (`ErrFull`).
    #[error("failed to allocate new IPs for {network}: subnet address pool exhausted in {subnet}")]
    Full {
        /// Network name.
        network: String,
        /// The exhausted subnet.
        subnet: IpNetwork,
    },
    /// A static request without addresses.
    #[error("failed to allocate IPs for {network}: no IPs provided")]
    NoIpsProvided {
        /// Network name.
        network: String,
    },
    /// A requested address is in no subnet.
    #[error("failed to allocate IP {ip} for {network}: not contained in any known subnet")]
    NotInAnySubnet {
        /// Network name.
        network: String,
        /// The address.
        ip: IpAddr,
    },
    /// Two requested addresses fall in the same subnet.
    #[error(
        "failed to allocate IP {ip} for {network}: attempted to reserve multiple IPs in the same continuous IPAM instance"
    )]
    MultipleInSubnet {
        /// Network name.
        network: String,
        /// The second address.
        ip: IpAddr,
    },
    /// The address is in a subnet but not allocatable (network, broadcast, beyond the IPv6 span).
    #[error("provided IP {ip} is not in the valid range. The range of valid IPs is {range}")]
    NotInRange {
        /// The address.
        ip: IpAddr,
        /// The subnet (or reserved subnet) it was checked against.
        range: IpNetwork,
    },
    /// The address belongs to another owner (`ErrAllocated`).
    #[error("provided IP is already allocated: {ip} is held by {holder}")]
    AlreadyAllocated {
        /// The address.
        ip: IpAddr,
        /// Its owner.
        holder: String,
    },
    /// The address is excluded (`ErrAllocated` upstream too).
    #[error("provided IP is already allocated: {ip} is excluded from allocation")]
    Excluded {
        /// The address.
        ip: IpAddr,
    },
    /// The owner already holds other addresses.
    #[error(
        "{owner} already holds IPs [{}] in {network}; refusing [{}]",
        join(held),
        join(requested)
    )]
    OwnerHasDifferentIps {
        /// Network name.
        network: String,
        /// The owner.
        owner: String,
        /// What it holds.
        held: Vec<IpNetwork>,
        /// What was asked.
        requested: Vec<IpNetwork>,
    },
}

fn join(nets: &[IpNetwork]) -> String {
    nets.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl PodIpError {
    /// Whether upstream reports this as `ErrAllocated` (held by someone or excluded).
    pub fn is_already_allocated(&self) -> bool {
        matches!(self, Self::AlreadyAllocated { .. } | Self::Excluded { .. })
    }

    /// Whether upstream reports this as `ErrFull`.
    pub fn is_full(&self) -> bool {
        matches!(self, Self::Full { .. })
    }
}

/// Allocation figures of one subnet, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubnetUsage {
    /// The network subnet.
    pub subnet: IpNetwork,
    /// Addresses automatic allocation may hand out (pool minus excluded and reserved).
    pub capacity: u128,
    /// Addresses held by owners, static ones in reserved subnets included.
    pub allocated: u128,
    /// Addresses automatic allocation can still hand out.
    pub free: u128,
}

/// One network subnet. Offsets are relative to the network address.
#[derive(Debug, Clone)]
struct Pool {
    subnet: IpNetwork,
    family: IpFamily,
    /// Last offset of the automatic pool (`1..=auto_last`); 0 means no pool.
    auto_last: u128,
    /// Reserved subnets with the offsets (inclusive) a static request may use.
    reserved: Vec<(IpNetwork, u128, u128)>,
    /// Excluded offsets (exclude + infrastructure), over the whole subnet.
    excluded: RangeSet,
    /// Offsets automatic allocation must skip: excluded and reserved, within the pool.
    blocked_auto: RangeSet,
    holders: BTreeMap<u128, String>,
    held: RangeSet,
    /// Round-robin cursor, in `1..=auto_last`.
    cursor: u128,
}

impl Pool {
    fn new(subnet: IpNetwork) -> Self {
        let family = IpFamily::of_net(subnet);
        let size = network_size(subnet);
        let auto_last = match family {
            IpFamily::V4 => size.saturating_sub(2),
            IpFamily::V6 => size.min(IPV6_POOL_SPAN) - 1,
        };
        Self {
            subnet,
            family,
            auto_last,
            reserved: Vec::new(),
            excluded: RangeSet::new(),
            blocked_auto: RangeSet::new(),
            holders: BTreeMap::new(),
            held: RangeSet::new(),
            cursor: 1,
        }
    }

    /// Offsets `lo..=hi` of `inner` (contained in the subnet).
    fn span_of(&self, inner: IpNetwork) -> (u128, u128) {
        let lo = network_base(inner) - network_base(self.subnet);
        (lo, lo.saturating_add(network_size(inner) - 1))
    }

    fn block_auto(&mut self, lo: u128, hi: u128) {
        self.blocked_auto
            .insert_range(lo.max(1), hi.min(self.auto_last));
    }

    fn exclude(&mut self, inner: IpNetwork) {
        let (lo, hi) = self.span_of(inner);
        self.excluded.insert_range(lo, hi);
        self.block_auto(lo, hi);
    }

    fn reserve(&mut self, inner: IpNetwork) {
        let (lo, hi) = self.span_of(inner);
        let static_hi = match self.family {
            IpFamily::V4 => hi,
            IpFamily::V6 => hi.min(lo.saturating_add(IPV6_POOL_SPAN - 1)),
        };
        self.reserved.push((inner, lo, static_hi));
        self.block_auto(lo, hi);
    }

    fn prefixed(&self, offset: u128) -> Option<IpNetwork> {
        IpNetwork::new(addr_at(self.subnet, offset)?, self.subnet.prefix()).ok()
    }

    /// The offset of `ip` if a static request may take it.
    fn check_static(&self, ip: IpAddr) -> Result<u128, PodIpError> {
        let offset = addr_to_u128(ip) - network_base(self.subnet);
        let broadcast = self.family == IpFamily::V4 && offset == network_size(self.subnet) - 1;
        let not_in = |range| PodIpError::NotInRange { ip, range };
        match self.reserved.iter().find(|(net, _, _)| net.contains(ip)) {
            Some((net, _, hi)) if offset > *hi => return Err(not_in(*net)),
            Some(_) if offset == 0 || broadcast => return Err(not_in(self.subnet)),
            Some(_) => {}
            None if offset == 0 || offset > self.auto_last => return Err(not_in(self.subnet)),
            None => {}
        }
        if self.excluded.contains(offset) {
            return Err(PodIpError::Excluded { ip });
        }
        if let Some(holder) = self.holders.get(&offset) {
            return Err(PodIpError::AlreadyAllocated {
                ip,
                holder: holder.clone(),
            });
        }
        Ok(offset)
    }

    /// Next free offset from the cursor, wrapping (upstream round-robin bitmap scan).
    fn next_free(&self) -> Option<u128> {
        if self.auto_last == 0 {
            return None;
        }
        let sets = [&self.blocked_auto, &self.held];
        first_free(self.cursor, self.auto_last, &sets, |_| false).or_else(|| {
            (self.cursor > 1)
                .then(|| first_free(1, self.cursor - 1, &sets, |_| false))
                .flatten()
        })
    }

    fn take(&mut self, offset: u128, owner: &str) {
        self.holders.insert(offset, owner.to_owned());
        self.held.insert(offset);
    }

    fn free(&mut self, offset: u128) {
        self.holders.remove(&offset);
        self.held.remove(offset);
    }

    fn usage(&self) -> SubnetUsage {
        let capacity = self.auto_last.saturating_sub(self.blocked_auto.len());
        let auto_held = self
            .holders
            .keys()
            .filter(|o| **o >= 1 && **o <= self.auto_last && !self.blocked_auto.contains(**o))
            .count() as u128;
        SubnetUsage {
            subnet: self.subnet,
            capacity,
            allocated: self.holders.len() as u128,
            free: capacity.saturating_sub(auto_held),
        }
    }
}

/// Pod IP allocator of one network: one address per subnet per owner (pod).
#[derive(Debug, Clone)]
pub struct PodIpAllocator {
    network: String,
    pools: Vec<Pool>,
    owners: BTreeMap<String, Vec<IpNetwork>>,
}

impl PodIpAllocator {
    /// Builds the allocator of `network` (its name, used in error messages) from `config`.
    pub fn new(network: &str, config: &PodIpConfig) -> Result<Self, PodIpError> {
        let mut pools: Vec<Pool> = Vec::new();
        for subnet in config.subnets.iter().copied().map(canonical) {
            if let Some(other) = pools.iter().find(|p| {
                p.subnet.contains(subnet.network()) || subnet.contains(p.subnet.network())
            }) {
                return Err(PodIpError::SubnetsOverlap {
                    network: network.to_owned(),
                    subnet,
                    other: other.subnet,
                });
            }
            pools.push(Pool::new(subnet));
        }
        let mut allocator = Self {
            network: network.to_owned(),
            pools,
            owners: BTreeMap::new(),
        };
        for reserved in &config.reserved_subnets {
            allocator
                .pool_containing(*reserved)?
                .reserve(canonical(*reserved));
        }
        let mut exclusions: Vec<IpNetwork> = config
            .exclude_subnets
            .iter()
            .chain(&config.infrastructure_subnets)
            .copied()
            .collect();
        if config.primary_layer2 && config.infrastructure_subnets.is_empty() {
            exclusions.extend(allocator.gateway_exclusions(&config.default_gateway_ips)?);
        }
        for excluded in exclusions {
            allocator
                .pool_containing(excluded)?
                .exclude(canonical(excluded));
        }
        Ok(allocator)
    }

    fn pool_containing(&mut self, inner: IpNetwork) -> Result<&mut Pool, PodIpError> {
        let inner = canonical(inner);
        let network = &self.network;
        self.pools
            .iter_mut()
            .find(|p| contains_net(p.subnet, inner))
            .ok_or_else(|| PodIpError::ExcludeNotContained {
                network: network.clone(),
                subnet: inner,
            })
    }

    /// Host routes of the gateway and management addresses of every subnet.
    fn gateway_exclusions(
        &self,
        default_gateways: &[IpAddr],
    ) -> Result<Vec<IpNetwork>, PodIpError> {
        let mut out = Vec::new();
        for pool in &self.pools {
            let gateway = default_gateways
                .iter()
                .copied()
                .find(|ip| IpFamily::of_addr(*ip) == pool.family);
            let ips = layer2_infrastructure_ips(pool.subnet, &[], gateway).map_err(|source| {
                PodIpError::Infrastructure {
                    network: self.network.clone(),
                    subnet: pool.subnet,
                    source,
                }
            })?;
            out.extend([
                IpNetwork::from(ips.gateway),
                IpNetwork::from(ips.management),
            ]);
        }
        Ok(out)
    }

    /// The network subnets, in configuration order.
    pub fn subnets(&self) -> Vec<IpNetwork> {
        self.pools.iter().map(|p| p.subnet).collect()
    }

    /// One address per subnet for `owner`, in subnet order, with the subnet prefix length
    /// (`10.100.0.3/16`). An owner that already holds addresses gets them back. When a subnet
    /// is exhausted, nothing is allocated (but, as upstream, the round-robin cursors of the
    /// subnets before it move on).
    pub fn allocate(&mut self, owner: &str) -> Result<Vec<IpNetwork>, PodIpError> {
        if let Some(held) = self.owners.get(owner) {
            return Ok(held.clone());
        }
        if self.pools.is_empty() {
            return Err(PodIpError::NoSubnets {
                network: self.network.clone(),
            });
        }
        let mut picks: Vec<(u128, IpNetwork)> = Vec::with_capacity(self.pools.len());
        let mut exhausted = None;
        for pool in &self.pools {
            match pool
                .next_free()
                .and_then(|o| pool.prefixed(o).map(|ip| (o, ip)))
            {
                Some(pick) => picks.push(pick),
                None => {
                    exhausted = Some(pool.subnet);
                    break;
                }
            }
        }
        // Upstream takes each subnet's address in turn and releases them when a later subnet
        // is exhausted, so the cursors of the earlier subnets still move.
        for (pool, (offset, _)) in self.pools.iter_mut().zip(&picks) {
            pool.cursor = if *offset >= pool.auto_last {
                1
            } else {
                offset + 1
            };
            if exhausted.is_none() {
                pool.take(*offset, owner);
            }
        }
        if let Some(subnet) = exhausted {
            return Err(PodIpError::Full {
                network: self.network.clone(),
                subnet,
            });
        }
        let ips: Vec<IpNetwork> = picks.into_iter().map(|(_, ip)| ip).collect();
        self.owners.insert(owner.to_owned(), ips.clone());
        Ok(ips)
    }

    /// Gives `owner` the requested addresses (at most one per subnet; prefix lengths of the
    /// input are ignored), returning them with the subnet prefix length. Addresses of reserved
    /// subnets are allowed here. All-or-nothing; idempotent when the owner already holds
    /// exactly these addresses.
    pub fn allocate_static(
        &mut self,
        owner: &str,
        ips: &[IpNetwork],
    ) -> Result<Vec<IpNetwork>, PodIpError> {
        if ips.is_empty() {
            return Err(PodIpError::NoIpsProvided {
                network: self.network.clone(),
            });
        }
        if self.pools.is_empty() {
            return Err(PodIpError::NoSubnets {
                network: self.network.clone(),
            });
        }
        let mut picked: Vec<(usize, IpNetwork)> = Vec::with_capacity(ips.len());
        for requested in ips {
            let ip = requested.ip();
            let (index, pool) = self
                .pools
                .iter()
                .enumerate()
                .find(|(_, p)| p.subnet.contains(ip))
                .ok_or_else(|| PodIpError::NotInAnySubnet {
                    network: self.network.clone(),
                    ip,
                })?;
            if picked.iter().any(|(i, _)| *i == index) {
                return Err(PodIpError::MultipleInSubnet {
                    network: self.network.clone(),
                    ip,
                });
            }
            let normalized = IpNetwork::new(ip, pool.subnet.prefix()).unwrap_or(*requested);
            picked.push((index, normalized));
        }
        let normalized: Vec<IpNetwork> = picked.iter().map(|(_, n)| *n).collect();
        if let Some(held) = self.owners.get(owner) {
            let same = held.iter().collect::<BTreeSet<_>>() == normalized.iter().collect();
            if same {
                return Ok(held.clone());
            }
            return Err(PodIpError::OwnerHasDifferentIps {
                network: self.network.clone(),
                owner: owner.to_owned(),
                held: held.clone(),
                requested: normalized,
            });
        }
        let mut offsets: Vec<(usize, u128)> = Vec::with_capacity(picked.len());
        for (index, net) in &picked {
            if let Some(pool) = self.pools.get(*index) {
                offsets.push((*index, pool.check_static(net.ip())?));
            }
        }
        for (index, offset) in offsets {
            if let Some(pool) = self.pools.get_mut(index) {
                pool.take(offset, owner);
            }
        }
        self.owners.insert(owner.to_owned(), normalized.clone());
        Ok(normalized)
    }

    /// Re-reserves the addresses an owner's annotation carries (startup sync). Same checks as
    /// [`PodIpAllocator::allocate_static`]; the round-robin cursor does not move.
    pub fn restore(&mut self, owner: &str, ips: &[IpNetwork]) -> Result<(), PodIpError> {
        self.allocate_static(owner, ips).map(|_| ())
    }

    /// Frees every address of `owner`, returning them.
    pub fn release(&mut self, owner: &str) -> Vec<IpNetwork> {
        let Some(ips) = self.owners.remove(owner) else {
            return Vec::new();
        };
        for net in &ips {
            let ip = net.ip();
            if let Some(pool) = self.pools.iter_mut().find(|p| p.subnet.contains(ip)) {
                let offset = addr_to_u128(ip) - network_base(pool.subnet);
                pool.free(offset);
            }
        }
        ips
    }

    /// The addresses held by `owner`.
    pub fn ips_of(&self, owner: &str) -> Option<&[IpNetwork]> {
        self.owners.get(owner).map(Vec::as_slice)
    }

    /// The owner of `ip`.
    pub fn owner_of(&self, ip: IpAddr) -> Option<&str> {
        let pool = self.pools.iter().find(|p| p.subnet.contains(ip))?;
        pool.holders
            .get(&(addr_to_u128(ip) - network_base(pool.subnet)))
            .map(String::as_str)
    }

    /// Every owner with its addresses, ordered by owner.
    pub fn assignments(&self) -> impl Iterator<Item = (&str, &[IpNetwork])> {
        self.owners
            .iter()
            .map(|(o, ips)| (o.as_str(), ips.as_slice()))
    }

    /// Usage of every subnet, in configuration order.
    pub fn usage(&self) -> Vec<SubnetUsage> {
        self.pools.iter().map(Pool::usage).collect()
    }
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
