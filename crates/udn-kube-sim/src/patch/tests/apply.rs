//! Server-side apply: create, merge, prune, conflicts, force, managedFields, errors.

use serde_json::{Value, json};

use super::*;

const APPLY: PatchKind = PatchKind::Apply;

fn udn_config(role: &str) -> Value {
    json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": "net", "namespace": "blue", "labels": {"team": "a"}},
        "spec": {"topology": "Layer2", "layer2": {"role": role, "subnets": ["10.0.0.0/16"]}}
    })
}

fn apply_as(
    manager: &'static str,
    current: Option<&Value>,
    config: &Value,
    ctx: PatchContext<'static>,
) -> Result<Value, ApiError> {
    run(current, APPLY, config, &by(manager, ctx))
}

fn created() -> Value {
    apply_as("a", None, &udn_config("Primary"), udn_ctx()).unwrap()
}

fn managers(object: &Value) -> Vec<(String, String)> {
    managed_fields(object)
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap().to_owned(),
                        e["operation"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
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

#[test]
fn apply_creates_with_an_apply_manager() {
    let out = created();
    let mut want = udn_config("Primary");
    want["metadata"]["managedFields"] = json!([{
        "manager": "a",
        "operation": "Apply",
        "apiVersion": "k8s.ovn.org/v1",
        "time": NOW,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:team": {}}},
            "f:spec": {"f:layer2": {"f:role": {}, "f:subnets": {}}, "f:topology": {}}
        }
    }]);
    assert_eq!(out, want);
    let text = serde_json::to_string(&managed_fields(&out)).unwrap();
    assert_eq!(
        text,
        r#"[{"manager":"a","operation":"Apply","apiVersion":"k8s.ovn.org/v1","time":"2024-05-01T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:team":{}}},"f:spec":{"f:layer2":{"f:role":{},"f:subnets":{}},"f:topology":{}}}}]"#
    );
}

#[test]
fn a_changed_field_owned_by_another_manager_conflicts() {
    let live = created();
    let mut config = udn_config("Secondary");
    config["metadata"]["labels"] = json!({});
    let error = fails(apply_as("b", Some(&live), &config, udn_ctx()));
    assert_eq!((error.code, error.reason), (409, "Conflict"));
    assert_eq!(
        error.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.layer2.role"
    );
    assert_eq!(error.causes.len(), 1);
    assert_eq!(error.causes[0].reason, "FieldManagerConflict");
    assert_eq!(error.causes[0].message, "conflict with \"a\"");
    assert_eq!(error.causes[0].field, ".spec.layer2.role");
    assert_eq!(error.name, None);
}

#[test]
fn the_same_value_is_shared_not_a_conflict() {
    let live = created();
    let config = json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": "net"},
        "spec": {"layer2": {"role": "Primary"}}
    });
    let out = apply_as("b", Some(&live), &config, udn_ctx()).unwrap();
    assert_eq!(out["spec"], live["spec"]);
    assert_eq!(
        fields_of(&out, "b"),
        json!({"f:spec": {"f:layer2": {"f:role": {}}}})
    );
    assert_eq!(fields_of(&out, "a"), fields_of(&live, "a"));
}

#[test]
fn force_takes_the_field_from_its_owner() {
    let live = created();
    let config = json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": "net"},
        "spec": {"layer2": {"role": "Secondary"}}
    });
    let ctx = PatchContext {
        force: true,
        ..udn_ctx()
    };
    let out = apply_as("b", Some(&live), &config, ctx).unwrap();
    assert_eq!(out["spec"]["layer2"]["role"], "Secondary");
    assert_eq!(
        fields_of(&out, "a"),
        json!({
            "f:metadata": {"f:labels": {"f:team": {}}},
            "f:spec": {"f:layer2": {"f:subnets": {}}, "f:topology": {}}
        })
    );
    assert_eq!(
        fields_of(&out, "b"),
        json!({"f:spec": {"f:layer2": {"f:role": {}}}})
    );
    assert_eq!(
        managers(&out),
        [
            ("a".to_owned(), "Apply".to_owned()),
            ("b".to_owned(), "Apply".to_owned())
        ]
    );
}

#[test]
fn conflicts_with_update_managers_name_their_version_and_several_are_listed() {
    let live = created();
    let forced = PatchContext {
        force: true,
        ..udn_ctx()
    };
    let b_config = json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": "net", "labels": {"team": "b"}},
        "spec": {"topology": "Layer3"}
    });
    let live = apply_as("b", Some(&live), &b_config, forced).unwrap();
    let edit = json!({"spec": {"layer2": {"role": "Secondary"}}});
    let live = run(Some(&live), PatchKind::Merge, &edit, &by("edit", udn_ctx())).unwrap();

    let error = fails(apply_as(
        "a",
        Some(&live),
        &udn_config("Primary"),
        udn_ctx(),
    ));
    assert_eq!(
        error.message,
        "Apply failed with 3 conflicts: conflicts with \"b\":\n- .metadata.labels.team\n- .spec.topology\nconflicts with \"edit\" using k8s.ovn.org/v1:\n- .spec.layer2.role"
    );
    let causes: Vec<(&str, &str)> = error
        .causes
        .iter()
        .map(|c| (c.message.as_str(), c.field.as_str()))
        .collect();
    assert_eq!(
        causes,
        [
            ("conflict with \"b\"", ".metadata.labels.team"),
            ("conflict with \"b\"", ".spec.topology"),
            (
                "conflict with \"edit\" using k8s.ovn.org/v1",
                ".spec.layer2.role"
            ),
        ]
    );
}

#[test]
fn fields_dropped_from_the_config_are_removed_unless_someone_else_owns_them() {
    let mut config = udn_config("Primary");
    config["metadata"]["labels"] = json!({"team": "a", "tier": "x", "zone": "z"});
    let live = apply_as("a", None, &config, udn_ctx()).unwrap();
    let shared = json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": "net", "labels": {"zone": "z"}}
    });
    let live = apply_as("b", Some(&live), &shared, udn_ctx()).unwrap();

    let out = apply_as("a", Some(&live), &udn_config("Primary"), udn_ctx()).unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"team": "a", "zone": "z"}));
    assert_eq!(
        fields_of(&out, "a"),
        json!({
            "f:metadata": {"f:labels": {"f:team": {}}},
            "f:spec": {"f:layer2": {"f:role": {}, "f:subnets": {}}, "f:topology": {}}
        })
    );

    let mut bare = udn_config("Primary");
    bare["spec"] = json!({"topology": "Layer2"});
    bare["metadata"]
        .as_object_mut()
        .unwrap()
        .shift_remove("labels");
    let out = apply_as("a", Some(&out), &bare, udn_ctx()).unwrap();
    assert_eq!(out["spec"], json!({"topology": "Layer2"}));
    assert_eq!(out["metadata"]["labels"], json!({"zone": "z"}));
}

#[test]
fn associative_lists_merge_by_key_and_items_have_their_own_owners() {
    let config = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1", "ports": [{"containerPort": 80}]}]}
    });
    let live = apply_as("a", None, &config, pod_ctx()).unwrap();
    assert_eq!(
        fields_of(&live, "a"),
        json!({"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
            ".": {}, "f:image": {}, "f:name": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
        }}}})
    );

    let sidecar = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "side", "image": "busybox"}]}
    });
    let live = apply_as("b", Some(&live), &sidecar, pod_ctx()).unwrap();
    assert_eq!(
        live["spec"]["containers"],
        json!([
            {"name": "nginx", "image": "nginx:1", "ports": [{"containerPort": 80}]},
            {"name": "side", "image": "busybox"}
        ])
    );

    let mut no_ports = config;
    no_ports["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .shift_remove("ports");
    let out = apply_as("a", Some(&live), &no_ports, pod_ctx()).unwrap();
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "nginx", "image": "nginx:1"}, {"name": "side", "image": "busybox"}])
    );
}

#[test]
fn list_order_follows_the_config_for_its_items() {
    let config = |names: &[&str]| {
        let containers: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
        json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"containers": containers}
        })
    };
    let live = apply_as("a", None, &config(&["x", "y", "z"]), pod_ctx()).unwrap();
    let out = apply_as("b", Some(&live), &config(&["w", "z", "x"]), pod_ctx()).unwrap();
    let names: Vec<&str> = out["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["y", "w", "z", "x"]);
}

#[test]
fn an_object_without_managers_gets_a_before_first_apply_manager() {
    let config = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web2"}}
    });
    let error = fails(apply_as("a", Some(&pod()), &config, pod_ctx()));
    assert_eq!(
        error.message,
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .metadata.labels.app"
    );

    let same = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}}});
    let out = apply_as("a", Some(&pod()), &same, pod_ctx()).unwrap();
    assert_eq!(
        managers(&out),
        [
            ("a".to_owned(), "Apply".to_owned()),
            ("before-first-apply".to_owned(), "Update".to_owned())
        ]
    );
    assert_eq!(
        fields_of(&out, "before-first-apply"),
        json!({
            "f:metadata": {
                "f:finalizers": {".": {}, "v:\"a\"": {}, "v:\"b\"": {}},
                "f:labels": {".": {}, "f:app": {}}
            },
            "f:spec": {"f:containers": {".": {}, "k:{\"name\":\"nginx\"}": {
                ".": {},
                "f:env": {".": {}, "k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}},
                "f:image": {},
                "f:name": {},
                "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
            }}}
        })
    );
    assert_eq!(
        fields_of(&out, "a"),
        json!({"f:metadata": {"f:labels": {"f:app": {}}}})
    );
}

#[test]
fn status_is_not_owned_through_the_main_resource_and_is_through_status() {
    let config = json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": "net"},
        "status": {"conditions": [{"type": "NetworkCreated", "status": "True"}]}
    });
    let live = created();
    let out = apply_as("ctl", Some(&live), &config, udn_ctx()).unwrap();
    assert_eq!(out["status"], config["status"]);
    assert_eq!(managers(&out), [("a".to_owned(), "Apply".to_owned())]);

    let status_ctx = PatchContext {
        subresource: Subresource::Status,
        ..udn_ctx()
    };
    let out = apply_as("ctl", Some(&live), &config, status_ctx).unwrap();
    let entry = managed_fields(&out)
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "ctl")
        .cloned()
        .unwrap();
    assert_eq!(
        entry,
        json!({
            "manager": "ctl",
            "operation": "Apply",
            "apiVersion": "k8s.ovn.org/v1",
            "time": NOW,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:conditions": {}}},
            "subresource": "status"
        })
    );
}

#[test]
fn a_no_op_apply_keeps_the_time() {
    let live = created();
    let later = PatchContext {
        now: LATER,
        ..udn_ctx()
    };
    let out = apply_as("a", Some(&live), &udn_config("Primary"), later.clone()).unwrap();
    assert_eq!(managed_fields(&out)[0]["time"], NOW);
    let out = apply_as("a", Some(&out), &udn_config("Secondary"), later).unwrap();
    assert_eq!(managed_fields(&out)[0]["time"], LATER);
    assert_eq!(out["spec"]["layer2"]["role"], "Secondary");
}

#[test]
fn yaml_bodies_are_accepted() {
    let yaml = "apiVersion: k8s.ovn.org/v1\nkind: UserDefinedNetwork\nmetadata:\n  name: net\n  namespace: blue\n  labels:\n    team: a\nspec:\n  topology: Layer2\n  layer2:\n    role: Primary\n    subnets:\n    - 10.0.0.0/16\n";
    let out = run_raw(None, APPLY, yaml, &by("a", udn_ctx())).unwrap();
    assert_eq!(out, created());
}

#[test]
fn the_field_manager_is_required() {
    let error = fails(run(None, APPLY, &udn_config("Primary"), &udn_ctx()));
    assert_eq!((error.code, error.reason), (422, "Invalid"));
    assert_eq!(
        error.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    assert_eq!(error.group.as_deref(), Some("meta.k8s.io"));
    assert_eq!(error.kind.as_deref(), Some("PatchOptions"));
    assert_eq!(error.causes[0].reason, "FieldValueRequired");
    assert_eq!(
        error.causes[0].message,
        "Required value: is required for apply patch"
    );
    assert_eq!(error.causes[0].field, "fieldManager");
}

#[test]
fn the_config_must_be_an_object_of_the_kind() {
    let mut wrong_kind = udn_config("Primary");
    wrong_kind["kind"] = json!("ClusterUserDefinedNetwork");
    let error = fails(apply_as("a", None, &wrong_kind, udn_ctx()));
    assert_eq!((error.code, error.reason), (400, "BadRequest"));
    assert_eq!(
        error.message,
        "invalid object type: k8s.ovn.org/v1, Kind=ClusterUserDefinedNetwork"
    );
    let pod_config = json!({"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "web"}});
    let error = fails(apply_as("a", None, &pod_config, pod_ctx()));
    assert_eq!(error.message, "invalid object type: apps/v1, Kind=Pod");
    let error = fails(apply_as("a", None, &json!({}), pod_ctx()));
    assert_eq!(error.message, "invalid object type: /, Kind=");

    let mut with_managed = udn_config("Primary");
    with_managed["metadata"]["managedFields"] = json!([]);
    let error = fails(apply_as("a", None, &with_managed, udn_ctx()));
    assert_eq!(error.message, "metadata.managedFields must be nil");

    let error = fails(run_raw(None, APPLY, "[1, 2]", &by("a", udn_ctx())));
    assert_eq!(
        error.message,
        "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    let error = fails(run_raw(None, APPLY, "a: [b", &by("a", udn_ctx())));
    assert_eq!(error.code, 400);
    assert!(
        error.message.starts_with("error encoding patch: "),
        "{}",
        error.message
    );
}

#[test]
fn list_items_need_keys_and_no_duplicates() {
    let config = |containers: Value| {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": containers}
        })
    };
    let error = fails(apply_as(
        "a",
        None,
        &config(json!([{"name": "a"}, {"name": "a"}])),
        pod_ctx(),
    ));
    assert_eq!((error.code, error.reason), (500, ""));
    assert_eq!(
        error.message,
        "failed to create typed patch object (default/web; /v1, Kind=Pod): .spec.containers: duplicate entries for key [name=\"a\"]"
    );
    let error = fails(apply_as(
        "a",
        None,
        &config(json!([{"image": "x"}])),
        pod_ctx(),
    ));
    assert_eq!(
        error.message,
        "failed to create typed patch object (default/web; /v1, Kind=Pod): .spec.containers: element 0: associative list with keys has an element that omits all key fields [\"name\"] (and doesn't have default values for any key fields)"
    );
}

#[test]
fn identity_checks() {
    let mut config = udn_config("Primary");
    config["metadata"]["uid"] = json!("1234");
    let error = fails(apply_as("a", None, &config, udn_ctx()));
    assert_eq!((error.code, error.reason), (409, "Conflict"));
    assert_eq!(
        error.message,
        "Operation cannot be fulfilled on userdefinednetworks.k8s.ovn.org \"net\": uid mismatch: the provided object specified uid 1234, and no existing object was found"
    );

    let mut config = udn_config("Primary");
    config["metadata"]["name"] = json!("other");
    let error = fails(apply_as("a", None, &config, udn_ctx()));
    assert_eq!(
        error.message,
        "the name of the object (other) does not match the name on the URL (net)"
    );

    let mut config = udn_config("Primary");
    config["metadata"]
        .as_object_mut()
        .unwrap()
        .shift_remove("namespace");
    let out = apply_as("a", None, &config, udn_ctx()).unwrap();
    assert_eq!(out["metadata"]["namespace"], "blue");
}
