//! Addresses derived from subnets and node IDs: the `.1`/`.2` of host subnets (through
//! `udn-ipam`), the gateway router join IPs (join subnet base + node ID, upstream
//! `generator/udn.GetGWRouterIPs`) and the cluster router's join IP (base + 1).

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_ipam::{IpFamily, gateway_ip, layer2_infrastructure_ips, management_ip};

use super::problem::Missing;

/// A host subnet with its gateway (`.1`) and management (`.2`) addresses, both carrying
/// the subnet's prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HostSubnet {
    /// The subnet.
    pub(crate) subnet: IpNetwork,
    /// The router's address on it.
    pub(crate) gateway: IpNetwork,
    /// The management port's address on it.
    pub(crate) management: IpNetwork,
}

impl HostSubnet {
    /// `.1` and `.2` of `subnet` (upstream `GetNodeGatewayIfAddr`, `GetNodeManagementIfAddr`).
    pub(crate) fn plain(subnet: IpNetwork) -> Result<Self, Missing> {
        let address = |e: udn_ipam::GatewayError| Missing::Address {
            reason: e.to_string(),
        };
        Ok(Self {
            subnet,
            gateway: gateway_ip(subnet).map_err(address)?,
            management: management_ip(subnet).map_err(address)?,
        })
    }

    /// A primary Layer2 subnet with preconfigured UDN addresses (infrastructure subnets,
    /// default gateway IPs).
    pub(crate) fn preconfigured(
        subnet: IpNetwork,
        infrastructure: &[IpNetwork],
        default_gateways: &[IpAddr],
    ) -> Result<Self, Missing> {
        let family = family_of(subnet);
        let default_gateway = default_gateways
            .iter()
            .copied()
            .find(|ip| IpFamily::of_addr(*ip) == family);
        let ips =
            layer2_infrastructure_ips(subnet, infrastructure, default_gateway).map_err(|e| {
                Missing::Address {
                    reason: e.to_string(),
                }
            })?;
        let with_prefix = |ip| {
            IpNetwork::new(ip, subnet.prefix()).map_err(|e| Missing::Address {
                reason: e.to_string(),
            })
        };
        Ok(Self {
            subnet,
            gateway: with_prefix(ips.gateway)?,
            management: with_prefix(ips.management)?,
        })
    }

    /// The subnet's family.
    pub(crate) fn family(&self) -> IpFamily {
        family_of(self.subnet)
    }
}

/// The family of a network.
pub(crate) fn family_of(net: IpNetwork) -> IpFamily {
    IpFamily::of_net(net)
}

/// The host (full-length) network of an address: `/32` or `/128`.
pub(crate) fn host_net(ip: IpAddr) -> IpNetwork {
    IpNetwork::from(ip)
}

/// The family's `ip4` / `ip6` match prefix.
pub(crate) fn match_prefix(family: IpFamily) -> &'static str {
    match family {
        IpFamily::V4 => "ip4",
        IpFamily::V6 => "ip6",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNetwork {
        s.parse().unwrap()
    }

    #[test]
    fn host_subnets_get_their_gateway_and_management_addresses() {
        let hs = HostSubnet::plain(net("192.168.1.0/24")).unwrap();
        assert_eq!(hs.gateway, net("192.168.1.1/24"));
        assert_eq!(hs.management, net("192.168.1.2/24"));
    }
}
