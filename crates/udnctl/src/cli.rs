//! Command-line arguments and the cluster they describe.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ipnetwork::{IpNetwork, Ipv4Network, Ipv6Network};
use udn_api::cluster::{ClusterConfig, GatewayMode};
use udn_api::netconf::{parse_cluster_subnet_entries, parse_subnet_list};

use crate::input::read_documents;
use crate::output::{render_json, render_yaml};
use crate::pipeline::{Problem, render};

/// udnctl: inspect and try out User Defined Networks.
#[derive(Debug, Parser)]
#[command(name = "udnctl", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Validate UDN/CUDN YAML offline and print the NADs, network IDs and node host
    /// subnets the cluster would get.
    Render(RenderArgs),
}

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// NADs as YAML documents, IDs and subnets as a comment header.
    Yaml,
    /// One JSON document: `{"nads": [...], "networkIDs": {...}, "nodeSubnets": {...}}`.
    Json,
}

/// `udnctl render` arguments. Cluster flags use upstream ovnkube's names and default to
/// upstream's kind/helm dual-stack deployment.
#[derive(Debug, Args)]
pub(crate) struct RenderArgs {
    /// YAML file with Namespace, UserDefinedNetwork and ClusterUserDefinedNetwork objects
    /// (several documents allowed; `-` reads standard input). Repeatable.
    #[arg(short = 'f', long = "filename", required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Number of example nodes (`node-1` ... `node-N`) to allocate host subnets for.
    #[arg(long, default_value_t = 3)]
    pub(crate) nodes: u32,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Yaml)]
    pub(crate) output: OutputFormat,
    /// Default-network cluster subnets, `cidr/hostLen` entries, comma separated; their IP
    /// families are the cluster's.
    #[arg(long, default_value = "10.244.0.0/16/24,fd00:10:244::/48/64")]
    pub(crate) cluster_subnets: String,
    /// Service CIDRs, comma separated.
    #[arg(
        long = "k8s-service-cidrs",
        default_value = "10.96.0.0/16,fd00:10:96::/112"
    )]
    pub(crate) service_cidrs: String,
    /// Default-network join subnet, IPv4.
    #[arg(long, default_value = "100.64.0.0/16")]
    pub(crate) gateway_v4_join_subnet: Ipv4Network,
    /// Default-network join subnet, IPv6.
    #[arg(long, default_value = "fd98::/64")]
    pub(crate) gateway_v6_join_subnet: Ipv6Network,
    /// Masquerade subnet, IPv4.
    #[arg(long, default_value = "169.254.0.0/17")]
    pub(crate) gateway_v4_masquerade_subnet: Ipv4Network,
    /// Masquerade subnet, IPv6.
    #[arg(long, default_value = "fd69::/112")]
    pub(crate) gateway_v6_masquerade_subnet: Ipv6Network,
    /// Cluster transit switch subnet, IPv4.
    #[arg(long, default_value = "100.88.0.0/16")]
    pub(crate) cluster_manager_v4_transit_subnet: Ipv4Network,
    /// Cluster transit switch subnet, IPv6.
    #[arg(long, default_value = "fd97::/64")]
    pub(crate) cluster_manager_v6_transit_subnet: Ipv6Network,
    /// Default MTU of overlay networks.
    #[arg(long, default_value_t = udn_api::cluster::DEFAULT_MTU)]
    pub(crate) mtu: u32,
    /// Gateway mode (`shared` or `local`).
    #[arg(long, value_enum, default_value_t = GatewayModeArg::Shared)]
    pub(crate) gateway_mode: GatewayModeArg,
    /// Allow `ipam.lifecycle: Persistent` (IPAMClaims).
    #[arg(long)]
    pub(crate) enable_persistent_ips: bool,
    /// Allow Layer2 reservedSubnets / infrastructureSubnets / defaultGatewayIPs.
    #[arg(long)]
    pub(crate) enable_preconfigured_udn_addresses: bool,
}

/// Gateway mode flag values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum GatewayModeArg {
    /// Shared gateway.
    Shared,
    /// Local gateway.
    Local,
}

impl RenderArgs {
    /// The cluster these flags describe.
    pub(crate) fn cluster(&self) -> Result<ClusterConfig, Problem> {
        let flag = |name: &str, err: &dyn std::fmt::Display| Problem::flag(name, err);
        let cluster_subnets = parse_cluster_subnet_entries(&self.cluster_subnets)
            .map_err(|e| flag("--cluster-subnets", &e))?;
        let service_cidrs: Vec<IpNetwork> =
            parse_subnet_list(&self.service_cidrs).map_err(|e| flag("--k8s-service-cidrs", &e))?;
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
        cluster.validate().map_err(|e| flag("cluster flags", &e))?;
        Ok(cluster)
    }
}

/// Run `udnctl render`: the text to print, or every problem found.
pub(crate) fn run_render(args: &RenderArgs) -> Result<String, Vec<Problem>> {
    let cluster = args.cluster().map_err(|p| vec![p])?;
    let documents = read_documents(&args.files)?;
    let rendered = render(&documents, &cluster, args.nodes)?;
    match args.output {
        OutputFormat::Yaml => render_yaml(&rendered),
        OutputFormat::Json => render_json(&rendered),
    }
    .map_err(|p| vec![p])
}
