//! Which Services and slices a network serves, and its hairpin masquerade IPs.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::IpNetwork;
use udn_api::cluster::ClusterConfig;

use super::lbs::{LbSpec, NetLbContext, network_lbs};
use super::per_node::LbNode;
use super::view::{ServiceView, SliceView};
use crate::model::{GatewayConfigMode, Network, Node, Topology};

/// Upstream's service hairpin masquerade IPs: the 5th address of each masquerade subnet
/// (`169.254.0.5 fd69::5` with the default subnets), as `options:hairpin_snat_ip`.
pub fn hairpin_snat_ip(cluster: &ClusterConfig) -> String {
    let (v4, v6) = masquerade_ip(cluster, 5);
    format!("{v4} {v6}")
}

/// The `offset`th address of each masquerade subnet (upstream's reserved masquerade IPs:
/// 2 the host, 3 the ETP=Local host, 5 the OVN service hairpin).
fn masquerade_ip(cluster: &ClusterConfig, offset: u32) -> (Ipv4Addr, Ipv6Addr) {
    (
        Ipv4Addr::from(u32::from(cluster.masquerade_subnet_v4.network()).wrapping_add(offset)),
        Ipv6Addr::from(
            u128::from(cluster.masquerade_subnet_v6.network()).wrapping_add(offset.into()),
        ),
    )
}

/// The network's cluster subnets (the default network's from the cluster configuration).
fn network_subnets(net: &Network, cluster: &ClusterConfig) -> Vec<IpNetwork> {
    match net.user_defined() {
        Some(info) => info.subnets.iter().map(|s| s.cidr).collect(),
        None => cluster.cluster_subnets.iter().map(|s| s.cidr).collect(),
    }
}

/// The zone's local nodes as `net`'s per-node load balancers see them (upstream
/// `nodeInfoForNetwork`): a Layer3 network's node needs its host subnet; a gateway router
/// exists when the node's gateway config is not disabled.
fn lb_nodes(net: &Network, nodes: &[Node]) -> Vec<LbNode> {
    let mut out: Vec<LbNode> = nodes
        .iter()
        .filter(|n| n.local)
        .filter(|n| net.topology() != Topology::Layer3 || !n.subnets_of(&net.name).is_empty())
        .map(|n| {
            let gateway = n
                .gateway
                .as_ref()
                .filter(|g| g.mode != GatewayConfigMode::Disabled);
            let host_addresses: Vec<IpAddr> = n.host_cidrs.iter().map(IpNetwork::ip).collect();
            LbNode {
                name: n.name.clone(),
                host_addresses,
                node_port_enabled: gateway.is_some_and(|g| g.node_port_enable),
                gateway_router: gateway.is_some(),
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Whether `net` has load balancers: the default network, and primary Layer3 and Layer2
/// UDNs (secondary and localnet networks have none).
fn serves(net: &Network) -> bool {
    net.is_default()
        || (net.user_defined().is_some_and(|info| info.primary)
            && net.topology() != Topology::Localnet)
}

/// The load balancers of every network, by network name, in one pass over the Services and
/// slices (a pass renders many networks: filtering every Service for each would cost
/// networks x Services). A Service belongs to its namespace's network: the primary UDN of a
/// namespace labelled for one (`labelled`; none while its UDN is missing), else the default
/// network.
pub fn lbs_by_network<'a>(
    networks: impl IntoIterator<Item = &'a Network>,
    labelled: &BTreeSet<String>,
    services: &[ServiceView],
    slices: &[SliceView],
    nodes: &[Node],
    cluster: &ClusterConfig,
) -> BTreeMap<String, Vec<LbSpec>> {
    let hairpin = hairpin_snat_ip(cluster);
    let mut default_name = None;
    let mut of_namespace: BTreeMap<&str, &Network> = BTreeMap::new();
    let mut served: BTreeMap<&str, &Network> = BTreeMap::new();
    for net in networks {
        if !serves(net) {
            continue;
        }
        served.insert(net.name.as_str(), net);
        if net.is_default() {
            default_name = Some(net.name.as_str());
            continue;
        }
        for key in &net.nads {
            if let Some((ns, _)) = key.split_once('/') {
                of_namespace.insert(ns, net);
            }
        }
    }
    let network_of = |ns: &str| -> Option<&str> {
        if labelled.contains(ns) {
            of_namespace.get(ns).map(|n| n.name.as_str())
        } else {
            default_name
        }
    };
    let mut services_of: BTreeMap<&str, Vec<ServiceView>> = BTreeMap::new();
    for service in services {
        if let Some(net) = network_of(&service.namespace) {
            services_of.entry(net).or_default().push(service.clone());
        }
    }
    let mut slices_of: BTreeMap<&str, Vec<SliceView>> = BTreeMap::new();
    for slice in slices {
        let net = match &slice.network {
            Some(network) => served.get(network.as_str()).map(|n| n.name.as_str()),
            None => default_name,
        };
        if let Some(net) = net {
            slices_of.entry(net).or_default().push(slice.clone());
        }
    }
    let mut result = BTreeMap::new();
    for (name, services) in services_of {
        let Some(net) = served.get(name) else {
            continue;
        };
        let slices = slices_of.remove(name).unwrap_or_default();
        let (network, prefix) = if net.is_default() {
            (None, String::new())
        } else {
            (Some(net.name.as_str()), net.scoped(""))
        };
        let subnets = network_subnets(net, cluster);
        let lb_nodes = lb_nodes(net, nodes);
        let ctx = NetLbContext {
            network,
            prefix: &prefix,
            hairpin_snat_ip: &hairpin,
            subnets: &subnets,
            service_cidrs: &cluster.service_cidrs,
            nodes: &lb_nodes,
            host_masquerade: masquerade_ip(cluster, 2),
            etp_local_masquerade: masquerade_ip(cluster, 3),
        };
        result.insert(name.to_owned(), network_lbs(&ctx, &services, &slices));
    }
    result
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
