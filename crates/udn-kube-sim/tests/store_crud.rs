//! Create, get, update: system metadata, names, namespaces, optimistic concurrency,
//! generation, the status subresource, dry run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

mod store_support;

use serde_json::{Value, json};
use store_support::*;
use udn_kube_sim::{Subresource, WriteOptions};

const NAME_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

#[test]
fn create_fills_in_system_metadata() {
    let sim = sim();
    let ns = create_namespace(&sim, "blue");
    let pod = create_pod(&sim, "blue", pod("web"));
    assert_eq!(pod["apiVersion"], "v1");
    assert_eq!(pod["kind"], "Pod");
    assert_eq!(meta(&pod, "namespace"), "blue");
    let uid = meta(&pod, "uid").as_str().unwrap();
    assert_eq!(uid.len(), 36);
    assert_eq!(uid.as_bytes()[14], b'4', "a UUID v4: {uid}");
    assert_ne!(uid, meta(&ns, "uid").as_str().unwrap());
    let created = meta(&pod, "creationTimestamp").as_str().unwrap();
    assert!(created.parse::<jiff::Timestamp>().is_ok(), "{created}");
    assert_eq!(created.len(), "2026-01-01T00:00:00Z".len(), "{created}");
    assert_eq!(rv(&pod), rv(&ns) + 1);
    assert_eq!(sim.resource_version(), rv(&pod));
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(pod["status"]["qosClass"], "BestEffort");
    assert!(
        meta(&pod, "generation").is_null(),
        "pods carry no generation"
    );
    assert_eq!(sim.get(&pods(), Some("blue"), "web").unwrap(), pod);
}

#[test]
fn generate_name_appends_five_server_characters() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let body = json!({"metadata": {"generateName": "web-"}, "spec": {"containers": []}});
    let first = create_pod(&sim, "blue", body.clone());
    let second = create_pod(&sim, "blue", body);
    let name = meta(&first, "name").as_str().unwrap();
    assert_eq!(name.len(), 9);
    assert!(name.starts_with("web-"));
    assert!(
        name[4..].chars().all(|c| NAME_ALPHABET.contains(c)),
        "{name}"
    );
    assert_ne!(meta(&first, "name"), meta(&second, "name"));
    assert_eq!(meta(&first, "generateName"), "web-");
}

#[test]
fn missing_and_duplicate_objects() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let missing = sim.get(&pods(), Some("blue"), "web").unwrap_err();
    assert_eq!(missing.code, 404);
    assert_eq!(missing.reason, "NotFound");
    assert_eq!(missing.message, r#"pods "web" not found"#);
    create_pod(&sim, "blue", pod("web"));
    let duplicate = sim
        .create(&pods(), Some("blue"), pod("web"), &write())
        .unwrap_err();
    assert_eq!(duplicate.code, 409);
    assert_eq!(duplicate.reason, "AlreadyExists");
    assert_eq!(duplicate.message, r#"pods "web" already exists"#);
    let unknown = sim
        .get(&key("example.com", "widgets"), None, "w")
        .unwrap_err();
    assert_eq!(unknown.code, 404);
    assert_eq!(
        unknown.message,
        "the server could not find the requested resource"
    );
}

#[test]
fn namespace_of_body_and_request_must_agree() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let mut body = pod("web");
    body["metadata"]["namespace"] = json!("red");
    let error = sim
        .create(&pods(), Some("blue"), body, &write())
        .unwrap_err();
    assert_eq!(error.code, 400);
    assert_eq!(error.reason, "BadRequest");
    assert_eq!(
        error.message,
        "the namespace of the provided object does not match the namespace sent on the request"
    );
}

#[test]
fn namespaced_objects_need_an_existing_namespace() {
    let sim = sim();
    let error = sim
        .create(&pods(), Some("nope"), pod("web"), &write())
        .unwrap_err();
    assert_eq!(error.code, 404);
    assert_eq!(error.message, r#"namespaces "nope" not found"#);
    assert_eq!(
        error.to_status()["details"],
        json!({"name": "nope", "kind": "namespaces"})
    );
}

#[test]
fn namespaces_get_their_label_finalizer_and_phase() {
    let sim = sim();
    let ns = create_namespace(&sim, "blue");
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "blue"
    );
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(ns["status"], json!({"phase": "Active"}));
    let error = sim
        .create(
            &namespaces(),
            None,
            json!({"metadata": {"name": "a.b"}}),
            &write(),
        )
        .unwrap_err();
    assert_eq!(error.code, 422);
    assert_eq!(error.reason, "Invalid");
    assert_eq!(
        error.message,
        r#"Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#
    );
    assert_eq!(error.causes.len(), 1);
    assert_eq!(error.causes[0].reason, "FieldValueInvalid");
    assert_eq!(error.causes[0].field, "metadata.name");
}

#[test]
fn names_are_required_and_checked_per_type() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let error = sim
        .create(&pods(), Some("blue"), json!({"metadata": {}}), &write())
        .unwrap_err();
    assert_eq!(
        error.message,
        r#"Pod "" is invalid: metadata.name: Required value: name or generateName is required"#
    );
    let error = sim
        .create(
            &services(),
            Some("blue"),
            json!({"metadata": {"name": "1web"}, "spec": {}}),
            &write(),
        )
        .unwrap_err();
    assert_eq!(
        error.message,
        r#"Service "1web" is invalid: metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#
    );
}

#[test]
fn services_get_defaults_and_a_cluster_ip() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let body = json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}});
    let svc = sim
        .create(&services(), Some("blue"), body, &write())
        .unwrap();
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["clusterIP"], "10.96.0.1");
    assert_eq!(svc["spec"]["clusterIPs"], json!(["10.96.0.1"]));
    assert_eq!(
        svc["spec"]["ports"][0],
        json!({"port": 80, "protocol": "TCP", "targetPort": 80})
    );
    assert_eq!(svc["status"], json!({"loadBalancer": {}}));
}

#[test]
fn create_refuses_a_resource_version() {
    let sim = sim();
    let error = sim
        .create(
            &namespaces(),
            None,
            json!({"metadata": {"name": "blue", "resourceVersion": "5"}}),
            &write(),
        )
        .unwrap_err();
    assert_eq!(error.code, 500);
    assert_eq!(
        error.message,
        "Internal error occurred: resourceVersion should not be set on objects to be created"
    );
}

#[test]
fn update_checks_the_resource_version() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let pod = create_pod(&sim, "blue", pod("web"));
    let mut changed = pod.clone();
    changed["metadata"]["labels"] = json!({"app": "web"});
    let updated = sim
        .update(
            &pods(),
            Some("blue"),
            "web",
            changed.clone(),
            Subresource::Main,
            &write(),
        )
        .unwrap();
    assert!(rv(&updated) > rv(&pod));
    assert_eq!(updated["metadata"]["labels"], json!({"app": "web"}));
    let stale = sim
        .update(
            &pods(),
            Some("blue"),
            "web",
            changed,
            Subresource::Main,
            &write(),
        )
        .unwrap_err();
    assert_eq!(stale.code, 409);
    assert_eq!(stale.reason, "Conflict");
    assert_eq!(
        stale.message,
        r#"Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again"#
    );
    // No resourceVersion: unconditional for built-in types.
    let mut unconditional = updated;
    unconditional["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    unconditional["metadata"]["labels"] = json!({"app": "db"});
    let forced = sim
        .update(
            &pods(),
            Some("blue"),
            "web",
            unconditional,
            Subresource::Main,
            &write(),
        )
        .unwrap();
    assert_eq!(forced["metadata"]["labels"], json!({"app": "db"}));
}

#[test]
fn update_of_a_missing_object() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let error = sim
        .update(
            &pods(),
            Some("blue"),
            "web",
            pod("web"),
            Subresource::Main,
            &write(),
        )
        .unwrap_err();
    assert_eq!(error.message, r#"pods "web" not found"#);
    // Leases (like Events) are created by a PUT.
    let lease = json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a"}});
    let created = sim
        .update(
            &leases(),
            Some("blue"),
            "leader",
            lease,
            Subresource::Main,
            &write(),
        )
        .unwrap();
    assert_eq!(created["kind"], "Lease");
    assert!(!meta(&created, "uid").as_str().unwrap().is_empty());
}

#[test]
fn update_keeps_immutable_metadata() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let pod = create_pod(&sim, "blue", pod("web"));
    let mut body = pod.clone();
    body["metadata"]["creationTimestamp"] = json!("2000-01-01T00:00:00Z");
    body["metadata"]["labels"] = json!({"a": "b"});
    let updated = sim
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
        meta(&updated, "creationTimestamp"),
        meta(&pod, "creationTimestamp")
    );
    let mut body = updated.clone();
    body["metadata"]["uid"] = json!("other");
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
        r#"Pod "web" is invalid: metadata.uid: Invalid value: "other": field is immutable"#
    );
    let mut body = updated;
    body["metadata"]["name"] = json!("db");
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
    assert_eq!(error.code, 400);
    assert_eq!(
        error.message,
        "the name of the object (db) does not match the name on the URL (web)"
    );
}

#[test]
fn a_no_op_update_keeps_the_resource_version() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let pod = create_pod(&sim, "blue", pod("web"));
    let before = sim.resource_version();
    let same = sim
        .update(
            &pods(),
            Some("blue"),
            "web",
            pod.clone(),
            Subresource::Main,
            &write(),
        )
        .unwrap();
    assert_eq!(same, pod);
    assert_eq!(sim.resource_version(), before);
}

#[test]
fn status_and_spec_are_written_separately() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let pod = create_pod(&sim, "blue", pod("web"));
    // Main resource: the status in the body is ignored.
    let mut body = pod;
    body["status"]["phase"] = json!("Running");
    body["spec"]["nodeName"] = json!("node-1");
    let updated = sim
        .update(
            &pods(),
            Some("blue"),
            "web",
            body,
            Subresource::Main,
            &write(),
        )
        .unwrap();
    assert_eq!(updated["status"]["phase"], "Pending");
    assert_eq!(updated["spec"]["nodeName"], "node-1");
    // Status: only the status changes.
    let mut body = updated.clone();
    body["status"]["phase"] = json!("Running");
    body["spec"]["nodeName"] = json!("node-2");
    body["metadata"]["labels"] = json!({"ignored": "yes"});
    let status = sim
        .update(
            &pods(),
            Some("blue"),
            "web",
            body,
            Subresource::Status,
            &write(),
        )
        .unwrap();
    assert_eq!(status["status"]["phase"], "Running");
    assert_eq!(status["spec"]["nodeName"], "node-1");
    assert!(meta(&status, "labels").is_null());
    assert!(rv(&status) > rv(&updated));
    // Types without a status subresource have no /status.
    let lease = sim
        .create(
            &leases(),
            Some("blue"),
            json!({"metadata": {"name": "l"}}),
            &write(),
        )
        .unwrap();
    let error = sim
        .update(
            &leases(),
            Some("blue"),
            "l",
            lease,
            Subresource::Status,
            &write(),
        )
        .unwrap_err();
    assert_eq!(error.code, 404);
}

#[test]
fn node_status_writes_keep_label_and_annotation_changes_and_nothing_else() {
    let sim = sim();
    let node = sim
        .create(
            &nodes(),
            None,
            json!({"metadata": {"name": "node-1"}, "spec": {"podCIDR": "10.0.0.0/24"}}),
            &write(),
        )
        .unwrap();
    let mut body = node;
    body["metadata"]["annotations"] = json!({"k8s.ovn.org/node-id": "2"});
    body["metadata"]["labels"] = json!({"zone": "a"});
    body["spec"]["podCIDR"] = json!("10.9.0.0/24");
    body["status"]["phase"] = json!("Running");
    let updated = sim
        .update(
            &nodes(),
            None,
            "node-1",
            body,
            Subresource::Status,
            &write(),
        )
        .unwrap();
    assert_eq!(meta(&updated, "annotations")["k8s.ovn.org/node-id"], "2");
    assert_eq!(meta(&updated, "labels")["zone"], "a");
    assert_eq!(updated["spec"]["podCIDR"], "10.0.0.0/24");
    assert_eq!(updated["status"]["phase"], "Running");
}

#[test]
fn nodes_keep_the_status_they_are_created_with() {
    let sim = sim();
    let node = sim
        .create(
            &nodes(),
            None,
            json!({"metadata": {"name": "node-1"}, "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}),
            &write(),
        )
        .unwrap();
    assert_eq!(node["status"]["addresses"][0]["address"], "10.0.0.1");
    assert!(meta(&node, "namespace").is_null());
}

#[test]
fn generation_follows_spec_changes() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let slice = json!({
        "metadata": {"name": "web-abc"},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}],
    });
    let slice = sim
        .create(&endpoint_slices(), Some("blue"), slice, &write())
        .unwrap();
    assert_eq!(meta(&slice, "generation"), 1);
    let mut body = slice;
    body["metadata"]["annotations"] = json!({"note": "x"});
    let annotated = sim
        .update(
            &endpoint_slices(),
            Some("blue"),
            "web-abc",
            body,
            Subresource::Main,
            &write(),
        )
        .unwrap();
    assert_eq!(meta(&annotated, "generation"), 1);
    let mut body = annotated;
    body["endpoints"] = json!([{"addresses": ["10.0.0.2"]}]);
    body["metadata"]["generation"] = json!(7);
    let moved = sim
        .update(
            &endpoint_slices(),
            Some("blue"),
            "web-abc",
            body,
            Subresource::Main,
            &write(),
        )
        .unwrap();
    assert_eq!(meta(&moved, "generation"), 2);
}

#[test]
fn dry_run_writes_nothing() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let dry = WriteOptions {
        dry_run: true,
        ..WriteOptions::default()
    };
    let before = sim.resource_version();
    let pod = sim.create(&pods(), Some("blue"), pod("web"), &dry).unwrap();
    assert_eq!(meta(&pod, "name"), "web");
    assert!(meta(&pod, "resourceVersion").is_null());
    assert!(!exists(&sim, &pods(), Some("blue"), "web"));
    let stored = create_pod(&sim, "blue", pod_with_label("web"));
    let mut body = stored.clone();
    body["metadata"]["labels"] = json!({"app": "changed"});
    let result = sim
        .update(&pods(), Some("blue"), "web", body, Subresource::Main, &dry)
        .unwrap();
    assert_eq!(result["metadata"]["labels"]["app"], "changed");
    assert_eq!(sim.get(&pods(), Some("blue"), "web").unwrap(), stored);
    assert_eq!(sim.resource_version(), before + 1);
}

fn pod_with_label(name: &str) -> Value {
    let mut pod = pod(name);
    pod["metadata"]["labels"] = json!({"app": "web"});
    pod
}
