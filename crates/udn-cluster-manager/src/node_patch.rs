//! The one way the cluster-manager writes node annotations: a strategic-merge patch that
//! sets (or, with `null`, deletes) only the given keys, optionally guarded by the node's
//! resourceVersion.
//!
//! As upstream (`kube.SetAnnotationsOnNode`, `PatchNodeStatusAnnotations`), the patch goes
//! to the `nodes/status` subresource, whose strategy keeps metadata changes, so the
//! cluster-manager's RBAC needs only `patch` on `nodes/status`, as upstream's.

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Map, Value, json};

use crate::context::CLUSTER_MANAGER;

/// Patches the annotations `changes` of node `name` (`None` deletes the key); with
/// `resource_version` the write fails with 409 Conflict when the node changed since.
pub(crate) async fn patch_node_annotations(
    api: &Api<Node>,
    name: &str,
    resource_version: Option<&str>,
    changes: impl IntoIterator<Item = (&str, Option<&str>)>,
) -> Result<Node, kube::Error> {
    let annotations: Map<String, Value> = changes
        .into_iter()
        .map(|(key, value)| (key.to_owned(), json!(value)))
        .collect();
    let mut metadata = Map::new();
    if let Some(version) = resource_version {
        metadata.insert("resourceVersion".to_owned(), json!(version));
    }
    metadata.insert("annotations".to_owned(), Value::Object(annotations));
    let body = json!({ "metadata": metadata });
    let params = PatchParams {
        field_manager: Some(CLUSTER_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    api.patch_status(name, &params, &Patch::Strategic(&body))
        .await
}
