//! Typed parse/format of the annotations udn reads and writes, byte-compatible with what
//! OVN-Kubernetes and Multus write.
//!
//! One file per annotation:
//! - [`pod_networks`]: `k8s.ovn.org/pod-networks` (pod IPs, MAC, routes per NAD key).
//! - [`node_subnets`]: `k8s.ovn.org/node-subnets` (per-network node host subnets).
//! - [`node_ids`]: what cluster-manager writes per node: `k8s.ovn.org/node-id`,
//!   `k8s.ovn.org/node-transit-switch-port-ifaddr` and the legacy Layer2 gateway router tunnel
//!   IDs.
//! - [`node_gateway`]: what the node agent writes: `k8s.ovn.org/l3-gateway-config`,
//!   `node-chassis-id`, `node-encap-ips`, `host-cidrs`, `node-primary-ifaddr`,
//!   `node-masquerade-subnet`, `gateway-mtu-support`.
//! - [`if_addrs`]: the `{"ipv4":…,"ipv6":…}` object several node annotations share.
//! - [`network_id`]: the NAD annotations `k8s.ovn.org/network-id`, `network-name`,
//!   `tunnel-keys`, and the legacy node annotation `k8s.ovn.org/network-ids`.
//! - [`network_status`]: Multus `k8s.v1.cni.cncf.io/network-status`.
//! - [`network_selection`]: `k8s.v1.cni.cncf.io/networks` (JSON and text syntaxes).
//! - [`open_default_ports`]: `k8s.ovn.org/open-default-ports` (YAML/JSON list).
//!
//! JSON is written the way Go's `encoding/json` writes it: struct fields in declaration
//! order, map keys sorted, and `<`, `>`, `&`, U+2028, U+2029 escaped as `\u....`.

pub mod if_addrs;
pub mod mac_address;
pub mod network_id;
mod network_map;
pub mod network_selection;
pub mod network_status;
pub mod node_gateway;
pub mod node_ids;
pub mod node_subnets;
pub mod open_default_ports;
pub mod pod_networks;

pub use if_addrs::IfAddrs;
pub use mac_address::{MacAddress, MacAddressParseError};
pub use network_id::{
    NadNetworkAnnotations, NodeNetworkIds, format_network_id, format_node_network_ids,
    format_tunnel_keys, parse_network_id, parse_node_network_ids, parse_tunnel_keys,
    remove_node_network_id, set_node_network_id,
};
pub use network_selection::{
    BandwidthEntry, NetworkSelectionElement, PortMapEntry, format_network_selection,
    parse_network_selection, parse_network_selection_for_pod,
};
pub use network_status::{
    DeviceInfo, MemifDevice, NetworkStatus, NetworkStatusDns, PciDevice, VdpaDevice, VhostDevice,
    format_network_status, parse_network_status,
};
pub use node_gateway::{
    L3GatewayConfig, L3GatewayMode, MAX_VLAN_ID, NodeL3Gateway, format_gateway_mtu_support,
    format_host_cidrs, format_l3_gateway_config, format_node_encap_ips,
    format_node_masquerade_subnet, format_node_primary_ifaddr, node_l3_gateway,
    parse_gateway_mtu_support, parse_host_cidrs, parse_l3_gateway_config, parse_node_chassis_id,
    parse_node_encap_ips, parse_node_masquerade_subnet, parse_node_primary_ifaddr,
};
pub use node_ids::{
    NodeLayer2TunnelIds, format_node_id, format_node_layer2_tunnel_ids,
    format_node_transit_switch_port_ifaddr, parse_node_id, parse_node_layer2_tunnel_ids,
    parse_node_transit_switch_port_ifaddr,
};
pub use node_subnets::{
    NodeSubnets, format_node_subnets, parse_node_subnets, remove_node_subnets, set_node_subnets,
};
pub use open_default_ports::{OpenPort, format_open_default_ports, parse_open_default_ports};
pub use pod_networks::{
    PodNetworkAnnotation, PodNetworkRole, PodNetworks, PodRoute, format_pod_networks,
    parse_pod_networks, update_pod_networks,
};

use serde::{Deserialize, Deserializer, Serialize};

/// Why an annotation value could not be parsed or formatted. Every variant names the
/// annotation key; field-level variants also name the entry (NAD key, network, list index or
/// selection item) and the field.
#[derive(Debug, thiserror::Error)]
pub enum AnnotationError {
    /// The value is not JSON, or not JSON of the expected shape.
    #[error("annotation {annotation}: value is not JSON of the expected shape")]
    Json {
        /// Annotation key.
        annotation: &'static str,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// The value is not YAML, or not YAML of the expected shape.
    #[error("annotation {annotation}: value is not YAML of the expected shape")]
    Yaml {
        /// Annotation key.
        annotation: &'static str,
        /// The decoder's error.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// The value as a whole is invalid (for example an empty object where entries are required).
    #[error("annotation {annotation}: {reason}")]
    Invalid {
        /// Annotation key.
        annotation: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// One field of one entry is invalid.
    #[error("annotation {annotation}: {entry}: field {field} {value:?}: {reason}")]
    Field {
        /// Annotation key.
        annotation: &'static str,
        /// Which entry: `NAD key "ns/nad"`, `network "blue"`, `entry 2`, `item "a/b/c"`.
        entry: String,
        /// Field name as written in the annotation.
        field: &'static str,
        /// The offending value as written (empty when absent).
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Encoding the typed value as JSON failed.
    #[error("annotation {annotation}: cannot encode value as JSON")]
    Encode {
        /// Annotation key.
        annotation: &'static str,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
}

impl AnnotationError {
    /// The annotation key this error is about.
    pub fn annotation(&self) -> &'static str {
        match self {
            Self::Json { annotation, .. }
            | Self::Yaml { annotation, .. }
            | Self::Invalid { annotation, .. }
            | Self::Field { annotation, .. }
            | Self::Encode { annotation, .. } => annotation,
        }
    }

    pub(crate) fn invalid(annotation: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            annotation,
            reason: reason.into(),
        }
    }

    pub(crate) fn field(
        annotation: &'static str,
        entry: String,
        field: &'static str,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::Field {
            annotation,
            entry,
            field,
            value: value.into(),
            reason: reason.into(),
        }
    }
}

/// Decodes JSON text into `T`, mapping the error to [`AnnotationError::Json`].
pub(crate) fn from_json<'a, T: Deserialize<'a>>(
    annotation: &'static str,
    value: &'a str,
) -> Result<T, AnnotationError> {
    serde_json::from_str(value).map_err(|source| AnnotationError::Json { annotation, source })
}

/// Decodes a JSON object into `T`. serde also reads structs from JSON arrays, which Go's
/// decoder refuses, so anything but an object is an [`AnnotationError::Invalid`].
pub(crate) fn from_json_object<T: serde::de::DeserializeOwned>(
    annotation: &'static str,
    value: serde_json::Value,
) -> Result<T, AnnotationError> {
    if !value.is_object() {
        return Err(AnnotationError::invalid(
            annotation,
            "value is not a JSON object",
        ));
    }
    serde_json::from_value(value).map_err(|source| AnnotationError::Json { annotation, source })
}

/// Encodes `value` as compact JSON the way Go's `json.Marshal` does.
pub(crate) fn to_go_json<T: Serialize + ?Sized>(
    annotation: &'static str,
    value: &T,
) -> Result<String, AnnotationError> {
    serde_json::to_string(value)
        .map(go_escape)
        .map_err(|source| AnnotationError::Encode { annotation, source })
}

/// Encodes `value` the way Go's `json.MarshalIndent(value, "", "    ")` does.
pub(crate) fn to_go_json_indented<T: Serialize + ?Sized>(
    annotation: &'static str,
    value: &T,
) -> Result<String, AnnotationError> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value
        .serialize(&mut serializer)
        .map_err(|source| AnnotationError::Encode { annotation, source })?;
    // serde_json only ever writes UTF-8.
    Ok(go_escape(String::from_utf8_lossy(&out).into_owned()))
}

/// Applies Go's HTML-safe escaping to JSON text. These characters can only occur inside JSON
/// strings, so replacing them in the whole text is exact.
fn go_escape(json: String) -> String {
    if !json.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Deserializes JSON `null` as `T::default()`, as Go's decoder does for slices, strings,
/// numbers and booleans.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Parses a CIDR the way Go's `net.ParseCIDR` accepts it: an IP address, one `/`, and a
/// decimal prefix length within the address family. Keeps the host bits.
pub(crate) fn parse_cidr(text: &str) -> Option<ipnetwork::IpNetwork> {
    let (addr, prefix) = text.split_once('/')?;
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let addr: std::net::IpAddr = addr.parse().ok()?;
    let prefix: u8 = prefix.parse().ok()?;
    ipnetwork::IpNetwork::new(addr, prefix).ok()
}

/// The network of a CIDR with the host bits cleared (Go's `IPNet` from `net.ParseCIDR`).
pub(crate) fn masked(cidr: ipnetwork::IpNetwork) -> ipnetwork::IpNetwork {
    ipnetwork::IpNetwork::new(cidr.network(), cidr.prefix()).unwrap_or(cidr)
}

#[cfg(test)]
pub(crate) mod test_strategies;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_is_send_sync_static() {
        fn assert_bounds<T: std::error::Error + Send + Sync + 'static>() {}
        assert_bounds::<AnnotationError>();
    }

    #[test]
    fn go_escape_matches_go_html_escaping() {
        assert_eq!(
            go_escape(r#"{"a<b>&c":"\u2028x"}"#.replace("\\u2028", "\u{2028}")),
            r#"{"a\u003cb\u003e\u0026c":"\u2028x"}"#
        );
        assert_eq!(go_escape("[1,2]".to_owned()), "[1,2]");
    }

    #[test]
    fn parse_cidr_follows_go_rules() {
        assert_eq!(
            parse_cidr("10.244.0.6/24").map(|c| c.to_string()),
            Some("10.244.0.6/24".to_owned())
        );
        assert_eq!(
            parse_cidr("fd00::1/064").map(|c| c.to_string()),
            Some("fd00::1/64".to_owned())
        );
        for bad in [
            "10.0.0.1",
            "10.0.0.1/",
            "10.0.0.1/+8",
            "10.0.0.1/33",
            "10.0.0.1/255.0.0.0",
            "10.0.0./24",
            "fd00::/129",
            "fe80::1%eth0/64",
            "/24",
        ] {
            assert_eq!(parse_cidr(bad), None, "{bad}");
        }
    }

    #[test]
    fn masked_clears_host_bits() {
        let cidr = parse_cidr("10.1.1.5/16").unwrap();
        assert_eq!(masked(cidr).to_string(), "10.1.0.0/16");
    }

    #[test]
    fn error_display_names_annotation_entry_and_field() {
        let err = AnnotationError::field(
            crate::names::ANNOTATION_POD_NETWORKS,
            "NAD key \"ns/nad\"".to_owned(),
            "mac_address",
            "zz",
            "not a MAC address",
        );
        assert_eq!(
            err.to_string(),
            "annotation k8s.ovn.org/pod-networks: NAD key \"ns/nad\": field mac_address \"zz\": not a MAC address"
        );
        assert_eq!(err.annotation(), "k8s.ovn.org/pod-networks");
    }
}
