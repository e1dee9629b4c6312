//! Upstream `SetTransitSubnets`: the transit subnet of a primary Layer2 network, one per
//! subnet family. Start at the cluster transit subnet; while it overlaps something, move to
//! the first same-size subnet past the larger of the two overlapping networks (10 tries).

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use super::overlap::{OverlapCheckError, subnet_overlap_check};
use crate::cluster::ClusterConfig;
use crate::netconf::subnets::go_quote;
use crate::netconf::{CidrError, NetConf, parse_cidr};

/// Attempts per family before giving up (upstream constant).
const MAX_ATTEMPTS: usize = 10;

/// The transit subnet could not be computed. Display is the upstream text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransitError {
    /// A network subnet is not a CIDR.
    #[error(
        "can't generate transit subnets: failed to parse CIDR {}: {reason}",
        go_quote(subnet)
    )]
    ParseSubnet {
        /// The subnet text.
        subnet: String,
        /// The parse failure.
        reason: CidrError,
    },
    /// The overlap check failed for a reason other than the transit subnet.
    #[error(transparent)]
    Overlap(#[from] OverlapCheckError),
    /// Every candidate overlapped.
    #[error(
        "can't generate transit subnets: failed to find non-overlapping transit subnet after 10 attempts"
    )]
    Exhausted,
}

/// Compute and set `conf.transit_subnet` (comma-joined, in the order of `conf.subnets`).
/// Call it with the otherwise final config: the search runs the overlap check on it.
pub fn set_transit_subnets(
    conf: &mut NetConf,
    cluster: &ClusterConfig,
) -> Result<(), TransitError> {
    let subnets = conf.subnets.clone();
    let mut transits = Vec::new();
    for text in subnets.split(',') {
        let subnet = parse_cidr(text).map_err(|reason| TransitError::ParseSubnet {
            subnet: text.to_owned(),
            reason,
        })?;
        transits.push(transit_for_family(conf, cluster, subnet.is_ipv4())?);
    }
    conf.transit_subnet = transits.join(",");
    Ok(())
}

fn transit_for_family(
    conf: &mut NetConf,
    cluster: &ClusterConfig,
    ipv4: bool,
) -> Result<String, TransitError> {
    let mut transit: IpNetwork = if ipv4 {
        cluster.transit_subnet_v4.into()
    } else {
        cluster.transit_subnet_v6.into()
    };
    for _ in 0..MAX_ATTEMPTS {
        let candidate = transit.to_string();
        conf.transit_subnet.clone_from(&candidate);
        match subnet_overlap_check(conf, cluster) {
            Ok(()) => return Ok(candidate),
            Err(OverlapCheckError::Overlap { subnet, other })
                if subnet.subnet.to_string() == candidate
                    || other.subnet.to_string() == candidate =>
            {
                transit = next_candidate(subnet.subnet, other.subnet, transit.prefix())
                    .ok_or(TransitError::Exhausted)?;
            }
            Err(err) => return Err(err.into()),
        }
    }
    Err(TransitError::Exhausted)
}

/// Upstream `getFirstNonOverlappingSubnet`: the address after the larger network (the
/// first one on a tie), with the transit prefix length.
fn next_candidate(first: IpNetwork, second: IpNetwork, prefix: u8) -> Option<IpNetwork> {
    let base = if second.prefix() < first.prefix() {
        second
    } else {
        first
    };
    let next = match base.broadcast() {
        IpAddr::V4(last) => IpAddr::from(u32::from(last).checked_add(1)?.to_be_bytes()),
        IpAddr::V6(last) => IpAddr::from(u128::from(last).checked_add(1)?.to_be_bytes()),
    };
    IpNetwork::new(next, prefix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNetwork {
        parse_cidr(s).unwrap()
    }

    #[test]
    fn next_candidate_skips_past_the_larger_network() {
        let got = next_candidate(net("100.88.0.0/16"), net("100.88.0.0/15"), 16).unwrap();
        assert_eq!(got.to_string(), "100.90.0.0/16");
        let got = next_candidate(net("fd97::/64"), net("fd97::/65"), 64).unwrap();
        assert_eq!(got.to_string(), "fd97:0:0:1::/64");
        assert_eq!(
            next_candidate(net("255.255.0.0/16"), net("255.255.0.0/16"), 16),
            None
        );
    }
}
