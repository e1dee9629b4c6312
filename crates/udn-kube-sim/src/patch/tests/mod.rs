//! Tests of the patch module: concrete before/patch/after triples per patch kind, the
//! server's errors, field ownership, and a property test that no body panics.

mod apply;
mod fuzz;
mod hints;
mod json;
mod managed;
mod merge;
mod request;
mod strategic;

use serde_json::{Value, json};

use super::{PatchContext, apply_patch};
use crate::error::ApiError;
use crate::options::{PatchKind, Subresource};

pub(super) const NOW: &str = "2024-05-01T10:00:00Z";
pub(super) const LATER: &str = "2024-05-01T11:30:00Z";

/// A patch of Pod `default/web`.
pub(super) fn pod_ctx() -> PatchContext<'static> {
    PatchContext {
        api_version: "v1",
        kind: "Pod",
        group: "",
        plural: "pods",
        name: "web",
        namespace: Some("default"),
        field_manager: None,
        force: false,
        subresource: Subresource::Main,
        now: NOW,
        schema_hints: None,
    }
}

/// A patch of Node `n1` (cluster scoped).
pub(super) fn node_ctx() -> PatchContext<'static> {
    PatchContext {
        api_version: "v1",
        kind: "Node",
        group: "",
        plural: "nodes",
        name: "n1",
        namespace: None,
        ..pod_ctx()
    }
}

/// A patch of Service `default/web`.
pub(super) fn service_ctx() -> PatchContext<'static> {
    PatchContext {
        kind: "Service",
        plural: "services",
        ..pod_ctx()
    }
}

/// A patch of the custom resource UserDefinedNetwork `blue/net`.
pub(super) fn udn_ctx() -> PatchContext<'static> {
    PatchContext {
        api_version: "k8s.ovn.org/v1",
        kind: "UserDefinedNetwork",
        group: "k8s.ovn.org",
        plural: "userdefinednetworks",
        name: "net",
        namespace: Some("blue"),
        ..pod_ctx()
    }
}

/// `ctx` with a field manager.
pub(super) fn by(manager: &'static str, ctx: PatchContext<'static>) -> PatchContext<'static> {
    PatchContext {
        field_manager: Some(manager),
        ..ctx
    }
}

pub(super) fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "0b9c5d1e",
            "resourceVersion": "5",
            "labels": {"app": "web"},
            "finalizers": ["a", "b"]
        },
        "spec": {
            "containers": [{
                "name": "nginx",
                "image": "nginx:1",
                "ports": [{"containerPort": 80}],
                "env": [{"name": "A", "value": "1"}]
            }]
        }
    })
}

pub(super) fn udn() -> Value {
    json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": "net", "namespace": "blue", "uid": "77aa"},
        "spec": {"topology": "Layer2", "layer2": {"role": "Primary", "subnets": ["10.0.0.0/16"]}}
    })
}

/// Run a patch with a JSON body.
pub(super) fn run(
    current: Option<&Value>,
    kind: PatchKind,
    body: &Value,
    ctx: &PatchContext<'_>,
) -> Result<Value, ApiError> {
    let bytes = serde_json::to_vec(body).unwrap();
    apply_patch(current, kind, &bytes, ctx)
}

/// Run a patch with a raw body.
pub(super) fn run_raw(
    current: Option<&Value>,
    kind: PatchKind,
    body: &str,
    ctx: &PatchContext<'_>,
) -> Result<Value, ApiError> {
    apply_patch(current, kind, body.as_bytes(), ctx)
}

/// The error of a patch that must fail.
pub(super) fn fails(result: Result<Value, ApiError>) -> ApiError {
    match result {
        Ok(value) => panic!("patch succeeded: {value:#}"),
        Err(error) => error,
    }
}

/// `metadata.managedFields` of an object.
pub(super) fn managed_fields(object: &Value) -> Value {
    object["metadata"]["managedFields"].clone()
}

/// The generic 422 the server sends for a JSON patch that does not apply.
pub(super) fn assert_rejected(error: &ApiError) {
    assert_eq!(error.code, 422);
    assert_eq!(error.reason, "Invalid");
    assert_eq!(
        error.message,
        "the server rejected our request due to an error in our request"
    );
    assert!(error.causes.is_empty());
    assert_eq!(error.name, None);
}
