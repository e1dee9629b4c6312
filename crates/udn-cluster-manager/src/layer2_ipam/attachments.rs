//! Which pod-allocated networks a pod attaches to (upstream
//! `GetPodNADToNetworkMappingWithActiveNetwork`): its namespace's primary Layer2 NAD, and
//! the Layer2 / Localnet NADs it requests in `k8s.v1.cni.cncf.io/networks` (a NAD requested
//! twice gets the keys `<ns>/<nad>` and `<ns>/<nad>/1`). Pure.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use udn_api::annotations::{
    AnnotationError, NetworkSelectionElement, PodNetworkRole, parse_network_selection,
    parse_network_selection_for_pod,
};
use udn_api::ipamclaim::{ANNOTATION_DEFAULT_NETWORK, ANNOTATION_PRIMARY_UDN_IPAMCLAIM};
use udn_api::names::ANNOTATION_NETWORKS;

use super::networks::Layer2Index;

/// One attachment of a pod to a pod-allocated network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Attachment {
    /// Key in `k8s.ovn.org/pod-networks` (indexed for repeated NADs).
    pub(crate) nad_key: String,
    /// Network name.
    pub(crate) network: String,
    pub(crate) role: PodNetworkRole,
    /// The selection element (synthesized for the primary network).
    pub(crate) element: NetworkSelectionElement,
}

/// Why a pod's attachments cannot be determined (reported as a pod event).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AttachmentError {
    #[error("failed to get NAD to network mapping: {0}")]
    Selection(#[source] AnnotationError),
    #[error(
        "failed to get NAD to network mapping: unexpected primary network {network:?} specified with a NetworkSelectionElement {nad}"
    )]
    PrimaryRequested { network: String, nad: String },
    #[error("failed getting default-network annotation for pod {pod:?}: {reason}")]
    DefaultNetwork { pod: String, reason: String },
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(key))
        .map(String::as_str)
}

/// Upstream `GetIndexedNADKey`.
fn indexed_key(nad_key: &str, index: usize) -> String {
    if index == 0 {
        nad_key.to_owned()
    } else {
        format!("{nad_key}/{index}")
    }
}

/// The pod's attachments to networks in `index`, primary first.
pub(crate) fn attachments(
    pod: &Pod,
    index: &Layer2Index,
) -> Result<Vec<Attachment>, AttachmentError> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let mut out = Vec::new();
    if let Some((nad_key, nad)) = index.primary_nad(namespace) {
        let mut element = NetworkSelectionElement {
            name: nad_key.rsplit('/').next().unwrap_or_default().to_owned(),
            namespace: nad.namespace.clone(),
            ..NetworkSelectionElement::default()
        };
        if nad.info.allow_persistent_ips {
            element.ipam_claim_reference = primary_claim(pod, namespace, name)?;
        }
        out.push(Attachment {
            nad_key: nad_key.to_owned(),
            network: nad.info.name.clone(),
            role: PodNetworkRole::Primary,
            element,
        });
    }
    let Some(value) = annotation(pod, ANNOTATION_NETWORKS) else {
        return Ok(out);
    };
    let elements =
        parse_network_selection_for_pod(value, namespace).map_err(AttachmentError::Selection)?;
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for element in elements {
        let nad_key = element.nad_key(namespace);
        let Some(nad) = index.nad(&nad_key) else {
            continue;
        };
        if nad.info.primary {
            return Err(AttachmentError::PrimaryRequested {
                network: nad.info.name.clone(),
                nad: nad_key,
            });
        }
        let count = seen.entry(nad_key.clone()).or_insert(0);
        out.push(Attachment {
            nad_key: indexed_key(&nad_key, *count),
            network: nad.info.name.clone(),
            role: PodNetworkRole::Secondary,
            element,
        });
        *count += 1;
    }
    Ok(out)
}

/// The primary network's claim: the `ipam-claim-reference` of the default-network selection
/// element, else the deprecated annotation.
fn primary_claim(pod: &Pod, namespace: &str, name: &str) -> Result<String, AttachmentError> {
    let mut claim = annotation(pod, ANNOTATION_PRIMARY_UDN_IPAMCLAIM)
        .unwrap_or_default()
        .to_owned();
    if let Some(value) = annotation(pod, ANNOTATION_DEFAULT_NETWORK) {
        let error = |reason: String| AttachmentError::DefaultNetwork {
            pod: format!("{namespace}/{name}"),
            reason,
        };
        let elements = parse_network_selection(value).map_err(|e| error(e.to_string()))?;
        let [element] = elements.as_slice() else {
            return Err(error(format!(
                "expected exactly one element, found {}",
                elements.len()
            )));
        };
        if !element.ipam_claim_reference.is_empty() {
            claim.clone_from(&element.ipam_claim_reference);
        }
    }
    Ok(claim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use udn_api::cluster::ClusterConfig;
    use udn_api::nad::NetworkAttachmentDefinition;

    use crate::layer2_ipam::networks::layer2_nad;

    fn index(nads: &[(&str, &str, &str, &str, bool)]) -> Layer2Index {
        let mut index = Layer2Index::default();
        for (ns, name, network, role, persistent) in nads {
            let config = format!(
                r#"{{"cniVersion":"1.1.0","name":"{network}","type":"ovn-k8s-cni-overlay","netAttachDefName":"{ns}/{name}","role":"{role}","topology":"layer2","subnets":"10.0.0.0/24","allowPersistentIPs":{persistent}}}"#
            );
            let nad: NetworkAttachmentDefinition = serde_json::from_value(json!({
                "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": name, "namespace": ns}, "spec": {"config": config},
            }))
            .unwrap();
            let entry = layer2_nad(&nad, &ClusterConfig::default()).unwrap();
            index.apply(&format!("{ns}/{name}"), entry);
        }
        index
    }

    fn pod(annotations: serde_json::Value) -> Pod {
        serde_json::from_value(udn_test_support::pod_with_annotations(
            "ns",
            "p",
            Some("n1"),
            annotations,
        ))
        .unwrap()
    }

    #[test]
    fn primary_then_secondary_with_indexed_keys() {
        let index = index(&[
            ("ns", "prim", "ns_prim", "primary", false),
            ("ns", "sec", "ns_sec", "secondary", false),
            ("other", "shared", "cluster_udn_shared", "secondary", false),
        ]);
        let pod = pod(json!({"k8s.v1.cni.cncf.io/networks": "sec,sec@eth9,other/shared,unknown"}));
        let found = attachments(&pod, &index).unwrap();
        let keys: Vec<(&str, &str, PodNetworkRole)> = found
            .iter()
            .map(|a| (a.nad_key.as_str(), a.network.as_str(), a.role))
            .collect();
        assert_eq!(
            keys,
            [
                ("ns/prim", "ns_prim", PodNetworkRole::Primary),
                ("ns/sec", "ns_sec", PodNetworkRole::Secondary),
                ("ns/sec/1", "ns_sec", PodNetworkRole::Secondary),
                (
                    "other/shared",
                    "cluster_udn_shared",
                    PodNetworkRole::Secondary
                ),
            ]
        );
        assert_eq!(found[2].element.interface, "eth9");
    }

    #[test]
    fn requesting_the_primary_network_is_an_error() {
        let index = index(&[("ns", "prim", "ns_prim", "primary", false)]);
        let pod = pod(json!({"k8s.v1.cni.cncf.io/networks": "prim"}));
        assert_eq!(
            attachments(&pod, &index).unwrap_err().to_string(),
            r#"failed to get NAD to network mapping: unexpected primary network "ns_prim" specified with a NetworkSelectionElement ns/prim"#
        );
    }

    #[test]
    fn primary_claim_from_default_network_element_or_deprecated_annotation() {
        let index = index(&[("ns", "prim", "ns_prim", "primary", true)]);
        let with_element = pod(json!({
            "v1.multus-cni.io/default-network": r#"[{"name":"default","namespace":"ovn-kubernetes","ipam-claim-reference":"vm-a.eth0"}]"#,
            "k8s.ovn.org/primary-udn-ipamclaim": "old",
        }));
        let found = attachments(&with_element, &index).unwrap();
        assert_eq!(found[0].element.ipam_claim_reference, "vm-a.eth0");
        let deprecated = pod(json!({"k8s.ovn.org/primary-udn-ipamclaim": "old"}));
        assert_eq!(
            attachments(&deprecated, &index).unwrap()[0]
                .element
                .ipam_claim_reference,
            "old"
        );
        let plain = index_without_persistence();
        assert_eq!(
            attachments(&deprecated, &plain).unwrap()[0]
                .element
                .ipam_claim_reference,
            ""
        );
    }

    fn index_without_persistence() -> Layer2Index {
        index(&[("ns", "prim", "ns_prim", "primary", false)])
    }

    #[test]
    fn bad_selection_annotation_is_reported() {
        let index = index(&[("ns", "sec", "ns_sec", "secondary", false)]);
        let pod = pod(json!({"k8s.v1.cni.cncf.io/networks": "[{"}));
        assert!(matches!(
            attachments(&pod, &index),
            Err(AttachmentError::Selection(_))
        ));
    }
}
