//! Delete: finalizers and deletionTimestamp, namespace termination, garbage collection
//! through ownerReferences, deletecollection, preconditions, dry run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

mod store_support;

use serde_json::{Value, json};
use store_support::*;
use udn_kube_sim::{DeleteOptions, ListOptions, Propagation, Sim, Subresource};

fn with_finalizer(mut obj: Value, finalizer: &str) -> Value {
    obj["metadata"]["finalizers"] = json!([finalizer]);
    obj
}

fn owned_by(mut obj: Value, owner: &Value, block: bool) -> Value {
    obj["metadata"]["ownerReferences"] = json!([{
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    }]);
    obj
}

fn delete(sim: &Sim, namespace: &str, name: &str, propagation: Propagation) -> Value {
    let opts = DeleteOptions {
        propagation,
        ..DeleteOptions::default()
    };
    sim.delete(&pods(), Some(namespace), name, &opts).unwrap()
}

fn remove_finalizers(sim: &Sim, namespace: &str, name: &str) -> Value {
    let mut current = sim.get(&pods(), Some(namespace), name).unwrap();
    current["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("finalizers");
    sim.update(
        &pods(),
        Some(namespace),
        name,
        current,
        Subresource::Main,
        &write(),
    )
    .unwrap()
}

#[test]
fn delete_without_finalizers_removes_and_returns_the_last_state() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let pod = create_pod(&sim, "blue", pod("web"));
    let deleted = delete(&sim, "blue", "web", Propagation::Background);
    assert_eq!(meta(&deleted, "uid"), meta(&pod, "uid"));
    assert_eq!(rv(&deleted), rv(&pod) + 1, "the deletion's resourceVersion");
    assert!(!exists(&sim, &pods(), Some("blue"), "web"));
    let again = sim
        .delete(&pods(), Some("blue"), "web", &DeleteOptions::default())
        .unwrap_err();
    assert_eq!(again.code, 404);
    assert_eq!(again.message, r#"pods "web" not found"#);
}

#[test]
fn finalizers_hold_the_object_until_the_last_one_goes() {
    let sim = sim();
    create_namespace(&sim, "blue");
    create_pod(&sim, "blue", with_finalizer(pod("web"), "example.com/hold"));
    let marked = delete(&sim, "blue", "web", Propagation::Background);
    assert!(meta(&marked, "deletionTimestamp").is_string());
    assert_eq!(meta(&marked, "deletionGracePeriodSeconds"), 0);
    assert_eq!(meta(&marked, "finalizers"), &json!(["example.com/hold"]));
    assert_eq!(sim.get(&pods(), Some("blue"), "web").unwrap(), marked);
    // Deleting again changes nothing.
    let before = sim.resource_version();
    let again = delete(&sim, "blue", "web", Propagation::Background);
    assert_eq!(again, marked);
    assert_eq!(sim.resource_version(), before);
    // No new finalizer while deleting.
    let mut body = marked.clone();
    body["metadata"]["finalizers"] = json!(["example.com/hold", "example.com/more"]);
    let error = sim
        .update(
            &pods(),
            Some("blue"),
            "web",
            body,
            Subresource::Main,
            &write(),
        )
        .unwrap_err();
    assert_eq!(error.code, 422);
    assert_eq!(
        error.message,
        r#"Pod "web" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/more"}"#
    );
    // An update cannot clear the deletionTimestamp.
    let mut body = marked.clone();
    body["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("deletionTimestamp");
    body["metadata"]["labels"] = json!({"a": "b"});
    let kept = sim
        .update(
            &pods(),
            Some("blue"),
            "web",
            body,
            Subresource::Main,
            &write(),
        )
        .unwrap();
    assert_eq!(
        meta(&kept, "deletionTimestamp"),
        meta(&marked, "deletionTimestamp")
    );
    // Removing the last finalizer deletes.
    let result = remove_finalizers(&sim, "blue", "web");
    assert!(meta(&result, "finalizers").is_null());
    assert!(!exists(&sim, &pods(), Some("blue"), "web"));
}

#[test]
fn preconditions_must_match() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let pod = create_pod(&sim, "blue", pod("web"));
    let uid = meta(&pod, "uid").as_str().unwrap().to_owned();
    let wrong_uid = DeleteOptions {
        precondition_uid: Some("other".to_owned()),
        ..DeleteOptions::default()
    };
    let error = sim
        .delete(&pods(), Some("blue"), "web", &wrong_uid)
        .unwrap_err();
    assert_eq!(error.code, 409);
    assert_eq!(
        error.message,
        format!(
            r#"Operation cannot be fulfilled on Pod "web": the UID in the precondition (other) does not match the UID in record ({uid}). The object might have been deleted and then recreated"#
        )
    );
    let wrong_rv = DeleteOptions {
        precondition_resource_version: Some("1".to_owned()),
        ..DeleteOptions::default()
    };
    let error = sim
        .delete(&pods(), Some("blue"), "web", &wrong_rv)
        .unwrap_err();
    assert_eq!(
        error.message,
        format!(
            r#"Operation cannot be fulfilled on Pod "web": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({}). The object might have been modified"#,
            rv(&pod)
        )
    );
    let right = DeleteOptions {
        precondition_uid: Some(uid),
        precondition_resource_version: Some(rv(&pod).to_string()),
        ..DeleteOptions::default()
    };
    sim.delete(&pods(), Some("blue"), "web", &right).unwrap();
}

#[test]
fn dry_run_delete_keeps_the_object() {
    let sim = sim();
    create_namespace(&sim, "blue");
    create_pod(&sim, "blue", pod("web"));
    let dry = DeleteOptions {
        dry_run: true,
        ..DeleteOptions::default()
    };
    let result = sim.delete(&pods(), Some("blue"), "web", &dry).unwrap();
    assert_eq!(meta(&result, "name"), "web");
    assert!(exists(&sim, &pods(), Some("blue"), "web"));
}

#[test]
fn deleting_a_namespace_deletes_its_content_then_itself() {
    let sim = sim();
    create_namespace(&sim, "blue");
    create_namespace(&sim, "red");
    create_pod(&sim, "blue", pod("a"));
    create_pod(&sim, "blue", with_finalizer(pod("b"), "example.com/hold"));
    create_pod(&sim, "red", pod("c"));
    let marked = sim
        .delete(&namespaces(), None, "blue", &DeleteOptions::default())
        .unwrap();
    assert_eq!(marked["status"]["phase"], "Terminating");
    assert!(meta(&marked, "deletionTimestamp").is_string());
    // Content without finalizers is gone, the held pod is marked, the namespace stays.
    assert!(!exists(&sim, &pods(), Some("blue"), "a"));
    let held = sim.get(&pods(), Some("blue"), "b").unwrap();
    assert!(meta(&held, "deletionTimestamp").is_string());
    assert!(exists(&sim, &pods(), Some("red"), "c"));
    let ns = sim.get(&namespaces(), None, "blue").unwrap();
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    // A terminating namespace refuses new content.
    let error = sim
        .create(&pods(), Some("blue"), pod("new"), &write())
        .unwrap_err();
    assert_eq!(error.code, 403);
    assert_eq!(error.reason, "Forbidden");
    assert_eq!(
        error.message,
        r#"pods "new" is forbidden: unable to create new content in namespace blue because it is being terminated"#
    );
    assert_eq!(error.causes[0].reason, "NamespaceTerminating");
    assert_eq!(error.causes[0].field, "metadata.namespace");
    // The last object gone, the namespace is finalized and removed.
    remove_finalizers(&sim, "blue", "b");
    assert!(!exists(&sim, &namespaces(), None, "blue"));
    assert!(exists(&sim, &namespaces(), None, "red"));
}

#[test]
fn deleting_an_empty_namespace_removes_it_at_once() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let marked = sim
        .delete(&namespaces(), None, "blue", &DeleteOptions::default())
        .unwrap();
    assert_eq!(marked["status"]["phase"], "Terminating");
    assert!(!exists(&sim, &namespaces(), None, "blue"));
}

#[test]
fn background_collection_deletes_dependents_of_a_gone_owner() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let owner = create_pod(&sim, "blue", pod("owner"));
    let child = create_pod(&sim, "blue", owned_by(pod("child"), &owner, false));
    create_pod(&sim, "blue", owned_by(pod("grandchild"), &child, false));
    create_pod(&sim, "blue", pod("unrelated"));
    delete(&sim, "blue", "owner", Propagation::Background);
    assert!(!exists(&sim, &pods(), Some("blue"), "child"));
    assert!(!exists(&sim, &pods(), Some("blue"), "grandchild"));
    assert!(exists(&sim, &pods(), Some("blue"), "unrelated"));
}

#[test]
fn a_dependent_of_a_kind_the_server_does_not_serve_is_kept() {
    // The real collector cannot look the owner up (no REST mapping): it retries the item and
    // deletes nothing, e.g. virt-launcher pods owned by a VirtualMachineInstance without
    // KubeVirt's CRDs. A served kind with a missing uid is collected as before.
    let sim = sim();
    create_namespace(&sim, "blue");
    let mut launcher = pod("virt-launcher");
    launcher["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
        "name": "vm", "uid": "5f0c-no-such-object", "controller": true,
    }]);
    create_pod(&sim, "blue", launcher);
    let mut orphan = pod("orphan");
    orphan["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "v1", "kind": "Pod", "name": "gone", "uid": "5f0c-no-such-pod",
    }]);
    create_pod(&sim, "blue", orphan);
    assert!(exists(&sim, &pods(), Some("blue"), "virt-launcher"));
    assert!(!exists(&sim, &pods(), Some("blue"), "orphan"));
}

#[test]
fn a_dependent_with_another_live_owner_only_loses_the_reference() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let first = create_pod(&sim, "blue", pod("first"));
    let second = create_pod(&sim, "blue", pod("second"));
    let mut child = owned_by(pod("child"), &first, false);
    let second_ref = owned_by(pod("x"), &second, false)["metadata"]["ownerReferences"][0].clone();
    child["metadata"]["ownerReferences"]
        .as_array_mut()
        .unwrap()
        .push(second_ref);
    create_pod(&sim, "blue", child);
    delete(&sim, "blue", "first", Propagation::Background);
    let child = sim.get(&pods(), Some("blue"), "child").unwrap();
    let refs = meta(&child, "ownerReferences").as_array().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0]["uid"], second["metadata"]["uid"]);
}

#[test]
fn an_object_whose_owners_never_existed_is_collected() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let ghost = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ghost", "uid": "no-such-uid"}});
    let created = create_pod(&sim, "blue", owned_by(pod("orphan"), &ghost, false));
    assert_eq!(meta(&created, "name"), "orphan");
    assert!(!exists(&sim, &pods(), Some("blue"), "orphan"));
}

#[test]
fn orphan_propagation_removes_the_owner_reference() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let owner = create_pod(&sim, "blue", pod("owner"));
    create_pod(&sim, "blue", owned_by(pod("child"), &owner, true));
    let marked = delete(&sim, "blue", "owner", Propagation::Orphan);
    assert_eq!(meta(&marked, "finalizers"), &json!(["orphan"]));
    assert!(meta(&marked, "deletionTimestamp").is_string());
    assert!(!exists(&sim, &pods(), Some("blue"), "owner"));
    let child = sim.get(&pods(), Some("blue"), "child").unwrap();
    assert!(meta(&child, "ownerReferences").is_null());
}

#[test]
fn foreground_propagation_waits_for_blocking_dependents() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let owner = create_pod(&sim, "blue", pod("owner"));
    create_pod(
        &sim,
        "blue",
        owned_by(
            with_finalizer(pod("held"), "example.com/hold"),
            &owner,
            true,
        ),
    );
    create_pod(&sim, "blue", owned_by(pod("free"), &owner, true));
    let marked = delete(&sim, "blue", "owner", Propagation::Foreground);
    assert_eq!(meta(&marked, "finalizers"), &json!(["foregroundDeletion"]));
    // The free dependent is gone; the held one is marked and keeps the owner.
    assert!(!exists(&sim, &pods(), Some("blue"), "free"));
    let held = sim.get(&pods(), Some("blue"), "held").unwrap();
    assert!(meta(&held, "deletionTimestamp").is_string());
    let owner_now = sim.get(&pods(), Some("blue"), "owner").unwrap();
    assert_eq!(
        meta(&owner_now, "finalizers"),
        &json!(["foregroundDeletion"])
    );
    remove_finalizers(&sim, "blue", "held");
    assert!(!exists(&sim, &pods(), Some("blue"), "owner"));
}

#[test]
fn foreground_without_blocking_dependents_finishes_at_once() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let owner = create_pod(&sim, "blue", pod("owner"));
    create_pod(&sim, "blue", owned_by(pod("child"), &owner, false));
    delete(&sim, "blue", "owner", Propagation::Foreground);
    assert!(!exists(&sim, &pods(), Some("blue"), "owner"));
    assert!(!exists(&sim, &pods(), Some("blue"), "child"));
}

#[test]
fn delete_collection_deletes_what_the_selectors_select() {
    let sim = sim();
    create_namespace(&sim, "blue");
    create_namespace(&sim, "red");
    for (ns, name, app) in [
        ("blue", "a", "web"),
        ("blue", "b", "db"),
        ("blue", "c", "web"),
        ("red", "d", "web"),
    ] {
        let mut body = pod(name);
        body["metadata"]["labels"] = json!({"app": app});
        create_pod(&sim, ns, body);
    }
    let list = ListOptions {
        label_selector: Some("app=web".to_owned()),
        ..ListOptions::default()
    };
    let deleted = sim
        .delete_collection(&pods(), Some("blue"), &list, &DeleteOptions::default())
        .unwrap();
    assert_eq!(deleted["kind"], "PodList");
    assert_eq!(names(&deleted), ["a", "c"]);
    let left = sim.list(&pods(), None, &ListOptions::default()).unwrap();
    assert_eq!(names(&left), ["b", "d"]);
}

fn bound_pod(name: &str) -> Value {
    let mut body = pod(name);
    body["spec"]["nodeName"] = json!("node1");
    body
}

#[test]
fn bound_pods_are_deleted_gracefully_until_a_delete_without_grace() {
    let sim = store_support::sim();
    create_namespace(&sim, "g");
    create_pod(&sim, "g", bound_pod("web"));
    let marked = sim
        .delete(&pods(), Some("g"), "web", &DeleteOptions::default())
        .unwrap();
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let stored = sim.get(&pods(), Some("g"), "web").unwrap();
    assert_eq!(
        stored["metadata"]["deletionTimestamp"],
        marked["metadata"]["deletionTimestamp"]
    );
    // A longer grace changes nothing; a shorter one moves the deadline back.
    let longer = DeleteOptions {
        grace_period_seconds: Some(60),
        ..DeleteOptions::default()
    };
    let same = sim.delete(&pods(), Some("g"), "web", &longer).unwrap();
    assert_eq!(
        same["metadata"]["resourceVersion"],
        stored["metadata"]["resourceVersion"]
    );
    let shorter = DeleteOptions {
        grace_period_seconds: Some(10),
        ..DeleteOptions::default()
    };
    let shortened = sim.delete(&pods(), Some("g"), "web", &shorter).unwrap();
    assert_eq!(shortened["metadata"]["deletionGracePeriodSeconds"], 10);
    let now = DeleteOptions {
        grace_period_seconds: Some(0),
        precondition_uid: Some(stored["metadata"]["uid"].as_str().unwrap().to_owned()),
        ..DeleteOptions::default()
    };
    sim.delete(&pods(), Some("g"), "web", &now).unwrap();
    assert_eq!(sim.get(&pods(), Some("g"), "web").unwrap_err().code, 404);
    // Unbound: removed at once.
    create_pod(&sim, "g", pod("pending"));
    sim.delete(&pods(), Some("g"), "pending", &DeleteOptions::default())
        .unwrap();
    assert_eq!(
        sim.get(&pods(), Some("g"), "pending").unwrap_err().code,
        404
    );
}

#[test]
fn a_namespace_waits_for_its_bound_pods() {
    let sim = store_support::sim();
    create_namespace(&sim, "t");
    create_pod(&sim, "t", bound_pod("web"));
    sim.delete(&namespaces(), None, "t", &DeleteOptions::default())
        .unwrap();
    let terminating = sim.get(&pods(), Some("t"), "web").unwrap();
    assert!(terminating["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        sim.get(&namespaces(), None, "t").unwrap()["status"]["phase"],
        "Terminating"
    );
    let now = DeleteOptions {
        grace_period_seconds: Some(0),
        ..DeleteOptions::default()
    };
    sim.delete(&pods(), Some("t"), "web", &now).unwrap();
    assert_eq!(sim.get(&namespaces(), None, "t").unwrap_err().code, 404);
}
