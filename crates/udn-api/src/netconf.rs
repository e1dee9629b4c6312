//! The OVN-Kubernetes CNI network configuration (upstream `cni/types.NetConf`) carried in a
//! NAD's `spec.config`, its parser (upstream `config.ParseNetConf`) and the subnet-list
//! parsers.
//!
//! Fields keep the wire form (comma-separated strings, lowercase enums) so that any NAD
//! written upstream parses and compares unchanged; [`info::NetInfo`] is the typed view.

pub mod info;
pub mod parse;
pub mod subnets;

pub use info::{NetInfo, NetInfoError, UserDefinedNetInfo};
pub use parse::NetConfParseError;
pub use subnets::{
    CidrError, IpListError, SubnetEntry, SubnetParseError, contains_cidr, parse_cidr,
    parse_cluster_subnet_entries, parse_ip_list, parse_subnet_entries, parse_subnet_list,
};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::crd::NetworkTopology;
use crate::names::DEFAULT_NETWORK_NAME;

/// Default UDN join subnet (IPv4) of primary networks without `joinSubnets`.
pub const UDN_JOIN_SUBNET_V4: &str = "100.65.0.0/16";
/// Default UDN join subnet (IPv6) of primary networks without `joinSubnets`.
pub const UDN_JOIN_SUBNET_V6: &str = "fd99::/64";
/// `role` value of a primary network.
pub const ROLE_PRIMARY: &str = "primary";
/// `role` value of a secondary network.
pub const ROLE_SECONDARY: &str = "secondary";
/// `transport` value of a no-overlay network.
pub const TRANSPORT_NO_OVERLAY: &str = "no-overlay";
/// `transport` value of an EVPN network.
pub const TRANSPORT_EVPN: &str = "evpn";
/// `outboundSNAT` enabled.
pub const OUTBOUND_SNAT_ENABLED: &str = "enabled";
/// `outboundSNAT` disabled.
pub const OUTBOUND_SNAT_DISABLED: &str = "disabled";
/// Network name reserved upstream (never a secondary network name).
pub const RESERVED_NETWORK_NAME: &str = "ovn-kubernetes";

/// The OVN-Kubernetes CNI network configuration.
///
/// Integer fields are Go `int`s (`i64`); an empty string or 0 means "unset", as upstream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetConf {
    /// `cniVersion`.
    pub cni_version: String,
    /// `name`: the network name (`<ns>_<name>`, `cluster_udn_<name>`, `default`).
    pub name: String,
    /// `type`: the CNI plugin, `ovn-k8s-cni-overlay` for OVN-Kubernetes NADs.
    pub plugin_type: String,
    /// `role`: `primary`, `secondary` or empty (= secondary).
    pub role: String,
    /// `topology`: `layer3`, `layer2`, `localnet`; empty for the default network.
    pub topology: String,
    /// `netAttachDefName`: `<namespace>/<name>` of the NAD.
    pub nad_name: String,
    /// `mtu`. The parser fills the cluster default when the key is absent.
    pub mtu: i64,
    /// `subnets`: comma-separated; Layer3 entries may be `cidr/hostLen`.
    pub subnets: String,
    /// `excludeSubnets`: comma-separated CIDRs never allocated to pods.
    pub exclude_subnets: String,
    /// `reservedSubnets`: comma-separated CIDRs only for static IPs (Layer2).
    pub reserved_subnets: String,
    /// `infrastructureSubnets`: comma-separated CIDRs for gateway/management IPs (Layer2).
    pub infrastructure_subnets: String,
    /// `joinSubnet`: comma-separated, at most one per family.
    pub join_subnet: String,
    /// `transitSubnet`: comma-separated, one per subnet family (primary Layer2).
    pub transit_subnet: String,
    /// `defaultGatewayIPs`: comma-separated IPs (primary Layer2).
    pub default_gateway_ips: String,
    /// `vlanID` (localnet).
    pub vlan_id: i64,
    /// `allowPersistentIPs`.
    pub allow_persistent_ips: bool,
    /// `physicalNetworkName` (localnet); empty means the network name.
    pub physical_network_name: String,
    /// `transport`: empty (Geneve), `no-overlay` or `evpn`.
    pub transport: String,
    /// `outboundSNAT`: `enabled` / `disabled` (no-overlay only).
    pub outbound_snat: String,
    /// `evpn`: EVPN settings (EVPN transport only).
    pub evpn: Option<EvpnNetConf>,
    /// `uplink`: the uplink name (CUDN `spec.uplinks[0]`).
    pub uplink: String,
    /// `ipam.type`: must stay empty for OVN-Kubernetes NADs.
    pub ipam_type: String,
    /// `deviceID`: PCI address or auxiliary device (SR-IOV / SF).
    pub device_id: String,
    /// `logFile` of the CNI shim.
    pub log_file: String,
    /// `logLevel` of the CNI shim.
    pub log_level: String,
    /// `logfile-maxsize`.
    pub log_file_max_size: i64,
    /// `logfile-maxbackups`.
    pub log_file_max_backups: i64,
    /// `logfile-maxage`.
    pub log_file_max_age: i64,
    /// `runtimeConfig.CNIDeviceInfoFile` (device-info spec).
    pub cni_device_info_file: String,
    /// `capabilities`.
    pub capabilities: BTreeMap<String, bool>,
    /// `prevResult`, kept as JSON.
    pub prev_result: Option<serde_json::Value>,
}

/// EVPN settings of a network (upstream `EVPNConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvpnNetConf {
    /// Name of the VTEP object.
    #[serde(default)]
    pub vtep: String,
    /// MAC-VRF (Layer2 EVPN).
    #[serde(default, rename = "macVRF", skip_serializing_if = "Option::is_none")]
    pub mac_vrf: Option<VrfNetConf>,
    /// IP-VRF (Layer3 EVPN).
    #[serde(default, rename = "ipVRF", skip_serializing_if = "Option::is_none")]
    pub ip_vrf: Option<VrfNetConf>,
}

/// One EVPN VRF (upstream `VRFConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VrfNetConf {
    /// VXLAN network identifier.
    #[serde(default)]
    pub vni: i32,
    /// BGP route target; omitted when empty.
    #[serde(
        default,
        rename = "routeTarget",
        skip_serializing_if = "String::is_empty"
    )]
    pub route_target: String,
    /// Node-local VLAN id; omitted when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vid: i64,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// The name fields are invalid (upstream `ValidateNetConfNameFields`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameFieldsError {
    /// A topology is set but `netAttachDefName` is empty.
    #[error("missing NADName in secondary network netconf {network}")]
    MissingNadName {
        /// The network name.
        network: String,
    },
    /// The network name is empty or reserved (the doubled "in" is upstream's).
    #[error("invalid name in in secondary network netconf ({network})")]
    InvalidName {
        /// The network name.
        network: String,
    },
}

impl NetConf {
    /// The topology as the CRD enum; `None` when empty or unknown.
    pub fn topology_kind(&self) -> Option<NetworkTopology> {
        topology_from_cni_name(&self.topology)
    }

    /// Whether `role` is `primary`.
    pub fn is_primary(&self) -> bool {
        self.role == ROLE_PRIMARY
    }

    /// Whether this is the default network (`name` is `default`).
    pub fn is_default_network(&self) -> bool {
        self.name == DEFAULT_NETWORK_NAME
    }

    /// Upstream `ValidateNetConfNameFields`: a config with a topology needs a NAD name and
    /// a network name other than ``, `default` and `ovn-kubernetes`.
    pub fn check_name_fields(&self) -> Result<(), NameFieldsError> {
        if self.topology.is_empty() {
            return Ok(());
        }
        if self.nad_name.is_empty() {
            return Err(NameFieldsError::MissingNadName {
                network: self.name.clone(),
            });
        }
        if self.name.is_empty()
            || self.name == DEFAULT_NETWORK_NAME
            || self.name == RESERVED_NETWORK_NAME
        {
            return Err(NameFieldsError::InvalidName {
                network: self.name.clone(),
            });
        }
        Ok(())
    }
}

/// Parse the lowercase CNI topology name (`layer3`, `layer2`, `localnet`).
pub fn topology_from_cni_name(name: &str) -> Option<NetworkTopology> {
    [
        NetworkTopology::Layer3,
        NetworkTopology::Layer2,
        NetworkTopology::Localnet,
    ]
    .into_iter()
    .find(|topology| topology.cni_name() == name)
}
