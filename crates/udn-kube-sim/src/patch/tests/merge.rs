//! JSON merge patch (RFC 7386, as evanphx/json-patch applies it).

use serde_json::json;

use super::*;

const MERGE: PatchKind = PatchKind::Merge;

#[test]
fn objects_merge_null_deletes_lists_replace() {
    let patch = json!({
        "metadata": {"labels": {"app": null, "tier": "fe"}, "finalizers": ["z"]},
        "spec": {"containers": [{"name": "other", "image": "busybox"}], "nodeName": "n1"}
    });
    let out = run(Some(&pod()), MERGE, &patch, &pod_ctx()).unwrap();
    let mut want = pod();
    want["metadata"]["labels"] = json!({"tier": "fe"});
    want["metadata"]["finalizers"] = json!(["z"]);
    want["spec"] = json!({
        "containers": [{"name": "other", "image": "busybox"}],
        "nodeName": "n1"
    });
    assert_eq!(out, want);
}

#[test]
fn nulls_in_new_values_are_pruned_also_in_objects_inside_lists() {
    let patch = json!({"spec": {"extra": {"a": null, "b": [{"c": null, "d": 1}, null]}}});
    let out = run(Some(&pod()), MERGE, &patch, &pod_ctx()).unwrap();
    assert_eq!(out["spec"]["extra"], json!({"b": [{"d": 1}, null]}));
}

#[test]
fn an_object_replacing_a_scalar_is_pruned_a_scalar_replacing_an_object_is_kept() {
    let mut current = udn();
    current["spec"]["topology"] = json!("Layer2");
    let patch = json!({"spec": {"topology": {"x": null, "y": 1}, "layer2": "flat"}});
    let out = run(Some(&current), MERGE, &patch, &udn_ctx()).unwrap();
    assert_eq!(out["spec"], json!({"topology": {"y": 1}, "layer2": "flat"}));
}

#[test]
fn null_and_scalar_bodies_are_invalid_json_patches() {
    for body in ["null", "1", "\"x\"", "true"] {
        let error = fails(run_raw(Some(&pod()), MERGE, body, &pod_ctx()));
        assert_eq!((error.code, error.reason), (400, "BadRequest"));
        assert_eq!(error.message, "Invalid JSON Patch", "{body}");
    }
    let error = fails(run_raw(Some(&pod()), MERGE, "{", &pod_ctx()));
    assert_eq!(error.message, "invalid JSON patch");
}

#[test]
fn an_array_body_replaces_the_document_and_fails_to_decode() {
    let error = fails(run_raw(Some(&pod()), MERGE, "[{\"a\":null}]", &pod_ctx()));
    assert_eq!(error.code, 422);
    assert_eq!(
        error.message,
        " \"\" is invalid: patch: Invalid value: \"[{}]\": couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }"
    );
}

#[test]
fn custom_resources_merge_too() {
    let patch = json!({"spec": {"layer2": {"subnets": ["10.1.0.0/16"], "role": null}}});
    let out = run(Some(&udn()), MERGE, &patch, &udn_ctx()).unwrap();
    assert_eq!(
        out["spec"],
        json!({"topology": "Layer2", "layer2": {"subnets": ["10.1.0.0/16"]}})
    );
}

#[test]
fn a_non_string_api_version_fails_to_decode() {
    let patch = json!({"apiVersion": 1});
    let error = fails(run(Some(&pod()), MERGE, &patch, &pod_ctx()));
    assert!(
        error.message.ends_with(
            "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .apiVersion of type string"
        ),
        "{}",
        error.message
    );
    let patch = json!({"metadata": {"name": 5}});
    let error = fails(run(Some(&pod()), MERGE, &patch, &pod_ctx()));
    assert!(
        error.message.ends_with(
            ": json: cannot unmarshal number into Go struct field Pod.metadata.name of type string"
        ),
        "{}",
        error.message
    );
}
