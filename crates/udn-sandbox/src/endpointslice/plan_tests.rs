use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::json;

use super::super::desired::desired;
use super::super::fixtures::{converge, inputs, pod, service};
use super::super::{ANNOTATION_TRIGGER_TIME, LABEL_MANAGED_BY};
use super::*;

fn svc() -> k8s_openapi::api::core::v1::Service {
    service(
        json!({"selector": {"app": "web"}, "ipFamilies": ["IPv4"], "clusterIP": "10.96.0.10",
                    "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    )
}

fn pods(count: usize) -> Vec<k8s_openapi::api::core::v1::Pod> {
    (0..count)
        .map(|i| {
            pod(
                &format!("p{i:03}"),
                "n1",
                &[&format!("10.0.{}.{}", i / 200, i % 200 + 1)],
                true,
            )
        })
        .collect()
}

fn creates(plan: &Plan) -> Vec<&EndpointSlice> {
    plan.ops
        .iter()
        .filter_map(|op| match op {
            SliceOp::Create(s) => Some(s),
            _ => None,
        })
        .collect()
}

#[test]
fn endpoints_go_to_new_slices_of_at_most_max_and_converge() {
    let service = svc();
    let desired = desired(&inputs(&service, &pods(250))).unwrap();
    let plan = plan(&desired, &[], Some("2025-01-01T00:00:00Z"), 100);
    let sizes: Vec<usize> = creates(&plan).iter().map(|s| s.endpoints.len()).collect();
    assert_eq!(sizes, [100, 100, 50]);
    let first = creates(&plan)[0];
    assert_eq!(first.metadata.generate_name.as_deref(), Some("web-"));
    assert_eq!(first.address_type, "IPv4");
    assert_eq!(
        first.metadata.annotations.as_ref().unwrap()[ANNOTATION_TRIGGER_TIME],
        "2025-01-01T00:00:00Z"
    );
    assert_eq!(
        first.metadata.labels.as_ref().unwrap()[LABEL_MANAGED_BY],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(
        first.metadata.owner_references.as_ref().unwrap()[0].uid,
        "svc-uid"
    );
    let slices = converge(&[], &plan);
    assert!(super::plan(&desired, &slices, None, 100).is_empty());
}

#[test]
fn no_endpoints_give_one_placeholder_which_is_kept() {
    let service = svc();
    let desired = desired(&inputs(&service, &[])).unwrap();
    let plan = plan(&desired, &[], None, 100);
    let placeholder = creates(&plan);
    assert_eq!(placeholder.len(), 1);
    assert!(placeholder[0].endpoints.is_empty());
    assert_eq!(placeholder[0].ports, Some(vec![]));
    let slices = converge(&[], &plan);
    assert!(super::plan(&desired, &slices, None, 100).is_empty());
}

#[test]
fn a_readiness_change_updates_the_slice_in_place() {
    let service = svc();
    let before = desired(&inputs(&service, &pods(3))).unwrap();
    let slices = converge(&[], &plan(&before, &[], None, 100));
    let mut changed = pods(3);
    changed[1] = pod("p001", "n1", &["10.0.0.2"], false);
    let after = desired(&inputs(&service, &changed)).unwrap();
    let plan = plan(&after, &slices, Some("2025-01-01T00:09:00Z"), 100);
    let [SliceOp::Update(slice)] = plan.ops.as_slice() else {
        panic!("expected one update: {plan:?}");
    };
    assert_eq!(slice.metadata.name, slices[0].metadata.name);
    let ready: Vec<bool> = slice
        .endpoints
        .iter()
        .map(|e| e.conditions.as_ref().unwrap().ready.unwrap())
        .collect();
    assert_eq!(ready, [true, false, true]);
    assert_eq!(
        slice.metadata.annotations.as_ref().unwrap()[ANNOTATION_TRIGGER_TIME],
        "2025-01-01T00:09:00Z"
    );
}

#[test]
fn a_slice_emptied_while_another_is_needed_is_reused_under_its_name() {
    let service = svc();
    let before = desired(&inputs(&service, &pods(1))).unwrap();
    let slices = converge(&[], &plan(&before, &[], None, 100));
    // The pod is replaced by one whose port resolves differently (a new port set).
    let ported = service_with_named_port();
    let mut replacement = pod("q", "n1", &["10.0.0.9"], true);
    replacement.spec.as_mut().unwrap().containers[0]
        .ports
        .as_mut()
        .unwrap()[0]
        .container_port = 9090;
    let after = desired(&inputs(&ported, &[replacement])).unwrap();
    let plan = plan(&after, &slices, None, 100);
    let [SliceOp::Update(slice)] = plan.ops.as_slice() else {
        panic!("expected the old slice to be reused: {plan:?}");
    };
    assert_eq!(slice.metadata.name, slices[0].metadata.name);
    assert_eq!(slice.ports.as_ref().unwrap()[0].port, Some(9090));
    assert_eq!(slice.endpoints.len(), 1);
}

fn service_with_named_port() -> k8s_openapi::api::core::v1::Service {
    service(json!({"selector": {"app": "web"}, "ipFamilies": ["IPv4"],
                    "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}))
}

#[test]
fn slices_of_another_owner_or_of_a_dropped_family_are_deleted() {
    let service = svc();
    let desired = desired(&inputs(&service, &pods(1))).unwrap();
    let mut slices = converge(&[], &plan(&desired, &[], None, 100));
    let mut foreign = slices[0].clone();
    foreign.metadata.name = Some("web-old".to_owned());
    foreign.metadata.owner_references.as_mut().unwrap()[0].uid = "old-uid".to_owned();
    let mut v6 = slices[0].clone();
    v6.metadata.name = Some("web-v6".to_owned());
    v6.address_type = "IPv6".to_owned();
    slices.extend([foreign, v6]);
    let plan = plan(&desired, &slices, None, 100);
    assert_eq!(
        plan.ops,
        vec![
            SliceOp::Delete("web-old".to_owned()),
            SliceOp::Delete("web-v6".to_owned())
        ]
    );
}

#[test]
fn new_endpoints_fill_the_best_fitting_unchanged_slice() {
    let service = svc();
    let all = pods(150);
    let before = desired(&inputs(&service, &all[..120])).unwrap();
    let slices = converge(&[], &plan(&before, &[], None, 100));
    assert_eq!(
        slices.iter().map(|s| s.endpoints.len()).collect::<Vec<_>>(),
        [100, 20]
    );
    let after = desired(&inputs(&service, &all)).unwrap();
    let plan = plan(&after, &slices, None, 100);
    let [SliceOp::Update(slice)] = plan.ops.as_slice() else {
        panic!("expected one update: {plan:?}");
    };
    assert_eq!(slice.metadata.name, slices[1].metadata.name);
    assert_eq!(slice.endpoints.len(), 50);
}

#[test]
fn service_label_changes_update_the_slices_and_a_deleting_service_gets_no_new_slice() {
    let mut service = svc();
    let desired_before = desired(&inputs(&service, &pods(1))).unwrap();
    let slices = converge(&[], &plan(&desired_before, &[], None, 100));
    service
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("tier".to_owned(), "front".to_owned());
    let relabelled = desired(&inputs(&service, &pods(1))).unwrap();
    let plan_labels = plan(&relabelled, &slices, None, 100);
    let [SliceOp::Update(slice)] = plan_labels.ops.as_slice() else {
        panic!("expected one update: {plan_labels:?}");
    };
    assert_eq!(slice.metadata.labels.as_ref().unwrap()["tier"], "front");
    service.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2025-01-01T00:05:00Z".parse().unwrap(),
        ));
    let deleting = desired(&inputs(&service, &pods(1))).unwrap();
    assert!(creates(&plan(&deleting, &[], None, 100)).is_empty());
}
