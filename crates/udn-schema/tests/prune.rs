//! Pruning of unknown fields, defaulting and null handling.

mod common;

use common::{errors, validator, validator_with_root, widget};
use serde_json::json;

#[test]
fn unknown_fields_are_pruned_and_object_keys_kept() {
    let v = validator(json!({"type": "object", "properties": {"size": {"type": "integer"}}}));
    let Ok(out) = v.validate(&widget(json!({"size": 1, "colour": "red"})), None) else {
        panic!("unknown fields are not errors");
    };
    assert_eq!(out, widget(json!({"size": 1})));
    let v = validator_with_root(json!({"type": "object", "properties": {}}));
    let Ok(out) = v.validate(&widget(json!({"a": 1})), None) else {
        panic!("the root keeps apiVersion, kind and metadata");
    };
    assert_eq!(
        out,
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "w", "namespace": "default"}})
    );
}

#[test]
fn preserve_unknown_fields_keeps_them() {
    let v = validator(json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}},
    }));
    let Ok(out) = v.validate(
        &widget(json!({"free": {"x": 1}, "known": {"a": "b", "c": 1}})),
        None,
    ) else {
        panic!("preserved fields are not errors");
    };
    assert_eq!(out, widget(json!({"free": {"x": 1}, "known": {"a": "b"}})));
}

#[test]
fn defaults_fill_missing_and_null_fields() {
    let v = validator(json!({
        "type": "object",
        "properties": {
            "mode": {"type": "string", "default": "Enabled"},
            "ipam": {"type": "object", "default": {},
                     "properties": {"lifecycle": {"type": "string", "default": "Persistent"}}},
            "items": {"type": "array", "items": {"type": "object",
                      "properties": {"w": {"type": "integer", "default": 1}}}},
            "note": {"type": "string"},
        },
    }));
    let Ok(out) = v.validate(
        &widget(json!({"mode": null, "items": [{}], "note": null})),
        None,
    ) else {
        panic!("defaulted object must be valid");
    };
    assert_eq!(
        out,
        widget(json!({
            "mode": "Enabled",
            "ipam": {"lifecycle": "Persistent"},
            "items": [{"w": 1}],
        }))
    );
}

#[test]
fn null_in_nullable_field_is_kept_and_null_elsewhere_rejected() {
    let v = validator(json!({
        "type": "object",
        "properties": {
            "maybe": {"type": "string", "nullable": true},
            "list": {"type": "array", "items": {"type": "string"}},
        },
    }));
    let Ok(out) = v.validate(&widget(json!({"maybe": null})), None) else {
        panic!("nullable null is valid");
    };
    assert_eq!(out, widget(json!({"maybe": null})));
    assert_eq!(
        errors(&v, json!({"list": [null]}), None),
        [
            r#"spec.list[0]: Invalid value: "null": spec.list[0] in body must be of type string: "null""#,
            common::SKIPPED,
        ]
    );
}
