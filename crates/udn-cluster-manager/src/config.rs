//! The cluster-manager's configuration: built once in `main` from flags, passed down.

use clap::Args;
use udn_api::cluster::ClusterConfig;
use udn_api::cluster_args::{ClusterArgs, ClusterArgsError};

/// Feature flags, with upstream ovnkube's names.
#[derive(Clone, Debug, Default, Args)]
pub struct FeatureArgs {
    /// NAD-based secondary networks (required for UDNs).
    #[arg(long)]
    pub enable_multi_network: bool,
    /// UserDefinedNetwork / ClusterUserDefinedNetwork support (required for UDNs).
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
}

/// What the controllers need to know.
#[derive(Clone, Debug)]
pub struct Config {
    /// The cluster (subnets, families, MTU, feature flags that affect rendering).
    pub cluster: ClusterConfig,
    /// UDN/CUDN controllers run only when both segmentation and multi-network are on
    /// (upstream `IsNetworkSegmentationSupportEnabled`).
    pub segmentation: bool,
}

impl Config {
    /// Build the configuration from the flags.
    pub fn from_args(cluster: &ClusterArgs, features: &FeatureArgs) -> Result<Self, ConfigError> {
        if features.enable_network_segmentation && !features.enable_multi_network {
            return Err(ConfigError::SegmentationWithoutMultiNetwork);
        }
        Ok(Self {
            cluster: cluster.cluster()?,
            segmentation: features.enable_network_segmentation && features.enable_multi_network,
        })
    }

    /// A configuration for tests: kind/Helm defaults, segmentation on.
    pub fn for_tests() -> Self {
        Self {
            cluster: ClusterConfig::default(),
            segmentation: true,
        }
    }
}
