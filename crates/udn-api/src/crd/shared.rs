//! Types shared by UDN and CUDN: topologies, roles, the Layer3/Layer2 configs, IPAM and
//! the CIDR/IP list types.

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Network topology (`spec.topology`). Localnet is only valid in a CUDN.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum NetworkTopology {
    /// One logical switch shared by all nodes.
    Layer2,
    /// A logical switch per node, routed through a cluster router.
    Layer3,
    /// A switch attached to the provider's physical network.
    Localnet,
}

impl NetworkTopology {
    /// The lowercase form used in the CNI config (`layer2`, `layer3`, `localnet`).
    pub fn cni_name(self) -> &'static str {
        match self {
            Self::Layer2 => "layer2",
            Self::Layer3 => "layer3",
            Self::Localnet => "localnet",
        }
    }
}

/// Role of the network for the pods attached to it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum NetworkRole {
    /// The pod's primary network: default route, Services.
    Primary,
    /// An additional interface only.
    Secondary,
}

impl NetworkRole {
    /// The lowercase form used in the CNI config (`primary`, `secondary`).
    pub fn cni_name(self) -> &'static str {
        match self {
            Self::Primary => "primary",
            Self::Secondary => "secondary",
        }
    }
}

/// A CIDR string (`10.0.0.0/16`, `fd00::/64`), validated by CEL `isCIDR`.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct Cidr(pub String);

/// An IP address string, validated by CEL `isIP`.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct Ip(pub String);

/// One or two CIDRs, of different IP families when two.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct DualStackCidrs(pub Vec<Cidr>);

/// One or two IPs, of different IP families when two.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct DualStackIps(pub Vec<Ip>);

/// One Layer3 cluster subnet and the per-node host subnet length carved from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct Layer3Subnet {
    /// The cluster subnet.
    pub cidr: Cidr,
    /// Prefix length of each node's host subnet; unset means 24 (IPv4) / 64 (IPv6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_subnet: Option<i32>,
}

/// Layer3 topology configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct Layer3Config {
    /// Primary or Secondary. Immutable.
    pub role: NetworkRole,
    /// Maximum transmission unit; unset means the cluster default. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i32>,
    /// Cluster subnets. Primary networks may append, Secondary ones are immutable.
    pub subnets: Vec<Layer3Subnet>,
    /// Join subnets between the network's routers (Primary only). Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_subnets: Option<DualStackCidrs>,
}

/// IPAM mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum IpamMode {
    /// OVN-Kubernetes allocates pod IPs from the subnets.
    Enabled,
    /// No IP allocation (Secondary networks only).
    Disabled,
}

/// IPAM lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum IpamLifecycle {
    /// IPs outlive the pod through IPAMClaims (virtual machines).
    Persistent,
}

/// IPAM configuration of a Layer2 or Localnet network.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct IpamConfig {
    /// Enabled (default) or Disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<IpamMode>,
    /// Persistent keeps a workload's IPs across restarts and migrations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<IpamLifecycle>,
}

impl IpamConfig {
    /// Whether IPAM is enabled (unset mode means enabled).
    pub fn enabled(config: Option<&Self>) -> bool {
        !matches!(config.and_then(|c| c.mode), Some(IpamMode::Disabled))
    }

    /// Whether IPs are persistent.
    pub fn persistent(config: Option<&Self>) -> bool {
        matches!(
            config.and_then(|c| c.lifecycle),
            Some(IpamLifecycle::Persistent)
        )
    }
}

/// Layer2 topology configuration. Immutable as a whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct Layer2Config {
    /// Primary or Secondary.
    pub role: NetworkRole,
    /// Maximum transmission unit; unset means the cluster default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i32>,
    /// The network's subnets (one per family). Required unless IPAM is disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnets: Option<DualStackCidrs>,
    /// Excluded from automatic allocation but available as static IPs (Primary only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_subnets: Option<Vec<Cidr>>,
    /// Where gateway and management IPs come from; never given to workloads (Primary only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_subnets: Option<Vec<Cidr>>,
    /// Default gateway per family (Primary only).
    #[serde(
        default,
        rename = "defaultGatewayIPs",
        skip_serializing_if = "Option::is_none"
    )]
    pub default_gateway_ips: Option<DualStackIps>,
    /// Join subnets (Primary only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_subnets: Option<DualStackCidrs>,
    /// IPAM configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipam: Option<IpamConfig>,
}
