//! The controller's flags (upstream ovnkube's names) and the configuration built from them.

use clap::Args;
use udn_api::cluster_args::{ClusterArgs, ClusterArgsError, GatewayModeArg};
use udn_ovsdb::client::Endpoint;

use crate::model::ZoneConfig;

/// Flags specific to the NB controller.
#[derive(Clone, Debug, Args)]
pub struct ControllerArgs {
    /// The zone's Northbound database: `unix:PATH` or `tcp:IP:PORT`.
    #[arg(
        long,
        value_name = "ADDRESS",
        default_value = "unix:/var/run/ovn/ovnnb_db.sock"
    )]
    pub nb_address: String,
    /// The zone's Southbound database: `unix:PATH` or `tcp:IP:PORT`.
    #[arg(
        long,
        value_name = "ADDRESS",
        default_value = "unix:/var/run/ovn/ovnsb_db.sock"
    )]
    pub sb_address: String,
    /// The zone this controller programs (upstream runs one zone per node, named after the
    /// node). A node is local when its name is the zone, or when its `k8s.ovn.org/zone-name`
    /// annotation names the zone.
    #[arg(long, value_name = "NAME")]
    pub zone: String,
    /// NAD-based secondary networks (required for UDNs).
    #[arg(long)]
    pub enable_multi_network: bool,
    /// UserDefinedNetwork support: primary networks, UDN isolation (requires
    /// --enable-multi-network).
    #[arg(long)]
    pub enable_network_segmentation: bool,
}

/// Why the configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The cluster flags are invalid.
    #[error(transparent)]
    Cluster(#[from] ClusterArgsError),
    /// Segmentation needs multi-network, as upstream.
    #[error("--enable-network-segmentation requires --enable-multi-network")]
    SegmentationWithoutMultiNetwork,
    /// `--zone` is empty.
    #[error("--zone: a zone name is required (upstream: the node name)")]
    NoZone,
    /// Only the shared gateway mode is supported.
    #[error("--gateway-mode=local: only --gateway-mode=shared is supported by the NB controller")]
    LocalGateway,
    /// A database address does not parse.
    #[error("--{flag}: {reason}")]
    Address {
        /// The flag.
        flag: &'static str,
        /// Why.
        reason: String,
    },
}

/// What the controller needs to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// The zone and the cluster.
    pub zone: ZoneConfig,
    /// Northbound endpoint.
    pub nb: Endpoint,
    /// Southbound endpoint.
    pub sb: Endpoint,
}

fn endpoint(flag: &'static str, text: &str) -> Result<Endpoint, ConfigError> {
    text.parse()
        .map_err(|e: udn_ovsdb::client::EndpointError| ConfigError::Address {
            flag,
            reason: e.to_string(),
        })
}

impl Config {
    /// Builds the configuration from the flags.
    pub fn from_args(args: &ControllerArgs, cluster: &ClusterArgs) -> Result<Self, ConfigError> {
        if args.enable_network_segmentation && !args.enable_multi_network {
            return Err(ConfigError::SegmentationWithoutMultiNetwork);
        }
        if args.zone.trim().is_empty() {
            return Err(ConfigError::NoZone);
        }
        if cluster.gateway_mode == GatewayModeArg::Local {
            return Err(ConfigError::LocalGateway);
        }
        Ok(Self {
            zone: ZoneConfig {
                zone: args.zone.clone(),
                cluster: cluster.cluster()?,
                multi_network: args.enable_multi_network,
                segmentation: args.enable_network_segmentation && args.enable_multi_network,
            },
            nb: endpoint("nb-address", &args.nb_address)?,
            sb: endpoint("sb-address", &args.sb_address)?,
        })
    }
}
