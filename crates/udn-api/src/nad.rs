//! `NetworkAttachmentDefinition` (`k8s.cni.cncf.io/v1`), as Multus defines it.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    shortname = "net-attach-def",
    namespaced
)]
pub struct NetworkAttachmentDefinitionSpec {
    /// The CNI configuration (JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
}
