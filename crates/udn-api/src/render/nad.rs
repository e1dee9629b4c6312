//! The NAD object: metadata from the owner (labels, filtered annotations, finalizer,
//! controller owner reference) around the rendered config.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::config::render_netconf;
use super::config_json::cni_config_json;
use super::error::RenderError;
use super::source::NetworkSource;
use crate::cluster::ClusterConfig;
use crate::nad::{NetworkAttachmentDefinition, NetworkAttachmentDefinitionSpec};
use crate::names::{FINALIZER_UDN_PROTECTION, LABEL_USER_DEFINED_NETWORK, OVN_ANNOTATION_PREFIX};

/// API version of the owner reference.
const OWNER_API_VERSION: &str = "k8s.ovn.org/v1";

/// Render the NAD of `source` (upstream `RenderNetAttachDefManifest`): name = owner name,
/// namespace = target namespace, labels, annotations, finalizer, controller owner
/// reference and the CNI config.
pub fn render_nad(
    source: &NetworkSource<'_>,
    cluster: &ClusterConfig,
) -> Result<NetworkAttachmentDefinition, RenderError> {
    let conf = render_netconf(source, cluster)?;
    let meta = source.meta();
    let mut nad = NetworkAttachmentDefinition::new(
        source.name(),
        NetworkAttachmentDefinitionSpec {
            config: Some(cni_config_json(&conf)),
        },
    );
    nad.metadata = ObjectMeta {
        name: Some(source.name().to_owned()),
        namespace: Some(source.namespace().to_owned()),
        labels: Some(nad_labels(meta)),
        annotations: nad_annotations(meta),
        finalizers: Some(vec![FINALIZER_UDN_PROTECTION.to_owned()]),
        owner_references: Some(vec![owner_reference(source)]),
        ..ObjectMeta::default()
    };
    Ok(nad)
}

/// `k8s.ovn.org/user-defined-network: ""` plus every owner label (owner labels win).
pub fn nad_labels(owner: &ObjectMeta) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([(LABEL_USER_DEFINED_NETWORK.to_owned(), String::new())]);
    if let Some(owner_labels) = &owner.labels {
        labels.extend(owner_labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    labels
}

/// The owner's annotations without keys starting with `k8s.ovn.org`; `None` if empty.
pub fn nad_annotations(owner: &ObjectMeta) -> Option<BTreeMap<String, String>> {
    let annotations: BTreeMap<String, String> = owner
        .annotations
        .iter()
        .flatten()
        .filter(|(key, _)| !key.starts_with(OVN_ANNOTATION_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (!annotations.is_empty()).then_some(annotations)
}

/// The controller owner reference of the NAD (`metav1.NewControllerRef`).
pub fn owner_reference(source: &NetworkSource<'_>) -> OwnerReference {
    OwnerReference {
        api_version: OWNER_API_VERSION.to_owned(),
        kind: source.kind().to_owned(),
        name: source.name().to_owned(),
        uid: source.meta().uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}
