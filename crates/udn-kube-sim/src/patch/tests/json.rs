//! JSON patch (RFC 6902).

use serde_json::json;

use super::*;

const JSON: PatchKind = PatchKind::Json;

#[test]
fn operations_apply_in_order() {
    let patch = json!([
        {"op": "test", "path": "/metadata/labels/app", "value": "web"},
        {"op": "add", "path": "/metadata/labels/tier", "value": "fe"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:2"},
        {"op": "remove", "path": "/metadata/finalizers/0"},
        {"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/labels/copy"},
        {"op": "move", "from": "/metadata/labels/tier", "path": "/metadata/labels/role"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "c"}
    ]);
    let out = run(Some(&pod()), JSON, &patch, &pod_ctx()).unwrap();
    let mut want = pod();
    want["metadata"]["labels"] = json!({"app": "web", "copy": "web", "role": "fe"});
    want["metadata"]["finalizers"] = json!(["b", "c"]);
    want["spec"]["containers"][0]["image"] = json!("nginx:2");
    assert_eq!(out, want);
    assert!(out["metadata"].get("managedFields").is_none());
}

#[test]
fn a_failed_test_or_a_missing_path_is_the_generic_422() {
    for patch in [
        json!([{"op": "test", "path": "/metadata/labels/app", "value": "db"}]),
        json!([{"op": "remove", "path": "/spec/nodeName"}]),
        json!([{"op": "replace", "path": "/spec/containers/5/image", "value": "x"}]),
        json!([{"op": "add", "path": "/spec/missing/deeper", "value": 1}]),
        json!([{"op": "frobnicate", "path": "/spec"}]),
        json!([{"op": "add", "path": "/spec/x"}]),
        json!([{"path": "/spec/x", "value": 1}]),
        json!([null]),
    ] {
        assert_rejected(&fails(run(Some(&pod()), JSON, &patch, &pod_ctx())));
    }
}

#[test]
fn bodies_that_are_not_a_list_of_operations_are_400() {
    let cases = [
        (
            "{}",
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        ),
        (
            "\"x\"",
            "json: cannot unmarshal string into Go value of type jsonpatch.Patch",
        ),
        (
            "[1]",
            "json: cannot unmarshal number into Go value of type jsonpatch.Operation",
        ),
        ("[{\"op\":", "invalid JSON patch"),
        ("", "invalid JSON patch"),
    ];
    for (body, message) in cases {
        let error = fails(run_raw(Some(&pod()), JSON, body, &pod_ctx()));
        assert_eq!((error.code, error.reason), (400, "BadRequest"), "{body}");
        assert_eq!(error.message, message, "{body}");
    }
}

#[test]
fn a_null_body_patches_nothing() {
    assert_eq!(
        run_raw(Some(&pod()), JSON, "null", &pod_ctx()).unwrap(),
        pod()
    );
}

#[test]
fn more_than_10000_operations_is_413() {
    let op = json!({"op": "test", "path": "/kind", "value": "Pod"});
    let patch = serde_json::Value::Array(vec![op; 10_001]);
    let error = fails(run(Some(&pod()), JSON, &patch, &pod_ctx()));
    assert_eq!(error.code, 413);
    assert_eq!(error.reason, "RequestEntityTooLarge");
    assert_eq!(
        error.message,
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
}

#[test]
fn a_patch_of_a_missing_object_is_404() {
    let patch = json!([]);
    let error = fails(run(None, JSON, &patch, &pod_ctx()));
    assert_eq!(error.code, 404);
    assert_eq!(error.message, "pods \"web\" not found");
}

#[test]
fn changing_the_kind_fails_to_decode() {
    let patch = json!([{"op": "replace", "path": "/kind", "value": "Service"}]);
    let error = fails(run(Some(&pod()), JSON, &patch, &pod_ctx()));
    assert_eq!((error.code, error.reason), (422, "Invalid"));
    assert!(
        error
            .message
            .starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
        "{}",
        error.message
    );
    assert!(
        error
            .message
            .ends_with(": no kind \"Service\" is registered for version \"v1\""),
        "{}",
        error.message
    );
    assert_eq!(error.causes.len(), 1);
    assert_eq!(error.causes[0].field, "patch");
    assert_eq!(error.causes[0].reason, "FieldValueInvalid");
}

#[test]
fn a_builtin_without_kind_gets_it_back_a_custom_resource_does_not() {
    let patch = json!([{"op": "remove", "path": "/kind"}, {"op": "remove", "path": "/apiVersion"}]);
    let out = run(Some(&pod()), JSON, &patch, &pod_ctx()).unwrap();
    assert_eq!(out, pod());

    let patch = json!([{"op": "remove", "path": "/kind"}]);
    let error = fails(run(Some(&udn()), JSON, &patch, &udn_ctx()));
    assert_eq!(error.code, 422);
    assert!(
        error
            .message
            .contains(": Object 'Kind' is missing in '{\"apiVersion\":\"k8s.ovn.org/v1\","),
        "{}",
        error.message
    );
}

#[test]
fn a_document_that_is_no_longer_an_object_fails_to_decode() {
    let patch = json!([{"op": "replace", "path": "", "value": [1]}]);
    let error = fails(run(Some(&pod()), JSON, &patch, &pod_ctx()));
    assert_eq!(
        error.message,
        " \"\" is invalid: patch: Invalid value: \"[1]\": couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }"
    );
    assert_eq!(
        error.causes[0].message,
        "Invalid value: \"[1]\": couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }"
    );
}

#[test]
fn name_and_namespace_must_stay_the_urls() {
    let patch = json!([{"op": "replace", "path": "/metadata/name", "value": "other"}]);
    let error = fails(run(Some(&pod()), JSON, &patch, &pod_ctx()));
    assert_eq!((error.code, error.reason), (400, "BadRequest"));
    assert_eq!(
        error.message,
        "the name of the object (other) does not match the name on the URL (web)"
    );

    let patch = json!([{"op": "replace", "path": "/metadata/namespace", "value": "kube-system"}]);
    let error = fails(run(Some(&pod()), JSON, &patch, &pod_ctx()));
    assert_eq!(
        error.message,
        "the namespace of the provided object does not match the namespace sent on the request"
    );

    let patch = json!([{"op": "remove", "path": "/metadata/namespace"}]);
    assert_eq!(run(Some(&pod()), JSON, &patch, &pod_ctx()).unwrap(), pod());

    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}});
    let patch = json!([{"op": "add", "path": "/metadata/namespace", "value": "default"}]);
    assert_eq!(run(Some(&node), JSON, &patch, &node_ctx()).unwrap(), node);
}

#[test]
fn copies_are_limited_to_3_mib() {
    let mut object = pod();
    object["metadata"]["annotations"] = json!({"big": "x".repeat(512 * 1024)});
    let copy = json!({"op": "copy", "from": "/metadata/annotations/big", "path": "/metadata/annotations/c"});
    let patch = serde_json::Value::Array(vec![copy; 7]);
    assert_rejected(&fails(run(Some(&object), JSON, &patch, &pod_ctx())));
    let copy = json!({"op": "copy", "from": "/metadata/annotations/big", "path": "/metadata/annotations/c"});
    let patch = serde_json::Value::Array(vec![copy; 5]);
    assert!(run(Some(&object), JSON, &patch, &pod_ctx()).is_ok());
}

#[test]
fn documents_may_not_nest_deeper_than_serde_json_reads() {
    let mut deep = json!(1);
    for _ in 0..100 {
        deep = json!({"a": deep});
    }
    let add = |path: &str| json!({"op": "add", "path": path, "value": deep.clone()});
    let patch = json!([add("/spec/d1")]);
    let once = run(Some(&pod()), JSON, &patch, &pod_ctx()).unwrap();
    let path = format!("/spec/d1{}", "/a".repeat(50));
    let patch = json!([add(&path)]);
    assert_rejected(&fails(run(Some(&once), JSON, &patch, &pod_ctx())));
}

#[test]
fn test_treats_a_missing_member_as_null() {
    // kube-runtime's finalizer helper: "no finalizers yet", then add them.
    let mut object = pod();
    object["metadata"]
        .as_object_mut()
        .unwrap()
        .shift_remove("finalizers");
    let patch = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["x"]}
    ]);
    let out = run(Some(&object), JSON, &patch, &pod_ctx()).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["x"]));
    let patch = json!([{"op": "test", "path": "/metadata/finalizers"}]);
    assert!(run(Some(&object), JSON, &patch, &pod_ctx()).is_ok());

    for patch in [
        json!([{"op": "test", "path": "/metadata/finalizers", "value": ["a", "b"]}]),
        json!([{"op": "test", "path": "/metadata/missing/finalizers", "value": null}]),
        json!([{"op": "test", "path": "/metadata/finalizers/7", "value": null}]),
    ] {
        assert_rejected(&fails(run(Some(&object), JSON, &patch, &pod_ctx())));
    }
    let patch = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": ["a", "b"]},
        {"op": "test", "path": "/spec/containers/0/ports/0/containerPort", "value": 80.0},
        {"op": "test", "path": "/metadata/labels/app", "value": "web"}
    ]);
    assert!(run(Some(&pod()), JSON, &patch, &pod_ctx()).is_ok());
}
