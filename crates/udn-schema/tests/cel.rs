//! `x-kubernetes-validations` rules: messages, field paths, reasons, transition rules and
//! ratcheting.

mod common;

use common::{errors, validator};
use serde_json::json;

#[test]
fn failed_rule_reports_node_type_and_message() {
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
            r#"spec: Invalid value: "object": a must be below b"#,
            r#"spec: Invalid value: "object": failed rule: self.a != 7"#,
            r#"spec.b: Invalid value: "integer": b must be positive"#,
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
            r#"spec.items: Invalid value: "object": too many"#,
            "spec: Forbidden: x is forbidden",
        ]
    );
    assert_eq!(
        errors(&v, json!({"items": [], "mode": "y"}), None),
        [r#"spec: Invalid value: "object": mode y is bad"#]
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
        [r#"spec.topology: Invalid value: "string": Topology is immutable"#]
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
        [r#"spec.keyed[0]: Invalid value: "object": v may only grow"#]
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
        [r#"spec.a: Invalid value: "string": a is bad"#]
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
