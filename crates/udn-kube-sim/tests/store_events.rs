//! events.k8s.io/v1 Events share storage with core/v1 Events, as in the real server.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

mod store_support;

use futures::StreamExt;
use serde_json::json;
use store_support::*;
use udn_kube_sim::{
    DeleteOptions, ListOptions, PatchKind, ResourceKey, Subresource, WatchEventType, WatchOptions,
    WriteOptions,
};

fn events_v1() -> ResourceKey {
    key("events.k8s.io", "events")
}

fn recorded(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "blue"},
        "reason": "Started",
        "note": "container started",
        "type": "Normal",
        "action": "Start",
        "reportingController": "udn-controller",
        "reportingInstance": "udn-controller-1",
    })
}

#[test]
fn one_storage_two_shapes() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let created = sim
        .create(&events_v1(), Some("blue"), recorded("web.1"), &write())
        .unwrap();
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    assert_eq!(created["note"], "container started");
    assert_eq!(created["regarding"]["name"], "web");
    let core = sim.get(&events(), Some("blue"), "web.1").unwrap();
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["message"], "container started");
    assert_eq!(core["involvedObject"]["name"], "web");
    assert_eq!(core["reportingComponent"], "udn-controller");
    assert_eq!(meta(&core, "uid"), meta(&created, "uid"));
    let selected = sim
        .list(
            &events(),
            None,
            &ListOptions {
                field_selector: Some("involvedObject.name=web,reason=Started".to_owned()),
                ..ListOptions::default()
            },
        )
        .unwrap();
    assert_eq!(names(&selected), ["web.1"]);
    let view_list = sim
        .list(&events_v1(), Some("blue"), &ListOptions::default())
        .unwrap();
    assert_eq!(view_list["apiVersion"], "events.k8s.io/v1");
    assert_eq!(view_list["kind"], "EventList");
    assert_eq!(view_list["items"][0]["note"], "container started");
}

#[test]
fn errors_name_the_requested_resource() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let error = sim.get(&events_v1(), Some("blue"), "nope").unwrap_err();
    assert_eq!(error.code, 404);
    assert_eq!(error.message, r#"events.events.k8s.io "nope" not found"#);
    assert_eq!(error.group.as_deref(), Some("events.k8s.io"));
}

#[test]
fn updates_patches_and_deletes_through_the_view() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let created = sim
        .create(&events_v1(), Some("blue"), recorded("web.1"), &write())
        .unwrap();
    let mut body = created;
    body["deprecatedCount"] = json!(2);
    let updated = sim
        .update(
            &events_v1(),
            Some("blue"),
            "web.1",
            body,
            Subresource::Main,
            &write(),
        )
        .unwrap();
    assert_eq!(updated["deprecatedCount"], 2);
    assert_eq!(
        sim.get(&events(), Some("blue"), "web.1").unwrap()["count"],
        2
    );
    let patch = serde_json::to_vec(
        &json!({"series": {"count": 3, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}}),
    )
    .unwrap();
    let patched = sim
        .patch(
            &events_v1(),
            Some("blue"),
            "web.1",
            PatchKind::Merge,
            &patch,
            Subresource::Main,
            &WriteOptions::default(),
        )
        .unwrap();
    assert_eq!(patched["series"]["count"], 3);
    assert_eq!(patched["note"], "container started");
    sim.delete(
        &events_v1(),
        Some("blue"),
        "web.1",
        &DeleteOptions::default(),
    )
    .unwrap();
    assert!(!exists(&sim, &events(), Some("blue"), "web.1"));
}

#[tokio::test]
async fn watching_the_view_sees_core_writes() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let mut stream = sim
        .watch(
            &events_v1(),
            Some("blue"),
            &WatchOptions {
                resource_version: Some(sim.resource_version().to_string()),
                ..WatchOptions::default()
            },
        )
        .unwrap();
    let core = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "web"}, "message": "hi", "reason": "R"});
    sim.create(&events(), Some("blue"), core, &write()).unwrap();
    let event = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.event_type, WatchEventType::Added);
    assert_eq!(event.object["apiVersion"], "events.k8s.io/v1");
    assert_eq!(event.object["note"], "hi");
    assert_eq!(event.object["regarding"]["name"], "web");
}
