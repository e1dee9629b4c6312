//! Per-node host subnets out of cluster ranges (upstream `clustermanager/node/subnet_allocator.go`,
//! `BaseSubnetAllocator`), reproduced bit for bit so nodes get the same subnets as upstream.
//!
//! Stricter than upstream where upstream could hand out overlapping subnets: a marked subnet
//! must have the range's host subnet length (upstream accepts any prefix inside the range),
//! overlapping ranges are refused, an owner holding a subnet in a later range is not given a
//! second one from an earlier range, and rollbacks only undo what the failing call added.

use std::collections::BTreeMap;
use std::sync::Arc;

use ipnetwork::IpNetwork;

use crate::family::{IpFamily, addr_to_u128, canonical, network_base, u128_to_addr};
use crate::range_set::{RangeSet, first_free};

/// At most this many indices of one range are scanned (upstream caps `numSubnets` at `1<<24`).
const SCAN_LIMIT_BITS: u32 = 24;

/// Errors of the host-subnet allocator. The first three carry upstream's exact messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubnetError {
    /// Every range of the family is full (`ErrSubnetAllocatorFull`).
    #[error("no subnets available")]
    Full {
        /// The family that ran out.
        family: IpFamily,
    },
    /// The host subnet is shorter than the range prefix.
    #[error("subnet capacity cannot be larger than number of networks available")]
    HostLenBelowPrefix {
        /// The range.
        range: IpNetwork,
        /// The requested host subnet length.
        host_len: u8,
    },
    /// The host subnet length leaves no host bits.
    #[error("host capacity cannot be zero")]
    HostCapacityZero {
        /// The range.
        range: IpNetwork,
        /// The requested host subnet length.
        host_len: u8,
    },
    /// A new range overlaps one already configured.
    #[error("network range {range} overlaps existing range {existing}")]
    RangeOverlap {
        /// The range being added.
        range: IpNetwork,
        /// The range already present.
        existing: IpNetwork,
    },
    /// The subnet lies in no configured range.
    #[error("network {subnet} does not belong to any known range")]
    NotInAnyRange {
        /// The subnet.
        subnet: IpNetwork,
    },
    /// The subnet is inside a range but is not one of its host subnets.
    #[error("network {subnet} is not a /{host_len} host subnet of range {range}")]
    HostLenMismatch {
        /// The subnet.
        subnet: IpNetwork,
        /// The range containing it.
        range: IpNetwork,
        /// The range's host subnet length.
        host_len: u8,
    },
    /// The subnet belongs to another owner.
    #[error("network {subnet} already owned by {owner}")]
    AlreadyOwned {
        /// The subnet.
        subnet: IpNetwork,
        /// Its current owner.
        owner: String,
    },
}

/// Allocation figures of one range, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeUsage {
    /// The cluster range.
    pub range: IpNetwork,
    /// Host subnet length.
    pub host_len: u8,
    /// Number of host subnets in the range (`2^(host_len - prefix)`, upstream `Count`).
    pub total: u128,
    /// Number of host subnets allocated.
    pub used: u128,
}

impl RangeUsage {
    /// Host subnets not allocated.
    pub fn free(&self) -> u128 {
        self.total.saturating_sub(self.used)
    }
}

/// Upstream's IPv4 index rotation, so that all `x.y.0` subnets go out before the others.
#[derive(Debug, Clone, Copy)]
struct Rotation {
    left_shift: u32,
    left_mask: u128,
    right_shift: u32,
    right_mask: u128,
}

impl Rotation {
    fn apply(self, n: u128) -> u128 {
        ((n << self.left_shift) & self.left_mask) | ((n >> self.right_shift) & self.right_mask)
    }

    fn invert(self, index: u128) -> u128 {
        let low_mask = (1u128 << self.right_shift) - 1;
        ((index >> self.left_shift) & low_mask) | ((index & self.right_mask) << self.right_shift)
    }
}

/// One cluster range. Allocation state is kept by scan position `n` (before rotation). An
/// owner's name is stored once per range and shared by both maps (a network has one entry
/// per node, and there are many networks).
#[derive(Debug, Clone)]
struct SubnetRange {
    network: IpNetwork,
    family: IpFamily,
    host_len: u8,
    host_bits: u32,
    subnet_bits: u32,
    rotation: Option<Rotation>,
    scan_limit: u128,
    next: u128,
    used: RangeSet,
    owner_of: BTreeMap<u128, Arc<str>>,
    /// Positions held by each owner, ascending (usually one).
    held_by: BTreeMap<Arc<str>, Vec<u128>>,
}

impl SubnetRange {
    fn new(range: IpNetwork, host_len: u8) -> Result<Self, SubnetError> {
        let network = canonical(range);
        let family = IpFamily::of_net(network);
        let addr_len = family.bits();
        let prefix = u32::from(network.prefix());
        if u32::from(host_len) >= addr_len {
            return Err(SubnetError::HostCapacityZero { range, host_len });
        }
        if u32::from(host_len) < prefix {
            return Err(SubnetError::HostLenBelowPrefix { range, host_len });
        }
        let host_bits = addr_len - u32::from(host_len);
        let subnet_bits = u32::from(host_len) - prefix;
        let straddles = (host_bits - 1) / 8 != (host_bits + subnet_bits - 1) / 8;
        let rotation =
            (family == IpFamily::V4 && !host_bits.is_multiple_of(8) && straddles).then(|| {
                let left_shift = 8 - host_bits % 8;
                Rotation {
                    left_shift,
                    left_mask: (1u128 << subnet_bits) - 1,
                    right_shift: subnet_bits - left_shift,
                    right_mask: (1u128 << left_shift) - 1,
                }
            });
        Ok(Self {
            network,
            family,
            host_len,
            host_bits,
            subnet_bits,
            rotation,
            scan_limit: 1u128 << subnet_bits.min(SCAN_LIMIT_BITS),
            next: 0,
            used: RangeSet::new(),
            owner_of: BTreeMap::new(),
            held_by: BTreeMap::new(),
        })
    }

    /// The host subnet at scan position `n`.
    fn subnet_at(&self, n: u128) -> Option<IpNetwork> {
        let index = self.rotation.map_or(n, |r| r.apply(n));
        let value = network_base(self.network) | index.checked_shl(self.host_bits).unwrap_or(0);
        let addr = u128_to_addr(self.family, value)?;
        IpNetwork::new(addr, self.host_len).ok()
    }

    /// Upstream skips IPv6 indices whose low 16 bits are 0 when there are >= 16 subnet bits.
    fn skipped(&self, n: u128) -> bool {
        self.family == IpFamily::V6 && self.subnet_bits >= 16 && n & 0xFFFF == 0
    }

    /// The scan position of `subnet` (already canonical and inside the range).
    fn position_of(&self, subnet: IpNetwork) -> Result<u128, SubnetError> {
        if subnet.prefix() != self.host_len {
            return Err(SubnetError::HostLenMismatch {
                subnet,
                range: self.network,
                host_len: self.host_len,
            });
        }
        let offset = addr_to_u128(subnet.network()) - network_base(self.network);
        let index = offset.checked_shr(self.host_bits).unwrap_or(0);
        Ok(self.rotation.map_or(index, |r| r.invert(index)))
    }

    fn held(&self, owner: &str) -> Option<u128> {
        self.held_by
            .get(owner)
            .and_then(|positions| positions.first().copied())
    }

    fn take(&mut self, n: u128, owner: &str) {
        self.used.insert(n);
        let name = match self.held_by.get_key_value(owner) {
            Some((name, _)) => Arc::clone(name),
            None => Arc::from(owner),
        };
        self.owner_of.insert(n, Arc::clone(&name));
        let positions = self.held_by.entry(name).or_default();
        if let Err(at) = positions.binary_search(&n) {
            positions.insert(at, n);
        }
    }

    fn free(&mut self, n: u128) {
        let Some(owner) = self.owner_of.remove(&n) else {
            return;
        };
        self.used.remove(n);
        if let Some(positions) = self.held_by.get_mut(&owner) {
            positions.retain(|held| *held != n);
            if positions.is_empty() {
                self.held_by.remove(&owner);
            }
        }
    }

    /// First free scan position from the cursor, wrapping; resets the cursor when full.
    fn allocate(&mut self, owner: &str) -> Option<IpNetwork> {
        let last = self.scan_limit - 1;
        let start = self.next;
        let found = first_free(start, last, &[&self.used], |n| self.skipped(n)).or_else(|| {
            start
                .checked_sub(1)
                .and_then(|hi| first_free(0, hi.min(last), &[&self.used], |n| self.skipped(n)))
        });
        let Some(n) = found else {
            self.next = 0;
            return None;
        };
        let subnet = self.subnet_at(n)?;
        self.take(n, owner);
        self.next = n + 1;
        Some(subnet)
    }

    fn usage(&self) -> RangeUsage {
        RangeUsage {
            range: self.network,
            host_len: self.host_len,
            total: 1u128.checked_shl(self.subnet_bits).unwrap_or(u128::MAX),
            used: self.used.len(),
        }
    }
}

/// Hands out one host subnet per family to each owner (node), from cluster ranges tried in
/// insertion order.
///
/// Within a range the scan starts at a round-robin cursor and takes the first free index; IPv4
/// indices are bit-rotated when the subnet bits straddle a byte, IPv6 indices with low 16 bits
/// of 0 are skipped when there are at least 16 subnet bits, and at most `2^24` indices are
/// scanned. Unlike upstream, an owner that already holds a subnet in any range of the family
/// gets that subnet back rather than a second one.
#[derive(Debug, Clone, Default)]
pub struct HostSubnetAllocator {
    v4: Vec<SubnetRange>,
    v6: Vec<SubnetRange>,
}

impl HostSubnetAllocator {
    /// An allocator without ranges.
    pub fn new() -> Self {
        Self::default()
    }

    fn ranges(&self, family: IpFamily) -> &[SubnetRange] {
        match family {
            IpFamily::V4 => &self.v4,
            IpFamily::V6 => &self.v6,
        }
    }

    fn ranges_mut(&mut self, family: IpFamily) -> &mut Vec<SubnetRange> {
        match family {
            IpFamily::V4 => &mut self.v4,
            IpFamily::V6 => &mut self.v6,
        }
    }

    /// Appends a cluster range carved into `/host_len` host subnets (Layer3 expansion appends).
    /// Re-adding an identical range is a no-op; overlapping an existing range is an error.
    pub fn add_range(&mut self, range: IpNetwork, host_len: u8) -> Result<(), SubnetError> {
        let new = SubnetRange::new(range, host_len)?;
        for existing in self.ranges(new.family) {
            if existing.network == new.network && existing.host_len == host_len {
                return Ok(());
            }
            if existing.network.contains(new.network.network())
                || new.network.contains(existing.network.network())
            {
                return Err(SubnetError::RangeOverlap {
                    range: new.network,
                    existing: existing.network,
                });
            }
        }
        self.ranges_mut(new.family).push(new);
        Ok(())
    }

    /// The configured ranges of `family`, in insertion order.
    pub fn range_networks(&self, family: IpFamily) -> Vec<IpNetwork> {
        self.ranges(family).iter().map(|r| r.network).collect()
    }

    /// The subnet of `family` held by `owner`, allocating one if it holds none. `Ok(None)`
    /// when the family has no ranges.
    pub fn allocate_family(
        &mut self,
        owner: &str,
        family: IpFamily,
    ) -> Result<Option<IpNetwork>, SubnetError> {
        let ranges = self.ranges_mut(family);
        if ranges.is_empty() {
            return Ok(None);
        }
        for range in ranges.iter() {
            if let Some(n) = range.held(owner) {
                return Ok(range.subnet_at(n));
            }
        }
        for range in ranges.iter_mut() {
            if let Some(subnet) = range.allocate(owner) {
                return Ok(Some(subnet));
            }
        }
        Err(SubnetError::Full { family })
    }

    /// One subnet per configured family for `owner`, IPv4 first (upstream `AllocateNetworks`).
    /// When IPv6 fails, an IPv4 subnet allocated by this call is released again.
    pub fn allocate(&mut self, owner: &str) -> Result<Vec<IpNetwork>, SubnetError> {
        let had_v4 = !self.owner_subnets_of(owner, IpFamily::V4).is_empty();
        let v4 = self.allocate_family(owner, IpFamily::V4)?;
        match self.allocate_family(owner, IpFamily::V6) {
            Ok(v6) => Ok(v4.into_iter().chain(v6).collect()),
            Err(err) => {
                if let (Some(subnet), false) = (v4, had_v4) {
                    let _ = self.release(owner, &[subnet]);
                }
                Err(err)
            }
        }
    }

    /// Finds the range holding `subnet` and its scan position there.
    fn locate(&self, subnet: IpNetwork) -> Result<(&SubnetRange, u128), SubnetError> {
        let subnet = canonical(subnet);
        let range = self
            .ranges(IpFamily::of_net(subnet))
            .iter()
            .find(|r| r.network.contains(subnet.network()))
            .ok_or(SubnetError::NotInAnyRange { subnet })?;
        Ok((range, range.position_of(subnet)?))
    }

    fn locate_mut(&mut self, subnet: IpNetwork) -> Result<(&mut SubnetRange, u128), SubnetError> {
        let subnet = canonical(subnet);
        let range = self
            .ranges_mut(IpFamily::of_net(subnet))
            .iter_mut()
            .find(|r| r.network.contains(subnet.network()))
            .ok_or(SubnetError::NotInAnyRange { subnet })?;
        let n = range.position_of(subnet)?;
        Ok((range, n))
    }

    /// Marks `subnets` as held by `owner` (restore from the node annotation). All-or-nothing:
    /// on error, subnets newly marked by this call are released again. Marking a subnet the
    /// owner already holds is a no-op.
    pub fn mark_allocated(
        &mut self,
        owner: &str,
        subnets: &[IpNetwork],
    ) -> Result<(), SubnetError> {
        let mut marked = Vec::new();
        for subnet in subnets {
            let result =
                self.locate_mut(*subnet)
                    .and_then(|(range, n)| match range.owner_of.get(&n) {
                        Some(holder) if **holder == *owner => Ok(()),
                        Some(holder) => Err(SubnetError::AlreadyOwned {
                            subnet: canonical(*subnet),
                            owner: holder.to_string(),
                        }),
                        None => {
                            range.take(n, owner);
                            marked.push(*subnet);
                            Ok(())
                        }
                    });
            if let Err(err) = result {
                for subnet in marked {
                    if let Ok((range, n)) = self.locate_mut(subnet) {
                        range.free(n);
                    }
                }
                return Err(err);
            }
        }
        Ok(())
    }

    /// Releases `subnets` if `owner` holds them. Every subnet is attempted; the first error
    /// (not in any range, not allocated, or owned by someone else) is returned.
    pub fn release(&mut self, owner: &str, subnets: &[IpNetwork]) -> Result<(), SubnetError> {
        let mut first_error = None;
        for subnet in subnets {
            let result =
                self.locate_mut(*subnet)
                    .and_then(|(range, n)| match range.owner_of.get(&n) {
                        Some(holder) if **holder == *owner => {
                            range.free(n);
                            Ok(())
                        }
                        Some(holder) => Err(SubnetError::AlreadyOwned {
                            subnet: canonical(*subnet),
                            owner: holder.to_string(),
                        }),
                        None => Err(SubnetError::NotInAnyRange {
                            subnet: canonical(*subnet),
                        }),
                    });
            if let Err(err) = result {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Releases every subnet of `owner`, returning them (IPv4 first, ranges in order).
    pub fn release_owner(&mut self, owner: &str) -> Vec<IpNetwork> {
        let mut released = Vec::new();
        for range in self.v4.iter_mut().chain(self.v6.iter_mut()) {
            let positions = range.held_by.get(owner).cloned().unwrap_or_default();
            for n in positions {
                if let Some(subnet) = range.subnet_at(n) {
                    released.push(subnet);
                }
                range.free(n);
            }
        }
        released
    }

    fn owner_subnets_of(&self, owner: &str, family: IpFamily) -> Vec<IpNetwork> {
        self.ranges(family)
            .iter()
            .flat_map(|r| {
                r.held_by
                    .get(owner)
                    .into_iter()
                    .flatten()
                    .filter_map(|n| r.subnet_at(*n))
            })
            .collect()
    }

    /// Every subnet held by `owner`, IPv4 first.
    pub fn subnets_of(&self, owner: &str) -> Vec<IpNetwork> {
        let mut subnets = self.owner_subnets_of(owner, IpFamily::V4);
        subnets.extend(self.owner_subnets_of(owner, IpFamily::V6));
        subnets
    }

    /// The owner of `subnet`, if it is allocated.
    pub fn owner_of(&self, subnet: IpNetwork) -> Option<&str> {
        let (range, n) = self.locate(subnet).ok()?;
        range.owner_of.get(&n).map(AsRef::as_ref)
    }

    /// Usage of every range, IPv4 ranges first, each family in insertion order.
    pub fn usage(&self) -> Vec<RangeUsage> {
        self.v4
            .iter()
            .chain(self.v6.iter())
            .map(SubnetRange::usage)
            .collect()
    }
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
