//! WATCH: from a resourceVersion, from the current state, 410 after compaction and past
//! the kept history, bookmarks, initial-events-end, timeout, selectors.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

mod store_support;

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use store_support::*;
use udn_kube_sim::{
    DeleteOptions, ListOptions, Sim, SimConfig, Subresource, WatchEvent, WatchEventType,
    WatchOptions, WatchStream,
};

async fn next(stream: &mut WatchStream) -> WatchEvent {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("a watch event within 5s")
        .expect("the watch is still open")
}

fn summary(event: &WatchEvent) -> (WatchEventType, String) {
    let name = event.object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (event.event_type, name)
}

fn from(rv: u64) -> WatchOptions {
    WatchOptions {
        resource_version: Some(rv.to_string()),
        ..WatchOptions::default()
    }
}

#[tokio::test]
async fn watch_from_a_resource_version_replays_then_follows() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let start = sim.resource_version();
    let a = create_pod(&sim, "blue", pod("a"));
    create_pod(&sim, "blue", pod("b"));
    let mut changed = a.clone();
    changed["metadata"]["labels"] = json!({"x": "y"});
    sim.update(
        &pods(),
        Some("blue"),
        "a",
        changed,
        Subresource::Main,
        &write(),
    )
    .unwrap();
    sim.delete(&pods(), Some("blue"), "b", &DeleteOptions::default())
        .unwrap();
    let mut stream = sim.watch(&pods(), None, &from(start)).unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(next(&mut stream).await);
    }
    let kinds: Vec<_> = seen.iter().map(summary).collect();
    assert_eq!(
        kinds,
        [
            (WatchEventType::Added, "a".to_owned()),
            (WatchEventType::Added, "b".to_owned()),
            (WatchEventType::Modified, "a".to_owned()),
            (WatchEventType::Deleted, "b".to_owned()),
        ]
    );
    let versions: Vec<u64> = seen.iter().map(|e| rv(&e.object)).collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
    assert_eq!(
        seen[0].object["kind"], "Pod",
        "watch objects carry their type"
    );
    create_pod(&sim, "blue", pod("c"));
    assert_eq!(
        summary(&next(&mut stream).await),
        (WatchEventType::Added, "c".to_owned())
    );
}

#[tokio::test]
async fn watch_without_a_version_starts_with_the_current_state() {
    let sim = sim();
    create_namespace(&sim, "blue");
    create_namespace(&sim, "red");
    create_pod(&sim, "blue", pod("a"));
    create_pod(&sim, "red", pod("b"));
    let mut stream = sim
        .watch(&pods(), Some("blue"), &WatchOptions::default())
        .unwrap();
    assert_eq!(
        summary(&next(&mut stream).await),
        (WatchEventType::Added, "a".to_owned())
    );
    create_pod(&sim, "red", pod("c"));
    create_pod(&sim, "blue", pod("d"));
    assert_eq!(
        summary(&next(&mut stream).await),
        (WatchEventType::Added, "d".to_owned()),
        "other namespaces are not seen"
    );
    let mut zero = sim
        .watch(
            &pods(),
            None,
            &WatchOptions {
                resource_version: Some("0".to_owned()),
                ..WatchOptions::default()
            },
        )
        .unwrap();
    let mut initial = Vec::new();
    for _ in 0..4 {
        initial.push(summary(&next(&mut zero).await).1);
    }
    assert_eq!(initial, ["a", "d", "b", "c"]);
}

#[tokio::test]
async fn compaction_makes_old_versions_gone() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let old = sim.resource_version();
    create_pod(&sim, "blue", pod("a"));
    sim.compact();
    let now = sim.resource_version();
    let Err(error) = sim.watch(&pods(), None, &from(old)) else {
        panic!("a watch from before the compaction must fail");
    };
    assert_eq!(error.code, 410);
    assert_eq!(error.reason, "Expired");
    assert_eq!(
        error.message,
        format!("too old resource version: {old} ({now})")
    );
    // From the compaction point on, all is well.
    let mut stream = sim.watch(&pods(), None, &from(now)).unwrap();
    create_pod(&sim, "blue", pod("b"));
    assert_eq!(summary(&next(&mut stream).await).1, "b");
}

#[tokio::test]
async fn the_history_is_bounded() {
    let sim = Sim::new(SimConfig {
        watch_history: 3,
        ..SimConfig::default()
    });
    create_namespace(&sim, "blue");
    let start = sim.resource_version();
    for name in ["a", "b", "c", "d"] {
        create_pod(&sim, "blue", pod(name));
    }
    let Err(error) = sim.watch(&pods(), None, &from(start)) else {
        panic!("the history no longer reaches back");
    };
    assert_eq!(
        error.message,
        format!("too old resource version: {start} ({})", start + 1)
    );
    let mut stream = sim.watch(&pods(), None, &from(start + 1)).unwrap();
    let names: Vec<String> = [
        next(&mut stream).await,
        next(&mut stream).await,
        next(&mut stream).await,
    ]
    .iter()
    .map(|e| summary(e).1)
    .collect();
    assert_eq!(names, ["b", "c", "d"]);
}

#[tokio::test]
async fn bookmarks_carry_only_the_resource_version() {
    let sim = Sim::new(SimConfig {
        bookmark_interval: Duration::from_millis(20),
        ..SimConfig::default()
    });
    create_namespace(&sim, "blue");
    let mut stream = sim
        .watch(
            &pods(),
            None,
            &WatchOptions {
                resource_version: Some(sim.resource_version().to_string()),
                allow_bookmarks: true,
                ..WatchOptions::default()
            },
        )
        .unwrap();
    create_pod(&sim, "blue", pod("a"));
    let added = next(&mut stream).await;
    assert_eq!(added.event_type, WatchEventType::Added);
    let bookmark = next(&mut stream).await;
    assert_eq!(bookmark.event_type, WatchEventType::Bookmark);
    assert_eq!(
        *bookmark.object,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": sim.resource_version().to_string()}})
    );
    // Without allowWatchBookmarks there are none.
    let mut quiet = sim
        .watch(&pods(), None, &from(sim.resource_version()))
        .unwrap();
    let nothing = tokio::time::timeout(Duration::from_millis(100), quiet.next()).await;
    assert!(nothing.is_err(), "no event expected, got {nothing:?}");
}

#[tokio::test]
async fn send_initial_events_ends_with_an_annotated_bookmark() {
    let sim = sim();
    install_udn_crd(&sim);
    create_namespace(&sim, "blue");
    sim.create(&udns(), Some("blue"), udn("net"), &write())
        .unwrap();
    let mut stream = sim
        .watch(
            &udns(),
            None,
            &WatchOptions {
                send_initial_events: true,
                allow_bookmarks: true,
                ..WatchOptions::default()
            },
        )
        .unwrap();
    assert_eq!(
        summary(&next(&mut stream).await),
        (WatchEventType::Added, "net".to_owned())
    );
    let end = next(&mut stream).await;
    assert_eq!(end.event_type, WatchEventType::Bookmark);
    assert_eq!(end.object["kind"], "UserDefinedNetwork");
    assert_eq!(end.object["apiVersion"], "k8s.ovn.org/v1");
    assert_eq!(
        end.object["metadata"]["annotations"],
        json!({"k8s.io/initial-events-end": "true"})
    );
    assert_eq!(
        end.object["metadata"]["resourceVersion"],
        sim.resource_version().to_string()
    );
}

#[tokio::test]
async fn the_timeout_ends_the_watch() {
    let sim = sim();
    let mut stream = sim
        .watch(
            &namespaces(),
            None,
            &WatchOptions {
                timeout: Some(Duration::from_millis(50)),
                ..WatchOptions::default()
            },
        )
        .unwrap();
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("the watch ends by itself");
    assert!(end.is_none());
}

#[tokio::test]
async fn selectors_filter_and_track_objects_leaving_the_selection() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let mut stream = sim
        .watch(
            &pods(),
            None,
            &WatchOptions {
                list: ListOptions {
                    label_selector: Some("app=web".to_owned()),
                    ..ListOptions::default()
                },
                resource_version: Some(sim.resource_version().to_string()),
                ..WatchOptions::default()
            },
        )
        .unwrap();
    let mut body = pod("a");
    body["metadata"]["labels"] = json!({"app": "web"});
    let created = create_pod(&sim, "blue", body);
    create_pod(&sim, "blue", pod("other"));
    let added = next(&mut stream).await;
    assert_eq!(summary(&added), (WatchEventType::Added, "a".to_owned()));
    let mut relabelled = created.clone();
    relabelled["metadata"]["labels"] = json!({"app": "db"});
    let relabelled = sim
        .update(
            &pods(),
            Some("blue"),
            "a",
            relabelled,
            Subresource::Main,
            &write(),
        )
        .unwrap();
    let left = next(&mut stream).await;
    assert_eq!(summary(&left), (WatchEventType::Deleted, "a".to_owned()));
    assert_eq!(
        left.object["metadata"]["labels"],
        json!({"app": "web"}),
        "the last matching state"
    );
    assert_eq!(
        rv(&left.object),
        rv(&relabelled),
        "at the change's resourceVersion"
    );
    let mut back = relabelled;
    back["metadata"]["labels"] = json!({"app": "web"});
    sim.update(
        &pods(),
        Some("blue"),
        "a",
        back,
        Subresource::Main,
        &write(),
    )
    .unwrap();
    assert_eq!(
        summary(&next(&mut stream).await),
        (WatchEventType::Added, "a".to_owned())
    );
    sim.delete(&pods(), Some("blue"), "a", &DeleteOptions::default())
        .unwrap();
    assert_eq!(
        summary(&next(&mut stream).await),
        (WatchEventType::Deleted, "a".to_owned())
    );
}

#[tokio::test]
async fn a_no_op_update_sends_no_event() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let pod_a = create_pod(&sim, "blue", pod("a"));
    let mut stream = sim
        .watch(&pods(), None, &from(sim.resource_version()))
        .unwrap();
    sim.update(
        &pods(),
        Some("blue"),
        "a",
        pod_a,
        Subresource::Main,
        &write(),
    )
    .unwrap();
    create_pod(&sim, "blue", pod("b"));
    assert_eq!(
        summary(&next(&mut stream).await),
        (WatchEventType::Added, "b".to_owned())
    );
}

#[tokio::test]
async fn finalizer_removal_is_one_deleted_event() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let mut body = pod("a");
    body["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create_pod(&sim, "blue", body);
    let mut stream = sim
        .watch(&pods(), None, &from(sim.resource_version()))
        .unwrap();
    let marked = sim
        .delete(&pods(), Some("blue"), "a", &DeleteOptions::default())
        .unwrap();
    let modified = next(&mut stream).await;
    assert_eq!(modified.event_type, WatchEventType::Modified);
    assert_eq!(*modified.object, marked);
    let mut release = marked;
    release["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("finalizers");
    sim.update(
        &pods(),
        Some("blue"),
        "a",
        release,
        Subresource::Main,
        &write(),
    )
    .unwrap();
    let deleted = next(&mut stream).await;
    assert_eq!(deleted.event_type, WatchEventType::Deleted);
    assert_eq!(rv(&deleted.object), sim.resource_version());
}

#[tokio::test]
async fn a_watcher_far_behind_catches_up_from_the_log() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let mut stream = sim
        .watch(&pods(), None, &from(sim.resource_version()))
        .unwrap();
    // More changes than the wake-up channel holds, none read yet.
    let total = 20_000;
    for index in 0..total {
        create_pod(&sim, "blue", pod(&format!("p{index}")));
    }
    let mut last = 0;
    for index in 0..total {
        let event = next(&mut stream).await;
        assert_eq!(event.event_type, WatchEventType::Added);
        assert_eq!(event.object["metadata"]["name"], format!("p{index}"));
        let version = rv(&event.object);
        assert!(version > last);
        last = version;
    }
}
