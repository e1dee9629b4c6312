//! Properties of the planner on arbitrary Services, pods (labels, readiness, deletion,
//! phases, container ports, network-status under either key, valid or not) and existing
//! slices (ours, Kubernetes', other Services', stale owners, any address type):
//!
//! - it never panics, and the same input gives the same plan;
//! - the plan does not depend on the order of the pods or of the slices;
//! - it converges: after its writes, the next plan has none;
//! - it only writes valid slices of ours: at most 100 endpoints, addresses of the slice's
//!   family, and updates/deletes only of our slices of that Service;
//! - a malformed annotation changes nothing.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::fixtures::applied;
use super::opt_in::{OptIn, opt_in};
use super::plan::{SliceOp, plan_service};
use super::{LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY, MAX_ENDPOINTS_PER_SLICE};

fn namespace() -> impl Strategy<Value = &'static str> {
    prop_oneof![9 => Just("default"), 1 => Just("other")]
}

fn app() -> impl Strategy<Value = Option<&'static str>> {
    prop::option::of(prop_oneof![Just("x"), Just("y")])
}

fn isim_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just("macvlan".to_owned()),
        2 => Just("default/macvlan".to_owned()),
        2 => Just("other/br0".to_owned()),
        1 => "[a-zA-Z0-9/_. @-]{0,12}",
    ]
}

fn networks_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("br0".to_owned()),
        2 => Just("default/br0@net1".to_owned()),
        2 => Just("macvlan".to_owned()),
        2 => Just(r#"[{"name": "br0", "namespace": "default"}]"#.to_owned()),
        1 => Just("br0, macvlan".to_owned()),
        1 => Just("[]".to_owned()),
        1 => ".{0,16}",
    ]
}

fn target_port() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        (0i32..70_000).prop_map(|n| json!(n)),
        prop_oneof![Just("web"), Just("http"), Just("9376")].prop_map(|n| json!(n)),
    ]
}

fn service_ports() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(
        (
            prop_oneof![Just("a"), Just("b"), Just("")],
            1i32..65_536,
            target_port(),
            prop_oneof![Just("TCP"), Just("UDP")],
        )
            .prop_map(|(name, port, target, protocol)| {
                json!({"name": name, "port": port, "targetPort": target, "protocol": protocol})
            }),
        0..3,
    )
}

/// Which opt-in annotations a generated Service has.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Isim,
    Networks,
    Both,
    Neither,
}

prop_compose! {
    /// A Service `svc`; most of them opt in the way their kind of Service can, the others
    /// with both annotations, none, or on the wrong kind of Service.
    fn service()(
        namespace in namespace(),
        mode in prop_oneof![
            3 => Just(Mode::Isim), 3 => Just(Mode::Networks), 1 => Just(Mode::Both), 1 => Just(Mode::Neither),
        ],
        isim in isim_value(),
        networks in networks_value(),
        fits in prop::bool::weighted(0.8),
        app in app(),
        app_name in app(),
        kep_label in any::<bool>(),
        cluster_ip in prop_oneof![Just(None), Just(Some("10.96.0.1"))],
        selector_app in prop_oneof![Just("x"), Just("y")],
        publish_not_ready in any::<bool>(),
        ports in service_ports(),
        uid in prop_oneof![3 => Just("svc-uid"), 1 => Just("old-uid")],
        deleting in prop::bool::weighted(0.05),
    ) -> Service {
        let mut annotations = serde_json::Map::new();
        if matches!(mode, Mode::Isim | Mode::Both) {
            annotations.insert("isim.dev/network".to_owned(), json!(isim));
        }
        if matches!(mode, Mode::Networks | Mode::Both) {
            annotations.insert("k8s.v1.cni.cncf.io/networks".to_owned(), json!(networks));
        }
        // What fits the mode: isim.dev/network on headless selector-less Services,
        // k8s.v1.cni.cncf.io/networks on selector Services.
        let (headless, selector) = match mode {
            Mode::Isim => (fits, !fits),
            Mode::Networks => (!fits, fits),
            Mode::Both | Mode::Neither => (fits, fits),
        };
        let mut labels = serde_json::Map::new();
        if let Some(app) = app {
            labels.insert("app".to_owned(), json!(app));
        }
        if let Some(app) = app_name {
            labels.insert("app.kubernetes.io/name".to_owned(), json!(app));
        }
        if kep_label {
            labels.insert("service.kubernetes.io/endpoint-controller-name".to_owned(), json!(MANAGED_BY));
        }
        serde_json::from_value(json!({
            "metadata": {
                "name": "svc", "namespace": namespace, "uid": uid,
                "annotations": annotations, "labels": labels,
                "deletionTimestamp": if deleting { json!("2025-01-01T00:00:00Z") } else { Value::Null },
            },
            "spec": {
                "clusterIP": if headless { Some("None") } else { cluster_ip },
                "selector": selector.then(|| json!({"app": selector_app})),
                "publishNotReadyAddresses": publish_not_ready,
                "ports": ports,
            },
        }))
        .unwrap()
    }
}

fn ip() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any::<[u8; 4]>().prop_map(|b| IpAddr::from(b).to_string()),
        2 => any::<[u8; 16]>().prop_map(|b| IpAddr::from(b).to_string()),
        2 => any::<[u8; 4]>().prop_map(|b| format!("{}/24", IpAddr::from(b))),
        2 => Just("192.168.2.4".to_owned()),
        2 => Just("fd00::4".to_owned()),
        1 => Just("::ffff:192.168.2.4".to_owned()),
        1 => "[0-9a-f:./]{0,10}",
    ]
}

fn status_entry() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            4 => Just("default/macvlan"),
            2 => Just("macvlan"),
            3 => Just("br0"),
            4 => Just("default/br0"),
            2 => Just("other/br0"),
            1 => Just("kindnet"),
            1 => Just(""),
        ],
        prop_oneof![Just("net1"), Just("net2"), Just("")],
        prop::collection::vec(ip(), 0..3),
    )
        .prop_map(
            |(name, interface, ips)| json!({"name": name, "interface": interface, "ips": ips}),
        )
}

/// A network-status value: valid JSON of entries, or anything.
fn network_status() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(status_entry(), 0..5).prop_map(|e| Value::Array(e).to_string()),
        1 => ".{0,20}",
        1 => Just("null".to_owned()),
    ]
}

prop_compose! {
    fn pod(index: usize)(
        namespace in namespace(),
        app in prop::option::weighted(0.8, prop_oneof![Just("x"), Just("y")]),
        app_name in prop::option::weighted(0.8, prop_oneof![Just("x"), Just("y")]),
        ready in any::<bool>(),
        deleting in prop::bool::weighted(0.2),
        phase in prop_oneof![8 => Just("Running"), 1 => Just("Succeeded"), 1 => Just("Pending")],
        status in prop::option::weighted(0.8, network_status()),
        legacy in any::<bool>(),
        ports in prop::collection::vec(
            (prop_oneof![Just("web"), Just("http")], 1i32..65_536, prop_oneof![Just("TCP"), Just("UDP")]),
            0..3,
        ),
    ) -> Pod {
        let mut annotations = serde_json::Map::new();
        if let Some(status) = status {
            let key = if legacy { "k8s.v1.cni.cncf.io/networks-status" } else { "k8s.v1.cni.cncf.io/network-status" };
            annotations.insert(key.to_owned(), json!(status));
        }
        let ports: Vec<Value> = ports
            .into_iter()
            .map(|(name, port, protocol)| json!({"name": name, "containerPort": port, "protocol": protocol}))
            .collect();
        let mut labels = serde_json::Map::new();
        if let Some(app) = app {
            labels.insert("app".to_owned(), json!(app));
        }
        if let Some(app) = app_name {
            labels.insert("app.kubernetes.io/name".to_owned(), json!(app));
        }
        serde_json::from_value(json!({
            "metadata": {
                "name": format!("p{index}"), "namespace": namespace, "uid": format!("uid-{index}"),
                "labels": labels,
                "annotations": annotations,
                "deletionTimestamp": if deleting { json!("2025-01-01T00:00:00Z") } else { Value::Null },
            },
            "spec": {"nodeName": "node1", "containers": [{"name": "c", "ports": ports}]},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        }))
        .unwrap()
    }
}

fn pods() -> impl Strategy<Value = Vec<Pod>> {
    (0usize..9).prop_flat_map(|count| (0..count).map(pod).collect::<Vec<_>>())
}

prop_compose! {
    fn slice(index: usize)(
        namespace in namespace(),
        service in prop_oneof![4 => Just("svc"), 1 => Just("other")],
        managed_by in prop_oneof![4 => Just(MANAGED_BY), 1 => Just("endpointslice-controller.k8s.io")],
        address_type in prop_oneof![4 => Just("IPv4"), 2 => Just("IPv6"), 1 => Just("FQDN")],
        owner in prop_oneof![Just(Some("svc-uid")), Just(Some("old-uid")), Just(None)],
        endpoints in prop::collection::vec(
            (0usize..9, prop::collection::vec(ip(), 1..3), any::<bool>()),
            0..4,
        ),
        ports in prop::collection::vec((prop_oneof![Just("a"), Just("b")], 1i32..65_536), 0..2),
    ) -> EndpointSlice {
        let endpoints: Vec<Value> = endpoints
            .into_iter()
            .map(|(pod, addresses, ready)| json!({
                "addresses": addresses,
                "conditions": {"ready": ready},
                "targetRef": {"kind": "Pod", "namespace": "default", "name": format!("p{pod}")},
            }))
            .collect();
        let ports: Vec<Value> = ports
            .into_iter()
            .map(|(name, port)| json!({"name": name, "port": port, "protocol": "TCP"}))
            .collect();
        let owners = owner.map(|uid| json!([{
            "apiVersion": "v1", "kind": "Service", "name": "svc", "uid": uid,
            "controller": true, "blockOwnerDeletion": true,
        }]));
        serde_json::from_value(json!({
            "metadata": {
                "name": format!("svc-s{index}"), "namespace": namespace, "resourceVersion": "1",
                "labels": {LABEL_SERVICE_NAME: service, LABEL_MANAGED_BY: managed_by},
                "ownerReferences": owners,
            },
            "addressType": address_type,
            "endpoints": endpoints,
            "ports": ports,
        }))
        .unwrap()
    }
}

fn slices() -> impl Strategy<Value = Vec<EndpointSlice>> {
    (0usize..4).prop_flat_map(|count| (0..count).map(slice).collect::<Vec<_>>())
}

/// The inputs, and the same pods and slices in another order.
fn inputs() -> impl Strategy<
    Value = (
        Service,
        Vec<Pod>,
        Vec<EndpointSlice>,
        Vec<Pod>,
        Vec<EndpointSlice>,
    ),
> {
    (service(), pods(), slices()).prop_flat_map(|(service, pods, slices)| {
        (
            Just(service),
            Just(pods.clone()),
            Just(slices.clone()),
            Just(pods).prop_shuffle(),
            Just(slices).prop_shuffle(),
        )
    })
}

fn refs<T>(items: &[T]) -> Vec<&T> {
    items.iter().collect()
}

fn is_ours(slice: &EndpointSlice, service: &Service) -> bool {
    let label = |key: &str| {
        slice
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(key))
            .map(String::as_str)
    };
    slice.metadata.namespace == service.metadata.namespace
        && label(LABEL_SERVICE_NAME) == service.metadata.name.as_deref()
        && label(LABEL_MANAGED_BY) == Some(MANAGED_BY)
}

fn check_written(slice: &EndpointSlice, service: &Service) -> Result<(), TestCaseError> {
    prop_assert!(is_ours(slice, service), "not ours: {slice:?}");
    prop_assert!(slice.endpoints.len() <= MAX_ENDPOINTS_PER_SLICE);
    for endpoint in &slice.endpoints {
        prop_assert!(!endpoint.addresses.is_empty());
        for address in &endpoint.addresses {
            let ip: IpAddr = address
                .parse()
                .map_err(|_| TestCaseError::fail(format!("{address:?}")))?;
            let family = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
            prop_assert_eq!(family, slice.address_type.as_str());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn the_plan_is_a_pure_function_of_the_input(
        (service, pods, slices, shuffled_pods, shuffled_slices) in inputs(),
    ) {
        let plan = plan_service(&service, &refs(&pods), &refs(&slices));
        prop_assert_eq!(&plan, &plan_service(&service, &refs(&pods), &refs(&slices)));
        let reordered = plan_service(&service, &refs(&shuffled_pods), &refs(&shuffled_slices));
        prop_assert_eq!(&plan, &reordered);
    }

    #[test]
    fn the_plan_converges_and_writes_only_valid_slices_of_ours(
        (service, pods, slices, _, _) in inputs(),
    ) {
        let plan = plan_service(&service, &refs(&pods), &refs(&slices));
        for op in &plan.ops {
            let existing = |name: Option<&String>| slices.iter().find(|s| s.metadata.name.as_ref() == name);
            match op {
                SliceOp::Create(slice) => check_written(slice, &service)?,
                SliceOp::Update(slice) => {
                    check_written(slice, &service)?;
                    let before = existing(slice.metadata.name.as_ref());
                    prop_assert!(before.is_some_and(|s| is_ours(s, &service)), "updates {:?}", slice.metadata.name);
                }
                SliceOp::Delete { name } => {
                    let before = existing(Some(name));
                    prop_assert!(before.is_some_and(|s| is_ours(s, &service)), "deletes {}", name);
                }
            }
        }
        prop_assert_eq!(plan.done.is_some(), !plan.ops.is_empty());
        if matches!(opt_in(&service), OptIn::Invalid(_)) {
            prop_assert!(plan.ops.is_empty());
        }
        let after = applied(&slices, &plan.ops, &mut 0);
        let again = plan_service(&service, &refs(&pods), &refs(&after));
        prop_assert!(again.ops.is_empty(), "not converged: {:?}", again.ops);
    }
}
