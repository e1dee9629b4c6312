//! Strategic merge patch. The `$setElementOrder` and `$retainKeys` cases are the upstream
//! `strategicpatch` test cases (three-way patch applied to "current"), on real fields.

use serde_json::{Value, json};

use super::*;

const SMP: PatchKind = PatchKind::StrategicMerge;

fn smp(current: &Value, patch: Value) -> Value {
    run(Some(current), SMP, &patch, &pod_ctx()).unwrap()
}

fn pod_with(field: &str, value: Value) -> Value {
    let mut pod = pod();
    let (section, name) = field.split_once('.').unwrap();
    pod[section][name] = value;
    pod
}

#[test]
fn custom_resources_do_not_take_strategic_merge_patches() {
    let error = fails(run(Some(&udn()), SMP, &json!({}), &udn_ctx()));
    assert_eq!((error.code, error.reason), (415, "UnsupportedMediaType"));
    assert_eq!(
        error.message,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
}

#[test]
fn maps_merge_and_null_deletes() {
    let out = smp(
        &pod(),
        json!({"metadata": {"labels": {"app": null, "tier": "fe"}}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({"tier": "fe"}));
    assert_eq!(out["spec"], pod()["spec"]);
}

#[test]
fn containers_merge_by_name_and_ports_by_container_port() {
    let patch = json!({"spec": {"containers": [{
        "name": "nginx",
        "image": "nginx:2",
        "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]
    }]}});
    let out = smp(&pod(), patch);
    assert_eq!(
        out["spec"]["containers"],
        json!([{
            "name": "nginx",
            "image": "nginx:2",
            "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}],
            "env": [{"name": "A", "value": "1"}]
        }])
    );
}

#[test]
fn new_items_go_before_the_live_ones() {
    let patch = json!({
        "metadata": {"finalizers": ["c"]},
        "spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}
    });
    let out = smp(&pod(), patch);
    assert_eq!(out["metadata"]["finalizers"], json!(["c", "a", "b"]));
    let names: Vec<&str> = out["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sidecar", "nginx"]);
    assert_eq!(out["spec"]["containers"][1], pod()["spec"]["containers"][0]);
}

#[test]
fn owner_references_merge_by_uid() {
    let current = pod_with(
        "metadata.ownerReferences",
        json!([{"uid": "1", "kind": "ReplicaSet", "name": "rs"}]),
    );
    let mut current = current;
    current["metadata"]["name"] = json!("web");
    let out = smp(
        &current,
        json!({"metadata": {"ownerReferences": [{"uid": "1", "controller": true}]}}),
    );
    assert_eq!(
        out["metadata"]["ownerReferences"],
        json!([{"uid": "1", "kind": "ReplicaSet", "name": "rs", "controller": true}])
    );
}

#[test]
fn patch_directives_in_lists() {
    let deleted = smp(
        &pod(),
        json!({"spec": {"containers": [{"name": "nginx", "$patch": "delete"}]}}),
    );
    assert_eq!(deleted["spec"]["containers"], json!([]));

    let replaced = smp(
        &pod(),
        json!({"spec": {"containers": [{"name": "x", "image": "i"}, {"$patch": "replace"}]}}),
    );
    assert_eq!(
        replaced["spec"]["containers"],
        json!([{"name": "x", "image": "i"}])
    );

    let error = fails(run(
        Some(&pod()),
        SMP,
        &json!({"spec": {"containers": [{"name": "nginx", "$patch": "merge"}]}}),
        &pod_ctx(),
    ));
    assert_eq!((error.code, error.reason), (500, ""));
    assert_eq!(
        error.message,
        "merging lists cannot yet be specified in the patch"
    );
}

#[test]
fn patch_directives_in_maps() {
    let replaced = smp(
        &pod(),
        json!({"metadata": {"labels": {"$patch": "replace", "new": "1"}}}),
    );
    assert_eq!(replaced["metadata"]["labels"], json!({"new": "1"}));

    let deleted = smp(
        &pod(),
        json!({"metadata": {"labels": {"$patch": "delete"}}}),
    );
    assert_eq!(deleted["metadata"]["labels"], json!({}));

    let error = fails(run(
        Some(&pod()),
        SMP,
        &json!({"metadata": {"labels": {"$patch": "foo", "a": "b"}}}),
        &pod_ctx(),
    ));
    assert_eq!(error.code, 500);
    assert_eq!(
        error.message,
        "unknown patch type: foo in map: map[$patch:foo a:b]"
    );
}

#[test]
fn delete_from_primitive_list() {
    let out = smp(
        &pod(),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zz"]}}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));

    let error = fails(run(
        Some(&pod()),
        SMP,
        &json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
        &pod_ctx(),
    ));
    assert_eq!((error.code, error.reason), (400, "BadRequest"));
    assert_eq!(error.message, "invalid patch format of primitive list");
}

#[test]
fn set_element_order_merge_lists_of_maps() {
    let current = pod_with(
        "spec.containers",
        json!([{"name": "c1", "image": "a"}, {"name": "c2", "image": "b", "tty": true}]),
    );
    let out = smp(
        &current,
        json!({"spec": {
            "$setElementOrder/containers": [{"name": "c4"}, {"name": "c1"}, {"name": "c2"}, {"name": "c3"}],
            "containers": [{"name": "c4", "image": "d"}, {"name": "c3", "image": "c"}]
        }}),
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([
            {"name": "c4", "image": "d"},
            {"name": "c1", "image": "a"},
            {"name": "c2", "image": "b", "tty": true},
            {"name": "c3", "image": "c"}
        ])
    );
}

#[test]
fn set_element_order_add_a_scalar_and_preserve_order() {
    let current = pod_with("metadata.finalizers", json!(["f1", "f4", "f2"]));
    let out = smp(
        &current,
        json!({"metadata": {
            "$setElementOrder/finalizers": ["f3", "f1", "f2"],
            "finalizers": ["f3"]
        }}),
    );
    assert_eq!(
        out["metadata"]["finalizers"],
        json!(["f3", "f1", "f4", "f2"])
    );
}

#[test]
fn set_element_order_with_server_only_items() {
    let current = pod_with(
        "spec.containers",
        json!([
            {"name": "c1", "image": "a"},
            {"name": "c3"},
            {"name": "c4"},
            {"name": "c2"},
            {"name": "c9"}
        ]),
    );
    let out = smp(
        &current,
        json!({"spec": {"$setElementOrder/containers": [
            {"name": "c4"}, {"name": "c2"}, {"name": "c3"}, {"name": "c1"}
        ]}}),
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "c4"}, {"name": "c2"}, {"name": "c3"}, {"name": "c1", "image": "a"}, {"name": "c9"}])
    );
}

#[test]
fn set_element_order_must_match_the_patch_list() {
    let error = fails(run(
        Some(&pod()),
        SMP,
        &json!({"metadata": {"$setElementOrder/finalizers": ["x"], "finalizers": ["y"]}}),
        &pod_ctx(),
    ));
    assert_eq!(error.code, 500);
    assert_eq!(
        error.message,
        "The order in patch list:\n[y]\n doesn't match $setElementOrder list:\n[x]\n"
    );
    let error = fails(run(
        Some(&pod()),
        SMP,
        &json!({"metadata": {"$setElementOrder": ["a"]}}),
        &pod_ctx(),
    ));
    assert_eq!(
        error.message,
        "invalid patch format of setElementOrder list"
    );
}

#[test]
fn retain_keys_clears_unlisted_fields() {
    let current = pod_with("spec.volumes", json!([{"name": "v", "emptyDir": {}}]));
    let out = smp(
        &current,
        json!({"spec": {"volumes": [{
            "name": "v",
            "$retainKeys": ["name", "configMap"],
            "configMap": {"name": "cm"}
        }]}}),
    );
    assert_eq!(
        out["spec"]["volumes"],
        json!([{"name": "v", "configMap": {"name": "cm"}}])
    );
    let error = fails(run(
        Some(&current),
        SMP,
        &json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name"], "secret": {}}]}}),
        &pod_ctx(),
    ));
    assert_eq!(
        (error.code, error.message.as_str()),
        (400, "invalid patch format of retainKeys")
    );
}

#[test]
fn a_merge_list_item_needs_its_key() {
    let error = fails(run(
        Some(&pod()),
        SMP,
        &json!({"spec": {"containers": [{"image": "x"}]}}),
        &pod_ctx(),
    ));
    assert_eq!((error.code, error.reason), (500, ""));
    assert_eq!(
        error.message,
        "map: map[image:x] does not contain declared merge key: name"
    );
}

#[test]
fn list_item_types_must_agree() {
    let error = fails(run(
        Some(&pod()),
        SMP,
        &json!({"metadata": {"finalizers": [1]}}),
        &pod_ctx(),
    ));
    assert_eq!(error.code, 500);
    assert_eq!(
        error.message,
        "list element types are not identical: [[a b] [1]]"
    );

    let current = pod_with("metadata.finalizers", json!([]));
    let error = fails(run(
        Some(&current),
        SMP,
        &json!({"metadata": {"finalizers": [["x"]]}}),
        &pod_ctx(),
    ));
    assert_rejected(&error);
}

#[test]
fn lists_without_a_strategy_are_replaced() {
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}], "podCIDRs": ["10.0.0.0/24"]}
    });
    let patch = json!({"spec": {
        "taints": [{"key": "b", "effect": "NoExecute"}],
        "podCIDRs": ["fd00::/64"]
    }});
    let out = run(Some(&node), SMP, &patch, &node_ctx()).unwrap();
    assert_eq!(
        out["spec"]["taints"],
        json!([{"key": "b", "effect": "NoExecute"}])
    );
    assert_eq!(out["spec"]["podCIDRs"], json!(["fd00::/64", "10.0.0.0/24"]));
}

#[test]
fn service_ports_merge_by_port() {
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}
    });
    let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}});
    let out = run(Some(&service), SMP, &patch, &service_ctx()).unwrap();
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 80, "targetPort": 9090}, {"port": 443}])
    );
}

#[test]
fn the_body_must_be_an_object() {
    let error = fails(run_raw(Some(&pod()), SMP, "[1]", &pod_ctx()));
    assert_eq!((error.code, error.reason), (400, "BadRequest"));
    assert_eq!(
        error.message,
        "json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    assert_eq!(
        run_raw(Some(&pod()), SMP, "null", &pod_ctx()).unwrap(),
        pod()
    );
}

#[test]
fn new_values_are_cleaned_as_the_typed_decoder_cleans_them() {
    let patch = json!({"spec": {"containers": [{
        "name": "side",
        "image": "x",
        "tty": null,
        "env": [{"name": "E", "$patch": "delete"}]
    }]}});
    let out = smp(&pod(), patch);
    assert_eq!(
        out["spec"]["containers"][0],
        json!({"name": "side", "image": "x", "env": [{"name": "E"}]})
    );
}

#[test]
fn kind_and_api_version_cannot_be_patched() {
    let out = smp(&pod(), json!({"kind": "Service", "apiVersion": "v2"}));
    assert_eq!(out, pod());
}

#[test]
fn set_element_order_with_a_deletion_and_an_addition() {
    // Upstream "add map and delete map from merging list": the server's in-place
    // deletion and append decide where the live-only item lands.
    let current = pod_with(
        "spec.containers",
        json!([{"name": "c1"}, {"name": "c2", "image": "b"}, {"name": "c4", "image": "c"}]),
    );
    let out = smp(
        &current,
        json!({"spec": {
            "$setElementOrder/containers": [{"name": "c2"}, {"name": "c3"}],
            "containers": [{"name": "c3"}, {"name": "c1", "$patch": "delete"}]
        }}),
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "c2", "image": "b"}, {"name": "c4", "image": "c"}, {"name": "c3"}])
    );
}

#[test]
fn set_element_order_add_and_delete_preserving_order() {
    // Upstream "add and delete an item in a list and preserve order".
    let current = pod_with(
        "spec.containers",
        json!([{"name": "c1", "image": "a"}, {"name": "c2", "image": "b", "tty": true}, {"name": "c3", "image": "c"}]),
    );
    let out = smp(
        &current,
        json!({"spec": {
            "$setElementOrder/containers": [{"name": "c4"}, {"name": "c2"}, {"name": "c1"}],
            "containers": [{"name": "c4", "image": "d"}, {"name": "c3", "$patch": "delete"}]
        }}),
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "c4", "image": "d"}, {"name": "c2", "image": "b", "tty": true}, {"name": "c1", "image": "a"}])
    );

    // Upstream "add and delete an item in a int list and preserve order".
    let current = pod_with("metadata.finalizers", json!(["f1", "f2", "f3"]));
    let out = smp(
        &current,
        json!({"metadata": {
            "$setElementOrder/finalizers": ["f4", "f2", "f1"],
            "finalizers": ["f4"],
            "$deleteFromPrimitiveList/finalizers": ["f3"]
        }}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["f4", "f2", "f1"]));
}
