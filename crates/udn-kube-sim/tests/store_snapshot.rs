//! Snapshots: export and import keep objects, uids, resourceVersions and served CRD types.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

mod store_support;

use serde_json::json;
use store_support::*;
use udn_kube_sim::{ListOptions, WatchOptions};

#[test]
fn export_then_import_round_trips() {
    let sim = sim();
    create_namespace(&sim, "blue");
    install_udn_crd(&sim);
    let udn = sim
        .create(&udns(), Some("blue"), udn("net"), &write())
        .unwrap();
    let pod = create_pod(&sim, "blue", pod("web"));
    let svc = sim
        .create(
            &services(),
            Some("blue"),
            json!({"metadata": {"name": "web"}, "spec": {}}),
            &write(),
        )
        .unwrap();
    let exported = sim.export();
    assert_eq!(exported.len(), 5);
    assert_eq!(
        exported[0]["kind"], "CustomResourceDefinition",
        "CRDs first"
    );
    assert_eq!(exported[1]["kind"], "Namespace", "namespaces next");

    let restored = store_support::sim();
    restored.import(exported.clone()).unwrap();
    assert_eq!(restored.export(), exported);
    assert_eq!(restored.resource_version(), sim.resource_version());
    assert_eq!(restored.get(&udns(), Some("blue"), "net").unwrap(), udn);
    assert_eq!(restored.get(&pods(), Some("blue"), "web").unwrap(), pod);
    assert!(
        restored
            .resource_type("k8s.ovn.org", "v1", "userdefinednetworks")
            .is_some()
    );

    // New writes continue above the restored versions, and new cluster IPs avoid old ones.
    let next = create_pod(&restored, "blue", store_support::pod("db"));
    assert_eq!(rv(&next), sim.resource_version() + 1);
    let other = restored
        .create(
            &services(),
            Some("blue"),
            json!({"metadata": {"name": "db"}, "spec": {}}),
            &write(),
        )
        .unwrap();
    assert_ne!(other["spec"]["clusterIP"], svc["spec"]["clusterIP"]);
    // Restored objects still validate as custom resources.
    let mut bad = store_support::udn("bad");
    bad["spec"]["topology"] = json!("Layer4");
    assert_eq!(
        restored
            .create(&udns(), Some("blue"), bad, &write())
            .unwrap_err()
            .code,
        422
    );
    let list = restored
        .list(&udns(), None, &ListOptions::default())
        .unwrap();
    assert_eq!(names(&list), ["net"]);
}

#[test]
fn watches_resume_only_from_the_restored_version() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let old = sim.resource_version();
    create_pod(&sim, "blue", pod("web"));
    let restored = store_support::sim();
    restored.import(sim.export()).unwrap();
    let too_old = WatchOptions {
        resource_version: Some(old.to_string()),
        ..WatchOptions::default()
    };
    assert_eq!(
        restored
            .watch(&pods(), None, &too_old)
            .err()
            .map(|e| e.code),
        Some(410)
    );
    let current = WatchOptions {
        resource_version: Some(restored.resource_version().to_string()),
        ..WatchOptions::default()
    };
    assert!(restored.watch(&pods(), None, &current).is_ok());
}

#[test]
fn import_refuses_unknown_types_and_duplicates() {
    let sim = sim();
    let error = sim
        .import(vec![
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        ])
        .unwrap_err();
    assert_eq!(error.code, 400);
    create_namespace(&sim, "blue");
    let error = sim.import(sim.export()).unwrap_err();
    assert_eq!(error.code, 409);
    assert_eq!(error.message, r#"namespaces "blue" already exists"#);
}
