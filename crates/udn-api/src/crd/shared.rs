//! Types shared by UDN and CUDN: topologies, roles, the Layer3/Layer2 configs, IPAM and
//! the CIDR/IP list types, with the upstream OpenAPI bounds and CEL rules.

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema_parts;

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

/// A CIDR string (`10.0.0.0/16`, `fd00::/64`): at most 43 characters, checked by CEL `isCIDR`.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
#[schemars(extend(
    "maxLength" = 43,
    "x-kubernetes-validations" = [{"message": "CIDR is invalid", "rule": "isCIDR(self)"}],
))]
pub struct Cidr(pub String);

/// An IP address string, checked by CEL `isIP`.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
#[schemars(extend(
    "x-kubernetes-validations" = [{"message": "IP is invalid", "rule": "isIP(self)"}],
))]
pub struct Ip(pub String);

/// One or two CIDRs, of different IP families when two.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend(
    "minItems" = 1,
    "maxItems" = 2,
    "x-kubernetes-validations" = [{
        "message": "When 2 CIDRs are set, they must be from different IP families",
        "rule": "size(self) != 2 || !isCIDR(self[0]) || !isCIDR(self[1]) || cidr(self[0]).ip().family() != cidr(self[1]).ip().family()",
    }],
))]
pub struct DualStackCidrs(pub Vec<Cidr>);

/// One or two IPs, of different IP families when two.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend(
    "minItems" = 1,
    "maxItems" = 2,
    "x-kubernetes-validations" = [{
        "message": "When 2 IPs are set, they must be from different IP families",
        "rule": "size(self) != 2 || !isIP(self[0]) || !isIP(self[1]) || ip(self[0]).family() != ip(self[1]).family()",
    }],
))]
pub struct DualStackIps(pub Vec<Ip>);

/// One Layer3 cluster subnet and the per-node host subnet length carved from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("!has(self.hostSubnet) || !isCIDR(self.cidr) || self.hostSubnet > cidr(self.cidr).prefixLength()")
        .message("HostSubnet must be smaller than CIDR subnet"),
    validation = Rule::new("!has(self.hostSubnet) || !isCIDR(self.cidr) || (cidr(self.cidr).ip().family() != 4 || self.hostSubnet < 32)")
        .message("HostSubnet must < 32 for ipv4 CIDR"),
)]
pub struct Layer3Subnet {
    /// The cluster subnet, split into one host subnet per node.
    pub cidr: Cidr,
    /// Prefix length of each node's host subnet; unset means 24 (IPv4) / 64 (IPv6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 127))]
    pub host_subnet: Option<i32>,
}

/// Layer3 topology configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("self.role != 'Secondary' || self.subnets == oldSelf.subnets")
        .message("Subnets is immutable for Secondary role"),
    validation = Rule::new("self.role != 'Secondary' || !has(self.subnets) || self.subnets.size() <= 2")
        .message("Secondary networks may define at most 2 subnets"),
    validation = Rule::new("self.role != 'Secondary' || size(self.subnets) != 2 || !isCIDR(self.subnets[0].cidr) || !isCIDR(self.subnets[1].cidr) || cidr(self.subnets[0].cidr).ip().family() != cidr(self.subnets[1].cidr).ip().family()")
        .message("When 2 CIDRs are set for Secondary networks, they must be from different IP families"),
    validation = Rule::new("!has(self.joinSubnets) || has(self.role) && self.role == 'Primary'")
        .message("JoinSubnets is only supported for Primary network"),
    validation = Rule::new("!has(self.subnets) || !has(self.mtu) || !self.subnets.exists_one(i, isCIDR(i.cidr) && cidr(i.cidr).ip().family() == 6) || self.mtu >= 1280")
        .message("MTU should be greater than or equal to 1280 when IPv6 subnet is used"),
    validation = Rule::new("!has(oldSelf.subnets) || oldSelf.subnets.all(old, self.subnets.exists(new, new.cidr == old.cidr))")
        .message("Removing existing subnets is not allowed"),
    validation = Rule::new("!has(self.subnets) || self.subnets.size() == 1 || !self.subnets.exists(i, self.subnets.exists(j, i != j && cidr(i.cidr).containsCIDR(j.cidr)))")
        .message("Subnets must not overlap or contain each other"),
    validation = Rule::new("!has(self.subnets) || self.subnets.size() == 1 || !self.subnets.exists(i, self.subnets.filter(j, j.cidr == i.cidr).size() > 1)")
        .message("Subnets with same CIDR are not allowed"),
    validation = Rule::new("!has(oldSelf.subnets) || oldSelf.subnets.all(old, self.subnets.exists(new, new.cidr == old.cidr && (!has(old.hostSubnet) && !has(new.hostSubnet) || has(old.hostSubnet) && has(new.hostSubnet) && old.hostSubnet == new.hostSubnet)))")
        .message("hostSubnet is immutable"),
    validation = Rule::new("!has(self.subnets) || self.subnets.size() == 1 || self.subnets.all(i, self.subnets.all(j, cidr(i.cidr).ip().family() != cidr(j.cidr).ip().family() || (has(i.hostSubnet) == has(j.hostSubnet) && (!has(i.hostSubnet) || i.hostSubnet == j.hostSubnet))))")
        .message("Subnets from the same IP family must use the same hostSubnet value"),
)]
pub struct Layer3Config {
    /// Primary or Secondary. Immutable.
    #[x_kube(validation = Rule::new("self == oldSelf").message("role is immutable"))]
    pub role: NetworkRole,
    /// Maximum transmission unit; unset means the cluster default. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 576, max = 65536))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("mtu is immutable"))]
    pub mtu: Option<i32>,
    /// Cluster subnets. Primary networks may append, Secondary ones are immutable.
    #[schemars(length(min = 1, max = 400))]
    #[x_kube(merge_strategy = ListMerge::Atomic)]
    pub subnets: Vec<Layer3Subnet>,
    /// Join subnets between the network's routers (Primary only). Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema_parts::immutable_join_subnets")]
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
#[schemars(extend("minProperties" = 1))]
#[x_kube(
    validation = Rule::new("!has(self.lifecycle) || self.lifecycle != 'Persistent' || !has(self.mode) || self.mode == 'Enabled'")
        .message("lifecycle Persistent is only supported when ipam.mode is Enabled"),
)]
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
#[x_kube(
    validation = Rule::new("has(self.ipam) && has(self.ipam.mode) && self.ipam.mode != 'Enabled' || has(self.subnets)")
        .message("Subnets is required with ipam.mode is Enabled or unset"),
    validation = Rule::new("!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled' || !has(self.subnets)")
        .message("Subnets must be unset when ipam.mode is Disabled"),
    validation = Rule::new("!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled' || self.role == 'Secondary'")
        .message("Disabled ipam.mode is only supported for Secondary network"),
    validation = Rule::new("!has(self.joinSubnets) || has(self.role) && self.role == 'Primary'")
        .message("JoinSubnets is only supported for Primary network"),
    validation = Rule::new("!has(self.subnets) || !has(self.mtu) || !self.subnets.exists_one(i, isCIDR(i) && cidr(i).ip().family() == 6) || self.mtu >= 1280")
        .message("MTU should be greater than or equal to 1280 when IPv6 subnet is used"),
    validation = Rule::new("!has(self.defaultGatewayIPs) || has(self.role) && self.role == 'Primary'")
        .message("defaultGatewayIPs is only supported for Primary network"),
    validation = Rule::new("!has(self.defaultGatewayIPs) || self.defaultGatewayIPs.all(ip, self.subnets.exists(subnet, cidr(subnet).containsIP(ip)))")
        .message("defaultGatewayIPs must belong to one of the subnets specified in the subnets field"),
    validation = Rule::new("!has(self.defaultGatewayIPs) || size(self.defaultGatewayIPs) == size(self.subnets)")
        .message("defaultGatewayIPs must be specified for all IP families"),
    validation = Rule::new("!has(self.reservedSubnets) || has(self.subnets)")
        .message("reservedSubnets must be unset when subnets is unset"),
    validation = Rule::new("!has(self.reservedSubnets) || has(self.role) && self.role == 'Primary'")
        .message("reservedSubnets is only supported for Primary network"),
    validation = Rule::new("!has(self.infrastructureSubnets) || has(self.subnets)")
        .message("infrastructureSubnets must be unset when subnets is unset"),
    validation = Rule::new("!has(self.infrastructureSubnets) || has(self.role) && self.role == 'Primary'")
        .message("infrastructureSubnets is only supported for Primary network"),
    validation = Rule::new("!has(self.infrastructureSubnets) || !has(self.defaultGatewayIPs) || self.defaultGatewayIPs.all(ip, self.infrastructureSubnets.exists(subnet, cidr(subnet).containsIP(ip)))")
        .message("defaultGatewayIPs have to belong to infrastructureSubnets"),
    validation = Rule::new("!has(self.reservedSubnets) || self.reservedSubnets.all(e, self.subnets.exists(s, cidr(s).containsCIDR(cidr(e))))")
        .message("reservedSubnets must be subnetworks of the networks specified in the subnets field")
        .field_path(".reservedSubnets"),
    validation = Rule::new("!has(self.infrastructureSubnets) || self.infrastructureSubnets.all(e, self.subnets.exists(s, cidr(s).containsCIDR(cidr(e))))")
        .message("infrastructureSubnets must be subnetworks of the networks specified in the subnets field")
        .field_path(".infrastructureSubnets"),
    validation = Rule::new("!has(self.infrastructureSubnets) || !has(self.reservedSubnets) || self.infrastructureSubnets.all(infra, !self.reservedSubnets.exists(reserved, cidr(infra).containsCIDR(reserved) || cidr(reserved).containsCIDR(infra)))")
        .message("infrastructureSubnets and reservedSubnets must not overlap"),
    validation = Rule::new("!has(self.infrastructureSubnets) || self.infrastructureSubnets.all(s, isCIDR(s) && cidr(s) == cidr(s).masked())")
        .message("infrastructureSubnets must be a masked network address (no host bits set)"),
    validation = Rule::new("!has(self.reservedSubnets) || self.reservedSubnets.all(s, isCIDR(s) && cidr(s) == cidr(s).masked())")
        .message("reservedSubnets must be a masked network address (no host bits set)"),
)]
pub struct Layer2Config {
    /// Primary or Secondary.
    pub role: NetworkRole,
    /// Maximum transmission unit; unset means the cluster default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 576, max = 65536))]
    pub mtu: Option<i32>,
    /// The network's subnets (one per family). Required unless IPAM is disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnets: Option<DualStackCidrs>,
    /// Excluded from automatic allocation but available as static IPs (Primary only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 25))]
    #[x_kube(merge_strategy = ListMerge::Atomic)]
    pub reserved_subnets: Option<Vec<Cidr>>,
    /// Where gateway and management IPs come from; never given to workloads (Primary only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4))]
    #[x_kube(merge_strategy = ListMerge::Atomic)]
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
