//! The `k8s.ovn.org/v1` custom resources: [`UserDefinedNetwork`] (namespaced, `udn`) and
//! [`ClusterUserDefinedNetwork`] (cluster scoped, `cudn`).
//!
//! Field names, enums, bounds and the CEL `x-kubernetes-validations` (with their messages)
//! follow upstream OVN-Kubernetes so that YAML written for upstream applies unchanged and
//! is rejected with the same messages.

// `#[derive(KubeSchema)]` re-declares each struct, `pub` included, inside the body of the
// `JsonSchema::json_schema` it generates, and `unreachable_pub` fires on that private copy.
// A lint level cannot be attached to the generated item, so it is allowed on the modules
// holding derived types; every `pub` item in them is re-exported below.
#[allow(unreachable_pub)]
pub mod cudn;
#[allow(unreachable_pub)]
pub mod evpn;
mod manifest;
mod schema_parts;
#[allow(unreachable_pub)]
pub mod shared;
pub(crate) mod structural;
#[allow(unreachable_pub)]
pub mod udn;

pub use cudn::{
    AccessVlanConfig, ClusterUserDefinedNetwork, ClusterUserDefinedNetworkSpec,
    ClusterUserDefinedNetworkStatus, LocalnetConfig, NetworkSpec, NoOverlayConfig,
    NoOverlayRouting, OutboundSnat, TransportOption, VlanConfig, VlanMode,
};
pub use evpn::{EvpnConfig, RouteTarget, VrfConfig};
pub use manifest::{
    ManifestError, cluster_user_defined_network_crd, manifest_file_name, manifests,
    to_manifest_json, user_defined_network_crd,
};
pub use shared::{
    Cidr, DualStackCidrs, DualStackIps, Ip, IpamConfig, IpamLifecycle, IpamMode, Layer2Config,
    Layer3Config, Layer3Subnet, NetworkRole, NetworkTopology,
};
pub use udn::{UserDefinedNetwork, UserDefinedNetworkSpec, UserDefinedNetworkStatus};
