//! Server-side apply of a custom resource with CRD schema hints: associative
//! `status.conditions` owned per condition type, sets, atomic lists and maps, key
//! defaults; JSON merge patch unaffected.

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::*;
use crate::patch::SchemaHints;

/// A cut-down UDN-like schema with one of each hint.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "subnets": {"type": "array", "items": {"type": "string"}},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "x-kubernetes-list-type": "set"
                    },
                    "selector": {
                        "type": "object",
                        "properties": {
                            "matchLabels": {
                                "type": "object",
                                "additionalProperties": {"type": "string"}
                            }
                        },
                        "x-kubernetes-map-type": "atomic"
                    },
                    "ports": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "port": {"type": "integer"},
                                "protocol": {"type": "string", "default": "UDP"}
                            }
                        },
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["port", "protocol"]
                    },
                    "groups": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "array",
                            "items": {"type": "string"},
                            "x-kubernetes-list-type": "set"
                        }
                    }
                }
            },
            "status": {
                "type": "object",
                "properties": {
                    "conditions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "type": {"type": "string"},
                                "status": {"type": "string"},
                                "reason": {"type": "string"}
                            }
                        },
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["type"]
                    }
                }
            }
        }
    })
}

static HINTS: LazyLock<SchemaHints> = LazyLock::new(|| SchemaHints::from_open_api_v3(&schema()));

static UDN_CRD_HINTS: LazyLock<SchemaHints> = LazyLock::new(|| {
    let crd = udn_api::crd::to_manifest_json(&udn_api::crd::user_defined_network_crd()).unwrap();
    SchemaHints::from_open_api_v3(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
});

/// The hints of the real UserDefinedNetwork CRD.
pub(super) fn udn_crd_hints() -> &'static SchemaHints {
    &UDN_CRD_HINTS
}

fn ctx(manager: &'static str, subresource: Subresource) -> PatchContext<'static> {
    PatchContext {
        field_manager: Some(manager),
        subresource,
        schema_hints: Some(&HINTS),
        ..udn_ctx()
    }
}

fn status_ctx(manager: &'static str) -> PatchContext<'static> {
    ctx(manager, Subresource::Status)
}

fn condition(kind: &str, status: &str) -> Value {
    json!({"type": kind, "status": status, "reason": format!("{kind}{status}")})
}

fn status_config(conditions: &[Value]) -> Value {
    json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": "net", "namespace": "blue"},
        "status": {"conditions": conditions}
    })
}

fn spec_config(spec: Value) -> Value {
    json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": "net", "namespace": "blue"},
        "spec": spec
    })
}

fn apply(current: &Value, config: &Value, ctx: &PatchContext<'_>) -> Result<Value, ApiError> {
    run(Some(current), PatchKind::Apply, config, ctx)
}

fn fields_of(object: &Value, manager: &str) -> Value {
    managed_fields(object)
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == manager)
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

fn owned_condition(kind: &str) -> Value {
    json!({"f:status": {"f:conditions": {
        format!("k:{{\"type\":\"{kind}\"}}"): {
            ".": {}, "f:reason": {}, "f:status": {}, "f:type": {}
        }
    }}})
}

/// The UDN with condition `A` applied by `a` and `B` by `b`.
fn both() -> Value {
    let one = apply(
        &udn(),
        &status_config(&[condition("A", "True")]),
        &status_ctx("a"),
    )
    .unwrap();
    apply(
        &one,
        &status_config(&[condition("B", "False")]),
        &status_ctx("b"),
    )
    .unwrap()
}

#[test]
fn two_managers_own_one_condition_each() {
    let out = both();
    assert_eq!(
        out["status"]["conditions"],
        json!([condition("A", "True"), condition("B", "False")])
    );
    assert_eq!(fields_of(&out, "a"), owned_condition("A"));
    assert_eq!(fields_of(&out, "b"), owned_condition("B"));
    assert_eq!(managed_fields(&out)[0]["subresource"], "status");
}

#[test]
fn reapplying_a_changed_condition_changes_only_that_entry() {
    let live = both();
    let out = apply(
        &live,
        &status_config(&[condition("A", "False")]),
        &status_ctx("a"),
    )
    .unwrap();
    assert_eq!(
        out["status"]["conditions"],
        json!([condition("A", "False"), condition("B", "False")])
    );
    assert_eq!(fields_of(&out, "a"), owned_condition("A"));
    assert_eq!(fields_of(&out, "b"), owned_condition("B"));
}

#[test]
fn dropping_its_own_condition_removes_only_that_entry() {
    let live = both();
    let out = apply(&live, &status_config(&[]), &status_ctx("a")).unwrap();
    assert_eq!(
        out["status"]["conditions"],
        json!([condition("B", "False")])
    );
    assert_eq!(fields_of(&out, "b"), owned_condition("B"));
    let entry = managed_fields(&out)
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "a")
        .cloned();
    assert_eq!(entry.and_then(|e| e.get("fieldsV1").cloned()), None);
}

#[test]
fn the_same_condition_key_from_two_managers_conflicts_unless_forced() {
    let live = both();
    let config = status_config(&[condition("A", "False")]);
    let error = fails(apply(&live, &config, &status_ctx("b")));
    assert_eq!((error.code, error.reason), (409, "Conflict"));
    assert_eq!(
        error.message,
        "Apply failed with 2 conflicts: conflicts with \"a\" with subresource \"status\":\n\
         - .status.conditions[type=\"A\"].reason\n\
         - .status.conditions[type=\"A\"].status"
    );
    let forced = PatchContext {
        force: true,
        ..status_ctx("b")
    };
    let out = apply(&live, &config, &forced).unwrap();
    assert_eq!(
        out["status"]["conditions"],
        json!([condition("A", "False")]),
        "b's own B is pruned, A is taken over"
    );
    assert_eq!(
        fields_of(&out, "a"),
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"A\"}": {".": {}, "f:type": {}}}}})
    );
    assert_eq!(fields_of(&out, "b"), owned_condition("A"));
}

#[test]
fn without_hints_custom_resource_lists_stay_atomic() {
    let plain = |manager| PatchContext {
        schema_hints: None,
        ..status_ctx(manager)
    };
    let one = apply(
        &udn(),
        &status_config(&[condition("A", "True")]),
        &plain("a"),
    )
    .unwrap();
    let error = fails(apply(
        &one,
        &status_config(&[condition("B", "False")]),
        &plain("b"),
    ));
    assert_eq!(
        error.message,
        "Apply failed with 1 conflict: conflict with \"a\" with subresource \"status\": .status.conditions"
    );
}

#[test]
fn atomic_lists_are_replaced_whole() {
    let main = |manager| ctx(manager, Subresource::Main);
    let live = apply(
        &udn(),
        &spec_config(json!({"subnets": ["10.0.0.0/16"], "tags": ["x"]})),
        &main("a"),
    )
    .unwrap();
    let forced = PatchContext {
        force: true,
        ..main("b")
    };
    let out = apply(
        &live,
        &spec_config(json!({"subnets": ["10.1.0.0/16"], "tags": ["y"]})),
        &forced,
    )
    .unwrap();
    assert_eq!(out["spec"]["subnets"], json!(["10.1.0.0/16"]));
    assert_eq!(out["spec"]["tags"], json!(["x", "y"]), "a set merges");
    assert_eq!(
        fields_of(&out, "a"),
        json!({"f:spec": {"f:tags": {"v:\"x\"": {}}}})
    );
    assert_eq!(
        fields_of(&out, "b"),
        json!({"f:spec": {"f:subnets": {}, "f:tags": {"v:\"y\"": {}}}})
    );
}

#[test]
fn an_atomic_map_is_owned_and_replaced_as_one_field() {
    let main = |manager| ctx(manager, Subresource::Main);
    let live = apply(
        &udn(),
        &spec_config(json!({"selector": {"matchLabels": {"x": "1"}}})),
        &main("a"),
    )
    .unwrap();
    assert_eq!(fields_of(&live, "a"), json!({"f:spec": {"f:selector": {}}}));
    let config = spec_config(json!({"selector": {"matchLabels": {"y": "2"}}}));
    let error = fails(apply(&live, &config, &main("b")));
    assert_eq!(
        error.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.selector"
    );
    let forced = PatchContext {
        force: true,
        ..main("b")
    };
    let out = apply(&live, &config, &forced).unwrap();
    assert_eq!(out["spec"]["selector"], json!({"matchLabels": {"y": "2"}}));
    assert_eq!(fields_of(&out, "a"), Value::Null);
}

#[test]
fn map_values_and_key_defaults_follow_the_schema() {
    let main = |manager| ctx(manager, Subresource::Main);
    let live = apply(
        &udn(),
        &spec_config(json!({"groups": {"g": ["x"]}, "ports": [{"port": 53}]})),
        &main("a"),
    )
    .unwrap();
    let out = apply(
        &live,
        &spec_config(json!({"groups": {"g": ["y"]}, "ports": [{"port": 53, "protocol": "TCP"}]})),
        &main("b"),
    )
    .unwrap();
    assert_eq!(out["spec"]["groups"], json!({"g": ["x", "y"]}));
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 53}, {"port": 53, "protocol": "TCP"}]),
        "the missing protocol is the schema's UDP, not TCP"
    );
    assert_eq!(
        fields_of(&out, "a")["f:spec"]["f:ports"],
        json!({"k:{\"port\":53,\"protocol\":\"UDP\"}": {".": {}, "f:port": {}}})
    );
}

#[test]
fn merge_patch_still_replaces_the_list() {
    let live = both();
    let plain = PatchContext {
        field_manager: None,
        ..status_ctx("a")
    };
    let out = run(
        Some(&live),
        PatchKind::Merge,
        &json!({"status": {"conditions": [condition("C", "True")]}}),
        &plain,
    )
    .unwrap();
    assert_eq!(out["status"]["conditions"], json!([condition("C", "True")]));
}

#[test]
fn hints_keep_only_non_default_branches() {
    let hints = SchemaHints::from_open_api_v3(&schema());
    let spec = hints.root().field("spec").unwrap();
    assert!(spec.field("subnets").is_none(), "atomic is the default");
    assert!(spec.field("selector").unwrap().atomic_map());
    assert_eq!(
        spec.field("groups")
            .and_then(|g| g.field("any"))
            .map(|n| n.list_type()),
        Some(crate::patch::schema::ListType::Set)
    );
    assert_eq!(hints.root().field("metadata"), None);
    assert_eq!(
        SchemaHints::from_open_api_v3(&json!({"type": "object"})),
        SchemaHints::default()
    );
}

#[test]
fn the_udn_crd_keys_its_conditions_by_type() {
    let conditions = udn_crd_hints()
        .root()
        .field("status")
        .and_then(|status| status.field("conditions"))
        .unwrap();
    let crate::patch::schema::ListType::Map(keys) = conditions.list_type() else {
        panic!("conditions are not associative: {conditions:?}");
    };
    assert_eq!(keys.fields().collect::<Vec<_>>(), [("type", None)]);
    let subnets = udn_crd_hints()
        .root()
        .field("spec")
        .and_then(|spec| spec.field("layer3"))
        .and_then(|layer3| layer3.field("subnets"));
    assert_eq!(subnets, None, "atomic, the default");
}
