//! PATCH through the store: the patched object takes the update path (concurrency,
//! status split, validation, finalizers), and an apply patch creates a missing object.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure
#![allow(clippy::result_large_err)] // ApiError mirrors metav1.Status; see the crate root

mod store_support;

use serde_json::{Value, json};
use store_support::*;
use udn_kube_sim::{DeleteOptions, PatchKind, ResourceKey, Sim, Subresource, WriteOptions};

fn patch(
    sim: &Sim,
    key: &ResourceKey,
    name: &str,
    kind: PatchKind,
    body: &Value,
    subresource: Subresource,
) -> Result<Value, udn_kube_sim::ApiError> {
    let opts = WriteOptions {
        field_manager: (kind == PatchKind::Apply).then(|| "test".to_owned()),
        ..WriteOptions::default()
    };
    let bytes = serde_json::to_vec(body).unwrap();
    sim.patch(key, Some("blue"), name, kind, &bytes, subresource, &opts)
}

fn setup() -> Sim {
    let sim = sim();
    create_namespace(&sim, "blue");
    sim
}

#[test]
fn merge_patch_updates_the_stored_object() {
    let sim = setup();
    let pod = create_pod(&sim, "blue", pod("web"));
    let patched = patch(
        &sim,
        &pods(),
        "web",
        PatchKind::Merge,
        &json!({"metadata": {"labels": {"app": "web"}}, "status": {"phase": "Running"}}),
        Subresource::Main,
    )
    .unwrap();
    assert_eq!(patched["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(
        patched["status"]["phase"], "Pending",
        "status only through /status"
    );
    assert!(rv(&patched) > rv(&pod));
    assert_eq!(sim.get(&pods(), Some("blue"), "web").unwrap(), patched);
}

#[test]
fn status_patch_changes_only_the_status() {
    let sim = setup();
    create_pod(&sim, "blue", pod("web"));
    let patched = patch(
        &sim,
        &pods(),
        "web",
        PatchKind::Merge,
        &json!({"spec": {"nodeName": "node-1"}, "status": {"phase": "Running"}}),
        Subresource::Status,
    )
    .unwrap();
    assert_eq!(patched["status"]["phase"], "Running");
    assert!(patched["spec"].get("nodeName").is_none());
}

#[test]
fn patching_a_missing_object_is_not_found() {
    let sim = setup();
    let error = patch(
        &sim,
        &pods(),
        "web",
        PatchKind::Merge,
        &json!({"metadata": {"labels": {"a": "b"}}}),
        Subresource::Main,
    )
    .unwrap_err();
    assert_eq!(error.code, 404);
    assert_eq!(error.message, r#"pods "web" not found"#);
}

#[test]
fn a_resource_version_in_the_patch_is_a_precondition() {
    let sim = setup();
    create_pod(&sim, "blue", pod("web"));
    let error = patch(
        &sim,
        &pods(),
        "web",
        PatchKind::Merge,
        &json!({"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}}),
        Subresource::Main,
    )
    .unwrap_err();
    assert_eq!(error.code, 409);
    assert_eq!(error.reason, "Conflict");
}

#[test]
fn json_patch_removing_the_last_finalizer_deletes() {
    let sim = setup();
    let mut body = pod("web");
    body["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create_pod(&sim, "blue", body);
    sim.delete(&pods(), Some("blue"), "web", &DeleteOptions::default())
        .unwrap();
    assert!(exists(&sim, &pods(), Some("blue"), "web"));
    patch(
        &sim,
        &pods(),
        "web",
        PatchKind::Json,
        &json!([{"op": "remove", "path": "/metadata/finalizers/0"}]),
        Subresource::Main,
    )
    .unwrap();
    assert!(!exists(&sim, &pods(), Some("blue"), "web"));
}

#[test]
fn apply_creates_then_updates() {
    let sim = setup();
    let config = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]}});
    let created = patch(
        &sim,
        &pods(),
        "web",
        PatchKind::Apply,
        &config,
        Subresource::Main,
    )
    .unwrap();
    assert_eq!(created["metadata"]["labels"], json!({"app": "web"}));
    assert!(!meta(&created, "uid").as_str().unwrap().is_empty());
    assert_eq!(created["status"]["phase"], "Pending");
    let mut changed = config;
    changed["metadata"]["labels"] = json!({"app": "db"});
    let updated = patch(
        &sim,
        &pods(),
        "web",
        PatchKind::Apply,
        &changed,
        Subresource::Main,
    )
    .unwrap();
    assert_eq!(updated["metadata"]["labels"], json!({"app": "db"}));
    assert_eq!(meta(&updated, "uid"), meta(&created, "uid"));
}

#[test]
fn patched_custom_resources_are_validated() {
    let sim = setup();
    install_udn_crd(&sim);
    sim.create(&udns(), Some("blue"), udn("net"), &write())
        .unwrap();
    let error = patch(
        &sim,
        &udns(),
        "net",
        PatchKind::Merge,
        &json!({"spec": {"layer3": {"subnets": [{"cidr": "10.10.0.0/16"}, {"cidr": "10.10.1.0/24"}]}}}),
        Subresource::Main,
    )
    .unwrap_err();
    assert_eq!(error.code, 422);
    assert_eq!(
        error.message,
        r#"UserDefinedNetwork.k8s.ovn.org "net" is invalid: spec.layer3: Invalid value: Subnets must not overlap or contain each other"#
    );
    let patched = patch(
        &sim,
        &udns(),
        "net",
        PatchKind::Merge,
        &json!({"spec": {"layer3": {"subnets": [{"cidr": "10.10.0.0/16"}, {"cidr": "10.20.0.0/16"}]}}}),
        Subresource::Main,
    )
    .unwrap();
    assert_eq!(meta(&patched, "generation"), 2);
}
