//! EVPN transport settings of a `ClusterUserDefinedNetwork` (`spec.network.evpn`).

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// EVPN transport settings.
#[derive(KubeSchema, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.macVRF) || has(self.ipVRF)")
        .message("at least one of macVRF or ipVRF must be specified"),
    validation = Rule::new("!has(self.macVRF) || !has(self.ipVRF) || self.macVRF.vni != self.ipVRF.vni")
        .message("macVRF and ipVRF must use different VNIs"),
)]
pub struct EvpnConfig {
    /// Name of the VTEP object that holds the VTEP IPs.
    #[schemars(length(min = 1))]
    pub vtep: String,
    /// MAC-VRF (Layer2 EVPN); required for Layer2, forbidden for Layer3.
    #[serde(default, rename = "macVRF", skip_serializing_if = "Option::is_none")]
    pub mac_vrf: Option<VrfConfig>,
    /// IP-VRF (Layer3 EVPN); required for Layer3, optional for Layer2.
    #[serde(default, rename = "ipVRF", skip_serializing_if = "Option::is_none")]
    pub ip_vrf: Option<VrfConfig>,
}

/// A VRF of an EVPN network.
#[derive(KubeSchema, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VrfConfig {
    /// VXLAN network identifier, 1..16777215; unique across the cluster.
    #[schemars(range(min = 1, max = 16_777_215))]
    pub vni: i32,
    /// BGP route target; unset means `<AS>:<VNI>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_target: Option<RouteTarget>,
}

/// A BGP extended-community route target (RFC 4360 6-byte value) in one of the FRR forms
/// `A.B.C.D:MN`, `EF:OPQR`, `GHJK:MN`, `*:OPQR`, `*:MN`.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
#[schemars(extend(
    "maxLength" = 21,
    "x-kubernetes-validations" = [
        {
            "message": "RT must contain exactly one colon",
            "rule": "self.split(':').size() == 2",
        },
        {
            "message": "RT global administrator must be either '*', an IPv4 address, or a number",
            "rule": "self.split(':').size() != 2 || (self.startsWith('*:') || isIP(self.split(':')[0]) || self.split(':')[0].matches('^[0-9]+$'))",
        },
        {
            "message": "RT local administrator must be a number",
            "rule": "self.split(':').size() != 2 || self.split(':')[1].matches('^[0-9]+$')",
        },
        {
            "message": "RT with wildcard global administrator must have format *:OPQR where OPQR <= 4294967295",
            "rule": "self.split(':').size() != 2 || !self.startsWith('*:') || (self.split(':')[1].matches('^[0-9]+$') && uint(self.split(':')[1]) <= 4294967295u)",
        },
        {
            "message": "RT with IPv4 global administrator must have format A.B.C.D:MN where MN <= 65535",
            "rule": "self.split(':').size() != 2 || !self.split(':')[0].contains('.') || (self.split(':')[1].matches('^[0-9]+$') && uint(self.split(':')[1]) <= 65535u)",
        },
        {
            "message": "RT with 4-byte ASN global administrator must have format GHJK:MN where GHJK <= 4294967295 and MN <= 65535",
            "rule": "self.split(':').size() != 2 || self.startsWith('*:') || self.split(':')[0].contains('.') || !self.split(':')[0].matches('^[0-9]+$') || !self.split(':')[1].matches('^[0-9]+$') || uint(self.split(':')[0]) <= 65535u || uint(self.split(':')[1]) <= 65535u",
        },
        {
            "message": "RT with 2-byte ASN global administrator must have format EF:OPQR where EF <= 65535 and OPQR <= 4294967295",
            "rule": "self.split(':').size() != 2 || self.startsWith('*:') || self.split(':')[0].contains('.') || !self.split(':')[0].matches('^[0-9]+$') || !self.split(':')[1].matches('^[0-9]+$') || uint(self.split(':')[0]) > 65535u || uint(self.split(':')[1]) <= 4294967295u",
        },
    ],
))]
pub struct RouteTarget(pub String);
