//! The `k8s.ovn.org/pod-networks` entry of an attachment the zone allocates (upstream
//! `allocatePodAnnotation` + `AddRoutesGatewayIP`): MAC from the first IP (or a requested one),
//! and the routes of the role and topology:
//! - default network, role `primary`: per family, every default cluster subnet, every service
//!   CIDR, the service-hairpin masquerade IP and the default join subnet via the node gateway,
//!   and the gateway as default route (unless another attachment asked for the default route);
//! - default network, role `infrastructure-locked`: the cluster subnets and the join subnet
//!   only, no default route;
//! - Layer3: every cluster subnet of the network via the gateway; a primary one also the
//!   service CIDRs and its join subnet, and the default route.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_api::annotations::{MacAddress, PodNetworkAnnotation, PodNetworkRole, PodRoute};
use udn_api::cluster::ClusterConfig;
use udn_ipam::{GlobalMasqueradeIps, IpFamily, gateway_ip, ip_to_mac};

use crate::model::{Network, Topology};

/// Whether the zone allocates this network's pod addresses itself (default, Layer3), or at
/// least its MAC (Localnet without subnets); otherwise cluster-manager does.
pub fn zone_allocates(network: &Network) -> bool {
    match network.topology() {
        Topology::Default | Topology::Layer3 => true,
        Topology::Layer2 => false,
        Topology::Localnet => network
            .user_defined()
            .is_some_and(|info| info.subnets.is_empty()),
    }
}

/// What one entry is built from.
#[derive(Debug)]
pub struct EntryInputs<'a> {
    /// The network.
    pub network: &'a Network,
    /// The cluster (default-network subnets, service CIDRs, join and masquerade subnets).
    pub cluster: &'a ClusterConfig,
    /// The role of the network for the pod.
    pub role: PodNetworkRole,
    /// Allocated addresses (with the host subnet's prefix length).
    pub ips: &'a [IpNetwork],
    /// A requested MAC.
    pub mac: Option<MacAddress>,
    /// Gateways requested by the attachment's selection element (`default-route`).
    pub gateway_request: &'a [IpAddr],
    /// Whether another attachment of the pod asked for the default route.
    pub default_route_elsewhere: bool,
    /// Seed for the MAC of an attachment without addresses (stable across restarts).
    pub seed: &'a str,
}

fn mac_of(requested: Option<MacAddress>, ips: &[IpNetwork], seed: &str) -> MacAddress {
    if let Some(mac) = requested {
        return mac;
    }
    if let Some(ip) = ips.first() {
        return MacAddress(ip_to_mac(ip.ip()).octets());
    }
    // Upstream draws a random MAC; a hash of the attachment is as unique and survives a
    // restart before the annotation is written. Locally administered, unicast.
    let mut hasher = DefaultHasher::new();
    seed.hash(&mut hasher);
    let [a, b, c, d, e, f, _, _] = hasher.finish().to_be_bytes();
    MacAddress([(a | 0x02) & 0xfe, b, c, d, e, f])
}

fn same_family(a: IpNetwork, b: IpNetwork) -> bool {
    IpFamily::of_net(a) == IpFamily::of_net(b)
}

/// Builds the entry.
pub fn pod_entry(inputs: &EntryInputs<'_>) -> PodNetworkAnnotation {
    let mut entry = PodNetworkAnnotation {
        ip_addresses: inputs.ips.to_vec(),
        mac_address: mac_of(inputs.mac, inputs.ips, inputs.seed),
        gateway_ips: inputs.gateway_request.to_vec(),
        routes: Vec::new(),
        ipv6_lla_gateway_ip: None,
        tunnel_id: 0,
        role: Some(inputs.role),
    };
    let cluster = inputs.cluster;
    for ip in inputs.ips {
        let Ok(subnet) = IpNetwork::new(ip.network(), ip.prefix()) else {
            continue;
        };
        let Ok(gateway) = gateway_ip(subnet) else {
            continue;
        };
        let gateway = gateway.ip();
        let mut dests: Vec<IpNetwork> = Vec::new();
        let mut default_route = false;
        match (inputs.network.user_defined(), inputs.role) {
            (None, role) => {
                dests.extend(cluster.cluster_subnets.iter().map(|s| s.cidr));
                if role != PodNetworkRole::InfrastructureLocked {
                    dests.extend(cluster.service_cidrs.iter().copied());
                    let masquerade: IpNetwork = match IpFamily::of_net(*ip) {
                        IpFamily::V4 => cluster.masquerade_subnet_v4.into(),
                        IpFamily::V6 => cluster.masquerade_subnet_v6.into(),
                    };
                    if let Ok(global) = GlobalMasqueradeIps::from_subnet(masquerade) {
                        let host = if global.ovn_service_hairpin.is_ipv4() {
                            32
                        } else {
                            128
                        };
                        if let Ok(hairpin) = IpNetwork::new(global.ovn_service_hairpin, host) {
                            dests.push(hairpin);
                        }
                    }
                    default_route = true;
                }
                dests.push(cluster.join_subnet_v4.into());
                dests.push(cluster.join_subnet_v6.into());
            }
            (Some(info), _) => {
                dests.extend(info.subnets.iter().map(|s| s.cidr));
                if info.primary {
                    dests.extend(cluster.service_cidrs.iter().copied());
                    dests.extend(info.join_subnets.iter().copied());
                    default_route = true;
                }
            }
        }
        entry.routes.extend(
            dests
                .into_iter()
                .filter(|dest| same_family(*dest, *ip))
                .map(|dest| PodRoute {
                    dest,
                    next_hop: Some(gateway),
                }),
        );
        if default_route && inputs.gateway_request.is_empty() && !inputs.default_route_elsewhere {
            entry.gateway_ips.push(gateway);
        }
    }
    entry
}

#[cfg(test)]
mod tests;
