//! CustomResourceDefinitions: registration and status, validation of custom resources
//! (schema and CEL, transition rules), generation and status rules, CRD deletion.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

mod store_support;

use serde_json::{Value, json};
use store_support::*;
use udn_kube_sim::{DeleteOptions, ListOptions, Sim, Subresource};

fn widget_crd(name: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "scope": "Cluster",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "maximum": 10, "default": 1}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                }}},
            }],
        },
    })
}

fn widgets() -> udn_kube_sim::ResourceKey {
    key("example.com", "widgets")
}

fn udn_in(sim: &Sim, namespace: &str, name: &str) -> Value {
    sim.create(&udns(), Some(namespace), udn(name), &write())
        .unwrap()
}

#[test]
fn a_crd_is_established_and_served() {
    let sim = sim();
    assert!(
        sim.resource_type("k8s.ovn.org", "v1", "userdefinednetworks")
            .is_none()
    );
    let crd = install_udn_crd(&sim);
    assert_eq!(meta(&crd, "generation"), 1);
    let conditions = crd["status"]["conditions"].as_array().unwrap();
    let condition = |kind: &str| {
        conditions
            .iter()
            .find(|c| c["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} condition"))
    };
    assert_eq!(condition("NamesAccepted")["status"], "True");
    assert_eq!(condition("NamesAccepted")["reason"], "NoConflicts");
    assert_eq!(condition("Established")["status"], "True");
    assert_eq!(condition("Established")["reason"], "InitialNamesAccepted");
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "UserDefinedNetwork");
    assert_eq!(crd["status"]["acceptedNames"]["shortNames"], json!(["udn"]));
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    let served = sim
        .resource_type("k8s.ovn.org", "v1", "userdefinednetworks")
        .unwrap();
    assert_eq!(served.kind, "UserDefinedNetwork");
    assert_eq!(served.list_kind, "UserDefinedNetworkList");
    assert_eq!(served.singular, "userdefinednetwork");
    assert_eq!(served.short_names, ["udn"]);
    assert!(served.namespaced);
    assert!(served.status_subresource);
    assert_eq!(served.validators.len(), 1);
    assert_eq!(served.printer_columns.len(), 4);
    assert!(
        sim.resource_type("k8s.ovn.org", "v2", "userdefinednetworks")
            .is_none()
    );
    assert!(
        sim.resource_types()
            .iter()
            .any(|t| t.plural == "userdefinednetworks")
    );
}

#[test]
fn a_custom_resource_is_validated_with_the_crd_cel_rules() {
    let sim = sim();
    install_udn_crd(&sim);
    create_namespace(&sim, "blue");
    let mut bad = udn("net");
    bad["spec"]["layer3"]["subnets"] = json!([{"cidr": "10.10.0.0/16"}, {"cidr": "10.10.1.0/24"}]);
    let error = sim
        .create(&udns(), Some("blue"), bad, &write())
        .unwrap_err();
    assert_eq!(error.code, 422);
    assert_eq!(error.reason, "Invalid");
    assert_eq!(
        error.message,
        r#"UserDefinedNetwork.k8s.ovn.org "net" is invalid: spec.layer3: Invalid value: Subnets must not overlap or contain each other"#
    );
    assert_eq!(error.causes.len(), 1);
    assert_eq!(error.causes[0].reason, "FieldValueInvalid");
    assert_eq!(error.causes[0].field, "spec.layer3");
    assert_eq!(
        error.causes[0].message,
        r#"Invalid value: Subnets must not overlap or contain each other"#
    );
    let status = error.to_status();
    assert_eq!(status["details"]["kind"], "UserDefinedNetwork");
    assert_eq!(status["details"]["group"], "k8s.ovn.org");
    assert!(!exists(&sim, &udns(), Some("blue"), "net"));
}

#[test]
fn names_come_before_schema_errors() {
    let sim = sim();
    sim.create(&crds(), None, widget_crd("widgets.example.com"), &write())
        .unwrap();
    let error = sim
        .create(&widgets(), None, json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "Big"}, "spec": {"size": 11}}), &write())
        .unwrap_err();
    assert_eq!(
        error.message,
        r#"Widget.example.com "Big" is invalid: [metadata.name: Invalid value: "Big": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10]"#
    );
    assert_eq!(error.causes.len(), 2);
}

#[test]
fn custom_resources_are_pruned_and_defaulted() {
    let sim = sim();
    sim.create(&crds(), None, widget_crd("widgets.example.com"), &write())
        .unwrap();
    let created = sim
        .create(
            &widgets(),
            None,
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"colour": "red"}, "status": {"x": 1}}),
            &write(),
        )
        .unwrap();
    assert_eq!(created["spec"], json!({"size": 1}));
    assert_eq!(
        created["status"],
        json!({"x": 1}),
        "no status subresource: status is data"
    );
    assert_eq!(created["kind"], "Widget");
    assert_eq!(created["apiVersion"], "example.com/v1");
    assert_eq!(meta(&created, "generation"), 1);
}

#[test]
fn custom_resource_updates_follow_the_custom_resource_strategy() {
    let sim = sim();
    install_udn_crd(&sim);
    create_namespace(&sim, "blue");
    let mut body = udn("net");
    body["status"] = json!({"conditions": []});
    let created = sim.create(&udns(), Some("blue"), body, &write()).unwrap();
    assert!(created.get("status").is_none(), "create cannot set status");
    assert_eq!(meta(&created, "generation"), 1);

    // An update must carry a resourceVersion.
    let mut unconditional = created.clone();
    unconditional["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let error = sim
        .update(
            &udns(),
            Some("blue"),
            "net",
            unconditional,
            Subresource::Main,
            &write(),
        )
        .unwrap_err();
    assert_eq!(error.code, 422);
    assert_eq!(
        error.message,
        r#"userdefinednetworks.k8s.ovn.org "net" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"#
    );

    // Metadata changes keep the generation; spec changes bump it.
    let mut labelled = created;
    labelled["metadata"]["labels"] = json!({"a": "b"});
    let labelled = sim
        .update(
            &udns(),
            Some("blue"),
            "net",
            labelled,
            Subresource::Main,
            &write(),
        )
        .unwrap();
    assert_eq!(meta(&labelled, "generation"), 1);
    let mut grown = labelled;
    grown["spec"]["layer3"]["subnets"] =
        json!([{"cidr": "10.10.0.0/16"}, {"cidr": "10.20.0.0/16"}]);
    grown["status"] = json!({"conditions": [{"type": "Ignored"}]});
    let grown = sim
        .update(
            &udns(),
            Some("blue"),
            "net",
            grown,
            Subresource::Main,
            &write(),
        )
        .unwrap();
    assert_eq!(meta(&grown, "generation"), 2);
    assert!(
        grown.get("status").is_none(),
        "the main resource cannot set status"
    );

    // Status writes change only the status and keep the generation.
    let mut status = grown.clone();
    status["status"] = json!({"conditions": [{"type": "NetworkCreated", "status": "True", "reason": "OK", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    status["spec"]["layer3"]["mtu"] = json!(1400);
    let status = sim
        .update(
            &udns(),
            Some("blue"),
            "net",
            status,
            Subresource::Status,
            &write(),
        )
        .unwrap();
    assert_eq!(status["status"]["conditions"][0]["type"], "NetworkCreated");
    assert_eq!(status["spec"], grown["spec"]);
    assert_eq!(meta(&status, "generation"), 2);
}

#[test]
fn transition_rules_see_the_old_object() {
    let sim = sim();
    install_udn_crd(&sim);
    create_namespace(&sim, "blue");
    let created = udn_in(&sim, "blue", "net");
    let mut body = created;
    body["spec"]["layer3"]["role"] = json!("Secondary");
    let error = sim
        .update(
            &udns(),
            Some("blue"),
            "net",
            body,
            Subresource::Main,
            &write(),
        )
        .unwrap_err();
    assert_eq!(error.code, 422);
    let cause = error
        .causes
        .iter()
        .find(|c| c.field == "spec.layer3.role")
        .unwrap_or_else(|| panic!("no cause at spec.layer3.role: {error:?}"));
    assert!(
        cause.message.ends_with("role is immutable"),
        "{}",
        cause.message
    );
}

#[test]
fn invalid_crds_are_refused() {
    let sim = sim();
    let error = sim
        .create(&crds(), None, widget_crd("gadgets.example.com"), &write())
        .unwrap_err();
    assert_eq!(error.code, 422);
    assert_eq!(
        error.message,
        r#"CustomResourceDefinition.apiextensions.k8s.io "gadgets.example.com" is invalid: metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group"#
    );
    let mut bad_rule = widget_crd("widgets.example.com");
    bad_rule["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] =
        json!([{"rule": "self.size >", "message": "broken"}]);
    let error = sim.create(&crds(), None, bad_rule, &write()).unwrap_err();
    assert_eq!(error.code, 422);
    assert_eq!(
        error.causes[0].field,
        "spec.versions[0].schema.openAPIV3Schema"
    );
    assert!(sim.resource_type("example.com", "v1", "widgets").is_none());
}

#[test]
fn deleting_a_crd_deletes_its_objects_and_stops_serving() {
    let sim = sim();
    install_udn_crd(&sim);
    create_namespace(&sim, "blue");
    udn_in(&sim, "blue", "a");
    let mut held = udn("b");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    sim.create(&udns(), Some("blue"), held, &write()).unwrap();
    let marked = sim
        .delete(
            &crds(),
            None,
            "userdefinednetworks.k8s.ovn.org",
            &DeleteOptions::default(),
        )
        .unwrap();
    assert!(meta(&marked, "deletionTimestamp").is_string());
    assert_eq!(
        meta(&marked, "finalizers"),
        &json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    let terminating = marked["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Terminating")
        .unwrap();
    assert_eq!(terminating["reason"], "InstanceDeletionPending");
    assert!(!exists(&sim, &udns(), Some("blue"), "a"));
    let b = sim.get(&udns(), Some("blue"), "b").unwrap();
    assert!(meta(&b, "deletionTimestamp").is_string());
    let error = sim
        .create(&udns(), Some("blue"), udn("c"), &write())
        .unwrap_err();
    assert_eq!(error.code, 403);
    assert_eq!(
        error.message,
        r#"userdefinednetworks.k8s.ovn.org "c" is forbidden: create not allowed while custom resource definition is terminating"#
    );
    let mut release = b;
    release["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("finalizers");
    sim.update(
        &udns(),
        Some("blue"),
        "b",
        release,
        Subresource::Main,
        &write(),
    )
    .unwrap();
    assert!(!exists(
        &sim,
        &crds(),
        None,
        "userdefinednetworks.k8s.ovn.org"
    ));
    assert!(
        sim.resource_type("k8s.ovn.org", "v1", "userdefinednetworks")
            .is_none()
    );
    let error = sim
        .list(&udns(), None, &ListOptions::default())
        .unwrap_err();
    assert_eq!(error.code, 404);
    // The type can be installed again, empty.
    install_udn_crd(&sim);
    let list = sim.list(&udns(), None, &ListOptions::default()).unwrap();
    assert_eq!(names(&list), Vec::<String>::new());
}

#[test]
fn namespace_deletion_reaches_custom_resources() {
    let sim = sim();
    install_udn_crd(&sim);
    create_namespace(&sim, "blue");
    udn_in(&sim, "blue", "net");
    sim.delete(&namespaces(), None, "blue", &DeleteOptions::default())
        .unwrap();
    assert!(!exists(&sim, &udns(), Some("blue"), "net"));
    assert!(!exists(&sim, &namespaces(), None, "blue"));
}
