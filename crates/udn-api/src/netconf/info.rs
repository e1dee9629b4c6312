//! [`NetInfo`]: the typed view of a [`NetConf`] (upstream `util.NewNetInfo`), with the
//! upstream parse order, defaults (both UDN join subnets are always filled for Layer2 and
//! Layer3) and error texts, including the cluster IP-family check for primary networks.

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use super::subnets::{
    SubnetEntry, SubnetParseError, contains_cidr, parse_cidr, parse_cluster_subnet_entries,
    parse_ip_list, parse_subnet_entries, parse_subnet_list,
};
use super::{NetConf, UDN_JOIN_SUBNET_V4, UDN_JOIN_SUBNET_V6};
use crate::cluster::ClusterConfig;
use crate::crd::NetworkTopology;

/// Why a [`NetConf`] has no valid [`NetInfo`]. Display is the upstream text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NetInfoError {
    /// `topology` is none of layer3/layer2/localnet.
    #[error("topology {topology} not supported")]
    UnsupportedTopology {
        /// The topology string.
        topology: String,
    },
    /// Layer3 `subnets` or any `joinSubnet` failed to parse (upstream does not wrap these).
    #[error(transparent)]
    Subnets(#[from] SubnetParseError),
    /// A Layer2 list failed to parse; `list` is `network`, `exclude`, `reserved`,
    /// `infrastructure` or `transit`.
    #[error("invalid {list} subnet{plural} for {topology} netconf {network}: {reason}", plural = if *list == "transit" { "" } else { "s" })]
    Layer2List {
        /// Which list.
        list: &'static str,
        /// The topology string.
        topology: String,
        /// The network name.
        network: String,
        /// The parse failure.
        reason: SubnetParseError,
    },
    /// A localnet list failed to parse.
    #[error("invalid {topology} netconf {network}: {reason}")]
    Localnet {
        /// The topology string.
        topology: String,
        /// The network name.
        network: String,
        /// The parse failure.
        reason: SubnetParseError,
    },
    /// An `excludeSubnets` entry outside every network subnet.
    #[error("the provided network subnets do not contain excluded subnets {subnet}")]
    ExcludedNotContained {
        /// The offending subnet.
        subnet: IpNetwork,
    },
    /// A `reservedSubnets` entry outside every network subnet.
    #[error("the provided network subnets do not contain reserved subnets {subnet}")]
    ReservedNotContained {
        /// The offending subnet.
        subnet: IpNetwork,
    },
    /// An `infrastructureSubnets` entry outside every network subnet.
    #[error("the provided network subnets do not contain infrastructure subnets {subnet}")]
    InfrastructureNotContained {
        /// The offending subnet.
        subnet: IpNetwork,
    },
    /// `defaultGatewayIPs` does not parse.
    #[error("failed to allocate infrastructure IPs: invalid default gateway IPs: {reason}")]
    DefaultGatewayIps {
        /// The parse failure.
        reason: super::subnets::IpListError,
    },
    /// A primary network uses a family the cluster does not run.
    #[error(
        "network {network} is attempting to use {family} subnets but the cluster does not support {family}"
    )]
    FamilyNotSupported {
        /// The network name.
        network: String,
        /// `ipv4` or `ipv6`.
        family: &'static str,
    },
}

/// The typed view of a network configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetInfo {
    /// The cluster default network (`name: default`); its values come from the cluster.
    Default,
    /// A user-defined (NAD) network.
    UserDefined(Box<UserDefinedNetInfo>),
}

/// Typed values of a user-defined network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserDefinedNetInfo {
    /// Network name.
    pub name: String,
    /// Topology.
    pub topology: NetworkTopology,
    /// Role is primary (never for localnet).
    pub primary: bool,
    /// Network subnets (Layer3: with host lengths).
    pub subnets: Vec<SubnetEntry>,
    /// Excluded subnets (Layer2, localnet).
    pub exclude_subnets: Vec<IpNetwork>,
    /// Reserved subnets (Layer2, preconfigured-addresses feature on).
    pub reserved_subnets: Vec<IpNetwork>,
    /// Infrastructure subnets (Layer2, preconfigured-addresses feature on).
    pub infrastructure_subnets: Vec<IpNetwork>,
    /// Join subnets `[v4, v6]` for Layer3/Layer2 (defaults filled); empty for localnet.
    pub join_subnets: Vec<IpNetwork>,
    /// Transit subnets (primary Layer2).
    pub transit_subnets: Vec<IpNetwork>,
    /// Configured default gateway IPs (primary Layer2, preconfigured-addresses feature on).
    pub default_gateway_ips: Vec<IpAddr>,
    /// MTU.
    pub mtu: i64,
    /// VLAN id (localnet).
    pub vlan_id: i64,
    /// Persistent IPs allowed (Layer2, localnet).
    pub allow_persistent_ips: bool,
    /// Physical network name (localnet).
    pub physical_network_name: String,
    /// Transport (Layer3, Layer2).
    pub transport: String,
    /// Outbound SNAT (Layer3).
    pub outbound_snat: String,
    /// Uplink.
    pub uplink: String,
    /// Whether any subnet is IPv4.
    pub ipv4: bool,
    /// Whether any subnet is IPv6.
    pub ipv6: bool,
}

impl NetInfo {
    /// Upstream `NewNetInfo`.
    pub fn from_netconf(conf: &NetConf, cluster: &ClusterConfig) -> Result<Self, NetInfoError> {
        if conf.is_default_network() {
            return Ok(Self::Default);
        }
        let info = match conf.topology_kind() {
            Some(NetworkTopology::Layer3) => layer3(conf)?,
            Some(NetworkTopology::Layer2) => layer2(conf, cluster)?,
            Some(NetworkTopology::Localnet) => localnet(conf)?,
            None => {
                return Err(NetInfoError::UnsupportedTopology {
                    topology: conf.topology.clone(),
                });
            }
        };
        if info.primary {
            for (used, enabled, family) in [
                (info.ipv4, cluster.ipv4_enabled(), "ipv4"),
                (info.ipv6, cluster.ipv6_enabled(), "ipv6"),
            ] {
                if used && !enabled {
                    return Err(NetInfoError::FamilyNotSupported {
                        network: info.name,
                        family,
                    });
                }
            }
        }
        Ok(Self::UserDefined(Box::new(info)))
    }

    /// The user-defined view, `None` for the default network.
    pub fn user_defined(&self) -> Option<&UserDefinedNetInfo> {
        match self {
            Self::Default => None,
            Self::UserDefined(info) => Some(info),
        }
    }
}

fn base(
    conf: &NetConf,
    topology: NetworkTopology,
    subnets: Vec<SubnetEntry>,
) -> UserDefinedNetInfo {
    let ipv4 = subnets.iter().any(|s| s.cidr.is_ipv4());
    let ipv6 = subnets.iter().any(|s| s.cidr.is_ipv6());
    UserDefinedNetInfo {
        name: conf.name.clone(),
        topology,
        primary: topology != NetworkTopology::Localnet && conf.is_primary(),
        subnets,
        exclude_subnets: Vec::new(),
        reserved_subnets: Vec::new(),
        infrastructure_subnets: Vec::new(),
        join_subnets: Vec::new(),
        transit_subnets: Vec::new(),
        default_gateway_ips: Vec::new(),
        mtu: conf.mtu,
        vlan_id: 0,
        allow_persistent_ips: false,
        physical_network_name: String::new(),
        transport: String::new(),
        outbound_snat: String::new(),
        uplink: conf.uplink.clone(),
        ipv4,
        ipv6,
    }
}

/// Upstream `parseNetworkSubnets` for Layer2/Localnet (no host lengths).
fn plain_entries(list: &str) -> Result<Vec<SubnetEntry>, SubnetParseError> {
    if list.trim().is_empty() {
        return Ok(Vec::new());
    }
    parse_subnet_entries(list, 0, 0)
}

fn layer3(conf: &NetConf) -> Result<UserDefinedNetInfo, NetInfoError> {
    let subnets = if conf.subnets.trim().is_empty() {
        Vec::new()
    } else {
        parse_cluster_subnet_entries(&conf.subnets)?
    };
    let join_subnets = parse_join_subnet(&conf.join_subnet)?;
    let mut info = base(conf, NetworkTopology::Layer3, subnets);
    info.join_subnets = join_subnets;
    info.transport.clone_from(&conf.transport);
    info.outbound_snat.clone_from(&conf.outbound_snat);
    Ok(info)
}

fn layer2(conf: &NetConf, cluster: &ClusterConfig) -> Result<UserDefinedNetInfo, NetInfoError> {
    let wrap = |list: &'static str| {
        move |reason| NetInfoError::Layer2List {
            list,
            topology: conf.topology.clone(),
            network: conf.name.clone(),
            reason,
        }
    };
    let subnets = plain_entries(&conf.subnets).map_err(wrap("network"))?;
    let excludes = parse_subnet_list(&conf.exclude_subnets).map_err(wrap("exclude"))?;
    check_contained(&excludes, &subnets, |subnet| {
        NetInfoError::ExcludedNotContained { subnet }
    })?;
    let mut info = base(conf, NetworkTopology::Layer2, subnets);
    if cluster.features.preconfigured_udn_addresses {
        info.reserved_subnets =
            parse_subnet_list(&conf.reserved_subnets).map_err(wrap("reserved"))?;
        check_contained(&info.reserved_subnets, &info.subnets, |subnet| {
            NetInfoError::ReservedNotContained { subnet }
        })?;
        info.infrastructure_subnets =
            parse_subnet_list(&conf.infrastructure_subnets).map_err(wrap("infrastructure"))?;
        check_contained(&info.infrastructure_subnets, &info.subnets, |subnet| {
            NetInfoError::InfrastructureNotContained { subnet }
        })?;
    }
    info.join_subnets = parse_join_subnet(&conf.join_subnet)?;
    if info.primary {
        info.transit_subnets = parse_subnet_list(&conf.transit_subnet).map_err(wrap("transit"))?;
        if cluster.features.preconfigured_udn_addresses {
            info.default_gateway_ips = parse_ip_list(&conf.default_gateway_ips)
                .map_err(|reason| NetInfoError::DefaultGatewayIps { reason })?;
        }
    }
    info.exclude_subnets = excludes;
    info.allow_persistent_ips = conf.allow_persistent_ips;
    info.transport.clone_from(&conf.transport);
    Ok(info)
}

fn localnet(conf: &NetConf) -> Result<UserDefinedNetInfo, NetInfoError> {
    let wrap = |reason| NetInfoError::Localnet {
        topology: conf.topology.clone(),
        network: conf.name.clone(),
        reason,
    };
    let subnets = plain_entries(&conf.subnets).map_err(wrap)?;
    let excludes = parse_subnet_list(&conf.exclude_subnets).map_err(wrap)?;
    check_contained(&excludes, &subnets, |subnet| {
        NetInfoError::ExcludedNotContained { subnet }
    })?;
    let mut info = base(conf, NetworkTopology::Localnet, subnets);
    info.exclude_subnets = excludes;
    info.vlan_id = conf.vlan_id;
    info.allow_persistent_ips = conf.allow_persistent_ips;
    info.physical_network_name
        .clone_from(&conf.physical_network_name);
    Ok(info)
}

/// Upstream `validateSubnetContainment`.
fn check_contained(
    subnets: &[IpNetwork],
    containers: &[SubnetEntry],
    error: impl Fn(IpNetwork) -> NetInfoError,
) -> Result<(), NetInfoError> {
    match subnets
        .iter()
        .find(|subnet| !containers.iter().any(|c| contains_cidr(&c.cidr, subnet)))
    {
        Some(subnet) => Err(error(*subnet)),
        None => Ok(()),
    }
}

/// Upstream `parseJoinSubnet`: start from both UDN defaults, replace per family.
fn parse_join_subnet(list: &str) -> Result<Vec<IpNetwork>, SubnetParseError> {
    let mut joins = vec![
        parse_cidr(UDN_JOIN_SUBNET_V4)?,
        parse_cidr(UDN_JOIN_SUBNET_V6)?,
    ];
    if list.trim().is_empty() {
        return Ok(joins);
    }
    for entry in parse_subnet_entries(list, 0, 0)? {
        let slot = usize::from(entry.cidr.is_ipv6());
        if let Some(join) = joins.get_mut(slot) {
            *join = entry.cidr;
        }
    }
    Ok(joins)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(topology: &str, role: &str, subnets: &str) -> NetConf {
        NetConf {
            name: "ns_net".into(),
            topology: topology.into(),
            role: role.into(),
            subnets: subnets.into(),
            nad_name: "ns/net".into(),
            ..NetConf::default()
        }
    }

    #[test]
    fn join_defaults_fill_both_families() {
        let info = NetInfo::from_netconf(
            &conf("layer3", "secondary", "10.1.0.0/16"),
            &ClusterConfig::default(),
        )
        .unwrap();
        let joins: Vec<String> = info
            .user_defined()
            .unwrap()
            .join_subnets
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(joins, ["100.65.0.0/16", "fd99::/64"]);
        let mut c = conf("layer2", "primary", "10.1.0.0/16");
        c.join_subnet = "fd92::/64".into();
        let info = NetInfo::from_netconf(&c, &ClusterConfig::default()).unwrap();
        let joins: Vec<String> = info
            .user_defined()
            .unwrap()
            .join_subnets
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(joins, ["100.65.0.0/16", "fd92::/64"]);
    }

    #[test]
    fn wraps_layer2_and_localnet_parse_errors() {
        let err = NetInfo::from_netconf(
            &conf("layer2", "", "10.0.0.0/24/26"),
            &ClusterConfig::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid network subnets for layer2 netconf ns_net: CIDR "10.0.0.0/24/26" not properly formatted"#
        );
        let mut c = conf("layer2", "primary", "10.0.0.0/24");
        c.transit_subnet = "x".into();
        assert_eq!(
            NetInfo::from_netconf(&c, &ClusterConfig::default())
                .unwrap_err()
                .to_string(),
            r#"invalid transit subnet for layer2 netconf ns_net: CIDR "x" not properly formatted"#
        );
        let err = NetInfo::from_netconf(&conf("localnet", "", "abc"), &ClusterConfig::default())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid localnet netconf ns_net: CIDR "abc" not properly formatted"#
        );
        let err =
            NetInfo::from_netconf(&conf("layer4", "", ""), &ClusterConfig::default()).unwrap_err();
        assert_eq!(err.to_string(), "topology layer4 not supported");
    }

    #[test]
    fn preconfigured_lists_checked_only_with_the_feature() {
        let mut c = conf("layer2", "primary", "10.0.0.0/16");
        c.reserved_subnets = "10.1.0.0/24".into();
        c.default_gateway_ips = "bogus".into();
        assert!(NetInfo::from_netconf(&c, &ClusterConfig::default()).is_ok());
        let mut cluster = ClusterConfig::default();
        cluster.features.preconfigured_udn_addresses = true;
        assert_eq!(
            NetInfo::from_netconf(&c, &cluster).unwrap_err().to_string(),
            "the provided network subnets do not contain reserved subnets 10.1.0.0/24"
        );
        c.reserved_subnets = "10.0.1.0/24".into();
        c.infrastructure_subnets = "10.2.0.0/30".into();
        assert_eq!(
            NetInfo::from_netconf(&c, &cluster).unwrap_err().to_string(),
            "the provided network subnets do not contain infrastructure subnets 10.2.0.0/30"
        );
        c.infrastructure_subnets = "10.0.0.0/30".into();
        assert_eq!(
            NetInfo::from_netconf(&c, &cluster).unwrap_err().to_string(),
            r#"failed to allocate infrastructure IPs: invalid default gateway IPs: invalid IP address "bogus""#
        );
    }
}
