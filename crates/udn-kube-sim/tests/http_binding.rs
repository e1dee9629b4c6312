//! `pods/binding` through `kube::Client`, in-process and over HTTP: a Binding assigns the
//! Pod to its Node with `PodScheduled=True`; binding it again is a 409 as upstream words it;
//! a mismatched name, a missing pod and other verbs are refused.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod http_support;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use http_support::{Transport, both, create_namespace, status_of};

fn binding(name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": name, "annotations": {"scheduled-by": "test"}},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    })
}

async fn binding_of(t: &Transport) {
    let context = t.name;
    create_namespace(&t.client, "bind").await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "bind");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();

    let answer: Value = pods
        .create_subresource(
            "binding",
            "web",
            &PostParams::default(),
            &binding("web", "node1"),
        )
        .await
        .unwrap();
    assert_eq!(answer["status"], "Success", "{context}");
    let bound = pods.get("web").await.unwrap();
    assert_eq!(
        bound.spec.unwrap().node_name.as_deref(),
        Some("node1"),
        "{context}"
    );
    assert_eq!(
        bound.metadata.annotations.unwrap()["scheduled-by"],
        "test",
        "{context}"
    );
    let conditions = bound.status.unwrap().conditions.unwrap();
    let scheduled = conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled")
        .unwrap();
    assert_eq!(scheduled.status, "True", "{context}");
    assert!(scheduled.last_transition_time.is_some(), "{context}");

    let again = status_of(
        pods.create_subresource::<Value, Value>(
            "binding",
            "web",
            &PostParams::default(),
            &binding("web", "node2"),
        )
        .await,
    );
    assert_eq!(again.code, 409, "{context}");
    assert_eq!(again.reason, "Conflict", "{context}");
    assert_eq!(
        again.message,
        "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"node1\"",
        "{context}"
    );

    let mismatch = status_of(
        pods.create_subresource::<Value, Value>(
            "binding",
            "web",
            &PostParams::default(),
            &binding("other", "node2"),
        )
        .await,
    );
    assert_eq!(mismatch.code, 400, "{context}");
    let missing = status_of(
        pods.create_subresource::<Value, Value>(
            "binding",
            "nope",
            &PostParams::default(),
            &binding("nope", "node2"),
        )
        .await,
    );
    assert_eq!(missing.code, 404, "{context}");
    assert_eq!(missing.message, "pods \"nope\" not found", "{context}");
}

#[tokio::test]
async fn binding_assigns_once() {
    for t in both().await {
        binding_of(&t).await;
    }
}
