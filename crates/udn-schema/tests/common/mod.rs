//! Helpers shared by the udn-schema integration tests.

#![allow(dead_code, unreachable_pub)]

use serde_json::{Value, json};
use udn_schema::CrdValidator;

/// A namespaced `Widget` CRD (`example.com/v1`) whose `spec` has `spec_schema`.
pub fn validator(spec_schema: Value) -> CrdValidator {
    validator_with_root(json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema,
        },
    }))
}

/// A `Widget` CRD with the whole `openAPIV3Schema`.
pub fn validator_with_root(root: Value) -> CrdValidator {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": root}}],
        },
    });
    match CrdValidator::new(&crd, "v1") {
        Ok(validator) => validator,
        Err(error) => panic!("test CRD does not load: {error}"),
    }
}

/// A `Widget` object with `spec`.
pub fn widget(spec: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": spec,
    })
}

/// The error lines of validating `spec` (on create, or on update of `old_spec`).
pub fn errors(validator: &CrdValidator, spec: Value, old_spec: Option<Value>) -> Vec<String> {
    let old = old_spec.map(widget);
    match validator.validate(&widget(spec), old.as_ref()) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

/// The `<nil>` line the apiserver adds when schema errors keep CEL from running.
pub const SKIPPED: &str = "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";
