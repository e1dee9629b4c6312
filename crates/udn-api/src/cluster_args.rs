//! [`ClusterArgs`]: the command-line flags that describe the cluster, with upstream
//! ovnkube's names and the kind/Helm dual-stack defaults. Shared by every binary (feature
//! `cli`).

use clap::{Args, ValueEnum};
use ipnetwork::{IpNetwork, Ipv4Network, Ipv6Network};

use crate::cluster::{
    ClusterConfig, ClusterConfigError, DEFAULT_MTU, DEFAULT_UDN_ALLOWED_DEFAULT_SERVICES,
    GatewayMode, parse_udn_allowed_default_services,
};
use crate::netconf::{SubnetParseError, parse_cluster_subnet_entries, parse_subnet_list};

/// Cluster flags.
#[derive(Clone, Debug, Args)]
pub struct ClusterArgs {
    /// Default-network cluster subnets, `cidr/hostLen` entries, comma separated; their IP
    /// families are the cluster's.
    #[arg(long, default_value = "10.244.0.0/16/24,fd00:10:244::/48/64")]
    pub cluster_subnets: String,
    /// Service CIDRs, comma separated.
    #[arg(
        long = "k8s-service-cidrs",
        default_value = "10.96.0.0/16,fd00:10:96::/112"
    )]
    pub service_cidrs: String,
    /// Default-network join subnet, IPv4.
    #[arg(long, default_value = "100.64.0.0/16")]
    pub gateway_v4_join_subnet: Ipv4Network,
    /// Default-network join subnet, IPv6.
    #[arg(long, default_value = "fd98::/64")]
    pub gateway_v6_join_subnet: Ipv6Network,
    /// Masquerade subnet, IPv4.
    #[arg(long, default_value = "169.254.0.0/17")]
    pub gateway_v4_masquerade_subnet: Ipv4Network,
    /// Masquerade subnet, IPv6.
    #[arg(long, default_value = "fd69::/112")]
    pub gateway_v6_masquerade_subnet: Ipv6Network,
    /// Cluster transit switch subnet, IPv4.
    #[arg(long, default_value = "100.88.0.0/16")]
    pub cluster_manager_v4_transit_subnet: Ipv4Network,
    /// Cluster transit switch subnet, IPv6.
    #[arg(long, default_value = "fd97::/64")]
    pub cluster_manager_v6_transit_subnet: Ipv6Network,
    /// Default MTU of overlay networks.
    #[arg(long, default_value_t = DEFAULT_MTU)]
    pub mtu: u32,
    /// Gateway mode.
    #[arg(long, value_enum, default_value_t = GatewayModeArg::Shared)]
    pub gateway_mode: GatewayModeArg,
    /// Allow `ipam.lifecycle: Persistent` (IPAMClaims).
    #[arg(long)]
    pub enable_persistent_ips: bool,
    /// Allow Layer2 reservedSubnets / infrastructureSubnets / defaultGatewayIPs.
    #[arg(long)]
    pub enable_preconfigured_udn_addresses: bool,
    /// Default-network Services (`namespace/name`, comma separated) that pods of primary
    /// user-defined networks may reach by their cluster IPs.
    #[arg(long, default_value = DEFAULT_UDN_ALLOWED_DEFAULT_SERVICES)]
    pub udn_allowed_default_services: String,
}

/// Gateway mode flag values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GatewayModeArg {
    /// Shared gateway.
    Shared,
    /// Local gateway.
    Local,
}

/// Why the cluster flags do not describe a usable cluster; names the flag.
#[derive(Debug, thiserror::Error)]
pub enum ClusterArgsError {
    /// A subnet list flag does not parse.
    #[error("--{flag}: {source}")]
    Subnets {
        /// The flag.
        flag: &'static str,
        /// Why.
        #[source]
        source: SubnetParseError,
    },
    /// The flags together are inconsistent.
    #[error("cluster flags: {0}")]
    Cluster(#[from] ClusterConfigError),
}

impl ClusterArgs {
    /// The cluster these flags describe.
    pub fn cluster(&self) -> Result<ClusterConfig, ClusterArgsError> {
        let subnets = |flag, text: &str| {
            parse_subnet_list(text).map_err(|source| ClusterArgsError::Subnets { flag, source })
        };
        let cluster_subnets =
            parse_cluster_subnet_entries(&self.cluster_subnets).map_err(|source| {
                ClusterArgsError::Subnets {
                    flag: "cluster-subnets",
                    source,
                }
            })?;
        let service_cidrs: Vec<IpNetwork> = subnets("k8s-service-cidrs", &self.service_cidrs)?;
        let mut cluster = ClusterConfig {
            cluster_subnets,
            service_cidrs,
            join_subnet_v4: self.gateway_v4_join_subnet,
            join_subnet_v6: self.gateway_v6_join_subnet,
            masquerade_subnet_v4: self.gateway_v4_masquerade_subnet,
            masquerade_subnet_v6: self.gateway_v6_masquerade_subnet,
            transit_subnet_v4: self.cluster_manager_v4_transit_subnet,
            transit_subnet_v6: self.cluster_manager_v6_transit_subnet,
            mtu: self.mtu,
            gateway_mode: match self.gateway_mode {
                GatewayModeArg::Shared => GatewayMode::Shared,
                GatewayModeArg::Local => GatewayMode::Local,
            },
            ..ClusterConfig::default()
        };
        cluster.features.persistent_ips = self.enable_persistent_ips;
        cluster.features.preconfigured_udn_addresses = self.enable_preconfigured_udn_addresses;
        cluster.udn_allowed_default_services =
            parse_udn_allowed_default_services(&self.udn_allowed_default_services)?;
        cluster.validate()?;
        Ok(cluster)
    }
}
