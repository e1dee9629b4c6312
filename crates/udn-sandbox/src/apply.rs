//! Applying manifests to the sandbox's API server as `kubectl apply --server-side` does:
//! each document's kind is looked up in discovery and sent as an apply patch.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::{Discovery, Scope};
use serde_json::Value;

use crate::error::SandboxError;

/// The field manager of what the sandbox applies.
const FIELD_MANAGER: &str = "udnctl-sandbox";

/// Applies `documents` in order (namespaced ones without a namespace go to `default`).
pub async fn apply(client: &kube::Client, documents: &[Value]) -> Result<(), SandboxError> {
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .map_err(|source| SandboxError::Api {
            what: "API discovery".to_owned(),
            source,
        })?;
    for document in documents {
        let api_version = document["apiVersion"].as_str().unwrap_or_default();
        let kind = document["kind"].as_str().unwrap_or_default();
        let name = document["metadata"]["name"].as_str().unwrap_or_default();
        let what = format!("{kind} {name} ({api_version})");
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) =
            discovery
                .resolve_gvk(&gvk)
                .ok_or_else(|| SandboxError::NotFound {
                    kind: "API kind",
                    name: format!("{kind}.{api_version}"),
                    hint: format!(" (applying {what})"),
                })?;
        let api: Api<DynamicObject> = match capabilities.scope {
            Scope::Cluster => Api::all_with(client.clone(), &resource),
            Scope::Namespaced => {
                let namespace = document["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("default");
                Api::namespaced_with(client.clone(), namespace, &resource)
            }
        };
        api.patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(document),
        )
        .await
        .map_err(|source| SandboxError::Api {
            what: format!("applying {what}"),
            source,
        })?;
    }
    Ok(())
}
