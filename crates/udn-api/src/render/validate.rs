//! Upstream `ValidateNetConf`: the checks every non-default network config passes, at
//! render time and when a NAD is parsed. Messages are upstream's.

use super::overlap::{OverlapCheckError, subnet_overlap_check};
use super::transit::{TransitError, set_transit_subnets};
use crate::cluster::{ClusterConfig, GatewayMode};
use crate::crd::NetworkTopology;
use crate::netconf::subnets::go_quote;
use crate::netconf::{
    NameFieldsError, NetConf, OUTBOUND_SNAT_DISABLED, OUTBOUND_SNAT_ENABLED, ROLE_PRIMARY,
    ROLE_SECONDARY, TRANSPORT_EVPN, TRANSPORT_NO_OVERLAY,
};

/// A network config failed validation. Display is the upstream text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValidateError {
    /// `netAttachDefName` differs from the NAD's `<namespace>/<name>`.
    #[error("net-attach-def name ({nad}) is inconsistent with config ({config})")]
    NadNameMismatch {
        /// The NAD's key.
        nad: String,
        /// The config's `netAttachDefName`.
        config: String,
    },
    /// Invalid name fields.
    #[error(transparent)]
    NameFields(#[from] NameFieldsError),
    /// `allowPersistentIPs` on Layer3.
    #[error("layer3 topology does not allow persistent IPs")]
    Layer3PersistentIps,
    /// A role other than secondary on localnet.
    #[error(
        "unexpected network field \"role\" {role} for \"localnet\" topology, localnet topology does not allow network roles to be set since its always a secondary network"
    )]
    LocalnetRole {
        /// The role.
        role: String,
    },
    /// A role other than primary/secondary.
    #[error("invalid network role value {role}")]
    InvalidRole {
        /// The role.
        role: String,
    },
    /// An `ipam` block with a type.
    #[error(
        "error parsing Network Attachment Definition {nad}: IPAM key is not supported. Use OVN-K provided IPAM via the `subnets` attribute"
    )]
    IpamKey {
        /// The NAD key.
        nad: String,
    },
    /// Unknown transport.
    #[error(
        "invalid transport {}: must be one of [\"no-overlay\" \"evpn\"]",
        go_quote(transport)
    )]
    InvalidTransport {
        /// The transport.
        transport: String,
    },
    /// `outboundSNAT` without the no-overlay transport.
    #[error("outboundSNAT is only valid when transport is \"no-overlay\"")]
    OutboundSnatWithoutNoOverlay,
    /// Unknown `outboundSNAT`.
    #[error(
        "invalid outboundSNAT {}: must be one of [\"enabled\" \"disabled\"]",
        go_quote(value)
    )]
    InvalidOutboundSnat {
        /// The value.
        value: String,
    },
    /// `uplink` outside shared gateway mode.
    #[error("uplink {} is supported only in shared gateway mode", go_quote(uplink))]
    UplinkRequiresSharedGateway {
        /// The uplink.
        uplink: String,
    },
    /// `joinSubnet` on localnet.
    #[error(
        "localnet topology does not allow specifying join-subnet as services are not supported"
    )]
    LocalnetJoinSubnet,
    /// Primary Layer2 without subnets.
    #[error("the subnet attribute must be defined for layer2 primary user defined networks")]
    Layer2PrimaryWithoutSubnets,
    /// `infrastructureSubnets` outside Layer2.
    #[error("infrastructureSubnets is only supported for layer2 topology")]
    InfrastructureSubnetsNotLayer2,
    /// `reservedSubnets` outside Layer2.
    #[error("reservedSubnets is only supported for layer2 topology")]
    ReservedSubnetsNotLayer2,
    /// `defaultGatewayIPs` outside Layer2.
    #[error("defaultGatewayIPs is only supported for layer2 topology")]
    DefaultGatewayIpsNotLayer2,
    /// A primary Layer2 config without `transitSubnet` whose transit could not be computed.
    #[error("failed to set dynamic transit subnet for layer2 primary NAD {network}: {reason}")]
    DynamicTransit {
        /// The network name.
        network: String,
        /// The failure.
        reason: TransitError,
    },
    /// The subnet overlap check failed.
    #[error("invalid subnet configuration: {reason}")]
    SubnetConfiguration {
        /// The failure.
        reason: OverlapCheckError,
    },
}

/// Upstream `ValidateNetConf(nadName, netconf)`. Like upstream it fills a missing
/// `transitSubnet` of a primary Layer2 config, hence `&mut`.
pub fn validate_netconf(
    nad_name: &str,
    conf: &mut NetConf,
    cluster: &ClusterConfig,
) -> Result<(), ValidateError> {
    if !conf.is_default_network() && conf.nad_name != nad_name {
        return Err(ValidateError::NadNameMismatch {
            nad: nad_name.to_owned(),
            config: conf.nad_name.clone(),
        });
    }
    conf.check_name_fields()?;
    check_fields(nad_name, conf, cluster)?;
    check_topology_fields(conf)?;
    let topology = conf.topology_kind();
    if conf.transit_subnet.is_empty()
        && conf.is_primary()
        && topology == Some(NetworkTopology::Layer2)
    {
        set_transit_subnets(conf, cluster).map_err(|reason| ValidateError::DynamicTransit {
            network: conf.name.clone(),
            reason,
        })?;
    }
    if topology != Some(NetworkTopology::Localnet) && !conf.is_default_network() {
        subnet_overlap_check(conf, cluster)
            .map_err(|reason| ValidateError::SubnetConfiguration { reason })?;
    }
    Ok(())
}

/// Role, IPAM, transport, outbound SNAT and uplink checks.
fn check_fields(
    nad_name: &str,
    conf: &NetConf,
    cluster: &ClusterConfig,
) -> Result<(), ValidateError> {
    let topology = conf.topology_kind();
    if conf.allow_persistent_ips && topology == Some(NetworkTopology::Layer3) {
        return Err(ValidateError::Layer3PersistentIps);
    }
    let role = conf.role.as_str();
    if !role.is_empty() && role != ROLE_SECONDARY && topology == Some(NetworkTopology::Localnet) {
        return Err(ValidateError::LocalnetRole {
            role: conf.role.clone(),
        });
    }
    if !role.is_empty() && role != ROLE_PRIMARY && role != ROLE_SECONDARY {
        return Err(ValidateError::InvalidRole {
            role: conf.role.clone(),
        });
    }
    if !conf.ipam_type.is_empty() {
        return Err(ValidateError::IpamKey {
            nad: nad_name.to_owned(),
        });
    }
    let transport = conf.transport.as_str();
    if !transport.is_empty() && transport != TRANSPORT_NO_OVERLAY && transport != TRANSPORT_EVPN {
        return Err(ValidateError::InvalidTransport {
            transport: conf.transport.clone(),
        });
    }
    if !conf.outbound_snat.is_empty() {
        if transport != TRANSPORT_NO_OVERLAY {
            return Err(ValidateError::OutboundSnatWithoutNoOverlay);
        }
        if conf.outbound_snat != OUTBOUND_SNAT_ENABLED
            && conf.outbound_snat != OUTBOUND_SNAT_DISABLED
        {
            return Err(ValidateError::InvalidOutboundSnat {
                value: conf.outbound_snat.clone(),
            });
        }
    }
    if !conf.uplink.is_empty() && cluster.gateway_mode != GatewayMode::Shared {
        return Err(ValidateError::UplinkRequiresSharedGateway {
            uplink: conf.uplink.clone(),
        });
    }
    Ok(())
}

/// Which lists each topology may carry.
fn check_topology_fields(conf: &NetConf) -> Result<(), ValidateError> {
    let topology = conf.topology_kind();
    let layer2 = topology == Some(NetworkTopology::Layer2);
    if !conf.join_subnet.is_empty() && topology == Some(NetworkTopology::Localnet) {
        return Err(ValidateError::LocalnetJoinSubnet);
    }
    if conf.is_primary() && conf.subnets.is_empty() && layer2 {
        return Err(ValidateError::Layer2PrimaryWithoutSubnets);
    }
    if !conf.infrastructure_subnets.is_empty() && !layer2 {
        return Err(ValidateError::InfrastructureSubnetsNotLayer2);
    }
    if !conf.reserved_subnets.is_empty() && !layer2 {
        return Err(ValidateError::ReservedSubnetsNotLayer2);
    }
    if !conf.default_gateway_ips.is_empty() && !layer2 {
        return Err(ValidateError::DefaultGatewayIpsNotLayer2);
    }
    Ok(())
}
