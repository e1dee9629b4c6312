//! `x-kubernetes-validations` rules: messages, field paths, reasons, transition rules and
//! ratcheting.

mod common;

use common::{errors, validator};
use serde_json::json;

#[test]
fn failed_rule_reports_scalar_values_and_omits_objects() {
    let v = validator(json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 0", "message": "b must be positive"}]},
        },
        "x-kubernetes-validations": [
            {"rule": "self.a < self.b", "message": "a must be below b"},
            {"rule": "self.a != 7"},
        ],
    }));
    assert!(errors(&v, json!({"a": 1, "b": 2}), None).is_empty());
    assert_eq!(
        errors(&v, json!({"a": 7, "b": -1}), None),
        [
            r#"spec: Invalid value: a must be below b"#,
            r#"spec: Invalid value: failed rule: self.a != 7"#,
            r#"spec.b: Invalid value: -1: b must be positive"#,
        ]
    );
}

#[test]
fn field_path_reason_and_message_expression() {
    let v = validator(json!({
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "string"}}, "mode": {"type": "string"}},
        "x-kubernetes-validations": [
            {"rule": "size(self.items) < 3", "message": "too many", "fieldPath": ".items"},
            {"rule": "self.mode != 'x'", "message": "x is forbidden", "reason": "FieldValueForbidden"},
            {"rule": "self.mode != 'y'", "messageExpression": "'mode ' + self.mode + ' is bad'"},
        ],
    }));
    assert_eq!(
        errors(&v, json!({"items": ["a", "b", "c"], "mode": "x"}), None),
        [
            r#"spec.items: Invalid value: too many"#,
            "spec: Forbidden: x is forbidden",
        ]
    );
    assert_eq!(
        errors(&v, json!({"items": [], "mode": "y"}), None),
        [r#"spec: Invalid value: mode y is bad"#]
    );
}

#[test]
fn scalar_values_are_echoed_as_go_prints_them() {
    // Kubernetes 1.35 on: a failed rule echoes `self` when it is a scalar, also with a
    // messageExpression, and omits it for lists and objects.
    let v = validator(json!({
        "type": "object",
        "properties": {
            "subnets": {"type": "array", "items": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self != '300.0.0.0/24'", "message": "CIDR is invalid"}]},
                "x-kubernetes-validations": [{"rule": "size(self) < 3", "messageExpression": "'got ' + string(size(self))"}]},
            "ratio": {"type": "number", "x-kubernetes-validations": [{"rule": "self < 1.0", "messageExpression": "'ratio ' + string(self)"}]},
            "on": {"type": "boolean", "x-kubernetes-validations": [{"rule": "!self", "message": "must be off"}]},
            "port": {"x-kubernetes-int-or-string": true, "x-kubernetes-validations": [{"rule": "self != 'http'", "message": "must not be http"}]},
            "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'a'", "reason": "FieldValueDuplicate"}]},
        },
    }));
    assert_eq!(
        errors(
            &v,
            json!({"subnets": ["10.0.0.0/24", "300.0.0.0/24", "x\"y"], "ratio": 1.5, "on": true, "port": "http", "name": "a"}),
            None
        ),
        [
            r#"spec.name: Duplicate value: "a""#,
            r#"spec.on: Invalid value: true: must be off"#,
            r#"spec.port: Invalid value: "http": must not be http"#,
            r#"spec.ratio: Invalid value: 1.5: ratio 1.5"#,
            r#"spec.subnets: Invalid value: got 3"#,
            r#"spec.subnets[1]: Invalid value: "300.0.0.0/24": CIDR is invalid"#,
        ]
    );
}

#[test]
fn transition_rules_run_only_on_update() {
    let v = validator(json!({
        "type": "object",
        "properties": {"topology": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Topology is immutable"}]}},
    }));
    assert!(errors(&v, json!({"topology": "Layer3"}), None).is_empty());
    assert!(
        errors(
            &v,
            json!({"topology": "Layer3"}),
            Some(json!({"topology": "Layer3"}))
        )
        .is_empty()
    );
    assert_eq!(
        errors(
            &v,
            json!({"topology": "Layer2"}),
            Some(json!({"topology": "Layer3"}))
        ),
        [r#"spec.topology: Invalid value: "Layer2": Topology is immutable"#]
    );
    assert!(
        errors(&v, json!({"topology": "Layer2"}), Some(json!({}))).is_empty(),
        "a field that did not exist before has no oldSelf"
    );
}

#[test]
fn list_items_correlate_only_in_map_and_set_lists() {
    let item = json!({"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.v >= oldSelf.v", "message": "v may only grow"}]});
    let v = validator(json!({
        "type": "object",
        "properties": {
            "atomic": {"type": "array", "items": item},
            "keyed": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"], "items": item},
        },
    }));
    let old = json!({"atomic": [{"name": "a", "v": 2}], "keyed": [{"name": "b", "v": 5}, {"name": "a", "v": 2}]});
    let new = json!({"atomic": [{"name": "a", "v": 1}], "keyed": [{"name": "a", "v": 1}, {"name": "b", "v": 6}]});
    assert_eq!(
        errors(&v, new, Some(old)),
        [r#"spec.keyed[0]: Invalid value: v may only grow"#]
    );
}

#[test]
fn unchanged_values_ratchet_non_transition_rules() {
    let v = validator(json!({
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'bad'", "message": "a is bad"}]},
            "b": {"type": "string"},
        },
    }));
    assert_eq!(
        errors(&v, json!({"a": "bad"}), None),
        [r#"spec.a: Invalid value: "bad": a is bad"#]
    );
    assert!(
        errors(
            &v,
            json!({"a": "bad", "b": "new"}),
            Some(json!({"a": "bad"}))
        )
        .is_empty()
    );
}

#[test]
fn evaluation_errors_name_the_rule() {
    let v = validator(json!({
        "type": "object",
        "properties": {"list": {"type": "array", "items": {"type": "string"}}},
        "x-kubernetes-validations": [
            {"rule": "self.list.size() > 0", "message": "list needs items", "fieldPath": ".list"},
        ],
    }));
    assert_eq!(
        errors(&v, json!({}), None),
        [r#"spec: Invalid value: "object": no such key: list evaluating rule: list needs items"#],
        "an evaluation error is reported at the rule's node, not at its fieldPath"
    );
}

#[test]
fn broken_rules_refuse_the_crd() {
    let crd = json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "Widget"},
                 "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                     "type": "object",
                     "x-kubernetes-validations": [{"rule": "self.a ==", "message": "m"}]}}}]},
    });
    let error = udn_schema::CrdValidator::new(&crd, "v1")
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(error, udn_schema::SchemaError::CelCompile { .. }),
        "{error}"
    );
    let error = udn_schema::CrdValidator::new(&crd, "v2")
        .map(|_| ())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "CRD widgets.example.com has no version \"v2\""
    );
}
