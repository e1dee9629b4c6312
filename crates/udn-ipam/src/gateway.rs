//! Gateway (`.1`) and management port (`.2`) addresses of a Layer3 host subnet or a Layer2
//! network subnet (upstream `util.GetNodeGatewayIfAddr`, `GetNodeManagementIfAddr` and
//! `allocateInfrastructureIPs` for `infrastructureSubnets`).

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::family::{IpFamily, addr_at, addr_to_u128, canonical, network_size};

/// Errors computing gateway and management addresses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GatewayError {
    /// The subnet has no address at the wanted offset.
    #[error("subnet {subnet} is too small to hold its {role} address at offset {offset}")]
    SubnetTooSmall {
        /// The subnet.
        subnet: IpNetwork,
        /// "gateway" or "management port".
        role: &'static str,
        /// Offset from the network address.
        offset: u128,
    },
}

/// The address `offset` into `subnet`, carrying the subnet's prefix length.
fn at_offset(
    subnet: IpNetwork,
    offset: u128,
    role: &'static str,
) -> Result<IpNetwork, GatewayError> {
    let subnet = canonical(subnet);
    let too_small = GatewayError::SubnetTooSmall {
        subnet,
        role,
        offset,
    };
    if offset >= network_size(subnet) {
        return Err(too_small);
    }
    let ip = addr_at(subnet, offset).ok_or(too_small.clone())?;
    IpNetwork::new(ip, subnet.prefix()).map_err(|_| too_small)
}

/// The gateway address of `subnet`: its first address after the network address, with the
/// subnet's prefix length (`10.132.2.0/24` gives `10.132.2.1/24`).
pub fn gateway_ip(subnet: IpNetwork) -> Result<IpNetwork, GatewayError> {
    at_offset(subnet, 1, "gateway")
}

/// The management port address of `subnet`: the second address after the network address
/// (`10.132.2.0/24` gives `10.132.2.2/24`).
pub fn management_ip(subnet: IpNetwork) -> Result<IpNetwork, GatewayError> {
    at_offset(subnet, 2, "management port")
}

/// Gateway and management port addresses of one Layer2 network subnet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InfrastructureIps {
    /// Router (gateway) address.
    pub gateway: IpAddr,
    /// Management port address.
    pub management: IpAddr,
}

/// The first address of `candidates` (in order) that is not in `excluded`.
fn first_available(candidates: &[IpNetwork], excluded: &[IpAddr]) -> Option<IpAddr> {
    candidates.iter().find_map(|infra| {
        let infra = canonical(*infra);
        // At most `excluded.len()` addresses are skipped, so the first few suffice.
        let span = network_size(infra).min(excluded.len() as u128 + 1);
        (0..span)
            .filter_map(|offset| addr_at(infra, offset))
            .find(|ip| !excluded.contains(ip))
    })
}

/// Gateway and management addresses of a primary Layer2 subnet when preconfigured UDN
/// addresses are enabled (upstream `allocateInfrastructureIPs`, per subnet).
///
/// `default_gateway` is the `defaultGatewayIPs` entry of the subnet's family, if any. With
/// infrastructure subnets of the family, the gateway is `default_gateway` or else the first
/// address of those subnets, and management is the next free one; the subnet's network
/// address, its IPv4 broadcast address and the gateway are never picked. Whatever is still
/// missing falls back to `.1` (gateway) and `.2` (management; `.1` when the gateway is `.2`).
pub fn layer2_infrastructure_ips(
    subnet: IpNetwork,
    infrastructure_subnets: &[IpNetwork],
    default_gateway: Option<IpAddr>,
) -> Result<InfrastructureIps, GatewayError> {
    let subnet = canonical(subnet);
    let family = IpFamily::of_net(subnet);
    let infra: Vec<IpNetwork> = infrastructure_subnets
        .iter()
        .copied()
        .filter(|s| IpFamily::of_net(*s) == family)
        .collect();
    let mut gateway = default_gateway.filter(|ip| IpFamily::of_addr(*ip) == family);
    let mut management = None;
    if !infra.is_empty() {
        let mut excluded = vec![subnet.network()];
        if family == IpFamily::V4 {
            excluded.push(subnet.broadcast());
        }
        if gateway.is_none() {
            gateway = first_available(&infra, &excluded);
        }
        if let Some(gw) = gateway {
            excluded.push(gw);
        }
        management = first_available(&infra, &excluded);
    }
    let gateway = match gateway {
        Some(gw) => gw,
        None => gateway_ip(subnet)?.ip(),
    };
    let management = match management {
        Some(mgmt) => mgmt,
        None => {
            let second = management_ip(subnet)?.ip();
            if addr_to_u128(second) == addr_to_u128(gateway) {
                gateway_ip(subnet)?.ip()
            } else {
                second
            }
        }
    };
    Ok(InfrastructureIps {
        gateway,
        management,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNetwork {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn layer3_host_subnet() {
        assert_eq!(
            gateway_ip(net("10.132.2.0/24")).unwrap().to_string(),
            "10.132.2.1/24"
        );
        assert_eq!(
            management_ip(net("10.132.2.0/24")).unwrap().to_string(),
            "10.132.2.2/24"
        );
        assert_eq!(
            gateway_ip(net("203.203.2.0/24")).unwrap().ip(),
            ip("203.203.2.1")
        );
        assert_eq!(
            gateway_ip(net("fd00:10:244:1::/64")).unwrap().to_string(),
            "fd00:10:244:1::1/64"
        );
        assert_eq!(
            management_ip(net("fd00:10:244:1::/64"))
                .unwrap()
                .to_string(),
            "fd00:10:244:1::2/64"
        );
    }

    #[test]
    fn host_bits_in_the_input_are_ignored() {
        assert_eq!(
            gateway_ip(net("10.0.0.77/24")).unwrap().to_string(),
            "10.0.0.1/24"
        );
    }

    #[test]
    fn too_small() {
        assert_eq!(
            management_ip(net("10.0.0.0/31")).unwrap_err().to_string(),
            "subnet 10.0.0.0/31 is too small to hold its management port address at offset 2"
        );
        assert!(gateway_ip(net("10.0.0.0/32")).is_err());
    }

    #[test]
    fn layer2_defaults_without_infrastructure_subnets() {
        let ips = layer2_infrastructure_ips(net("192.168.200.0/24"), &[], None).unwrap();
        assert_eq!(ips.gateway, ip("192.168.200.1"));
        assert_eq!(ips.management, ip("192.168.200.2"));
        let ips = layer2_infrastructure_ips(net("fd12:1234::/64"), &[], None).unwrap();
        assert_eq!(ips.gateway, ip("fd12:1234::1"));
        assert_eq!(ips.management, ip("fd12:1234::2"));
    }

    #[test]
    fn custom_gateway_at_dot_two_moves_management_to_dot_one() {
        let ips = layer2_infrastructure_ips(net("10.0.0.0/24"), &[], Some(ip("10.0.0.2"))).unwrap();
        assert_eq!(ips.gateway, ip("10.0.0.2"));
        assert_eq!(ips.management, ip("10.0.0.1"));
        let ips =
            layer2_infrastructure_ips(net("10.0.0.0/24"), &[], Some(ip("10.0.0.50"))).unwrap();
        assert_eq!(ips.management, ip("10.0.0.2"));
    }

    #[test]
    fn infrastructure_subnet_at_the_network_start_skips_the_network_address() {
        let ips =
            layer2_infrastructure_ips(net("10.0.0.0/24"), &[net("10.0.0.0/30")], None).unwrap();
        assert_eq!(ips.gateway, ip("10.0.0.1"));
        assert_eq!(ips.management, ip("10.0.0.2"));
    }

    #[test]
    fn infrastructure_subnet_inside_uses_its_first_addresses() {
        let ips =
            layer2_infrastructure_ips(net("10.0.0.0/24"), &[net("10.0.0.8/30")], None).unwrap();
        assert_eq!(ips.gateway, ip("10.0.0.8"));
        assert_eq!(ips.management, ip("10.0.0.9"));
    }

    #[test]
    fn infrastructure_subnet_with_given_gateway() {
        let ips = layer2_infrastructure_ips(
            net("10.0.0.0/24"),
            &[net("10.0.0.8/30")],
            Some(ip("10.0.0.8")),
        )
        .unwrap();
        assert_eq!(ips.gateway, ip("10.0.0.8"));
        assert_eq!(ips.management, ip("10.0.0.9"));
    }

    #[test]
    fn infrastructure_subnet_at_the_broadcast_end() {
        let ips =
            layer2_infrastructure_ips(net("10.0.0.0/24"), &[net("10.0.0.254/31")], None).unwrap();
        assert_eq!(ips.gateway, ip("10.0.0.254"));
        // .255 is the broadcast: the infra subnet has nothing left, management falls back to .2.
        assert_eq!(ips.management, ip("10.0.0.2"));
    }

    #[test]
    fn infrastructure_subnets_of_the_other_family_are_ignored() {
        let ips = layer2_infrastructure_ips(
            net("fd00::/64"),
            &[net("10.0.0.8/30"), net("fd00::100/126")],
            None,
        )
        .unwrap();
        assert_eq!(ips.gateway, ip("fd00::100"));
        assert_eq!(ips.management, ip("fd00::101"));
    }
}
