//! `ClusterUserDefinedNetwork`: a cluster-scoped network spanning the namespaces its
//! selector matches.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::evpn::EvpnConfig;
use super::schema_parts;
use super::shared::{
    Cidr, DualStackCidrs, IpamConfig, Layer2Config, Layer3Config, NetworkRole, NetworkTopology,
};

/// Spec of a `ClusterUserDefinedNetwork`.
// clippy reads the repeated `type_ = "string"` of the `printcolumn(...)` entries as a
// duplicated attribute; they are arguments of distinct columns.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "k8s.ovn.org",
    version = "v1",
    kind = "ClusterUserDefinedNetwork",
    plural = "clusteruserdefinednetworks",
    singular = "clusteruserdefinednetwork",
    shortname = "cudn",
    status = "ClusterUserDefinedNetworkStatus",
    doc = "A network shared by the namespaces its selector matches.",
    printcolumn(
        name = "Topology",
        type_ = "string",
        json_path = ".spec.network.topology"
    ),
    printcolumn(name = "Role", type_ = "string", json_path = ".spec.network..role"),
    printcolumn(
        name = "Created",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"NetworkCreated\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("!has(self.uplinks) || ((self.network.topology == 'Layer2' && has(self.network.layer2) && self.network.layer2.role == 'Primary') || (self.network.topology == 'Layer3' && has(self.network.layer3) && self.network.layer3.role == 'Primary'))")
        .message("spec.uplinks is supported only for primary Layer2 and Layer3 networks"),
    validation = Rule::new("!has(self.uplinks) || !has(self.network.transport) || self.network.transport != 'EVPN'")
        .message("spec.uplinks is not supported with EVPN transport"),
)]
pub struct ClusterUserDefinedNetworkSpec {
    /// Namespaces that get the network. Mutable.
    #[schemars(schema_with = "schema_parts::label_selector")]
    pub namespace_selector: LabelSelector,
    /// Uplink objects carrying the network's external traffic (one at most). Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 1),
        inner(
            length(min = 1, max = 253),
            regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
        )
    )]
    #[x_kube(
        merge_strategy = ListMerge::Atomic,
        validation = Rule::new("self == oldSelf").message("uplinks is immutable"),
    )]
    pub uplinks: Option<Vec<String>>,
    /// The network template.
    pub network: NetworkSpec,
}

/// The network template of a CUDN.
#[derive(KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.topology) && self.topology == 'Layer3' ? has(self.layer3): !has(self.layer3)")
        .message("spec.layer3 is required when topology is Layer3 and forbidden otherwise"),
    validation = Rule::new("has(self.topology) && self.topology == 'Layer2' ? has(self.layer2): !has(self.layer2)")
        .message("spec.layer2 is required when topology is Layer2 and forbidden otherwise"),
    validation = Rule::new("has(self.topology) && self.topology == 'Localnet' ? has(self.localnet): !has(self.localnet)")
        .message("spec.localnet is required when topology is Localnet and forbidden otherwise"),
    validation = Rule::new("!has(self.transport) || self.transport != 'NoOverlay' || (self.topology == 'Layer3' && has(self.layer3) && self.layer3.role == 'Primary')")
        .message("transport 'NoOverlay' is only supported for Layer3 primary networks"),
    validation = Rule::new("!has(self.transport) || self.transport != 'NoOverlay' || has(self.noOverlay)")
        .message("spec.noOverlay is required when type transport is 'NoOverlay'"),
    validation = Rule::new("(has(self.transport) && self.transport == 'NoOverlay') || !has(self.noOverlay)")
        .message("spec.noOverlay is forbidden when transport type is not 'NoOverlay'"),
    validation = Rule::new("!has(self.transport) || self.transport != 'EVPN' || ((self.topology == 'Layer2' && has(self.layer2) && self.layer2.role == 'Primary') || (self.topology == 'Layer3' && has(self.layer3) && self.layer3.role == 'Primary'))")
        .message("transport 'EVPN' is only supported for Layer2 or Layer3 primary networks"),
    validation = Rule::new("!has(self.transport) || self.transport != 'EVPN' || has(self.evpn)")
        .message("spec.evpn field is required when transport is 'EVPN'"),
    validation = Rule::new("(has(self.transport) && self.transport == 'EVPN') || !has(self.evpn)")
        .message("spec.evpn field is forbidden when transport is not 'EVPN'"),
    validation = Rule::new("!has(self.transport) || self.transport != 'EVPN' || self.topology != 'Layer2' || (has(self.evpn) && has(self.evpn.macVRF))")
        .message("spec.evpn.macVRF field is required for Layer2 topology when transport is 'EVPN'"),
    validation = Rule::new("!has(self.transport) || self.transport != 'EVPN' || self.topology != 'Layer3' || (has(self.evpn) && has(self.evpn.ipVRF))")
        .message("spec.evpn.ipVRF field is required for Layer3 topology when transport is 'EVPN'"),
    validation = Rule::new("!has(self.transport) || self.transport != 'EVPN' || self.topology != 'Layer3' || !has(self.evpn) || !has(self.evpn.macVRF)")
        .message("spec.evpn.macVRF field is forbidden for Layer3 topology when transport is 'EVPN'"),
)]
pub struct NetworkSpec {
    /// Layer3, Layer2 or Localnet. Immutable.
    #[x_kube(validation = Rule::new("self == oldSelf").message("Topology is immutable"))]
    pub topology: NetworkTopology,
    /// Layer3 configuration; required iff topology is Layer3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer3: Option<Layer3Config>,
    /// Layer2 configuration; required iff topology is Layer2. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema_parts::immutable_layer2")]
    pub layer2: Option<Layer2Config>,
    /// Localnet configuration; required iff topology is Localnet. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema_parts::immutable_localnet")]
    pub localnet: Option<LocalnetConfig>,
    /// Transport other than the default Geneve overlay. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("Transport is immutable"))]
    pub transport: Option<TransportOption>,
    /// No-overlay settings; required iff transport is NoOverlay. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("NoOverlay is immutable"))]
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

/// Localnet topology configuration (CUDN only, Secondary only). Immutable as a whole.
#[derive(KubeSchema, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode == 'Enabled' ? has(self.subnets) : !has(self.subnets)")
        .message("Subnets is required with ipam.mode is Enabled or unset, and forbidden otherwise"),
    validation = Rule::new("!has(self.excludeSubnets) || has(self.subnets)")
        .message("excludeSubnets must be unset when subnets is unset"),
    validation = Rule::new("!has(self.subnets) || !has(self.mtu) || !self.subnets.exists_one(i, isCIDR(i) && cidr(i).ip().family() == 6) || self.mtu >= 1280")
        .message("MTU should be greater than or equal to 1280 when an IPv6 subnet is used"),
)]
pub struct LocalnetConfig {
    /// Always Secondary.
    #[schemars(schema_with = "schema_parts::secondary_role")]
    pub role: NetworkRole,
    /// The OVS bridge-mapping network name the switch attaches to (no `,` or `:`).
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(
        validation = Rule::new("self.matches('^[^,:]+$')")
            .message("physicalNetworkName cannot contain `,` or `:` characters")
    )]
    pub physical_network_name: String,
    /// The network's subnets; required unless IPAM is disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnets: Option<DualStackCidrs>,
    /// Subnets never given to workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 25))]
    #[x_kube(merge_strategy = ListMerge::Atomic)]
    pub exclude_subnets: Option<Vec<Cidr>>,
    /// IPAM configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipam: Option<IpamConfig>,
    /// Maximum transmission unit; unset means 1500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 576, max = 65536))]
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
#[x_kube(
    validation = Rule::new("has(self.mode) && self.mode == 'Access' ? has(self.access): !has(self.access)")
        .message("vlan access config is required when vlan mode is 'Access', and forbidden otherwise"),
)]
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
    #[schemars(range(min = 1, max = 4094))]
    pub id: i32,
}

/// Status of a `ClusterUserDefinedNetwork`.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterUserDefinedNetworkStatus {
    /// Conditions, keyed by type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema_parts::conditions")]
    pub conditions: Vec<Condition>,
}
