//! The server through `kube::Client`, in-process (`SimService`) and over HTTP: discovery,
//! CRUD, selectors, conflicts, the status subresource, finalizers, generateName, every
//! patch kind and 422 validation errors with their causes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod http_support;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope, verbs};
use serde_json::json;
use udn_api::crd::UserDefinedNetwork;

use http_support::{Transport, both, create_namespace, install_udn_crd, layer3_udn, status_of};

fn pod(generate_name: &str, node: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"generateName": generate_name, "labels": {"app": "web", "node": node}},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "busybox"}]},
    }))
    .unwrap()
}

async fn discovery_of(t: &Transport) {
    let discovery = Discovery::new(t.client.clone()).run().await.unwrap();
    let aggregated = Discovery::new(t.client.clone())
        .run_aggregated()
        .await
        .unwrap();
    for (mode, d) in [("legacy", &discovery), ("aggregated", &aggregated)] {
        let context = format!("{} {mode}", t.name);
        let (pods, caps) = d
            .resolve_gvk(&GroupVersionKind::gvk("", "v1", "Pod"))
            .unwrap();
        assert_eq!(pods.plural, "pods", "{context}");
        assert_eq!(caps.scope, Scope::Namespaced, "{context}");
        for verb in [
            verbs::CREATE,
            verbs::GET,
            verbs::LIST,
            verbs::WATCH,
            verbs::PATCH,
        ] {
            assert!(caps.supports_operation(verb), "{context}: pods {verb}");
        }
        let (_, ns_caps) = d
            .resolve_gvk(&GroupVersionKind::gvk("", "v1", "Namespace"))
            .unwrap();
        assert_eq!(ns_caps.scope, Scope::Cluster, "{context}");
        assert!(
            !ns_caps.supports_operation(verbs::DELETE_COLLECTION),
            "{context}"
        );
        for (group, kind) in [
            ("coordination.k8s.io", "Lease"),
            ("discovery.k8s.io", "EndpointSlice"),
            ("events.k8s.io", "Event"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ] {
            let found = d.resolve_gvk(&GroupVersionKind::gvk(group, "v1", kind));
            assert!(found.is_some(), "{context}: {group}/{kind} served");
        }
        assert!(
            !d.has_group("k8s.ovn.org"),
            "{context}: no UDN before its CRD"
        );
    }

    install_udn_crd(&t.client).await;
    for aggregated in [false, true] {
        let d = Discovery::new(t.client.clone());
        let d = if aggregated {
            d.run_aggregated().await
        } else {
            d.run().await
        }
        .unwrap();
        let gvk = GroupVersionKind::gvk("k8s.ovn.org", "v1", "UserDefinedNetwork");
        let (udn, caps) = d.resolve_gvk(&gvk).unwrap();
        assert_eq!(udn.plural, "userdefinednetworks", "{}", t.name);
        assert_eq!(caps.scope, Scope::Namespaced);
        let subresources: Vec<&str> = caps
            .subresources
            .iter()
            .map(|(r, _)| r.plural.as_str())
            .collect();
        assert!(
            subresources.iter().any(|s| s.ends_with("status")),
            "{}: status subresource in {subresources:?}",
            t.name
        );
    }
    let list = t
        .client
        .list_api_group_resources("k8s.ovn.org/v1")
        .await
        .unwrap();
    let udn = list
        .resources
        .iter()
        .find(|r| r.name == "userdefinednetworks")
        .unwrap();
    assert_eq!(udn.short_names.as_deref(), Some(&["udn".to_owned()][..]));
    assert_eq!(udn.singular_name, "userdefinednetwork");
    assert!(udn.namespaced);
    let status = list
        .resources
        .iter()
        .find(|r| r.name == "userdefinednetworks/status")
        .unwrap();
    assert_eq!(status.verbs, ["get", "patch", "update"]);
    let core = t.client.list_core_api_resources("v1").await.unwrap();
    let ns = core
        .resources
        .iter()
        .find(|r| r.name == "namespaces")
        .unwrap();
    assert_eq!(ns.short_names.as_deref(), Some(&["ns".to_owned()][..]));
}

#[tokio::test]
async fn discovery_serves_builtins_and_established_crds() {
    for t in both().await {
        discovery_of(&t).await;
    }
}

async fn crud_of(t: &Transport) {
    let namespaces: Api<Namespace> = Api::all(t.client.clone());
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "blue", "labels": {"tenant": "blue"}}}))
            .unwrap();
    let created = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    assert!(
        created
            .metadata
            .uid
            .as_deref()
            .is_some_and(|u| !u.is_empty())
    );
    assert!(created.metadata.creation_timestamp.is_some());
    assert!(created.metadata.resource_version.is_some());
    create_namespace(&t.client, "green").await;
    let by_label = namespaces
        .list(&ListParams::default().labels("tenant=blue"))
        .await
        .unwrap();
    assert_eq!(names(&by_label.items), ["blue"], "{}", t.name);
    let by_field = namespaces
        .list(&ListParams::default().fields("metadata.name=green"))
        .await
        .unwrap();
    assert_eq!(names(&by_field.items), ["green"], "{}", t.name);
    let duplicate = status_of(namespaces.create(&PostParams::default(), &ns).await);
    assert_eq!(
        (duplicate.code, duplicate.reason.as_str()),
        (409, "AlreadyExists")
    );
    assert_eq!(duplicate.message, r#"namespaces "blue" already exists"#);

    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "blue");
    let a = pods
        .create(&PostParams::default(), &pod("web-", "node-a"))
        .await
        .unwrap();
    let b = pods
        .create(&PostParams::default(), &pod("web-", "node-b"))
        .await
        .unwrap();
    let a_name = a.metadata.name.clone().unwrap();
    assert!(
        a_name.starts_with("web-") && a_name.len() > "web-".len(),
        "{a_name}"
    );
    assert_ne!(Some(a_name.clone()), b.metadata.name);
    let on_a = pods
        .list(&ListParams::default().fields("spec.nodeName=node-a"))
        .await
        .unwrap();
    assert_eq!(names(&on_a.items), [a_name.as_str()], "{}", t.name);
    let all: Api<Pod> = Api::all(t.client.clone());
    let everywhere = all
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(everywhere.items.len(), 2);

    let mut fresh = pods.get(&a_name).await.unwrap();
    fresh
        .metadata
        .labels
        .get_or_insert_default()
        .insert("tier".into(), "front".into());
    let replaced = pods
        .replace(&a_name, &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_ne!(
        replaced.metadata.resource_version,
        a.metadata.resource_version
    );
    let stale = status_of(pods.replace(&a_name, &PostParams::default(), &fresh).await);
    assert_eq!(
        (stale.code, stale.reason.as_str()),
        (409, "Conflict"),
        "{}",
        t.name
    );
    assert_eq!(
        stale.message,
        format!(
            "Operation cannot be fulfilled on pods \"{a_name}\": the object has been modified; please apply your changes to the latest version and try again"
        )
    );

    // A bound pod is deleted gracefully: marked with its grace period, removed only by a
    // delete with gracePeriodSeconds=0 (the kubelet's, once its containers stopped).
    pods.delete(&a_name, &DeleteParams::default())
        .await
        .unwrap();
    let terminating = pods.get(&a_name).await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(30));
    pods.delete(&a_name, &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let gone = status_of(pods.get(&a_name).await);
    assert_eq!((gone.code, gone.reason.as_str()), (404, "NotFound"));
    assert_eq!(gone.message, format!("pods \"{a_name}\" not found"));
    let missing_ns: Api<Pod> = Api::namespaced(t.client.clone(), "nowhere");
    let refused = status_of(
        missing_ns
            .create(&PostParams::default(), &pod("x-", "n"))
            .await,
    );
    assert_eq!(
        refused.code, 404,
        "{}: create in a missing namespace",
        t.name
    );
}

fn names<K: kube::Resource>(items: &[K]) -> Vec<&str> {
    items
        .iter()
        .filter_map(|o| o.meta().name.as_deref())
        .collect()
}

#[tokio::test]
async fn crud_selectors_conflicts_and_generate_name() {
    for t in both().await {
        Box::pin(crud_of(&t)).await;
    }
}

async fn status_and_finalizers_of(t: &Transport) {
    install_udn_crd(&t.client).await;
    create_namespace(&t.client, "blue").await;
    let udns: Api<UserDefinedNetwork> = Api::namespaced(t.client.clone(), "blue");
    let mut udn = layer3_udn("blue-network", "blue", &["103.103.0.0/16"]);
    udn.metadata.finalizers = Some(vec!["k8s.ovn.org/user-defined-network-protection".into()]);
    let created = udns.create(&PostParams::default(), &udn).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    let condition = json!({"type": "NetworkCreated", "status": "True", "reason": "NetworkAttachmentDefinitionCreated",
        "message": "NetworkAttachmentDefinition has been created", "lastTransitionTime": "2025-01-01T00:00:00Z"});
    let mut with_status = created.clone();
    with_status.status = serde_json::from_value(json!({"conditions": [condition]})).unwrap();
    let after_status = udns
        .replace_status("blue-network", &PostParams::default(), &with_status)
        .await
        .unwrap();
    assert!(after_status.status.is_some(), "{}: status written", t.name);
    assert_eq!(
        after_status.metadata.generation,
        Some(1),
        "status writes keep generation"
    );

    // The main resource ignores status; a spec change bumps generation.
    let mut main = after_status.clone();
    main.status = None;
    main.metadata
        .labels
        .get_or_insert_default()
        .insert("edited".into(), "yes".into());
    let updated = udns
        .replace("blue-network", &PostParams::default(), &main)
        .await
        .unwrap();
    assert!(
        updated.status.is_some(),
        "{}: PUT of the main resource keeps status",
        t.name
    );

    let patched = udns
        .patch_status(
            "blue-network",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [
                {"type": "NetworkCreated", "status": "False", "reason": "SyncError", "message": "x",
                 "lastTransitionTime": "2025-01-01T00:00:00Z"}
            ]}})),
        )
        .await
        .unwrap();
    let status = serde_json::to_value(&patched.status).unwrap();
    assert_eq!(status["conditions"][0]["status"], "False", "{}", t.name);
    let spec_patch = udns
        .patch(
            "blue-network",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"conditions": []}, "metadata": {"annotations": {"a": "b"}}}),
            ),
        )
        .await
        .unwrap();
    let status = serde_json::to_value(&spec_patch.status).unwrap();
    assert_eq!(
        status["conditions"][0]["status"], "False",
        "main-resource patch ignores status"
    );

    // Delete with a finalizer only marks the object.
    let deleted = udns
        .delete("blue-network", &DeleteParams::default())
        .await
        .unwrap();
    let marked = deleted
        .left()
        .expect("the object is returned while finalizers remain");
    assert!(marked.metadata.deletion_timestamp.is_some(), "{}", t.name);
    let still = udns.get("blue-network").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());
    udns.patch(
        "blue-network",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let gone = status_of(udns.get("blue-network").await);
    assert_eq!(
        gone.code, 404,
        "{}: the last finalizer removed deletes",
        t.name
    );
    assert_eq!(
        gone.message,
        r#"userdefinednetworks.k8s.ovn.org "blue-network" not found"#
    );
}

#[tokio::test]
async fn status_subresource_generation_and_finalizers() {
    for t in both().await {
        status_and_finalizers_of(&t).await;
    }
}

async fn patches_of(t: &Transport) {
    create_namespace(&t.client, "blue").await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "blue");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let pp = PatchParams::default();

    let merged = pods
        .patch(
            "p",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"b": "2", "a": null}}})),
        )
        .await
        .unwrap();
    let labels = merged.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("b").map(String::as_str), Some("2"), "{}", t.name);
    assert!(
        !labels.contains_key("a"),
        "{}: null removes in a merge patch",
        t.name
    );

    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}},
        {"op": "test", "path": "/metadata/labels/b", "value": "2"}
    ]))
    .unwrap();
    let json_patched = pods.patch("p", &pp, &Patch::Json::<()>(ops)).await.unwrap();
    assert_eq!(
        json_patched
            .metadata
            .annotations
            .unwrap_or_default()
            .get("k")
            .map(String::as_str),
        Some("v")
    );
    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/metadata/labels/b", "value": "3"}]))
            .unwrap();
    let refused = status_of(pods.patch("p", &pp, &Patch::Json::<()>(failing)).await);
    assert!(
        refused.code == 422 || refused.code == 400,
        "{}: failed test op: {refused:?}",
        t.name
    );

    // Strategic merge: containers merge by name instead of being replaced.
    let strategic = pods
        .patch(
            "p",
            &pp,
            &Patch::Strategic(
                json!({"spec": {"containers": [{"name": "side", "image": "pause"}]}}),
            ),
        )
        .await
        .unwrap();
    let containers: Vec<&str> = strategic
        .spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    // apimachinery's mergeSortedSlice puts patch items not in the live list first.
    assert_eq!(
        containers,
        ["side", "main"],
        "{}: strategic merge of containers",
        t.name
    );

    // Server-side apply creates and updates, recording the field manager.
    let leases: Api<Lease> = Api::namespaced(t.client.clone(), "blue");
    let apply = PatchParams::apply("udn-test");
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "leader"}, "spec": {"holderIdentity": "node-a"}});
    let applied = leases
        .patch("leader", &apply, &Patch::Apply(&lease))
        .await
        .unwrap();
    assert_eq!(
        applied.spec.unwrap().holder_identity.as_deref(),
        Some("node-a"),
        "{}",
        t.name
    );
    let managers: Vec<String> = applied
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(
        managers.contains(&"udn-test".to_owned()),
        "{}: managers {managers:?}",
        t.name
    );
    let lease_b = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "leader"}, "spec": {"holderIdentity": "node-b"}});
    let reapplied = leases
        .patch("leader", &apply, &Patch::Apply(&lease_b))
        .await
        .unwrap();
    assert_eq!(
        reapplied.spec.unwrap().holder_identity.as_deref(),
        Some("node-b")
    );
    let no_manager = status_of(
        leases
            .patch("leader", &PatchParams::default(), &Patch::Apply(&lease_b))
            .await,
    );
    assert_eq!(
        no_manager.code, 400,
        "{}: apply without a field manager",
        t.name
    );
}

#[tokio::test]
async fn merge_json_strategic_and_apply_patches() {
    for t in both().await {
        patches_of(&t).await;
    }
}

async fn invalid_of(t: &Transport) {
    install_udn_crd(&t.client).await;
    create_namespace(&t.client, "blue").await;
    let udns: Api<UserDefinedNetwork> = Api::namespaced(t.client.clone(), "blue");
    let bad = layer3_udn("net", "blue", &["10.10.0.0/16", "10.10.0.0/20"]);
    let status = status_of(udns.create(&PostParams::default(), &bad).await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (422, "Invalid"),
        "{}",
        t.name
    );
    assert_eq!(
        status.message,
        r#"UserDefinedNetwork.k8s.ovn.org "net" is invalid: spec.layer3: Invalid value: Subnets must not overlap or contain each other"#
    );
    let details = status.details.clone().unwrap();
    assert_eq!(details.name, "net");
    assert_eq!(details.group, "k8s.ovn.org");
    assert_eq!(details.kind, "UserDefinedNetwork");
    let causes: Vec<(&str, &str, &str)> = details
        .causes
        .iter()
        .map(|c| (c.reason.as_str(), c.message.as_str(), c.field.as_str()))
        .collect();
    assert_eq!(
        causes,
        [(
            "FieldValueInvalid",
            r#"Invalid value: Subnets must not overlap or contain each other"#,
            "spec.layer3"
        )]
    );
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let good = layer3_udn("net", "blue", &["10.10.0.0/16"]);
    udns.create(&dry, &good).await.unwrap();
    assert_eq!(
        status_of(udns.get("net").await).code,
        404,
        "{}: dry run stores nothing",
        t.name
    );
}

#[tokio::test]
async fn invalid_custom_resources_get_422_with_causes() {
    for t in both().await {
        invalid_of(&t).await;
    }
}
