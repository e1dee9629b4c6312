use serde_json::json;
use udn_api::names::ANNOTATION_NETWORKS;

use super::*;
use crate::secondary_services::fixtures::{applied, nginx_nad, pod, service};
use crate::secondary_services::opt_in::{REASON_INVALID, REASON_UNSUPPORTED};

fn refs<T>(items: &[T]) -> Vec<&T> {
    items.iter().collect()
}

/// Plans and applies until converged (at most 3 rounds); returns the slices.
fn converge(service: &Service, pods: &[Pod], slices: Vec<EndpointSlice>) -> Vec<EndpointSlice> {
    let mut slices = slices;
    let mut next = 0;
    for _ in 0..3 {
        let plan = plan_service(service, &refs(pods), &refs(&slices));
        if plan.ops.is_empty() {
            return slices;
        }
        slices = applied(&slices, &plan.ops, &mut next);
    }
    panic!("not converged");
}

fn addresses(slice: &EndpointSlice) -> Vec<&str> {
    slice
        .endpoints
        .iter()
        .flat_map(|e| e.addresses.iter().map(String::as_str))
        .collect()
}

fn seed_002_pods() -> Vec<Pod> {
    let on = |name: &str, app: &str, ip: &'static str| {
        pod(
            "default",
            name,
            json!({"app": app}),
            &[("default/macvlan", &[ip])],
            true,
        )
    };
    vec![
        on("nginx-nad-b4zg8", "nginx-nad", "192.168.2.4"),
        on("nginx-nad-jkx5z", "nginx-nad", "192.168.2.5"),
        // On the network, another app: not a backend.
        on("netutils-nad-kxhsj", "netutils-nad", "192.168.2.6"),
        // The right app, not on the network.
        pod(
            "default",
            "nginx-nad-off",
            json!({"app": "nginx-nad"}),
            &[],
            true,
        ),
    ]
}

#[test]
fn seed_002_one_ipv4_slice_with_the_secondary_ips() {
    let svc = nginx_nad();
    let pods = seed_002_pods();
    let plan = plan_service(&svc, &refs(&pods), &[]);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    let [SliceOp::Create(slice)] = plan.ops.as_slice() else {
        panic!("{:?}", plan.ops);
    };
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(slice.metadata.generate_name.as_deref(), Some("nginx-nad-"));
    assert_eq!(addresses(slice), ["192.168.2.4", "192.168.2.5"]);
    let labels = slice.metadata.labels.clone().unwrap();
    assert_eq!(labels[LABEL_SERVICE_NAME], "nginx-nad");
    assert_eq!(labels[LABEL_MANAGED_BY], MANAGED_BY);
    assert_eq!(labels[LABEL_HEADLESS], "");
    let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.uid.as_str(),
            owner.controller
        ),
        ("Service", "nginx-nad", "svc-uid", Some(true))
    );
    let ports: Vec<(Option<&str>, Option<i32>)> = slice
        .ports
        .iter()
        .flatten()
        .map(|p| (p.name.as_deref(), p.port))
        .collect();
    assert_eq!(
        ports,
        [(Some("http"), Some(80)), (Some("https"), Some(443))]
    );
    let done = plan.done.unwrap();
    assert_eq!((done.warning, done.reason), (false, REASON_UPDATED));
    assert!(done.text.contains("default/macvlan"), "{done:?}");
}

#[test]
fn converged_means_no_writes_and_no_events() {
    let svc = nginx_nad();
    let pods = seed_002_pods();
    let slices = converge(&svc, &pods, Vec::new());
    let plan = plan_service(&svc, &refs(&pods), &refs(&slices));
    assert_eq!(plan, ServicePlan::default());
}

#[test]
fn a_pod_change_updates_its_slice_in_place() {
    let svc = nginx_nad();
    let mut pods = seed_002_pods();
    let slices = converge(&svc, &pods, Vec::new());
    pods[0] = pod(
        "default",
        "nginx-nad-b4zg8",
        json!({"app": "nginx-nad"}),
        &[("default/macvlan", &["192.168.2.4"])],
        false,
    );
    let plan = plan_service(&svc, &refs(&pods), &refs(&slices));
    let [SliceOp::Update(slice)] = plan.ops.as_slice() else {
        panic!("{:?}", plan.ops);
    };
    assert_eq!(slice.metadata.name, slices[0].metadata.name);
    let conditions = slice.endpoints[0].conditions.clone().unwrap();
    assert_eq!(
        (conditions.ready, conditions.serving, conditions.terminating),
        (Some(false), Some(false), Some(false))
    );
    // Gone from the network: out of the slice.
    pods[1] = pod(
        "default",
        "nginx-nad-jkx5z",
        json!({"app": "nginx-nad"}),
        &[],
        true,
    );
    let plan = plan_service(&svc, &refs(&pods), &refs(&slices));
    let [SliceOp::Update(slice)] = plan.ops.as_slice() else {
        panic!("{:?}", plan.ops);
    };
    assert_eq!(addresses(slice), ["192.168.2.4"]);
}

#[test]
fn more_than_100_endpoints_fill_slices_of_100_and_stay_in_place() {
    let svc = nginx_nad();
    let mut pods: Vec<Pod> = (0..250)
        .map(|i| {
            let ip = format!("10.10.{}.{}", i / 200, i % 200 + 1);
            pod(
                "default",
                &format!("p{i:03}"),
                json!({"app": "nginx-nad"}),
                &[("default/macvlan", &[ip.as_str()])],
                true,
            )
        })
        .collect();
    let slices = converge(&svc, &pods, Vec::new());
    let mut sizes: Vec<usize> = slices.iter().map(|s| s.endpoints.len()).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [50, 100, 100]);
    // Ten pods go and ten others come: the new ones take the free room, nothing moves.
    pods.drain(0..10);
    for i in 250..260 {
        let ip = format!("10.11.0.{}", i - 249);
        pods.push(pod(
            "default",
            &format!("p{i:03}"),
            json!({"app": "nginx-nad"}),
            &[("default/macvlan", &[ip.as_str()])],
            true,
        ));
    }
    let plan = plan_service(&svc, &refs(&pods), &refs(&slices));
    assert!(
        plan.ops.iter().all(|op| matches!(op, SliceOp::Update(_))),
        "{:?}",
        plan.ops
    );
    let after = applied(&slices, &plan.ops, &mut 0);
    let where_is = |slices: &[EndpointSlice], pod: &str| {
        slices
            .iter()
            .find(|s| s.endpoints.iter().any(|e| pod_key(e).1 == pod))
            .and_then(|s| s.metadata.name.clone())
    };
    for kept in ["p010", "p120", "p249"] {
        assert_eq!(
            where_is(&slices, kept),
            where_is(&after, kept),
            "{kept} moved"
        );
    }
    assert!(
        after
            .iter()
            .all(|s| s.endpoints.len() <= MAX_ENDPOINTS_PER_SLICE)
    );
    assert_eq!(after.iter().map(|s| s.endpoints.len()).sum::<usize>(), 250);
}

#[test]
fn dual_stack_pods_get_one_slice_per_family() {
    let svc = nginx_nad();
    let pods = [pod(
        "default",
        "a",
        json!({"app": "nginx-nad"}),
        &[("default/macvlan", &["192.168.2.4/24", "fd00::4/64"])],
        true,
    )];
    let slices = converge(&svc, &pods, Vec::new());
    let mut families: Vec<(&str, Vec<&str>)> = slices
        .iter()
        .map(|s| (s.address_type.as_str(), addresses(s)))
        .collect();
    families.sort();
    assert_eq!(
        families,
        [("IPv4", vec!["192.168.2.4"]), ("IPv6", vec!["fd00::4"])]
    );
}

#[test]
fn opting_out_or_becoming_unsupported_deletes_our_slices_only() {
    let svc = nginx_nad();
    let pods = seed_002_pods();
    let mut slices = converge(&svc, &pods, Vec::new());
    // Someone else's slice for the same Service name, and ours of another Service.
    let mut foreign = slices[0].clone();
    foreign.metadata.name = Some("nginx-nad-kube".to_owned());
    foreign.metadata.labels.as_mut().unwrap().insert(
        LABEL_MANAGED_BY.to_owned(),
        "endpointslice-controller.k8s.io".to_owned(),
    );
    let mut other_service = slices[0].clone();
    other_service.metadata.name = Some("other-x".to_owned());
    other_service
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert(LABEL_SERVICE_NAME.to_owned(), "other".to_owned());
    slices.extend([foreign, other_service]);
    let ours = slices[0].metadata.name.clone().unwrap();

    let plain = service(
        "nginx-nad",
        json!({}),
        json!({"app": "nginx-nad"}),
        json!({"clusterIP": "None"}),
    );
    let plan = plan_service(&plain, &refs(&pods), &refs(&slices));
    assert_eq!(plan.ops, [SliceOp::Delete { name: ours.clone() }]);
    assert_eq!(plan.done.unwrap().reason, REASON_DELETED);

    let cluster_ip = service(
        "nginx-nad",
        json!({"isim.dev/network": "macvlan"}),
        json!({}),
        json!({"clusterIP": "10.96.0.5"}),
    );
    let plan = plan_service(&cluster_ip, &refs(&pods), &refs(&slices));
    assert_eq!(plan.ops, [SliceOp::Delete { name: ours.clone() }]);
    assert_eq!(plan.warnings[0].reason, REASON_UNSUPPORTED);

    assert_eq!(
        plan_service_gone("default", "nginx-nad", &refs(&slices)).ops,
        [SliceOp::Delete { name: ours }]
    );
}

#[test]
fn a_malformed_annotation_warns_and_changes_nothing() {
    let good = service(
        "hostnames",
        json!({ANNOTATION_NETWORKS: "br0"}),
        json!({}),
        json!({"selector": {"app": "hostnames"}, "ports": [{"port": 80, "targetPort": 9376}]}),
    );
    let pods = [pod(
        "default",
        "h",
        json!({"app": "hostnames"}),
        &[("default/br0", &["192.168.0.51"])],
        true,
    )];
    let slices = converge(&good, &pods, Vec::new());
    let mut bad = good;
    bad.metadata.annotations =
        Some([(ANNOTATION_NETWORKS.to_owned(), "[{\"name\": ".to_owned())].into());
    let plan = plan_service(&bad, &refs(&pods), &refs(&slices));
    assert!(plan.ops.is_empty());
    assert_eq!(plan.done, None);
    let [warning] = plan.warnings.as_slice() else {
        panic!("{:?}", plan.warnings);
    };
    assert_eq!((warning.warning, warning.reason), (true, REASON_INVALID));
    assert!(warning.text.contains(ANNOTATION_NETWORKS), "{warning:?}");
}

#[test]
fn slices_of_an_earlier_service_of_the_same_name_are_replaced() {
    let svc = nginx_nad();
    let pods = seed_002_pods();
    let slices = converge(&svc, &pods, Vec::new());
    let mut recreated = svc;
    recreated.metadata.uid = Some("new-uid".to_owned());
    let plan = plan_service(&recreated, &refs(&pods), &refs(&slices));
    assert!(
        matches!(
            plan.ops.as_slice(),
            [SliceOp::Create(_), SliceOp::Delete { .. }]
        ),
        "{:?}",
        plan.ops
    );
}

#[test]
fn a_terminating_service_gets_no_writes() {
    let mut svc = nginx_nad();
    svc.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    let plan = plan_service(&svc, &refs(&seed_002_pods()), &[]);
    assert!(plan.ops.is_empty());
}
