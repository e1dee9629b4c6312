//! Server-side apply of a custom resource through the store follows its CRD's structural
//! schema: the UDN CRD's `status.conditions` (`x-kubernetes-list-type: map`, keyed by
//! `type`) is owned condition by condition, so two controllers each applying their own
//! condition keep both, as on a real server; its atomic lists stay atomic.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure
#![allow(clippy::result_large_err)] // ApiError mirrors metav1.Status; see the crate root

mod store_support;

use serde_json::{Value, json};
use store_support::*;
use udn_kube_sim::{ApiError, PatchKind, Sim, Subresource, WriteOptions};

const UDN_CONTROLLER: &str = "user-defined-network-controller";
const CLUSTER_CONTROLLER: &str = "NetworkClusterController";
const TIME: &str = "2024-05-01T10:00:00Z";

fn setup() -> Sim {
    let sim = sim();
    create_namespace(&sim, "blue");
    install_udn_crd(&sim);
    sim.create(&udns(), Some("blue"), udn("net"), &write())
        .unwrap();
    sim
}

fn condition(kind: &str, status: &str, reason: &str) -> Value {
    json!({
        "type": kind,
        "status": status,
        "reason": reason,
        "message": format!("{kind} is {status}"),
        "lastTransitionTime": TIME,
    })
}

fn apply(
    sim: &Sim,
    manager: &str,
    force: bool,
    conditions: &[Value],
    subresource: Subresource,
) -> Result<Value, ApiError> {
    let body = json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": "net", "namespace": "blue"},
        "status": {"conditions": conditions},
    });
    let opts = WriteOptions {
        field_manager: Some(manager.to_owned()),
        force,
        ..WriteOptions::default()
    };
    sim.patch(
        &udns(),
        Some("blue"),
        "net",
        PatchKind::Apply,
        &serde_json::to_vec(&body).unwrap(),
        subresource,
        &opts,
    )
}

fn apply_status(sim: &Sim, manager: &str, force: bool, conditions: &[Value]) -> Value {
    apply(sim, manager, force, conditions, Subresource::Status).unwrap()
}

fn created() -> Value {
    condition(
        "NetworkCreated",
        "True",
        "NetworkAttachmentDefinitionCreated",
    )
}

fn allocated() -> Value {
    condition(
        "NetworkAllocationSucceeded",
        "True",
        "NetworkAllocationSucceeded",
    )
}

/// The condition types `manager` owns (from its `fieldsV1`).
fn owned_types(object: &Value, manager: &str) -> Vec<String> {
    let entries = object["metadata"]["managedFields"].as_array().unwrap();
    let Some(entry) = entries.iter().find(|e| e["manager"] == manager) else {
        return Vec::new();
    };
    assert_eq!(entry["subresource"], "status");
    entry["fieldsV1"]["f:status"]["f:conditions"]
        .as_object()
        .map(|items| {
            items
                .keys()
                .map(|key| {
                    let element: Value =
                        serde_json::from_str(key.strip_prefix("k:").unwrap()).unwrap();
                    element["type"].as_str().unwrap().to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn both(sim: &Sim) -> Value {
    apply_status(sim, UDN_CONTROLLER, false, &[created()]);
    apply_status(sim, CLUSTER_CONTROLLER, true, &[allocated()])
}

#[test]
fn conditions_applied_by_two_managers_coexist() {
    let sim = setup();
    let out = both(&sim);
    assert_eq!(out["status"]["conditions"], json!([created(), allocated()]));
    assert_eq!(owned_types(&out, UDN_CONTROLLER), ["NetworkCreated"]);
    assert_eq!(
        owned_types(&out, CLUSTER_CONTROLLER),
        ["NetworkAllocationSucceeded"]
    );
    assert_eq!(sim.get(&udns(), Some("blue"), "net").unwrap(), out);
}

#[test]
fn reapplying_a_changed_condition_changes_only_that_entry() {
    let sim = setup();
    both(&sim);
    let failed = condition("NetworkCreated", "False", "SyncError");
    let out = apply_status(&sim, UDN_CONTROLLER, false, std::slice::from_ref(&failed));
    assert_eq!(out["status"]["conditions"], json!([failed, allocated()]));
    assert_eq!(owned_types(&out, UDN_CONTROLLER), ["NetworkCreated"]);
    assert_eq!(
        owned_types(&out, CLUSTER_CONTROLLER),
        ["NetworkAllocationSucceeded"]
    );
}

#[test]
fn an_unchanged_apply_writes_nothing() {
    let sim = setup();
    let before = both(&sim);
    let after = apply_status(&sim, UDN_CONTROLLER, false, &[created()]);
    assert_eq!(after, before);
}

#[test]
fn a_manager_dropping_its_condition_removes_only_its_own() {
    let sim = setup();
    both(&sim);
    let out = apply_status(&sim, UDN_CONTROLLER, false, &[]);
    assert_eq!(out["status"]["conditions"], json!([allocated()]));
    assert_eq!(owned_types(&out, UDN_CONTROLLER), Vec::<String>::new());
    assert_eq!(
        owned_types(&out, CLUSTER_CONTROLLER),
        ["NetworkAllocationSucceeded"]
    );
}

#[test]
fn the_same_condition_from_another_manager_conflicts_unless_forced() {
    let sim = setup();
    both(&sim);
    let failed = condition("NetworkAllocationSucceeded", "False", "InternalError");
    let error = apply(
        &sim,
        UDN_CONTROLLER,
        false,
        &[created(), failed.clone()],
        Subresource::Status,
    )
    .unwrap_err();
    assert_eq!((error.code, error.reason), (409, "Conflict"));
    assert_eq!(
        error.message,
        "Apply failed with 3 conflicts: conflicts with \"NetworkClusterController\" with subresource \"status\":\n\
         - .status.conditions[type=\"NetworkAllocationSucceeded\"].message\n\
         - .status.conditions[type=\"NetworkAllocationSucceeded\"].reason\n\
         - .status.conditions[type=\"NetworkAllocationSucceeded\"].status"
    );
    let out = apply_status(&sim, UDN_CONTROLLER, true, &[created(), failed.clone()]);
    assert_eq!(out["status"]["conditions"], json!([created(), failed]));
    assert_eq!(
        owned_types(&out, UDN_CONTROLLER),
        ["NetworkAllocationSucceeded", "NetworkCreated"]
    );
}

fn cudn(selector: Value) -> Value {
    json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "ClusterUserDefinedNetwork",
        "metadata": {"name": "green"},
        "spec": {
            "namespaceSelector": selector,
            "network": {"topology": "Layer2", "layer2": {"role": "Secondary", "subnets": ["10.0.0.0/16"]}},
        },
    })
}

fn apply_cudn(sim: &Sim, manager: &str, force: bool, body: &Value) -> Result<Value, ApiError> {
    let opts = WriteOptions {
        field_manager: Some(manager.to_owned()),
        force,
        ..WriteOptions::default()
    };
    sim.patch(
        &key("k8s.ovn.org", "clusteruserdefinednetworks"),
        None,
        "green",
        PatchKind::Apply,
        &serde_json::to_vec(body).unwrap(),
        Subresource::Main,
        &opts,
    )
}

#[test]
fn atomic_lists_and_maps_of_the_crd_are_owned_and_replaced_whole() {
    let sim = setup();
    let crd =
        udn_api::crd::to_manifest_json(&udn_api::crd::cluster_user_defined_network_crd()).unwrap();
    sim.create(&crds(), None, crd, &write()).unwrap();
    let first = apply_cudn(&sim, "a", false, &cudn(json!({"matchLabels": {"x": "1"}}))).unwrap();
    let spec = &first["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    assert_eq!(
        spec["f:namespaceSelector"],
        json!({}),
        "an atomic map is one field"
    );
    assert_eq!(
        spec["f:network"]["f:layer2"]["f:subnets"],
        json!({}),
        "an atomic list is one field"
    );
    let other = cudn(json!({"matchLabels": {"y": "2"}}));
    let error = apply_cudn(&sim, "b", false, &other).unwrap_err();
    assert_eq!(
        error.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.namespaceSelector"
    );
    let out = apply_cudn(&sim, "b", true, &other).unwrap();
    assert_eq!(
        out["spec"]["namespaceSelector"],
        json!({"matchLabels": {"y": "2"}})
    );
    let a = out["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "a")
        .unwrap();
    assert_eq!(a["fieldsV1"]["f:spec"].get("f:namespaceSelector"), None);
}
