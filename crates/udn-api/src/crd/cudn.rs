//! `ClusterUserDefinedNetwork`: a cluster-scoped network spanning the namespaces its
//! selector matches.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{
    Cidr, DualStackCidrs, IpamConfig, Layer2Config, Layer3Config, NetworkRole, NetworkTopology,
};

/// Spec of a `ClusterUserDefinedNetwork`.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "k8s.ovn.org",
    version = "v1",
    kind = "ClusterUserDefinedNetwork",
    plural = "clusteruserdefinednetworks",
    singular = "clusteruserdefinednetwork",
    shortname = "cudn",
    status = "ClusterUserDefinedNetworkStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterUserDefinedNetworkSpec {
    /// Namespaces that get the network. Mutable.
    pub namespace_selector: LabelSelector,
    /// OVS bridge used as the network's uplink (Primary Layer2/Layer3 only). Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplinks: Option<Vec<String>>,
    /// The network template.
    pub network: NetworkSpec,
}

/// The network template of a CUDN.
#[derive(KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSpec {
    /// Layer3, Layer2 or Localnet. Immutable.
    pub topology: NetworkTopology,
    /// Layer3 configuration; required iff topology is Layer3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer3: Option<Layer3Config>,
    /// Layer2 configuration; required iff topology is Layer2. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer2: Option<Layer2Config>,
    /// Localnet configuration; required iff topology is Localnet. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub localnet: Option<LocalnetConfig>,
    /// Transport other than the default Geneve overlay. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportOption>,
    /// No-overlay settings; required iff transport is NoOverlay. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_overlay: Option<NoOverlayConfig>,
    /// EVPN settings; required iff transport is EVPN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evpn: Option<EvpnConfig>,
}

/// Transport of a CUDN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum TransportOption {
    /// Routed without an overlay.
    NoOverlay,
    /// EVPN (BGP).
    #[serde(rename = "EVPN")]
    Evpn,
}

/// Outbound SNAT for no-overlay networks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum OutboundSnat {
    /// SNAT to the node IP.
    Enabled,
    /// Keep pod IPs.
    Disabled,
}

/// Routing for no-overlay networks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum NoOverlayRouting {
    /// Routes advertised by OVN-Kubernetes.
    Managed,
    /// Routes managed outside OVN-Kubernetes.
    Unmanaged,
}

/// No-overlay transport settings.
#[derive(KubeSchema, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NoOverlayConfig {
    /// Outbound SNAT.
    #[serde(rename = "outboundSNAT")]
    pub outbound_snat: OutboundSnat,
    /// Routing.
    pub routing: NoOverlayRouting,
}

/// EVPN transport settings.
#[derive(KubeSchema, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvpnConfig {
    /// Name of the VTEP object.
    pub vtep: String,
    /// MAC-VRF (Layer2).
    #[serde(default, rename = "macVRF", skip_serializing_if = "Option::is_none")]
    pub mac_vrf: Option<VrfConfig>,
    /// IP-VRF (Layer3).
    #[serde(default, rename = "ipVRF", skip_serializing_if = "Option::is_none")]
    pub ip_vrf: Option<VrfConfig>,
}

/// A VRF of an EVPN network.
#[derive(KubeSchema, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VrfConfig {
    /// VXLAN network identifier.
    pub vni: i32,
    /// BGP route target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_target: Option<String>,
}

/// Localnet topology configuration (CUDN only, Secondary only). Immutable as a whole.
#[derive(KubeSchema, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalnetConfig {
    /// Always Secondary.
    pub role: NetworkRole,
    /// The OVS bridge-mapping network name the switch attaches to.
    pub physical_network_name: String,
    /// The network's subnets; required unless IPAM is disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnets: Option<DualStackCidrs>,
    /// Subnets never given to workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_subnets: Option<Vec<Cidr>>,
    /// IPAM configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipam: Option<IpamConfig>,
    /// Maximum transmission unit; unset means 1500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i32>,
    /// VLAN of the provider network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<VlanConfig>,
}

/// VLAN mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum VlanMode {
    /// Access port with one VLAN id.
    Access,
}

/// VLAN configuration of a Localnet network.
#[derive(KubeSchema, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VlanConfig {
    /// The VLAN mode.
    pub mode: VlanMode,
    /// Access settings; required iff mode is Access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<AccessVlanConfig>,
}

/// Access VLAN settings.
#[derive(KubeSchema, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessVlanConfig {
    /// VLAN id, 1..4094.
    pub id: i32,
}

/// Status of a `ClusterUserDefinedNetwork`.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterUserDefinedNetworkStatus {
    /// Conditions, keyed by type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
