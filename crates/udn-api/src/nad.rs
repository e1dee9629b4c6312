//! `NetworkAttachmentDefinition` (`k8s.cni.cncf.io/v1`), as Multus defines it, and its CRD.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::crd::structural;

/// Spec of a `NetworkAttachmentDefinition`: a CNI configuration as a JSON string.
#[derive(
    CustomResource, JsonSchema, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize,
)]
#[kube(
    group = "k8s.cni.cncf.io",
    version = "v1",
    kind = "NetworkAttachmentDefinition",
    plural = "network-attachment-definitions",
    singular = "network-attachment-definition",
    shortname = "nad",
    shortname = "net-attach-def",
    namespaced,
    doc = "The Network Plumbing Working Group's request to attach pods to a logical or physical network."
)]
pub struct NetworkAttachmentDefinitionSpec {
    /// The CNI configuration, JSON-formatted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
}

/// The `network-attachment-definitions.k8s.cni.cncf.io` CRD in the shape Multus ships it
/// (`deployments/multus-daemonset.yml`): `spec.config` a string, nothing required.
pub fn network_attachment_definition_crd() -> CustomResourceDefinition {
    let mut crd = NetworkAttachmentDefinition::crd();
    structural::tidy(&mut crd);
    for version in &mut crd.spec.versions {
        if let Some(root) = version
            .schema
            .as_mut()
            .and_then(|validation| validation.open_api_v3_schema.as_mut())
        {
            root.required = None;
        }
    }
    crd
}
