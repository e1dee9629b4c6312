//! The cluster-manager's configuration: built once in `main` from flags, passed down.

use clap::Args;
use udn_api::cluster::ClusterConfig;
use udn_api::cluster_args::{ClusterArgs, ClusterArgsError};
use udn_api::dynamic_udn::DynamicUdn;
use udn_api::dynamic_udn_args::DynamicUdnArgs;

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
    /// Dynamic UDN needs network segmentation, as upstream.
    #[error("--enable-dynamic-udn-allocation requires --enable-network-segmentation")]
    DynamicUdnWithoutSegmentation,
}

/// What the controllers need to know.
#[derive(Clone, Debug)]
pub struct Config {
    /// The cluster (subnets, families, MTU, feature flags that affect rendering).
    pub cluster: ClusterConfig,
    /// UDN/CUDN controllers run only when both segmentation and multi-network are on
    /// (upstream `IsNetworkSegmentationSupportEnabled`).
    pub segmentation: bool,
    /// Dynamic UDN: per-node state of UDN/CUDN networks only where pods use them.
    pub dynamic_udn: DynamicUdn,
}

impl Config {
    /// Build the configuration from the flags.
    pub fn from_args(
        cluster: &ClusterArgs,
        features: &FeatureArgs,
        dynamic_udn: &DynamicUdnArgs,
    ) -> Result<Self, ConfigError> {
        if features.enable_network_segmentation && !features.enable_multi_network {
            return Err(ConfigError::SegmentationWithoutMultiNetwork);
        }
        let segmentation = features.enable_network_segmentation && features.enable_multi_network;
        let dynamic_udn = dynamic_udn.settings();
        if dynamic_udn.enabled && !segmentation {
            return Err(ConfigError::DynamicUdnWithoutSegmentation);
        }
        Ok(Self {
            cluster: cluster.cluster()?,
            segmentation,
            dynamic_udn,
        })
    }

    /// A configuration for tests: kind/Helm defaults, segmentation on.
    pub fn for_tests() -> Self {
        Self {
            cluster: ClusterConfig::default(),
            segmentation: true,
            dynamic_udn: DynamicUdn::default(),
        }
    }
}
