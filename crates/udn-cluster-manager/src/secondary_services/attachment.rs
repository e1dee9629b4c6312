//! A pod's IPs on one network, from its Multus network-status annotation.
//!
//! - The key: `k8s.v1.cni.cncf.io/network-status`, else the legacy
//!   `k8s.v1.cni.cncf.io/networks-status` (older Multus; the same content). The first key
//!   present decides: an unparsable value makes the pod unreadable, it does not fall back.
//! - The entry: the **first** one whose `name` is the NAD's `ns/name`, or its bare `name`
//!   (Multus before 2020) when the pod is in the NAD's namespace; with an interface pinned
//!   by the selection (`br0@net1`), the first such entry on that interface. A NAD attached
//!   twice thus contributes its first attachment: one endpoint is one pod interface.
//! - The IPs: every IP of that entry, an `ip/prefix` written as its address, IPv4-mapped
//!   IPv6 as IPv4, duplicates dropped, in the annotation's order.

use std::net::IpAddr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use udn_api::annotations::network_status::{NetworkStatus, parse_network_status};
use udn_api::names::ANNOTATION_NETWORK_STATUS;

use super::{ANNOTATION_NETWORKS_STATUS_LEGACY, error_chain};

/// A network a Service serves: a NAD, and optionally the pod interface to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Network {
    /// The NAD's namespace.
    pub(crate) namespace: String,
    /// The NAD's name.
    pub(crate) name: String,
    /// Only the attachment on this pod interface (`name@if` in a selection).
    pub(crate) interface: Option<String>,
}

impl Network {
    /// `ns/name`.
    pub(crate) fn key(&self) -> String {
        udn_api::names::nad_key(&self.namespace, &self.name)
    }

    fn matches(&self, status: &NetworkStatus, pod_namespace: &str) -> bool {
        let named = status.name == self.key()
            || (status.name == self.name && pod_namespace == self.namespace);
        named
            && self
                .interface
                .as_ref()
                .is_none_or(|interface| *interface == status.interface)
    }
}

/// Why a pod's network-status cannot be used (the pod is left out; the others are not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unreadable {
    /// The annotation key read.
    pub(crate) annotation: &'static str,
    /// What is wrong.
    pub(crate) reason: String,
}

/// The pod's IPs on `network`: `Ok(None)` when it has no status yet or is not attached
/// (or the entry lists no IP).
pub(crate) fn pod_ips(
    pod: &ObjectMeta,
    network: &Network,
) -> Result<Option<Vec<IpAddr>>, Unreadable> {
    let Some(annotations) = pod.annotations.as_ref() else {
        return Ok(None);
    };
    let Some((annotation, value)) = [ANNOTATION_NETWORK_STATUS, ANNOTATION_NETWORKS_STATUS_LEGACY]
        .into_iter()
        .find_map(|key| annotations.get(key).map(|value| (key, value)))
    else {
        return Ok(None);
    };
    let statuses = parse_network_status(value).map_err(|error| Unreadable {
        annotation,
        reason: error_chain(&error),
    })?;
    let pod_namespace = pod.namespace.as_deref().unwrap_or_default();
    let Some(entry) = statuses.iter().find(|s| network.matches(s, pod_namespace)) else {
        return Ok(None);
    };
    let mut ips: Vec<IpAddr> = Vec::new();
    for text in &entry.ips {
        let address = text.split_once('/').map_or(text.as_str(), |(ip, _)| ip);
        let ip = address
            .trim()
            .parse::<IpAddr>()
            .map_err(|_| Unreadable {
                annotation,
                reason: format!(
                    "network {:?} interface {:?}: {text:?} is not an IP address",
                    entry.name, entry.interface
                ),
            })?
            .to_canonical();
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    Ok((!ips.is_empty()).then_some(ips))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn pod(namespace: &str, annotations: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            namespace: Some(namespace.to_owned()),
            name: Some("p".to_owned()),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..ObjectMeta::default()
        }
    }

    fn network(namespace: &str, name: &str, interface: Option<&str>) -> Network {
        Network {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            interface: interface.map(str::to_owned),
        }
    }

    fn ips(list: &[&str]) -> Option<Vec<IpAddr>> {
        Some(list.iter().map(|ip| ip.parse().unwrap()).collect())
    }

    /// Seed 002's pods: the default network first, then the macvlan attachment.
    const CURRENT: &str = r#"[
        {"name": "kindnet", "interface": "eth0", "ips": ["10.244.1.5"], "default": true},
        {"name": "default/macvlan", "interface": "net1", "ips": ["192.168.2.4"], "mac": "aa:bb:cc:dd:ee:ff"}
    ]"#;

    #[test]
    fn the_current_key_and_namespaced_names() {
        let meta = pod("default", &[(ANNOTATION_NETWORK_STATUS, CURRENT)]);
        let macvlan = network("default", "macvlan", None);
        assert_eq!(pod_ips(&meta, &macvlan), Ok(ips(&["192.168.2.4"])));
        // Another namespace's NAD of the same name is another network.
        assert_eq!(pod_ips(&meta, &network("other", "macvlan", None)), Ok(None));
        assert_eq!(pod_ips(&meta, &network("default", "br0", None)), Ok(None));
    }

    #[test]
    fn the_legacy_key_and_bare_names_in_the_nads_namespace() {
        // Seed 003's pods (2019 Multus): the plural key, the bare NAD name.
        let status = r#"[{"name": "br0", "interface": "net1", "ips": ["192.168.0.51"]}]"#;
        let meta = pod("default", &[(ANNOTATION_NETWORKS_STATUS_LEGACY, status)]);
        assert_eq!(
            pod_ips(&meta, &network("default", "br0", None)),
            Ok(ips(&["192.168.0.51"]))
        );
        // A bare name only means the pod's own namespace.
        let elsewhere = pod("other", &[(ANNOTATION_NETWORKS_STATUS_LEGACY, status)]);
        assert_eq!(
            pod_ips(&elsewhere, &network("default", "br0", None)),
            Ok(None)
        );
        // The current key wins when both are there.
        let both = pod(
            "default",
            &[
                (ANNOTATION_NETWORKS_STATUS_LEGACY, status),
                (ANNOTATION_NETWORK_STATUS, "[]"),
            ],
        );
        assert_eq!(pod_ips(&both, &network("default", "br0", None)), Ok(None));
    }

    #[test]
    fn first_matching_entry_canonical_ips_and_pinned_interfaces() {
        let status = r#"[
            {"name": "default/br0", "interface": "net1", "ips": ["192.168.0.5/24", "fd00::5", "fd00:0::5", "::ffff:192.168.0.6"]},
            {"name": "default/br0", "interface": "net2", "ips": ["192.168.1.5"]}
        ]"#;
        let meta = pod("default", &[(ANNOTATION_NETWORK_STATUS, status)]);
        assert_eq!(
            pod_ips(&meta, &network("default", "br0", None)),
            Ok(ips(&["192.168.0.5", "fd00::5", "192.168.0.6"]))
        );
        assert_eq!(
            pod_ips(&meta, &network("default", "br0", Some("net2"))),
            Ok(ips(&["192.168.1.5"]))
        );
        assert_eq!(
            pod_ips(&meta, &network("default", "br0", Some("net3"))),
            Ok(None)
        );
    }

    #[test]
    fn unreadable_statuses_name_the_key_and_missing_ones_are_not_errors() {
        let bad = pod(
            "default",
            &[(ANNOTATION_NETWORKS_STATUS_LEGACY, "{not json")],
        );
        let error = pod_ips(&bad, &network("default", "br0", None)).unwrap_err();
        assert_eq!(error.annotation, ANNOTATION_NETWORKS_STATUS_LEGACY);
        let bad_ip = pod(
            "default",
            &[(
                ANNOTATION_NETWORK_STATUS,
                r#"[{"name": "br0", "ips": ["nope"]}]"#,
            )],
        );
        let error = pod_ips(&bad_ip, &network("default", "br0", None)).unwrap_err();
        assert!(error.reason.contains("nope"), "{error:?}");
        assert_eq!(
            pod_ips(&pod("default", &[]), &network("default", "br0", None)),
            Ok(None)
        );
        let no_ips = pod(
            "default",
            &[(
                ANNOTATION_NETWORK_STATUS,
                r#"[{"name": "default/br0", "ips": []}]"#,
            )],
        );
        assert_eq!(pod_ips(&no_ips, &network("default", "br0", None)), Ok(None));
    }
}
