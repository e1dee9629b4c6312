//! Masquerade addresses: the global ones at offsets 1..5 of the masquerade subnet (upstream
//! `config.AllocateV4MasqueradeIPs`) and the two per UDN derived from its network ID (upstream
//! `generator/udn/masquerade_ips.go`).

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::family::{IpFamily, addr_at, canonical, network_size};
use crate::network_id::NetworkId;

/// Offset of the first per-UDN masquerade address pair (`userDefinedNetworkMasqueradeIPBase`).
pub const UDN_MASQUERADE_IP_BASE: u128 = 10;

/// Errors computing masquerade addresses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MasqueradeError {
    /// Network IDs start at 1 for UDNs (upstream message, typo included).
    #[error("invalid argument: network ID should be bigger that 0")]
    InvalidNetworkId,
    /// The derived address falls outside the masquerade subnet.
    #[error(
        "failed generating network id '{network_id}' {id_name} {port} ip: generated ip {ip} from the idx {idx} is out of range in the network {subnet}"
    )]
    OutOfRange {
        /// The network ID.
        network_id: NetworkId,
        /// `v4-masquerade-ips` or `v6-masquerade-ips`.
        id_name: &'static str,
        /// `gateway router` or `management port`.
        port: &'static str,
        /// The generated address (text; past the end of the family it is described as such).
        ip: String,
        /// Offset from the subnet base.
        idx: u128,
        /// The masquerade subnet.
        subnet: IpNetwork,
    },
    /// The subnet is too small for a global masquerade address.
    #[error("masquerade subnet {subnet} has no address at offset {offset} for the {role} IP")]
    SubnetTooSmall {
        /// The masquerade subnet.
        subnet: IpNetwork,
        /// The offset.
        offset: u128,
        /// Which global address.
        role: &'static str,
    },
}

/// The two masquerade addresses of a UDN, with the masquerade subnet's prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MasqueradeIps {
    /// Gateway router address: base + 10 + 2*id - 1.
    pub gateway_router: IpNetwork,
    /// Management port address: base + 10 + 2*id.
    pub management_port: IpNetwork,
}

fn generate(
    subnet: IpNetwork,
    network_id: NetworkId,
    port: &'static str,
    idx: u128,
) -> Result<IpNetwork, MasqueradeError> {
    let id_name = match IpFamily::of_net(subnet) {
        IpFamily::V4 => "v4-masquerade-ips",
        IpFamily::V6 => "v6-masquerade-ips",
    };
    let ip = addr_at(subnet, idx);
    match ip {
        Some(ip) if subnet.contains(ip) => {
            IpNetwork::new(ip, subnet.prefix()).map_err(|_| MasqueradeError::OutOfRange {
                network_id,
                id_name,
                port,
                ip: ip.to_string(),
                idx,
                subnet,
            })
        }
        _ => Err(MasqueradeError::OutOfRange {
            network_id,
            id_name,
            port,
            ip: ip.map_or_else(
                || "beyond the address family".to_owned(),
                |ip| ip.to_string(),
            ),
            idx,
            subnet,
        }),
    }
}

/// The masquerade addresses of the UDN with `network_id` in `masquerade_subnet` (call once per
/// family). Network ID 1 in `169.254.0.0/17` gives `169.254.0.11/17` and `169.254.0.12/17`.
pub fn udn_masquerade_ips(
    masquerade_subnet: IpNetwork,
    network_id: NetworkId,
) -> Result<MasqueradeIps, MasqueradeError> {
    if network_id < 1 {
        return Err(MasqueradeError::InvalidNetworkId);
    }
    let subnet = canonical(masquerade_subnet);
    let id = u128::from(network_id);
    Ok(MasqueradeIps {
        gateway_router: generate(
            subnet,
            network_id,
            "gateway router",
            UDN_MASQUERADE_IP_BASE + 2 * id - 1,
        )?,
        management_port: generate(
            subnet,
            network_id,
            "management port",
            UDN_MASQUERADE_IP_BASE + 2 * id,
        )?,
    })
}

/// The global (default network) masquerade addresses of one family, offsets 1..5 of the
/// masquerade subnet (6..9 are reserved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobalMasqueradeIps {
    /// Offset 1: OVN masquerade (gateway router SNAT for service traffic).
    pub ovn: IpAddr,
    /// Offset 2: host masquerade.
    pub host: IpAddr,
    /// Offset 3: host masquerade for externalTrafficPolicy=Local.
    pub host_etp_local: IpAddr,
    /// Offset 4: dummy next hop.
    pub dummy_next_hop: IpAddr,
    /// Offset 5: OVN service hairpin.
    pub ovn_service_hairpin: IpAddr,
}

impl GlobalMasqueradeIps {
    /// The addresses of `masquerade_subnet` (`169.254.0.0/17` gives `169.254.0.1` … `.5`).
    pub fn from_subnet(masquerade_subnet: IpNetwork) -> Result<Self, MasqueradeError> {
        let subnet = canonical(masquerade_subnet);
        let at = |offset: u128, role: &'static str| {
            (offset < network_size(subnet))
                .then(|| addr_at(subnet, offset))
                .flatten()
                .ok_or(MasqueradeError::SubnetTooSmall {
                    subnet,
                    offset,
                    role,
                })
        };
        Ok(Self {
            ovn: at(1, "OVN masquerade")?,
            host: at(2, "host masquerade")?,
            host_etp_local: at(3, "host ETP=Local masquerade")?,
            dummy_next_hop: at(4, "dummy next-hop masquerade")?,
            ovn_service_hairpin: at(5, "OVN service hairpin masquerade")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNetwork {
        s.parse().unwrap()
    }

    fn pair(subnet: &str, id: NetworkId) -> (String, String) {
        let ips = udn_masquerade_ips(net(subnet), id).unwrap();
        (
            ips.gateway_router.to_string(),
            ips.management_port.to_string(),
        )
    }

    #[test]
    fn per_network_examples() {
        assert_eq!(
            pair("169.254.0.0/17", 1),
            ("169.254.0.11/17".into(), "169.254.0.12/17".into())
        );
        assert_eq!(
            pair("169.254.0.0/17", 2),
            ("169.254.0.13/17".into(), "169.254.0.14/17".into())
        );
        assert_eq!(
            pair("169.254.0.0/17", 3),
            ("169.254.0.15/17".into(), "169.254.0.16/17".into())
        );
        assert_eq!(
            pair("fd69::/112", 1),
            ("fd69::b/112".into(), "fd69::c/112".into())
        );
        assert_eq!(
            pair("169.254.0.0/17", 4095),
            ("169.254.32.7/17".into(), "169.254.32.8/17".into())
        );
    }

    #[test]
    fn network_id_zero() {
        assert_eq!(
            udn_masquerade_ips(net("169.254.169.0/29"), 0)
                .unwrap_err()
                .to_string(),
            "invalid argument: network ID should be bigger that 0"
        );
    }

    #[test]
    fn out_of_range() {
        assert_eq!(
            udn_masquerade_ips(net("169.254.169.0/29"), 9)
                .unwrap_err()
                .to_string(),
            "failed generating network id '9' v4-masquerade-ips gateway router ip: generated ip 169.254.169.27 from the idx 27 is out of range in the network 169.254.169.0/29"
        );
        // Any ID fails on a /29: the first index is 11.
        assert!(udn_masquerade_ips(net("169.254.169.0/29"), 1).is_err());
        // The gateway router fits but the management port does not.
        assert_eq!(
            udn_masquerade_ips(net("fd69::/124"), 3)
                .unwrap_err()
                .to_string(),
            "failed generating network id '3' v6-masquerade-ips management port ip: generated ip fd69::10 from the idx 16 is out of range in the network fd69::/124"
        );
        assert!(
            udn_masquerade_ips(net("255.255.255.248/29"), 1)
                .unwrap_err()
                .to_string()
                .contains("beyond the address family")
        );
    }

    #[test]
    fn global_offsets() {
        let v4 = GlobalMasqueradeIps::from_subnet(net("169.254.0.0/17")).unwrap();
        let got: Vec<String> = [
            v4.ovn,
            v4.host,
            v4.host_etp_local,
            v4.dummy_next_hop,
            v4.ovn_service_hairpin,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            got,
            [
                "169.254.0.1",
                "169.254.0.2",
                "169.254.0.3",
                "169.254.0.4",
                "169.254.0.5"
            ]
        );
        let small = GlobalMasqueradeIps::from_subnet(net("169.254.169.0/29")).unwrap();
        assert_eq!(small.ovn_service_hairpin.to_string(), "169.254.169.5");
        let v6 = GlobalMasqueradeIps::from_subnet(net("fd69::/112")).unwrap();
        assert_eq!(v6.ovn.to_string(), "fd69::1");
        assert_eq!(v6.ovn_service_hairpin.to_string(), "fd69::5");
        assert_eq!(
            GlobalMasqueradeIps::from_subnet(net("169.254.169.0/30"))
                .unwrap_err()
                .to_string(),
            "masquerade subnet 169.254.169.0/30 has no address at offset 4 for the dummy next-hop masquerade IP"
        );
    }
}
