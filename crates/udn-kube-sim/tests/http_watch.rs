//! Watches through `kube::Client`, in-process and over HTTP: events in order, bookmarks,
//! timeoutSeconds, 410 for a compacted resourceVersion, and kube-runtime's watcher
//! relisting after it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod http_support;

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use serde_json::json;
use udn_kube_sim::{Sim, SimConfig};

use http_support::{Transport, create_namespace, in_process_with, next, over_http_with};

fn lease(name: &str) -> Lease {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"holderIdentity": "a"}}))
        .unwrap()
}

fn name_of(event: &WatchEvent<Lease>) -> (&'static str, String) {
    let (kind, lease) = match event {
        WatchEvent::Added(l) => ("ADDED", l),
        WatchEvent::Modified(l) => ("MODIFIED", l),
        WatchEvent::Deleted(l) => ("DELETED", l),
        other => panic!("unexpected event {other:?}"),
    };
    (kind, lease.metadata.name.clone().unwrap_or_default())
}

async fn transports(config: SimConfig) -> Vec<Transport> {
    vec![
        in_process_with(Sim::new(config.clone())),
        over_http_with(Sim::new(config)).await,
    ]
}

#[tokio::test]
async fn watch_delivers_added_modified_deleted_in_order() {
    for t in transports(SimConfig::default()).await {
        create_namespace(&t.client, "w").await;
        let leases: Api<Lease> = Api::namespaced(t.client.clone(), "w");
        let pp = PostParams::default();
        leases.create(&pp, &lease("one")).await.unwrap();
        let wp = WatchParams::default().disable_bookmarks();
        let mut events = leases.watch(&wp, "0").await.unwrap().boxed();
        let first = next(&mut events).await.unwrap().unwrap();
        assert_eq!(name_of(&first), ("ADDED", "one".to_owned()), "{}", t.name);

        leases.create(&pp, &lease("two")).await.unwrap();
        let patch = Patch::Merge(json!({"spec": {"holderIdentity": "b"}}));
        leases
            .patch("two", &PatchParams::default(), &patch)
            .await
            .unwrap();
        leases
            .delete("one", &DeleteParams::default())
            .await
            .unwrap();
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(name_of(&next(&mut events).await.unwrap().unwrap()));
        }
        assert_eq!(
            seen,
            [
                ("ADDED", "two".to_owned()),
                ("MODIFIED", "two".to_owned()),
                ("DELETED", "one".to_owned())
            ],
            "{}",
            t.name
        );

        // Resuming from a resourceVersion replays what came after it.
        let created = leases.create(&pp, &lease("three")).await.unwrap();
        let rv = created.metadata.resource_version.unwrap();
        leases
            .patch("three", &PatchParams::default(), &patch)
            .await
            .unwrap();
        let mut resumed = leases.watch(&wp, &rv).await.unwrap().boxed();
        let replayed = next(&mut resumed).await.unwrap().unwrap();
        assert_eq!(
            name_of(&replayed),
            ("MODIFIED", "three".to_owned()),
            "{}",
            t.name
        );
    }
}

#[tokio::test]
async fn bookmarks_and_timeout_end_the_stream() {
    let config = SimConfig {
        bookmark_interval: Duration::from_millis(50),
        ..SimConfig::default()
    };
    for t in transports(config).await {
        create_namespace(&t.client, "w").await;
        let leases: Api<Lease> = Api::namespaced(t.client.clone(), "w");
        let wp = WatchParams::default().timeout(1);
        let mut events = leases.watch(&wp, "0").await.unwrap().boxed();
        let mut bookmarks = 0;
        while let Some(event) = next(&mut events).await {
            match event.unwrap() {
                WatchEvent::Bookmark(b) => {
                    assert!(!b.metadata.resource_version.is_empty());
                    bookmarks += 1;
                }
                other => panic!("{}: unexpected {other:?}", t.name),
            }
        }
        assert!(bookmarks > 0, "{}: bookmarks were asked for", t.name);
    }
}

#[tokio::test]
async fn compacted_resource_version_gets_410_expired() {
    for t in transports(SimConfig::default()).await {
        create_namespace(&t.client, "w").await;
        let leases: Api<Lease> = Api::namespaced(t.client.clone(), "w");
        let created = leases
            .create(&PostParams::default(), &lease("one"))
            .await
            .unwrap();
        let old = created.metadata.resource_version.unwrap();
        leases
            .create(&PostParams::default(), &lease("two"))
            .await
            .unwrap();
        t.sim.compact();
        let mut events = leases
            .watch(&WatchParams::default(), &old)
            .await
            .unwrap()
            .boxed();
        match next(&mut events).await {
            Some(Ok(WatchEvent::Error(status))) => {
                assert_eq!(
                    (status.code, status.reason.as_str()),
                    (410, "Expired"),
                    "{}",
                    t.name
                );
            }
            other => panic!("{}: expected a 410 ERROR event, got {other:?}", t.name),
        }
        assert!(
            next(&mut events).await.is_none(),
            "{}: the watch ends after the error",
            t.name
        );
    }
}

#[tokio::test]
async fn watcher_relists_after_410() {
    let config = SimConfig {
        bookmark_interval: Duration::from_secs(3600),
        ..SimConfig::default()
    };
    for t in transports(config).await {
        create_namespace(&t.client, "w").await;
        create_namespace(&t.client, "elsewhere").await;
        let leases: Api<Lease> = Api::namespaced(t.client.clone(), "w");
        leases
            .create(&PostParams::default(), &lease("a"))
            .await
            .unwrap();
        let config = watcher::Config::default().timeout(1);
        let mut events = watcher(leases.clone(), config).boxed();
        let mut inits = 0;
        let mut saw_410 = false;
        let mut wait_for = async |want: &str, inits: &mut usize, saw_410: &mut bool| loop {
            match next(&mut events).await.unwrap() {
                Ok(watcher::Event::Init) => *inits += 1,
                Ok(watcher::Event::InitApply(l) | watcher::Event::Apply(l))
                    if l.metadata.name.as_deref() == Some(want) =>
                {
                    return;
                }
                Ok(_) => {}
                Err(watcher::Error::WatchError(status)) if status.code == 410 => *saw_410 = true,
                Err(other) => panic!("unexpected watcher error {other:?}"),
            }
        };
        wait_for("a", &mut inits, &mut saw_410).await;
        // A write the watcher does not see moves the resourceVersion on; compaction then
        // makes the watcher's version too old to resume from.
        Api::<Lease>::namespaced(t.client.clone(), "elsewhere")
            .create(&PostParams::default(), &lease("other"))
            .await
            .unwrap();
        t.sim.compact();
        while inits < 2 {
            wait_for("a", &mut inits, &mut saw_410).await;
        }
        assert!(saw_410, "{}: the resumed watch got 410", t.name);
        leases
            .create(&PostParams::default(), &lease("b"))
            .await
            .unwrap();
        wait_for("b", &mut inits, &mut saw_410).await;
    }
}

#[tokio::test]
async fn streaming_list_ends_initial_events_with_a_bookmark() {
    for t in transports(SimConfig::default()).await {
        create_namespace(&t.client, "w").await;
        let leases: Api<Lease> = Api::namespaced(t.client.clone(), "w");
        for name in ["a", "b"] {
            leases
                .create(&PostParams::default(), &lease(name))
                .await
                .unwrap();
        }
        let config = watcher::Config::default().streaming_lists();
        let mut events = watcher(leases.clone(), config).boxed();
        let mut initial = Vec::new();
        loop {
            match next(&mut events).await.unwrap().unwrap() {
                watcher::Event::Init => {}
                watcher::Event::InitApply(l) => initial.push(l.metadata.name.unwrap()),
                watcher::Event::InitDone => break,
                other => panic!("{}: unexpected {other:?}", t.name),
            }
        }
        initial.sort();
        assert_eq!(initial, ["a", "b"], "{}", t.name);
        leases
            .create(&PostParams::default(), &lease("c"))
            .await
            .unwrap();
        match next(&mut events).await.unwrap().unwrap() {
            watcher::Event::Apply(l) => assert_eq!(l.metadata.name.as_deref(), Some("c")),
            other => panic!("{}: unexpected {other:?}", t.name),
        }
    }
}
