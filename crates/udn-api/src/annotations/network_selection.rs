//! `k8s.v1.cni.cncf.io/networks`: the secondary attachments a pod requests
//! (network-attachment-definition-client `NetworkSelectionElement` / `ParseNetworkAnnotation`).
//!
//! Two syntaxes, chosen as upstream does: a value containing any of `[`, `{`, `"` is a JSON
//! array of selection elements; anything else is a comma-separated list of
//! `[<namespace>/]<name>[@<interface>]` items, with any whitespace around items and parts.
//! Each non-empty text part must be a DNS-1123 label, as upstream requires.
//!
//! Deliberate differences from upstream's parser (its bugs, see the secondary-services study):
//! an empty or whitespace-only value is "no networks" (OVN-Kubernetes already treats a missing
//! annotation so), and an empty item or name (`foo,`, `ns/`), an empty interface after `@`
//! (`foo@`), a JSON element with an empty `name`, or a JSON `null` element are errors instead
//! of producing unusable selections.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize, Serializer};

use super::{AnnotationError, from_json, null_as_default, to_go_json};
use crate::names::ANNOTATION_NETWORKS;

/// One requested attachment. Empty strings / lists mean "not given" and are not written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkSelectionElement {
    /// NAD name (required).
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// NAD namespace; empty means the pod's namespace.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub namespace: String,
    /// Requested IPs (IP or CIDR text, as written).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub ips: Vec<String>,
    /// Requested MAC, as written.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub mac: String,
    /// Requested InfiniBand GUID.
    #[serde(
        rename = "infiniband-guid",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub infiniband_guid: String,
    /// Requested interface name in the pod.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub interface: String,
    /// Requested port mappings.
    #[serde(
        rename = "portMappings",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub port_mappings: Vec<PortMapEntry>,
    /// Requested bandwidth limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<BandwidthEntry>,
    /// Extra CNI arguments (free-form; written with object keys sorted, as Go does).
    #[serde(
        rename = "cni-args",
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_sorted"
    )]
    pub cni_args: Option<BTreeMap<String, serde_json::Value>>,
    /// Requested default-route gateways (this attachment takes the pod's default route).
    #[serde(
        rename = "default-route",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub default_route: Vec<IpAddr>,
    /// Name of the IPAMClaim holding this attachment's persistent IPs.
    #[serde(
        rename = "ipam-claim-reference",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub ipam_claim_reference: String,
}

/// A requested port mapping (`portMappings` element).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortMapEntry {
    /// Host port.
    #[serde(rename = "hostPort", default, deserialize_with = "null_as_default")]
    pub host_port: i64,
    /// Container port.
    #[serde(
        rename = "containerPort",
        default,
        deserialize_with = "null_as_default"
    )]
    pub container_port: i64,
    /// Protocol; empty = not written.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub protocol: String,
    /// Host IP; empty = not written.
    #[serde(
        rename = "hostIP",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub host_ip: String,
}

/// Requested bandwidth limits (`bandwidth`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BandwidthEntry {
    /// `ingressRate`.
    #[serde(rename = "ingressRate", default, deserialize_with = "null_as_default")]
    pub ingress_rate: i64,
    /// `ingressBurst`.
    #[serde(rename = "ingressBurst", default, deserialize_with = "null_as_default")]
    pub ingress_burst: i64,
    /// `egressRate`.
    #[serde(rename = "egressRate", default, deserialize_with = "null_as_default")]
    pub egress_rate: i64,
    /// `egressBurst`.
    #[serde(rename = "egressBurst", default, deserialize_with = "null_as_default")]
    pub egress_burst: i64,
}

impl NetworkSelectionElement {
    /// The NAD namespace, defaulting to the pod's namespace.
    pub fn namespace_or<'a>(&'a self, pod_namespace: &'a str) -> &'a str {
        if self.namespace.is_empty() {
            pod_namespace
        } else {
            &self.namespace
        }
    }

    /// The NAD key `<namespace>/<name>`, defaulting the namespace to the pod's.
    pub fn nad_key(&self, pod_namespace: &str) -> String {
        crate::names::nad_key(self.namespace_or(pod_namespace), &self.name)
    }
}

fn serialize_sorted<S: Serializer>(
    args: &Option<BTreeMap<String, serde_json::Value>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    args.as_ref()
        .map(|map| {
            map.iter()
                .map(|(key, value)| (key, sorted(value)))
                .collect::<BTreeMap<_, _>>()
        })
        .serialize(serializer)
}

/// A copy of `value` with every object's keys in sorted order (Go marshals maps sorted).
fn sorted(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let ordered: BTreeMap<&String, serde_json::Value> =
                map.iter().map(|(k, v)| (k, sorted(v))).collect();
            serde_json::Value::Object(ordered.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(sorted).collect())
        }
        other => other.clone(),
    }
}

/// Parses the annotation value (either syntax). Namespaces that are not given stay empty; see
/// [`parse_network_selection_for_pod`] to default them.
pub fn parse_network_selection(
    value: &str,
) -> Result<Vec<NetworkSelectionElement>, AnnotationError> {
    if value.contains(['[', '{', '"']) {
        return parse_json(value);
    }
    if value.trim().is_empty() {
        return Ok(Vec::new());
    }
    value.split(',').map(parse_text_item).collect()
}

/// Parses the annotation value and sets every missing namespace to `pod_namespace`.
pub fn parse_network_selection_for_pod(
    value: &str,
    pod_namespace: &str,
) -> Result<Vec<NetworkSelectionElement>, AnnotationError> {
    let mut elements = parse_network_selection(value)?;
    for element in &mut elements {
        if element.namespace.is_empty() {
            pod_namespace.clone_into(&mut element.namespace);
        }
    }
    Ok(elements)
}

/// Formats the elements as the JSON syntax, as Go's `json.Marshal` writes it.
pub fn format_network_selection(
    elements: &[NetworkSelectionElement],
) -> Result<String, AnnotationError> {
    to_go_json(ANNOTATION_NETWORKS, elements)
}

fn parse_json(value: &str) -> Result<Vec<NetworkSelectionElement>, AnnotationError> {
    let elements: Vec<NetworkSelectionElement> = from_json(ANNOTATION_NETWORKS, value)?;
    if let Some(index) = elements.iter().position(|e| e.name.is_empty()) {
        return Err(AnnotationError::field(
            ANNOTATION_NETWORKS,
            format!("element {index}"),
            "name",
            "",
            "empty network name",
        ));
    }
    Ok(elements)
}

fn parse_text_item(item: &str) -> Result<NetworkSelectionElement, AnnotationError> {
    let trimmed = item.trim();
    let error = |field: &'static str, value: &str, reason: &str| {
        AnnotationError::field(
            ANNOTATION_NETWORKS,
            format!("item {trimmed:?}"),
            field,
            value,
            reason,
        )
    };
    let mut slash_parts = trimmed.split('/');
    let (namespace, rest) = match (slash_parts.next(), slash_parts.next(), slash_parts.next()) {
        (Some(name), None, _) => ("", name),
        (Some(namespace), Some(name), None) => (namespace.trim(), name),
        _ => return Err(error("item", trimmed, "more than one '/'")),
    };
    let mut at_parts = rest.split('@');
    let (name, interface) = match (at_parts.next(), at_parts.next(), at_parts.next()) {
        (Some(name), None, _) => (name.trim(), None),
        (Some(name), Some(interface), None) => (name.trim(), Some(interface.trim())),
        _ => return Err(error("item", trimmed, "more than one '@'")),
    };
    if name.is_empty() {
        return Err(error("name", name, "empty network name"));
    }
    if interface == Some("") {
        return Err(error("interface", "", "empty interface name after '@'"));
    }
    let interface = interface.unwrap_or_default();
    for (field, part) in [
        ("namespace", namespace),
        ("name", name),
        ("interface", interface),
    ] {
        if !part.is_empty() && !is_dns_label(part) {
            return Err(error(
                field,
                part,
                "must consist of lower case alphanumeric characters or '-', \
                 and start and end with an alphanumeric character",
            ));
        }
    }
    Ok(NetworkSelectionElement {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        interface: interface.to_owned(),
        ..NetworkSelectionElement::default()
    })
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$` (no length limit, as upstream).
fn is_dns_label(text: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = text.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            alnum(first) && alnum(last) && bytes.iter().all(|&b| alnum(b) || b == b'-')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
