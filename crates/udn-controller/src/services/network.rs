//! Which Services and slices a network serves, and its hairpin masquerade IPs.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use udn_api::cluster::ClusterConfig;

use super::lbs::{LbSpec, network_lbs};
use super::view::{ServiceView, SliceView};
use crate::model::{Network, Topology};

/// Upstream's service hairpin masquerade IPs: the 5th address of each masquerade subnet
/// (`169.254.0.5 fd69::5` with the default subnets), as `options:hairpin_snat_ip`.
pub fn hairpin_snat_ip(cluster: &ClusterConfig) -> String {
    let v4 = Ipv4Addr::from(u32::from(cluster.masquerade_subnet_v4.network()).wrapping_add(5));
    let v6 = Ipv6Addr::from(u128::from(cluster.masquerade_subnet_v6.network()).wrapping_add(5));
    format!("{v4} {v6}")
}

/// The load balancers of `net`: the default network serves the Services of namespaces not
/// labelled for a primary UDN (`labelled`), a primary Layer3 or Layer2 UDN those of its NADs'
/// namespaces; secondary and localnet networks have none.
pub fn lbs_of_network(
    net: &Network,
    labelled: &BTreeSet<String>,
    services: &[ServiceView],
    slices: &[SliceView],
    cluster: &ClusterConfig,
) -> Vec<LbSpec> {
    let hairpin = hairpin_snat_ip(cluster);
    if net.is_default() {
        let outside = |ns: &str| !labelled.contains(ns);
        return network_lbs(None, "", &outside, services, slices, &hairpin);
    }
    let primary = net.user_defined().is_some_and(|info| info.primary);
    if !primary || net.topology() == Topology::Localnet {
        return Vec::new();
    }
    let namespaces: BTreeSet<&str> = net
        .nads
        .iter()
        .filter_map(|key| key.split_once('/').map(|(ns, _)| ns))
        .collect();
    let inside = |ns: &str| namespaces.contains(ns);
    network_lbs(
        Some(&net.name),
        &net.scoped(""),
        &inside,
        services,
        slices,
        &hairpin,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_hairpin_ips_are_upstreams() {
        assert_eq!(
            hairpin_snat_ip(&ClusterConfig::default()),
            "169.254.0.5 fd69::5"
        );
    }
}
