//! [`RenderError`]: why a UDN/CUDN did not render.

use super::transit::TransitError;
use super::validate::ValidateError;
use crate::netconf::NetInfoError;

/// Why a UDN/CUDN did not render into a NAD.
///
/// Display is the full upstream text of `RenderNetAttachDefManifest`'s error, including
/// its `invalid topology specified: ` / `failed to render CNI network config: ` prefixes,
/// because that flat string is what ends up in the `NetworkCreated` condition (the
/// cluster-manager prefixes `failed to generate NetworkAttachmentDefinition: `). Inner
/// errors are part of the text, not a `source` chain, so reporters do not repeat them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// A UDN without a namespace.
    #[error("namespace should not be empty")]
    EmptyNamespace,
    /// The config block of the chosen topology is missing.
    #[error(
        "invalid topology specified: topology {topology} is specified but {topology} config is nil"
    )]
    TopologyConfigMismatch {
        /// The CRD topology name (`Layer2`, `Layer3`, `Localnet`).
        topology: &'static str,
    },
    /// Layer2: lifecycle Persistent with IPAM disabled.
    #[error(
        "failed to render CNI network config: lifecycle Persistent is only supported when ipam.mode is Enabled"
    )]
    IpamLifecycleNotSupported,
    /// Layer2: IPAM enabled without subnets.
    #[error(
        "failed to render CNI network config: subnets is required with ipam.mode is Enabled or unset"
    )]
    SubnetsRequired,
    /// Layer2: IPAM disabled with subnets.
    #[error(
        "failed to render CNI network config: subnets must be unset when ipam.mode is Disabled"
    )]
    SubnetsMustBeUnset,
    /// Primary Layer2: the transit subnet could not be computed.
    #[error("failed to render CNI network config: {reason}")]
    TransitSubnet {
        /// The failure.
        reason: TransitError,
    },
    /// EVPN transport while the EVPN feature is off.
    #[error(
        "failed to render CNI network config: EVPN transport requested but EVPN feature is not enabled"
    )]
    EvpnNotEnabled,
    /// Persistent IPs while the persistent-IPs feature is off.
    #[error(
        "failed to render CNI network config: allowPersistentIPs is set but persistentIPs is Disabled"
    )]
    PersistentIpsDisabled,
    /// The rendered config fails upstream `ValidateNetConf`.
    #[error("failed to render CNI network config: {reason}")]
    InvalidNetConf {
        /// The failure.
        reason: ValidateError,
    },
    /// The rendered config fails upstream `NewNetInfo` (localnet excluded subnets,
    /// cluster IP families).
    #[error("failed to render CNI network config: {reason}")]
    NetInfo {
        /// The failure.
        reason: NetInfoError,
    },
}
