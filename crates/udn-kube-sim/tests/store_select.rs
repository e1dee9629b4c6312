//! LIST: list shape, order, label and field selectors, paging.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

mod store_support;

use serde_json::json;
use store_support::*;
use udn_kube_sim::{ListOptions, Sim};

fn labelled_pods() -> Sim {
    let sim = sim();
    create_namespace(&sim, "blue");
    create_namespace(&sim, "red");
    let rows = [
        (
            "blue",
            "a",
            json!({"app": "web", "tier": "front"}),
            "node-1",
        ),
        ("blue", "b", json!({"app": "db", "tier": "back"}), "node-2"),
        ("red", "c", json!({"app": "web"}), "node-2"),
        ("blue", "d", json!({"app": "cache", "legacy": "yes"}), ""),
    ];
    for (ns, name, labels, node) in rows {
        let mut body = pod(name);
        body["metadata"]["labels"] = labels;
        if !node.is_empty() {
            body["spec"]["nodeName"] = json!(node);
        }
        create_pod(&sim, ns, body);
    }
    sim
}

fn select(sim: &Sim, namespace: Option<&str>, labels: &str, fields: &str) -> Vec<String> {
    let opts = ListOptions {
        label_selector: (!labels.is_empty()).then(|| labels.to_owned()),
        field_selector: (!fields.is_empty()).then(|| fields.to_owned()),
        ..ListOptions::default()
    };
    names(&sim.list(&pods(), namespace, &opts).unwrap())
}

#[test]
fn lists_are_sorted_and_shaped_as_the_server_does() {
    let sim = labelled_pods();
    let list = sim.list(&pods(), None, &ListOptions::default()).unwrap();
    assert_eq!(list["kind"], "PodList");
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(
        list["metadata"]["resourceVersion"],
        sim.resource_version().to_string()
    );
    assert_eq!(
        names(&list),
        ["a", "b", "d", "c"],
        "by namespace, then name"
    );
    let item = &list["items"][0];
    assert!(
        item.get("apiVersion").is_none(),
        "built-in list items carry no type"
    );
    assert!(item.get("kind").is_none());
    let blue = sim
        .list(&pods(), Some("blue"), &ListOptions::default())
        .unwrap();
    assert_eq!(names(&blue), ["a", "b", "d"]);
    let namespaces = sim
        .list(&namespaces(), Some("ignored"), &ListOptions::default())
        .unwrap();
    assert_eq!(names(&namespaces), ["blue", "red"]);
}

#[test]
fn custom_resource_list_items_keep_their_type() {
    let sim = sim();
    install_udn_crd(&sim);
    create_namespace(&sim, "blue");
    sim.create(&udns(), Some("blue"), udn("net"), &write())
        .unwrap();
    let list = sim.list(&udns(), None, &ListOptions::default()).unwrap();
    assert_eq!(list["kind"], "UserDefinedNetworkList");
    assert_eq!(list["apiVersion"], "k8s.ovn.org/v1");
    assert_eq!(list["items"][0]["kind"], "UserDefinedNetwork");
    assert_eq!(list["items"][0]["apiVersion"], "k8s.ovn.org/v1");
}

#[test]
fn label_selectors_in_the_full_syntax() {
    let sim = labelled_pods();
    assert_eq!(select(&sim, None, "app=web", ""), ["a", "c"]);
    assert_eq!(select(&sim, None, "app==web", ""), ["a", "c"]);
    assert_eq!(select(&sim, None, "app!=web", ""), ["b", "d"]);
    assert_eq!(select(&sim, None, "app in (db, cache)", ""), ["b", "d"]);
    assert_eq!(select(&sim, None, "app notin (web)", ""), ["b", "d"]);
    assert_eq!(select(&sim, None, "tier", ""), ["a", "b"]);
    assert_eq!(select(&sim, None, "!tier", ""), ["d", "c"]);
    assert_eq!(select(&sim, None, "app=web,tier=front", ""), ["a"]);
    assert_eq!(select(&sim, Some("blue"), "!legacy,app", ""), ["a", "b"]);
    assert_eq!(
        select(&sim, None, "tier notin (front)", ""),
        ["b", "d", "c"]
    );
}

#[test]
fn bad_label_selectors_are_bad_requests() {
    let sim = labelled_pods();
    let opts = ListOptions {
        label_selector: Some("app in web".to_owned()),
        ..ListOptions::default()
    };
    let error = sim.list(&pods(), None, &opts).unwrap_err();
    assert_eq!(error.code, 400);
    assert_eq!(error.reason, "BadRequest");
    assert_eq!(
        error.message,
        "unable to parse requirement: found 'web' expected: '('"
    );
}

#[test]
fn field_selectors() {
    let sim = labelled_pods();
    assert_eq!(select(&sim, None, "", "metadata.name=b"), ["b"]);
    assert_eq!(select(&sim, None, "", "metadata.namespace!=blue"), ["c"]);
    assert_eq!(select(&sim, None, "", "spec.nodeName=node-2"), ["b", "c"]);
    assert_eq!(select(&sim, None, "", "spec.nodeName=="), ["d"]);
    assert_eq!(
        select(
            &sim,
            None,
            "",
            "status.phase=Pending,metadata.namespace=blue"
        ),
        ["a", "b", "d"]
    );
    assert_eq!(select(&sim, None, "app=web", "spec.nodeName=node-2"), ["c"]);
    let nodes = sim.list(
        &namespaces(),
        None,
        &ListOptions {
            field_selector: Some("metadata.name=red".to_owned()),
            ..ListOptions::default()
        },
    );
    assert_eq!(names(&nodes.unwrap()), ["red"]);
}

#[test]
fn unknown_fields_are_refused_as_the_server_does() {
    let sim = labelled_pods();
    let opts = |selector: &str| ListOptions {
        field_selector: Some(selector.to_owned()),
        ..ListOptions::default()
    };
    let error = sim
        .list(&pods(), None, &opts("spec.color=red"))
        .unwrap_err();
    assert_eq!(error.code, 400);
    assert_eq!(error.message, "field label not supported: spec.color");
    let error = sim
        .list(&namespaces(), None, &opts("metadata.namespace=x"))
        .unwrap_err();
    assert_eq!(
        error.message,
        "field label not supported: metadata.namespace"
    );
    let error = sim
        .list(&leases(), None, &opts("spec.holderIdentity=a"))
        .unwrap_err();
    assert_eq!(
        error.message,
        r#""spec.holderIdentity" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
    let error = sim.list(&pods(), None, &opts("spec.nodeName")).unwrap_err();
    assert_eq!(
        error.message,
        "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'"
    );
}

#[test]
fn event_fields() {
    let sim = sim();
    create_namespace(&sim, "blue");
    let event = json!({
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "blue"},
        "reason": "Started",
        "type": "Normal",
        "source": {"component": "kubelet"},
    });
    sim.create(&events(), Some("blue"), event, &write())
        .unwrap();
    let opts = |selector: &str| ListOptions {
        field_selector: Some(selector.to_owned()),
        ..ListOptions::default()
    };
    let found = |selector: &str| names(&sim.list(&events(), None, &opts(selector)).unwrap());
    assert_eq!(
        found("involvedObject.name=web,involvedObject.kind=Pod"),
        ["e1"]
    );
    assert_eq!(found("reason=Started,type=Normal,source=kubelet"), ["e1"]);
    assert!(found("involvedObject.name=db").is_empty());
}

#[test]
fn paging_with_limit_and_continue() {
    let sim = sim();
    create_namespace(&sim, "blue");
    for name in ["a", "b", "c", "d", "e"] {
        create_pod(&sim, "blue", pod(name));
    }
    let first = sim
        .list(
            &pods(),
            None,
            &ListOptions {
                limit: Some(2),
                ..ListOptions::default()
            },
        )
        .unwrap();
    assert_eq!(names(&first), ["a", "b"]);
    assert_eq!(first["metadata"]["remainingItemCount"], 3);
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    // A write between pages shows up in later pages.
    create_pod(&sim, "blue", pod("f"));
    let second = sim
        .list(
            &pods(),
            None,
            &ListOptions {
                limit: Some(2),
                continue_token: Some(token),
                ..ListOptions::default()
            },
        )
        .unwrap();
    assert_eq!(names(&second), ["c", "d"]);
    assert_eq!(
        second["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
    let token = second["metadata"]["continue"].as_str().unwrap().to_owned();
    let third = sim
        .list(
            &pods(),
            None,
            &ListOptions {
                limit: Some(2),
                continue_token: Some(token.clone()),
                ..ListOptions::default()
            },
        )
        .unwrap();
    assert_eq!(names(&third), ["e", "f"]);
    assert!(third["metadata"].get("continue").is_none());
    // After compaction the token is too old.
    sim.compact();
    let error = sim
        .list(
            &pods(),
            None,
            &ListOptions {
                continue_token: Some(token),
                ..ListOptions::default()
            },
        )
        .unwrap_err();
    assert_eq!(error.code, 410);
    assert_eq!(error.reason, "Expired");
    let error = sim
        .list(
            &pods(),
            None,
            &ListOptions {
                continue_token: Some("garbage".to_owned()),
                ..ListOptions::default()
            },
        )
        .unwrap_err();
    assert_eq!(error.code, 400);
}

#[test]
fn paging_with_a_selector() {
    let sim = labelled_pods();
    let opts = ListOptions {
        label_selector: Some("app=web".to_owned()),
        limit: Some(1),
        ..ListOptions::default()
    };
    let first = sim.list(&pods(), None, &opts).unwrap();
    assert_eq!(names(&first), ["a"]);
    assert!(first["metadata"].get("remainingItemCount").is_none());
    let next = ListOptions {
        continue_token: first["metadata"]["continue"].as_str().map(str::to_owned),
        ..opts
    };
    let second = sim.list(&pods(), None, &next).unwrap();
    assert_eq!(names(&second), ["c"]);
}
