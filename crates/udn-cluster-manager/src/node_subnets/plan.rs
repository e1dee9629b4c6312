//! One node, one Layer3 network: keep the annotated subnets that are still valid, release
//! the others, allocate the missing families (upstream `allocateNodeSubnets`). Synchronous;
//! works on the network's allocator only.

use ipnetwork::IpNetwork;
use udn_ipam::{HostSubnetAllocator, IpFamily, SubnetError};

/// Why a node got no complete set of subnets for a network. Display is upstream's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeNetworkError {
    /// Every range of a family is full (`ErrSubnetAllocatorFull` wrapped by upstream).
    #[error(
        "error allocating network for node {node}, network name {network}: no subnets available"
    )]
    Full {
        /// Node name.
        node: String,
        /// Network name.
        network: String,
        /// The family that ran out.
        family: IpFamily,
    },
    /// Fewer subnets than families (a family without ranges).
    #[error(
        "error allocating networks for network: {network}, node {node}: {expected} subnets expected only new {allocated} subnets allocated"
    )]
    Count {
        /// Network name.
        network: String,
        /// Node name.
        node: String,
        /// Subnets expected (one per family).
        expected: usize,
        /// Subnets newly allocated.
        allocated: usize,
    },
}

/// The node's subnets for the network after [`ensure_node_network`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NetworkOutcome {
    /// What the annotation should carry: valid existing subnets, then new ones.
    pub(crate) subnets: Vec<IpNetwork>,
    /// Newly allocated by this call (roll back if the annotation cannot be written).
    pub(crate) allocated: Vec<IpNetwork>,
    /// Released by this call.
    pub(crate) released: Vec<IpNetwork>,
}

/// Ensures `node` holds exactly one subnet per family of the network in `allocator`,
/// preferring the subnets `existing` (the annotation) lists.
pub(crate) fn ensure_node_network(
    allocator: &mut HostSubnetAllocator,
    network: &str,
    families: (bool, bool),
    node: &str,
    existing: &[IpNetwork],
) -> Result<NetworkOutcome, NodeNetworkError> {
    let (ipv4, ipv6) = families;
    let expected = usize::from(ipv4) + usize::from(ipv6);
    let mut outcome = NetworkOutcome::default();
    let (mut found_v4, mut found_v6) = (false, false);
    for subnet in existing {
        let family = IpFamily::of_net(*subnet);
        let wanted = match family {
            IpFamily::V4 => ipv4 && !found_v4,
            IpFamily::V6 => ipv6 && !found_v6,
        };
        if wanted && allocator.mark_allocated(node, &[*subnet]).is_ok() {
            outcome.subnets.push(*subnet);
            match family {
                IpFamily::V4 => found_v4 = true,
                IpFamily::V6 => found_v6 = true,
            }
        }
    }
    let held_before = allocator.subnets_of(node);
    for (family, wanted, found) in [
        (IpFamily::V4, ipv4, found_v4),
        (IpFamily::V6, ipv6, found_v6),
    ] {
        if !wanted || found {
            continue;
        }
        match allocator.allocate_family(node, family) {
            Ok(Some(subnet)) => {
                if !held_before.contains(&subnet) {
                    outcome.allocated.push(subnet);
                }
                outcome.subnets.push(subnet);
            }
            Ok(None) => {}
            Err(SubnetError::Full { family }) => {
                rollback(allocator, node, &outcome.allocated);
                return Err(NodeNetworkError::Full {
                    node: node.to_owned(),
                    network: network.to_owned(),
                    family,
                });
            }
            Err(_) => {}
        }
    }
    if outcome.subnets.len() != expected {
        rollback(allocator, node, &outcome.allocated);
        return Err(NodeNetworkError::Count {
            network: network.to_owned(),
            node: node.to_owned(),
            expected,
            allocated: outcome.allocated.len(),
        });
    }
    for held in allocator.subnets_of(node) {
        if !outcome.subnets.contains(&held) && allocator.release(node, &[held]).is_ok() {
            outcome.released.push(held);
        }
    }
    Ok(outcome)
}

/// Releases `subnets` of `node` (allocations whose annotation was never written).
pub(crate) fn rollback(allocator: &mut HostSubnetAllocator, node: &str, subnets: &[IpNetwork]) {
    for subnet in subnets {
        let _ = allocator.release(node, &[*subnet]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(text: &str) -> IpNetwork {
        text.parse().unwrap()
    }

    fn allocator(ranges: &[(&str, u8)]) -> HostSubnetAllocator {
        let mut allocator = HostSubnetAllocator::new();
        for (range, host_len) in ranges {
            allocator.add_range(net(range), *host_len).unwrap();
        }
        allocator
    }

    #[test]
    fn allocates_one_subnet_per_family_in_upstream_order() {
        let mut a = allocator(&[("10.1.0.0/16", 24), ("fd01::/48", 64)]);
        let first = ensure_node_network(&mut a, "n", (true, true), "node1", &[]).unwrap();
        assert_eq!(first.subnets, [net("10.1.0.0/24"), net("fd01:0:0:1::/64")]);
        assert_eq!(first.allocated, first.subnets);
        let second = ensure_node_network(&mut a, "n", (true, true), "node2", &[]).unwrap();
        assert_eq!(second.subnets, [net("10.1.1.0/24"), net("fd01:0:0:2::/64")]);
    }

    #[test]
    fn keeps_valid_existing_and_replaces_invalid() {
        let mut a = allocator(&[("10.1.0.0/16", 24)]);
        let kept =
            ensure_node_network(&mut a, "n", (true, false), "n1", &[net("10.1.7.0/24")]).unwrap();
        assert_eq!(kept.subnets, [net("10.1.7.0/24")]);
        assert!(kept.allocated.is_empty());
        // Outside every range, a second IPv4 subnet, and a family the network lacks.
        let fixed = ensure_node_network(
            &mut a,
            "n",
            (true, false),
            "n2",
            &[net("192.168.0.0/24"), net("fd00::/64")],
        )
        .unwrap();
        assert_eq!(fixed.subnets, [net("10.1.0.0/24")]);
        // Another node's subnet is not taken over.
        let other =
            ensure_node_network(&mut a, "n", (true, false), "n3", &[net("10.1.7.0/24")]).unwrap();
        assert_eq!(other.subnets, [net("10.1.1.0/24")]);
        assert_eq!(a.owner_of(net("10.1.7.0/24")), Some("n1"));
    }

    #[test]
    fn releases_extra_holdings_and_reuses_a_held_subnet() {
        let mut a = allocator(&[("10.1.0.0/16", 24)]);
        a.mark_allocated("n1", &[net("10.1.5.0/24")]).unwrap();
        // Not annotated: the held subnet comes back rather than a new one.
        let out = ensure_node_network(&mut a, "n", (true, false), "n1", &[]).unwrap();
        assert_eq!(out.subnets, [net("10.1.5.0/24")]);
        assert!(out.allocated.is_empty());
        // Annotated with another valid subnet: that one wins, the held one is released.
        let out =
            ensure_node_network(&mut a, "n", (true, false), "n1", &[net("10.1.9.0/24")]).unwrap();
        assert_eq!(out.subnets, [net("10.1.9.0/24")]);
        assert_eq!(out.released, [net("10.1.5.0/24")]);
        assert_eq!(a.owner_of(net("10.1.5.0/24")), None);
    }

    #[test]
    fn exhaustion_reports_upstream_text_and_rolls_back() {
        let mut a = allocator(&[("10.1.0.0/16", 24), ("fd01::/126", 127)]);
        ensure_node_network(&mut a, "blue", (true, true), "n1", &[]).unwrap();
        ensure_node_network(&mut a, "blue", (true, true), "n2", &[]).unwrap();
        let err = ensure_node_network(&mut a, "blue", (true, true), "n3", &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "error allocating network for node n3, network name blue: no subnets available"
        );
        assert!(a.subnets_of("n3").is_empty());
    }

    #[test]
    fn family_without_ranges_reports_the_count_error() {
        let mut a = allocator(&[("10.1.0.0/16", 24)]);
        let err = ensure_node_network(&mut a, "blue", (true, true), "n1", &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "error allocating networks for network: blue, node n1: 2 subnets expected only new 1 subnets allocated"
        );
        assert!(a.subnets_of("n1").is_empty());
    }
}
