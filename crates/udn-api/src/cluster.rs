//! [`ClusterConfig`]: what the cluster looks like to the render and the network
//! validation: IP families, default-network subnets, internal subnets, MTU, gateway mode
//! and feature flags. Serde-able (camelCase, every field optional) so binaries can load it
//! from flags or files.

use std::net::{Ipv4Addr, Ipv6Addr};

use ipnetwork::{IpNetwork, Ipv4Network, Ipv6Network};
use serde::{Deserialize, Serialize};

use crate::netconf::SubnetEntry;

/// Gateway mode of the cluster (upstream `--gateway-mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GatewayMode {
    /// Shared gateway (the kind/helm default); required for `uplink`.
    #[default]
    Shared,
    /// Local gateway.
    Local,
}

/// Feature flags that change rendering or validation. All off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FeatureFlags {
    /// `enable-persistent-ips`: IPAMClaims, `allowPersistentIPs`.
    pub persistent_ips: bool,
    /// `enable-preconfigured-udn-addresses`: Layer2 reserved/infrastructure subnets and
    /// default gateway IPs.
    pub preconfigured_udn_addresses: bool,
    /// `enable-evpn`: EVPN transport.
    pub evpn: bool,
}

/// The cluster as the control plane sees it.
///
/// `Default` is upstream's kind/helm dual-stack deployment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterConfig {
    /// Default-network cluster subnets with host lengths (`cidr/hostLen`).
    pub cluster_subnets: Vec<SubnetEntry>,
    /// Service CIDRs.
    pub service_cidrs: Vec<IpNetwork>,
    /// Default-network join subnet, IPv4 (`--gateway-v4-join-subnet`).
    pub join_subnet_v4: Ipv4Network,
    /// Default-network join subnet, IPv6 (`--gateway-v6-join-subnet`).
    pub join_subnet_v6: Ipv6Network,
    /// Masquerade subnet, IPv4.
    pub masquerade_subnet_v4: Ipv4Network,
    /// Masquerade subnet, IPv6.
    pub masquerade_subnet_v6: Ipv6Network,
    /// Cluster transit subnet, IPv4 (Layer3 interconnect; start of Layer2 transit search).
    pub transit_subnet_v4: Ipv4Network,
    /// Cluster transit subnet, IPv6.
    pub transit_subnet_v6: Ipv6Network,
    /// Default MTU of overlay networks (localnet default is this + 100).
    pub mtu: u32,
    /// Gateway mode.
    pub gateway_mode: GatewayMode,
    /// Feature flags.
    pub features: FeatureFlags,
    /// Default-network Services a primary UDN's pods may reach by their cluster IPs
    /// (`--udn-allowed-default-services`), as `namespace/name`.
    pub udn_allowed_default_services: Vec<String>,
}

/// Upstream's default `--udn-allowed-default-services`.
pub const DEFAULT_UDN_ALLOWED_DEFAULT_SERVICES: &str = "default/kubernetes,kube-system/kube-dns";

/// Why a [`ClusterConfig`] is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClusterConfigError {
    /// No cluster subnets.
    #[error("clusterSubnets: at least one cluster subnet is required")]
    NoClusterSubnets,
    /// A subnet has host bits set.
    #[error("{field}: {cidr} is not a network address (host bits set)")]
    NotMasked {
        /// The field.
        field: &'static str,
        /// The subnet as given.
        cidr: IpNetwork,
    },
    /// An `--udn-allowed-default-services` entry is not `namespace/name` (upstream's
    /// messages).
    #[error("UDN enabled service {service:?} {reason}")]
    UdnEnabledService {
        /// The entry.
        service: String,
        /// Why.
        reason: &'static str,
    },
    /// A masquerade subnet cannot hold the global masquerade addresses (offsets 1..=5).
    #[error(
        "masquerade subnet {subnet} is too small: it needs at least 8 addresses for the global masquerade IPs"
    )]
    MasqueradeTooSmall {
        /// The subnet.
        subnet: IpNetwork,
    },
    /// Cluster subnets and service CIDRs cover different IP families (upstream
    /// `illegal network configuration`).
    #[error("illegal network configuration: {cluster} cluster subnet, {service} service subnet")]
    IllegalFamilies {
        /// Families of the cluster subnets (`IPv4`, `IPv6`, `dual-stack`).
        cluster: &'static str,
        /// Families of the service CIDRs.
        service: &'static str,
    },
}

/// Default overlay MTU.
pub const DEFAULT_MTU: u32 = 1400;

fn v4(addr: [u8; 4], prefix: u8) -> Ipv4Network {
    let addr = Ipv4Addr::from(addr);
    Ipv4Network::new(addr, prefix).unwrap_or_else(|_| Ipv4Network::from(addr))
}

fn v6(segments: [u16; 8], prefix: u8) -> Ipv6Network {
    let addr = Ipv6Addr::from(segments);
    Ipv6Network::new(addr, prefix).unwrap_or_else(|_| Ipv6Network::from(addr))
}

/// Default-network join subnet, IPv4: `100.64.0.0/16`.
pub fn default_join_subnet_v4() -> Ipv4Network {
    v4([100, 64, 0, 0], 16)
}

/// Default-network join subnet, IPv6: `fd98::/64`.
pub fn default_join_subnet_v6() -> Ipv6Network {
    v6([0xfd98, 0, 0, 0, 0, 0, 0, 0], 64)
}

/// Cluster transit subnet, IPv4: `100.88.0.0/16`.
pub fn default_transit_subnet_v4() -> Ipv4Network {
    v4([100, 88, 0, 0], 16)
}

/// Cluster transit subnet, IPv6: `fd97::/64`.
pub fn default_transit_subnet_v6() -> Ipv6Network {
    v6([0xfd97, 0, 0, 0, 0, 0, 0, 0], 64)
}

impl Default for ClusterConfig {
    /// kind/helm dual-stack: cluster `10.244.0.0/16/24` + `fd00:10:244::/48/64`, services
    /// `10.96.0.0/16` + `fd00:10:96::/112`, masquerade `169.254.0.0/17` + `fd69::/112`.
    fn default() -> Self {
        Self {
            cluster_subnets: vec![
                SubnetEntry {
                    cidr: v4([10, 244, 0, 0], 16).into(),
                    host_subnet_length: 24,
                },
                SubnetEntry {
                    cidr: v6([0xfd00, 0x10, 0x244, 0, 0, 0, 0, 0], 48).into(),
                    host_subnet_length: 64,
                },
            ],
            service_cidrs: vec![
                v4([10, 96, 0, 0], 16).into(),
                v6([0xfd00, 0x10, 0x96, 0, 0, 0, 0, 0], 112).into(),
            ],
            join_subnet_v4: default_join_subnet_v4(),
            join_subnet_v6: default_join_subnet_v6(),
            masquerade_subnet_v4: v4([169, 254, 0, 0], 17),
            masquerade_subnet_v6: v6([0xfd69, 0, 0, 0, 0, 0, 0, 0], 112),
            transit_subnet_v4: default_transit_subnet_v4(),
            transit_subnet_v6: default_transit_subnet_v6(),
            mtu: DEFAULT_MTU,
            gateway_mode: GatewayMode::Shared,
            features: FeatureFlags::default(),
            udn_allowed_default_services: DEFAULT_UDN_ALLOWED_DEFAULT_SERVICES
                .split(',')
                .map(str::to_owned)
                .collect(),
        }
    }
}

impl ClusterConfig {
    /// The kind/helm defaults restricted to IPv4 (cluster and service subnets).
    pub fn ipv4_only() -> Self {
        let mut config = Self::default();
        config.cluster_subnets.retain(|s| s.cidr.is_ipv4());
        config.service_cidrs.retain(IpNetwork::is_ipv4);
        config
    }

    /// The kind/helm defaults restricted to IPv6 (cluster and service subnets).
    pub fn ipv6_only() -> Self {
        let mut config = Self::default();
        config.cluster_subnets.retain(|s| s.cidr.is_ipv6());
        config.service_cidrs.retain(IpNetwork::is_ipv6);
        config
    }

    /// Whether the cluster runs IPv4 (upstream `config.IPv4Mode`): a cluster subnet or
    /// service CIDR is IPv4.
    pub fn ipv4_enabled(&self) -> bool {
        self.cluster_subnets.iter().any(|s| s.cidr.is_ipv4())
            || self.service_cidrs.iter().any(IpNetwork::is_ipv4)
    }

    /// Whether the cluster runs IPv6 (upstream `config.IPv6Mode`).
    pub fn ipv6_enabled(&self) -> bool {
        self.cluster_subnets.iter().any(|s| s.cidr.is_ipv6())
            || self.service_cidrs.iter().any(IpNetwork::is_ipv6)
    }

    /// The masquerade subnets of the IP families the cluster runs (each UDN takes two
    /// addresses of each, so they bound the number of network IDs).
    pub fn masquerade_subnets(&self) -> Vec<IpNetwork> {
        let mut subnets = Vec::new();
        if self.ipv4_enabled() {
            subnets.push(self.masquerade_subnet_v4.into());
        }
        if self.ipv6_enabled() {
            subnets.push(self.masquerade_subnet_v6.into());
        }
        subnets
    }

    /// Check the configuration is usable: cluster subnets present, every subnet a network
    /// address, cluster/service subnets on the same IP families, and the masquerade subnet of
    /// each family in use large enough for the global masquerade addresses (offsets 1..=5;
    /// how many UDNs it holds on top is the cluster-manager's network ID pool size).
    pub fn validate(&self) -> Result<(), ClusterConfigError> {
        if self.cluster_subnets.is_empty() {
            return Err(ClusterConfigError::NoClusterSubnets);
        }
        let named: Vec<(&'static str, IpNetwork)> = self
            .cluster_subnets
            .iter()
            .map(|s| ("clusterSubnets", s.cidr))
            .chain(self.service_cidrs.iter().map(|s| ("serviceCidrs", *s)))
            .chain([
                ("joinSubnetV4", self.join_subnet_v4.into()),
                ("joinSubnetV6", self.join_subnet_v6.into()),
                ("masqueradeSubnetV4", self.masquerade_subnet_v4.into()),
                ("masqueradeSubnetV6", self.masquerade_subnet_v6.into()),
                ("transitSubnetV4", self.transit_subnet_v4.into()),
                ("transitSubnetV6", self.transit_subnet_v6.into()),
            ])
            .collect();
        if let Some((field, cidr)) = named.into_iter().find(|(_, n)| n.ip() != n.network()) {
            return Err(ClusterConfigError::NotMasked { field, cidr });
        }
        let cluster = families(self.cluster_subnets.iter().map(|s| s.cidr));
        let service = families(self.service_cidrs.iter().copied());
        if !self.service_cidrs.is_empty() && cluster != service {
            return Err(ClusterConfigError::IllegalFamilies {
                cluster: family_name(cluster),
                service: family_name(service),
            });
        }
        for service in &self.udn_allowed_default_services {
            check_udn_enabled_service(service)?;
        }
        for subnet in self.masquerade_subnets() {
            let bits = if subnet.is_ipv4() { 32 } else { 128 };
            // Offset 5 (the OVN service hairpin address) must be inside.
            if bits - u32::from(subnet.prefix()) < 3 {
                return Err(ClusterConfigError::MasqueradeTooSmall { subnet });
            }
        }
        Ok(())
    }

    /// Whether `namespace/name` is one of the default-network Services primary UDNs may
    /// reach (upstream `util.IsUDNEnabledService`).
    pub fn is_udn_enabled_service(&self, namespace: &str, name: &str) -> bool {
        self.udn_allowed_default_services.iter().any(|s| {
            s.split_once('/')
                .is_some_and(|(ns, n)| ns == namespace && n == name)
        })
    }
}

/// Parses `--udn-allowed-default-services`: comma-separated `namespace/name` entries
/// (upstream `parseServicesNamespacedNames`; an empty entry has no namespace).
pub fn parse_udn_allowed_default_services(raw: &str) -> Result<Vec<String>, ClusterConfigError> {
    raw.split(',')
        .map(|entry| {
            let entry = entry.trim().to_owned();
            check_udn_enabled_service(&entry)?;
            Ok(entry)
        })
        .collect()
}

fn check_udn_enabled_service(entry: &str) -> Result<(), ClusterConfigError> {
    let error = |reason| ClusterConfigError::UdnEnabledService {
        service: entry.to_owned(),
        reason,
    };
    let Some((namespace, name)) = entry.split_once('/') else {
        return Err(error("no namespace set"));
    };
    if namespace.is_empty() {
        return Err(error("no namespace set"));
    }
    if !is_dns_label(namespace) {
        return Err(error("has an invalid namespace"));
    }
    if name.len() > 253 || name.is_empty() || !name.split('.').all(is_dns_label) {
        return Err(error("has an invalid name"));
    }
    Ok(())
}

/// An RFC 1123 label: lower-case alphanumerics and `-`, alphanumeric at both ends, at most
/// 63 characters.
fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn families(nets: impl Iterator<Item = IpNetwork>) -> (bool, bool) {
    nets.fold((false, false), |(v4, v6), n| {
        (v4 || n.is_ipv4(), v6 || n.is_ipv6())
    })
}

fn family_name(families: (bool, bool)) -> &'static str {
    match families {
        (true, false) => "IPv4",
        (false, true) => "IPv6",
        (true, true) => "dual-stack",
        (false, false) => "unknown type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_kind_dual_stack() {
        let config = ClusterConfig::default();
        assert!(config.ipv4_enabled() && config.ipv6_enabled());
        assert_eq!(config.validate(), Ok(()));
        let json = serde_json::to_value(&config).unwrap();
        assert_eq!(
            json["clusterSubnets"],
            serde_json::json!(["10.244.0.0/16/24", "fd00:10:244::/48/64"])
        );
        assert_eq!(
            json["serviceCidrs"],
            serde_json::json!(["10.96.0.0/16", "fd00:10:96::/112"])
        );
        assert_eq!(json["masqueradeSubnetV6"], "fd69::/112");
        assert_eq!(json["mtu"], 1400);
        assert_eq!(json["gatewayMode"], "shared");
    }

    #[test]
    fn partial_files_fill_defaults() {
        let config: ClusterConfig = serde_json::from_str(
            r#"{"clusterSubnets":["10.128.0.0/14/23"],"serviceCidrs":["172.30.0.0/16"],"features":{"persistentIps":true}}"#,
        )
        .unwrap();
        assert!(config.ipv4_enabled() && !config.ipv6_enabled());
        assert!(config.features.persistent_ips && !config.features.evpn);
        assert_eq!(config.cluster_subnets[0].host_subnet_length, 23);
        assert_eq!(config.validate(), Ok(()));
    }

    #[test]
    fn single_stack_constructors() {
        assert!(!ClusterConfig::ipv4_only().ipv6_enabled());
        assert!(!ClusterConfig::ipv6_only().ipv4_enabled());
    }

    #[test]
    fn validate_rejects_bad_configs() {
        let mut config = ClusterConfig::ipv4_only();
        config.service_cidrs = vec!["fd00::/112".parse().unwrap()];
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "illegal network configuration: IPv4 cluster subnet, IPv6 service subnet"
        );
        config.service_cidrs = vec!["10.96.0.1/16".parse().unwrap()];
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "serviceCidrs: 10.96.0.1/16 is not a network address (host bits set)"
        );
        config.cluster_subnets.clear();
        assert_eq!(config.validate(), Err(ClusterConfigError::NoClusterSubnets));
    }

    #[test]
    fn masquerade_subnets_of_the_families_in_use_are_checked() {
        let mut config = ClusterConfig::ipv4_only();
        assert_eq!(
            config.masquerade_subnets(),
            vec![IpNetwork::from(config.masquerade_subnet_v4)]
        );
        // IPv6 is not in use: its masquerade subnet is not looked at.
        config.masquerade_subnet_v6 = v6([0xfd69, 0, 0, 0, 0, 0, 0, 0], 126);
        assert_eq!(config.validate(), Ok(()));
        // Upstream's /29 holds the global addresses (and no UDN).
        config.masquerade_subnet_v4 = v4([169, 254, 169, 0], 29);
        assert_eq!(config.validate(), Ok(()));
        config.masquerade_subnet_v4 = v4([169, 254, 169, 0], 30);
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "masquerade subnet 169.254.169.0/30 is too small: it needs at least 8 addresses for the global masquerade IPs"
        );
        assert_eq!(ClusterConfig::default().masquerade_subnets().len(), 2);
    }

    #[test]
    fn udn_allowed_default_services_default_and_errors() {
        let config = ClusterConfig::default();
        assert!(config.is_udn_enabled_service("kube-system", "kube-dns"));
        assert!(config.is_udn_enabled_service("default", "kubernetes"));
        assert!(!config.is_udn_enabled_service("default", "web"));
        assert_eq!(
            parse_udn_allowed_default_services(" a/b ,c/d.e").unwrap(),
            ["a/b", "c/d.e"]
        );
        for (raw, message) in [
            (
                "kubernetes",
                "UDN enabled service \"kubernetes\" no namespace set",
            ),
            ("/x", "UDN enabled service \"/x\" no namespace set"),
            (
                "Bad/x",
                "UDN enabled service \"Bad/x\" has an invalid namespace",
            ),
            (
                "ns/x_y",
                "UDN enabled service \"ns/x_y\" has an invalid name",
            ),
        ] {
            let err = parse_udn_allowed_default_services(raw).unwrap_err();
            assert_eq!(err.to_string(), message);
        }
    }
}
