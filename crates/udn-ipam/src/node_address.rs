//! Addresses derived from a node's ID (upstream `generator/ip.IPGenerator.GenerateIP` and
//! `generator/udn/join_ips.go`): the base of a subnet plus the node ID, with the subnet's
//! prefix length. Nothing is stored; every component computes the same value.
//!
//! - Transit switch port (`k8s.ovn.org/node-transit-switch-port-ifaddr`): the cluster transit
//!   subnet, `100.88.0.0/16` and node ID 2 give `100.88.0.2/16`; `fd97::/64` gives `fd97::2/64`.
//! - Gateway router join port: the network's join subnet (default network `100.64.0.0/16`,
//!   primary UDNs `100.65.0.0/16` unless configured), node ID 2 gives `100.64.0.2/16`.

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::family::{addr_at, canonical, network_size};
use crate::node_id::NodeId;

/// An address derived from a node ID does not fit its subnet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeAddressError {
    /// Upstream's message; `ip` is the address the offset reaches, when it is one.
    #[error(
        "generated ip {} from the idx {node_id} is out of range in the network {subnet}",
        ip.map_or_else(|| "<nil>".to_owned(), |ip| ip.to_string())
    )]
    OutOfRange {
        /// The subnet (host bits cleared).
        subnet: IpNetwork,
        /// The node ID used as offset.
        node_id: NodeId,
        /// The address past the subnet.
        ip: Option<IpAddr>,
    },
}

/// The address `node_id` past the network address of `subnet`, with the subnet's prefix
/// length (upstream `GenerateIP`; the subnet's last address counts as inside).
pub fn node_ip(subnet: IpNetwork, node_id: NodeId) -> Result<IpNetwork, NodeAddressError> {
    let subnet = canonical(subnet);
    let offset = u128::from(node_id);
    let ip = addr_at(subnet, offset);
    let out_of_range = NodeAddressError::OutOfRange {
        subnet,
        node_id,
        ip,
    };
    match ip {
        Some(ip) if offset < network_size(subnet) => {
            IpNetwork::new(ip, subnet.prefix()).map_err(|_| out_of_range)
        }
        _ => Err(out_of_range),
    }
}

fn node_ips(subnets: &[IpNetwork], node_id: NodeId) -> Result<Vec<IpNetwork>, NodeAddressError> {
    subnets
        .iter()
        .map(|subnet| node_ip(*subnet, node_id))
        .collect()
}

/// The node's transit switch port addresses, one per subnet given (the cluster transit
/// subnets of the enabled IP families, IPv4 first).
pub fn transit_switch_port_ips(
    transit_subnets: &[IpNetwork],
    node_id: NodeId,
) -> Result<Vec<IpNetwork>, NodeAddressError> {
    node_ips(transit_subnets, node_id)
}

/// The node's gateway router join port addresses on a network, one per join subnet given
/// (the network's join subnets of the enabled IP families). Only the default network and
/// primary UDNs have a gateway router.
pub fn gateway_router_join_ips(
    join_subnets: &[IpNetwork],
    node_id: NodeId,
) -> Result<Vec<IpNetwork>, NodeAddressError> {
    node_ips(join_subnets, node_id)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::family::addr_to_u128;

    fn net(text: &str) -> IpNetwork {
        text.parse().unwrap()
    }

    #[test]
    fn transit_and_join_examples() {
        let transit = [net("100.88.0.0/16"), net("fd97::/64")];
        assert_eq!(
            transit_switch_port_ips(&transit, 2).unwrap(),
            [net("100.88.0.2/16"), net("fd97::2/64")]
        );
        assert_eq!(
            transit_switch_port_ips(&transit, 300).unwrap(),
            [net("100.88.1.44/16"), net("fd97::12c/64")]
        );
        assert_eq!(
            gateway_router_join_ips(&[net("100.64.0.0/16"), net("fd98::/64")], 2).unwrap(),
            [net("100.64.0.2/16"), net("fd98::2/64")]
        );
        assert_eq!(
            gateway_router_join_ips(&[net("100.65.0.0/16")], 5000).unwrap(),
            [net("100.65.19.136/16")]
        );
        assert!(transit_switch_port_ips(&[], 2).unwrap().is_empty());
    }

    #[test]
    fn host_bits_of_the_subnet_are_ignored() {
        assert_eq!(
            node_ip(net("100.88.7.7/16"), 3).unwrap(),
            net("100.88.0.3/16")
        );
    }

    #[test]
    fn out_of_range_is_an_error_with_upstreams_message() {
        assert_eq!(node_ip(net("10.0.0.0/30"), 3).unwrap(), net("10.0.0.3/30"));
        let error = node_ip(net("10.0.0.0/30"), 4).unwrap_err();
        assert_eq!(
            error.to_string(),
            "generated ip 10.0.0.4 from the idx 4 is out of range in the network 10.0.0.0/30"
        );
        assert_eq!(
            node_ip(net("255.255.255.254/31"), 2)
                .unwrap_err()
                .to_string(),
            "generated ip <nil> from the idx 2 is out of range in the network 255.255.255.254/31"
        );
        assert!(transit_switch_port_ips(&[net("100.88.0.0/16"), net("fd97::/126")], 4).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn inside_the_subnet_with_its_prefix(
            octets in any::<[u8; 4]>(),
            prefix in 0u8..=32,
            id in 0u32..=5000,
        ) {
            let subnet = canonical(IpNetwork::new(IpAddr::from(octets), prefix).unwrap());
            match node_ip(subnet, id) {
                Ok(ip) => {
                    prop_assert_eq!(ip.prefix(), prefix);
                    prop_assert!(subnet.contains(ip.ip()));
                    prop_assert_eq!(
                        addr_to_u128(ip.ip()),
                        addr_to_u128(subnet.network()) + u128::from(id)
                    );
                }
                Err(_) => prop_assert!(u128::from(id) >= network_size(subnet)),
            }
        }
    }
}
