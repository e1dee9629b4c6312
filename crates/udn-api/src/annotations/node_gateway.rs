//! The node annotations the node agent writes and the NB controller reads (upstream
//! `util/node_annotations.go`, written by ovnkube-node):
//!
//! - `k8s.ovn.org/l3-gateway-config`: an object keyed by network; only `"default"` is written
//!   and every network's gateway reads that entry ([`L3GatewayConfig`]).
//! - `k8s.ovn.org/node-chassis-id`: plain string, the OVS `system-id`. Required when the
//!   gateway mode is shared or local.
//! - `k8s.ovn.org/node-encap-ips`: JSON array of IPs, `["172.18.0.3"]`.
//! - `k8s.ovn.org/host-cidrs`: JSON array of the host's addresses with prefix lengths.
//! - `k8s.ovn.org/node-primary-ifaddr`: `{"ipv4":"172.18.0.3/16"}` ([`IfAddrs`]).
//! - `k8s.ovn.org/node-masquerade-subnet`: `{"ipv4":"169.254.0.0/17","ipv6":"fd69::/112"}`.
//! - `k8s.ovn.org/gateway-mtu-support`: only `"false"` is written; absent means supported.
//! - `k8s.ovn.org/zone-name` is obsolete (the zone is the node name): only its key,
//!   [`ANNOTATION_ZONE_NAME`](crate::names::ANNOTATION_ZONE_NAME), exists here.
//!
//! Both arrays are written as upstream writes a Go string set (`sets.List`): deduplicated and
//! sorted by their text (so `"10.0.0.10"` comes before `"10.0.0.9"`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};

use super::{
    AnnotationError, IfAddrs, MacAddress, from_json, from_json_object, if_addrs, null_as_default,
};
use super::{parse_cidr, to_go_json};
use crate::names::{
    ANNOTATION_HOST_CIDRS, ANNOTATION_L3_GATEWAY_CONFIG, ANNOTATION_NODE_CHASSIS_ID,
    ANNOTATION_NODE_ENCAP_IPS, ANNOTATION_NODE_MASQUERADE_SUBNET, ANNOTATION_NODE_PRIMARY_IFADDR,
    DEFAULT_NETWORK_NAME,
};

/// Largest `vlan-id` (the NB schema's limit on `tag_request`).
pub const MAX_VLAN_ID: u16 = 4095;

/// The gateway mode of a node (`mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum L3GatewayMode {
    /// `"shared"`: OVN shares the gateway interface with the host.
    #[default]
    Shared,
    /// `"local"`: traffic leaves through the host's routing.
    Local,
    /// `""`: no gateway. Upstream's constant for this mode is the empty string, so the value
    /// is written as `{"mode":""}`.
    Disabled,
}

impl L3GatewayMode {
    /// The annotation spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Local => "local",
            Self::Disabled => "",
        }
    }
}

/// One network's entry of `k8s.ovn.org/l3-gateway-config` (upstream `L3GatewayConfig`; the
/// chassis ID is the separate `node-chassis-id` annotation).
///
/// With [`L3GatewayMode::Disabled`] only the mode is written and the other fields are ignored.
/// Otherwise a readable value has a MAC address and at least one IP address; the egress
/// gateway fields are only read when `exgw_interface_id` is set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct L3GatewayConfig {
    /// `mode`.
    pub mode: L3GatewayMode,
    /// `bridge-id`: the gateway bridge, `breth0`.
    pub bridge_id: String,
    /// `interface-id`: `<bridge>_<node>`, the localnet port on `ext_<node>`.
    pub interface_id: String,
    /// `mac-address`: the bridge's MAC.
    pub mac_address: Option<MacAddress>,
    /// `ip-addresses` (and the deprecated `ip-address` when there is exactly one): the
    /// bridge's addresses with prefix lengths.
    pub ip_addresses: Vec<IpNetwork>,
    /// `exgw-interface-id`: the second (egress gateway) bridge's port, empty without one.
    pub exgw_interface_id: String,
    /// `exgw-mac-address`.
    pub exgw_mac_address: Option<MacAddress>,
    /// `exgw-ip-addresses` (and `exgw-ip-address` when there is exactly one).
    pub exgw_ip_addresses: Vec<IpNetwork>,
    /// `next-hops` (and `next-hop` when there is exactly one): the default gateways.
    pub next_hops: Vec<IpAddr>,
    /// `node-port-enable`, written `"true"` / `"false"`.
    pub node_port_enable: bool,
    /// `vlan-id` as a decimal string; `None` is not written (the node agent writes `"0"`
    /// when there is no VLAN).
    pub vlan_id: Option<u16>,
}

impl L3GatewayConfig {
    /// The entry of a node whose gateway is disabled.
    pub fn disabled() -> Self {
        Self {
            mode: L3GatewayMode::Disabled,
            ..Self::default()
        }
    }
}

/// The JSON entry in upstream's field order (`l3GatewayConfigJSON`); every field but `mode`
/// is `omitempty`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct L3GatewayConfigJson {
    #[serde(default, deserialize_with = "null_as_default")]
    mode: String,
    #[serde(
        rename = "bridge-id",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    bridge_id: String,
    #[serde(
        rename = "interface-id",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    interface_id: String,
    #[serde(
        rename = "mac-address",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    mac_address: String,
    #[serde(
        rename = "ip-addresses",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    ip_addresses: Vec<String>,
    #[serde(
        rename = "ip-address",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    ip_address: String,
    #[serde(
        rename = "exgw-interface-id",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    exgw_interface_id: String,
    #[serde(
        rename = "exgw-mac-address",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    exgw_mac_address: String,
    #[serde(
        rename = "exgw-ip-addresses",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    exgw_ip_addresses: Vec<String>,
    #[serde(
        rename = "exgw-ip-address",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    exgw_ip_address: String,
    #[serde(
        rename = "next-hops",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    next_hops: Vec<String>,
    #[serde(
        rename = "next-hop",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    next_hop: String,
    #[serde(
        rename = "node-port-enable",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    node_port_enable: String,
    #[serde(
        rename = "vlan-id",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    vlan_id: String,
}

/// The single-value form of a list: its only item, empty otherwise.
fn only(items: &[String]) -> String {
    match items {
        [one] => one.clone(),
        _ => String::new(),
    }
}

fn texts<T: ToString>(items: &[T]) -> Vec<String> {
    items.iter().map(ToString::to_string).collect()
}

impl From<&L3GatewayConfig> for L3GatewayConfigJson {
    fn from(config: &L3GatewayConfig) -> Self {
        if config.mode == L3GatewayMode::Disabled {
            return Self::default();
        }
        let ip_addresses = texts(&config.ip_addresses);
        let exgw_ip_addresses = texts(&config.exgw_ip_addresses);
        let next_hops = texts(&config.next_hops);
        Self {
            mode: config.mode.as_str().to_owned(),
            bridge_id: config.bridge_id.clone(),
            interface_id: config.interface_id.clone(),
            mac_address: config
                .mac_address
                .map(|m| m.to_string())
                .unwrap_or_default(),
            ip_address: only(&ip_addresses),
            ip_addresses,
            exgw_interface_id: config.exgw_interface_id.clone(),
            exgw_mac_address: config
                .exgw_mac_address
                .map(|m| m.to_string())
                .unwrap_or_default(),
            exgw_ip_address: only(&exgw_ip_addresses),
            exgw_ip_addresses,
            next_hop: only(&next_hops),
            next_hops,
            node_port_enable: if config.node_port_enable {
                "true"
            } else {
                "false"
            }
            .to_owned(),
            vlan_id: config.vlan_id.map(|v| v.to_string()).unwrap_or_default(),
        }
    }
}

/// Reads one entry the way upstream's `UnmarshalJSON` does, in its order of checks.
struct EntryReader<'a> {
    network: &'a str,
}

impl EntryReader<'_> {
    fn error(&self, field: &'static str, value: &str, reason: &str) -> AnnotationError {
        AnnotationError::field(
            ANNOTATION_L3_GATEWAY_CONFIG,
            format!("network {:?}", self.network),
            field,
            value,
            reason,
        )
    }

    fn mac(&self, field: &'static str, text: &str) -> Result<MacAddress, AnnotationError> {
        text.parse()
            .map_err(|_| self.error(field, text, "not a MAC address"))
    }

    /// The list, or the single-value field when the list is empty; at least one CIDR.
    fn cidrs(
        &self,
        (list_field, list): (&'static str, &[String]),
        (single_field, single): (&'static str, &str),
    ) -> Result<Vec<IpNetwork>, AnnotationError> {
        if list.is_empty() {
            return parse_cidr(single)
                .map(|cidr| vec![cidr])
                .ok_or_else(|| self.error(single_field, single, "not a CIDR"));
        }
        list.iter()
            .map(|text| parse_cidr(text).ok_or_else(|| self.error(list_field, text, "not a CIDR")))
            .collect()
    }

    fn vlan(&self, text: &str) -> Result<Option<u16>, AnnotationError> {
        if text.is_empty() {
            return Ok(None);
        }
        if !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.error("vlan-id", text, "not a decimal VLAN ID"));
        }
        match text.parse::<u16>() {
            Ok(id) if id <= MAX_VLAN_ID => Ok(Some(id)),
            _ => Err(self.error("vlan-id", text, "vlan-id surpasses maximum supported value")),
        }
    }

    fn read(&self, raw: L3GatewayConfigJson) -> Result<L3GatewayConfig, AnnotationError> {
        let mode = match raw.mode.as_str() {
            "" => return Ok(L3GatewayConfig::disabled()),
            "shared" => L3GatewayMode::Shared,
            "local" => L3GatewayMode::Local,
            other => return Err(self.error("mode", other, "bad 'mode' value")),
        };
        let vlan_id = self.vlan(&raw.vlan_id)?;
        let mac_address = Some(self.mac("mac-address", &raw.mac_address)?);
        let (exgw_mac_address, exgw_ip_addresses) = if raw.exgw_interface_id.is_empty() {
            (None, Vec::new())
        } else {
            (
                Some(self.mac("exgw-mac-address", &raw.exgw_mac_address)?),
                self.cidrs(
                    ("exgw-ip-addresses", &raw.exgw_ip_addresses),
                    ("exgw-ip-address", &raw.exgw_ip_address),
                )?,
            )
        };
        let ip_addresses = self.cidrs(
            ("ip-addresses", &raw.ip_addresses),
            ("ip-address", &raw.ip_address),
        )?;
        // Upstream reads only the list form of the next hops.
        let next_hops = raw
            .next_hops
            .iter()
            .map(|text| {
                text.parse::<IpAddr>()
                    .map_err(|_| self.error("next-hops", text, "not an IP address"))
            })
            .collect::<Result<_, _>>()?;
        Ok(L3GatewayConfig {
            mode,
            bridge_id: raw.bridge_id,
            interface_id: raw.interface_id,
            mac_address,
            ip_addresses,
            exgw_interface_id: raw.exgw_interface_id,
            exgw_mac_address,
            exgw_ip_addresses,
            next_hops,
            node_port_enable: raw.node_port_enable == "true",
            vlan_id,
        })
    }
}

/// Parses `k8s.ovn.org/l3-gateway-config` and returns the `default` entry (the one every
/// network's gateway uses). Every entry must be readable, as upstream decodes them all.
pub fn parse_l3_gateway_config(value: &str) -> Result<L3GatewayConfig, AnnotationError> {
    let raw: BTreeMap<String, serde_json::Value> = from_json(ANNOTATION_L3_GATEWAY_CONFIG, value)?;
    let mut default = None;
    for (network, entry) in raw {
        let entry = from_json_object(ANNOTATION_L3_GATEWAY_CONFIG, entry)?;
        let config = EntryReader { network: &network }.read(entry)?;
        if network == DEFAULT_NETWORK_NAME {
            default = Some(config);
        }
    }
    default.ok_or_else(|| {
        AnnotationError::invalid(ANNOTATION_L3_GATEWAY_CONFIG, "no entry for network default")
    })
}

/// Formats `k8s.ovn.org/l3-gateway-config` with `config` as the `default` entry, fields in
/// upstream's order.
pub fn format_l3_gateway_config(config: &L3GatewayConfig) -> Result<String, AnnotationError> {
    let entry = L3GatewayConfigJson::from(config);
    to_go_json(
        ANNOTATION_L3_GATEWAY_CONFIG,
        &BTreeMap::from([(DEFAULT_NETWORK_NAME, entry)]),
    )
}

/// Parses `k8s.ovn.org/node-chassis-id`: any non-empty string.
pub fn parse_node_chassis_id(value: &str) -> Result<&str, AnnotationError> {
    if value.is_empty() {
        return Err(AnnotationError::invalid(
            ANNOTATION_NODE_CHASSIS_ID,
            "empty chassis ID",
        ));
    }
    Ok(value)
}

/// A node's gateway as the NB controller needs it: the `default` gateway entry and the chassis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeL3Gateway {
    /// The `default` entry of `k8s.ovn.org/l3-gateway-config`.
    pub config: L3GatewayConfig,
    /// `k8s.ovn.org/node-chassis-id`; always set unless the mode is disabled.
    pub chassis_id: Option<String>,
}

/// Reads the gateway of a node from its annotations (upstream
/// `ParseNodeL3GatewayAnnotation`): `Ok(None)` while `l3-gateway-config` is not set; an
/// error when it is unreadable, or when the mode is shared or local and
/// `node-chassis-id` is missing or empty.
pub fn node_l3_gateway(
    annotations: &BTreeMap<String, String>,
) -> Result<Option<NodeL3Gateway>, AnnotationError> {
    let Some(value) = annotations.get(ANNOTATION_L3_GATEWAY_CONFIG) else {
        return Ok(None);
    };
    let config = parse_l3_gateway_config(value)?;
    let chassis = annotations.get(ANNOTATION_NODE_CHASSIS_ID);
    let chassis_id = match (config.mode, chassis) {
        (L3GatewayMode::Disabled, chassis) => chassis.cloned(),
        (_, Some(chassis)) => Some(parse_node_chassis_id(chassis)?.to_owned()),
        (_, None) => {
            return Err(AnnotationError::invalid(
                ANNOTATION_NODE_CHASSIS_ID,
                "not set, but the gateway mode is shared or local",
            ));
        }
    };
    Ok(Some(NodeL3Gateway { config, chassis_id }))
}

/// Parses a JSON array of strings, each item through `item`.
fn parse_list<T>(
    annotation: &'static str,
    value: &str,
    field: &'static str,
    reason: &'static str,
    item: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, AnnotationError> {
    let texts: Option<Vec<String>> = from_json(annotation, value)?;
    texts
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(index, text)| {
            item(text).ok_or_else(|| {
                AnnotationError::field(annotation, format!("entry {index}"), field, text, reason)
            })
        })
        .collect()
}

/// A Go string set as JSON: deduplicated, sorted by text.
fn format_set<T: ToString>(
    annotation: &'static str,
    items: &[T],
) -> Result<String, AnnotationError> {
    let set: BTreeSet<String> = items.iter().map(ToString::to_string).collect();
    to_go_json(annotation, &set)
}

/// Parses `k8s.ovn.org/node-encap-ips` (array order kept).
pub fn parse_node_encap_ips(value: &str) -> Result<Vec<IpAddr>, AnnotationError> {
    parse_list(
        ANNOTATION_NODE_ENCAP_IPS,
        value,
        "ip",
        "not an IP address",
        |text| text.parse().ok(),
    )
}

/// Formats `k8s.ovn.org/node-encap-ips` as a Go string set: `["172.18.0.3"]`.
pub fn format_node_encap_ips(ips: &[IpAddr]) -> Result<String, AnnotationError> {
    format_set(ANNOTATION_NODE_ENCAP_IPS, ips)
}

/// Parses `k8s.ovn.org/host-cidrs` (array order kept, host bits kept).
pub fn parse_host_cidrs(value: &str) -> Result<Vec<IpNetwork>, AnnotationError> {
    parse_list(
        ANNOTATION_HOST_CIDRS,
        value,
        "cidr",
        "not a CIDR",
        parse_cidr,
    )
}

/// Formats `k8s.ovn.org/host-cidrs` as a Go string set:
/// `["172.18.0.3/16","fc00:f853:ccd:e793::3/64"]`.
pub fn format_host_cidrs(cidrs: &[IpNetwork]) -> Result<String, AnnotationError> {
    format_set(ANNOTATION_HOST_CIDRS, cidrs)
}

/// Parses `k8s.ovn.org/node-primary-ifaddr`.
pub fn parse_node_primary_ifaddr(value: &str) -> Result<IfAddrs, AnnotationError> {
    if_addrs::parse_if_addrs(ANNOTATION_NODE_PRIMARY_IFADDR, value)
}

/// Formats `k8s.ovn.org/node-primary-ifaddr`.
pub fn format_node_primary_ifaddr(addrs: &IfAddrs) -> String {
    if_addrs::format_if_addrs(addrs)
}

/// Parses `k8s.ovn.org/node-masquerade-subnet`.
pub fn parse_node_masquerade_subnet(value: &str) -> Result<IfAddrs, AnnotationError> {
    if_addrs::parse_if_addrs(ANNOTATION_NODE_MASQUERADE_SUBNET, value)
}

/// Formats `k8s.ovn.org/node-masquerade-subnet` (the node agent writes both families of its
/// configuration, even on a single-stack cluster).
pub fn format_node_masquerade_subnet(subnets: &IfAddrs) -> String {
    if_addrs::format_if_addrs(subnets)
}

/// Reads `k8s.ovn.org/gateway-mtu-support` (the value, `None` when absent): only `"false"`
/// means unsupported.
pub fn parse_gateway_mtu_support(value: Option<&str>) -> bool {
    value != Some("false")
}

/// The `k8s.ovn.org/gateway-mtu-support` value to write: `Some("false")`, or `None` (delete
/// the annotation) when supported.
pub fn format_gateway_mtu_support(supported: bool) -> Option<&'static str> {
    (!supported).then_some("false")
}

#[cfg(test)]
mod tests;
