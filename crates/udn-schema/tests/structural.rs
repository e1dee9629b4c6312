//! Structural (OpenAPI) checks, with the apiserver's error text.

mod common;

use common::{SKIPPED, errors, validator};
use serde_json::json;

#[test]
fn wrong_type_is_type_invalid_and_blocks_cel() {
    let v = validator(json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "false", "message": "never"}],
    }));
    assert_eq!(
        errors(&v, json!({"name": 5}), None),
        [
            r#"spec.name: Invalid value: "integer": spec.name in body must be of type string: "integer""#,
            SKIPPED,
        ]
    );
    assert_eq!(
        errors(&v, json!({"name": [1]}), None),
        [
            r#"spec.name: Invalid value: "array": spec.name in body must be of type string: "array""#,
            SKIPPED,
        ]
    );
}

#[test]
fn integral_floats_pass_integer_fields() {
    let v = validator(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
    assert!(errors(&v, json!({"n": 3.0}), None).is_empty());
    assert_eq!(
        errors(&v, json!({"n": 3.5}), None),
        [
            r#"spec.n: Invalid value: "number": spec.n in body must be of type integer: "number""#,
            r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.n"#,
            SKIPPED,
        ]
    );
}

#[test]
fn required_fields() {
    let v = validator(json!({
        "type": "object",
        "required": ["role"],
        "properties": {"role": {"type": "string"}},
    }));
    assert_eq!(
        errors(&v, json!({}), None),
        ["spec.role: Required value", SKIPPED]
    );
}

#[test]
fn enum_values_are_not_supported() {
    let v = validator(json!({
        "type": "object",
        "properties": {"topology": {"type": "string", "enum": ["Layer2", "Layer3"]}},
    }));
    assert_eq!(
        errors(&v, json!({"topology": "Layer4"}), None),
        [
            r#"spec.topology: Unsupported value: "Layer4": supported values: "Layer2", "Layer3""#,
            SKIPPED,
        ]
    );
    assert!(errors(&v, json!({"topology": "Layer3"}), None).is_empty());
}

#[test]
fn int32_format_is_range_checked() {
    let v = validator(json!({
        "type": "object",
        "properties": {"mtu": {"type": "integer", "format": "int32"}},
    }));
    assert!(errors(&v, json!({"mtu": 2_147_483_647}), None).is_empty());
    assert_eq!(
        errors(&v, json!({"mtu": 2_147_483_648_i64}), None),
        [
            r#"<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.mtu"#
        ]
    );
}

#[test]
fn string_formats() {
    let v = validator(json!({
        "type": "object",
        "properties": {"at": {"type": "string", "format": "date-time"}},
    }));
    assert!(errors(&v, json!({"at": "2024-05-06T07:08:09Z"}), None).is_empty());
    assert_eq!(
        errors(&v, json!({"at": "yesterday"}), None),
        [
            r#"spec.at: Invalid value: "yesterday": spec.at in body must be of type date-time: "yesterday""#,
            SKIPPED,
        ]
    );
}

#[test]
fn numeric_bounds() {
    let v = validator(json!({
        "type": "object",
        "properties": {
            "mtu": {"type": "integer", "format": "int32", "minimum": 576, "maximum": 65536},
            "vni": {"type": "integer", "minimum": 0, "maximum": 16_777_215, "exclusiveMinimum": true},
            "ratio": {"type": "number", "maximum": 1_000_000},
        },
    }));
    assert!(errors(&v, json!({"mtu": 576, "vni": 1, "ratio": 0.5}), None).is_empty());
    assert_eq!(
        errors(&v, json!({"mtu": 100}), None),
        ["spec.mtu: Invalid value: 100: spec.mtu in body should be greater than or equal to 576"]
    );
    assert_eq!(
        errors(&v, json!({"mtu": 70000}), None),
        ["spec.mtu: Invalid value: 70000: spec.mtu in body should be less than or equal to 65536"]
    );
    assert_eq!(
        errors(&v, json!({"vni": 0}), None),
        ["spec.vni: Invalid value: 0: spec.vni in body should be greater than 0"]
    );
    assert_eq!(
        errors(&v, json!({"ratio": 2_000_000.5}), None),
        [
            "spec.ratio: Invalid value: 2.0000005e+06: spec.ratio in body should be less than or equal to 1e+06"
        ]
    );
}

#[test]
fn string_lengths_and_patterns() {
    let v = validator(json!({
        "type": "object",
        "properties": {
            "cidr": {"type": "string", "maxLength": 5},
            "vtep": {"type": "string", "minLength": 1},
            "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        },
    }));
    assert_eq!(
        errors(&v, json!({"cidr": "10.0.0.0/8"}), None),
        ["spec.cidr: Too long: may not be more than 5 bytes", SKIPPED]
    );
    assert_eq!(
        errors(&v, json!({"vtep": ""}), None),
        [r#"spec.vtep: Invalid value: "": spec.vtep in body should be at least 1 chars long"#]
    );
    assert_eq!(
        errors(&v, json!({"name": "Br-Ex"}), None),
        [
            r#"spec.name: Invalid value: "Br-Ex": spec.name in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"#
        ]
    );
    assert!(
        errors(
            &v,
            json!({"cidr": "ab", "vtep": "v", "name": "br-ex"}),
            None
        )
        .is_empty()
    );
}

#[test]
fn item_counts() {
    let v = validator(json!({
        "type": "object",
        "properties": {"subnets": {
            "type": "array", "minItems": 1, "maxItems": 2,
            "items": {"type": "string"},
        }, "uplinks": {"type": "array", "maxItems": 1, "items": {"type": "string"}}},
    }));
    assert_eq!(
        errors(&v, json!({"subnets": []}), None),
        ["spec.subnets: Invalid value: 0: spec.subnets in body should have at least 1 items"]
    );
    assert_eq!(
        errors(&v, json!({"subnets": ["a", "b", "c"]}), None),
        [
            "spec.subnets: Too many: 3: must have at most 2 items",
            SKIPPED
        ]
    );
    assert_eq!(
        errors(&v, json!({"uplinks": ["a", "b"]}), None),
        [
            "spec.uplinks: Too many: 2: must have at most 1 item",
            SKIPPED
        ]
    );
    assert_eq!(
        errors(&v, json!({"subnets": ["a", 7]}), None),
        [
            r#"spec.subnets[1]: Invalid value: "integer": spec.subnets[1] in body must be of type string: "integer""#,
            SKIPPED,
        ]
    );
}

#[test]
fn property_counts() {
    let v = validator(json!({
        "type": "object",
        "properties": {"ipam": {
            "type": "object", "minProperties": 1,
            "properties": {"mode": {"type": "string"}},
        }},
    }));
    assert_eq!(
        errors(&v, json!({"ipam": {}}), None),
        ["spec.ipam: Invalid value: 0: spec.ipam in body should have at least 1 properties"]
    );
}

#[test]
fn set_and_map_lists_are_unique() {
    let v = validator(json!({
        "type": "object",
        "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "conditions": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
                "items": {"type": "object", "required": ["type"],
                          "properties": {"type": {"type": "string"}, "status": {"type": "string"}}},
            },
        },
    }));
    assert_eq!(
        errors(&v, json!({"tags": ["a", "b", "a", "a"]}), None),
        [r#"spec.tags[2]: Duplicate value: "a""#]
    );
    assert_eq!(
        errors(
            &v,
            json!({"conditions": [{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "False"}]}),
            None
        ),
        [r#"spec.conditions[1]: Duplicate value: {"type":"Ready"}"#]
    );
}

#[test]
fn map_values_follow_additional_properties() {
    let v = validator(json!({
        "type": "object",
        "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}}},
    }));
    assert!(errors(&v, json!({"labels": {"a": "x"}}), None).is_empty());
    assert_eq!(
        errors(&v, json!({"labels": {"team": "blue-team"}}), None),
        [
            "spec.labels.team: Too long: may not be more than 3 bytes",
            SKIPPED
        ]
    );
}

#[test]
fn unchanged_invalid_values_are_ratcheted_on_update() {
    let v = validator(json!({
        "type": "object",
        "properties": {
            "mtu": {"type": "integer", "minimum": 576},
            "name": {"type": "string", "maxLength": 3},
        },
    }));
    let old = json!({"mtu": 100, "name": "abc"});
    assert!(errors(&v, json!({"mtu": 100, "name": "xyz"}), Some(old.clone())).is_empty());
    assert_eq!(
        errors(&v, json!({"mtu": 200, "name": "abc"}), Some(old)),
        ["spec.mtu: Invalid value: 200: spec.mtu in body should be greater than or equal to 576"]
    );
}

#[test]
fn invalid_message_aggregates_like_apimachinery() {
    let v = validator(json!({
        "type": "object",
        "required": ["role"],
        "properties": {"role": {"type": "string"}, "mtu": {"type": "integer", "minimum": 576}},
    }));
    let one = v.validate(&common::widget(json!({"role": "x", "mtu": 1})), None);
    let Err(one) = one else {
        panic!("mtu 1 must be rejected");
    };
    assert_eq!(
        v.invalid_message("w", &one),
        r#"Widget.example.com "w" is invalid: spec.mtu: Invalid value: 1: spec.mtu in body should be greater than or equal to 576"#
    );
    let Err(two) = v.validate(&common::widget(json!({"mtu": 1})), None) else {
        panic!("missing role must be rejected");
    };
    assert_eq!(
        v.invalid_message("w", &two),
        format!(
            "Widget.example.com \"w\" is invalid: [spec.mtu: Invalid value: 1: spec.mtu in body should be greater than or equal to 576, spec.role: Required value, {SKIPPED}]"
        )
    );
}

#[test]
fn validator_can_be_shared_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<udn_schema::CrdValidator>();
}
