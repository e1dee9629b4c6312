//! The `k8s.ovn.org/v1` custom resources: [`UserDefinedNetwork`] (namespaced, `udn`) and
//! [`ClusterUserDefinedNetwork`] (cluster scoped, `cudn`).
//!
//! Field names, enums, bounds and the CEL `x-kubernetes-validations` (with their messages)
//! follow upstream OVN-Kubernetes so that YAML written for upstream applies unchanged and
//! is rejected with the same messages.

pub mod cudn;
pub mod shared;
pub mod udn;

pub use cudn::{
    AccessVlanConfig, ClusterUserDefinedNetwork, ClusterUserDefinedNetworkSpec,
    ClusterUserDefinedNetworkStatus, EvpnConfig, LocalnetConfig, NetworkSpec, NoOverlayConfig,
    NoOverlayRouting, OutboundSnat, TransportOption, VlanConfig, VlanMode, VrfConfig,
};
pub use shared::{
    Cidr, DualStackCidrs, DualStackIps, Ip, IpamConfig, IpamLifecycle, IpamMode, Layer2Config,
    Layer3Config, Layer3Subnet, NetworkRole, NetworkTopology,
};
pub use udn::{UserDefinedNetwork, UserDefinedNetworkSpec, UserDefinedNetworkStatus};
