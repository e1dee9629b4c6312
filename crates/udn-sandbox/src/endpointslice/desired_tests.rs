use serde_json::json;

use super::super::fixtures::{inputs, pod, service};
use super::*;

fn group_of(desired: &Desired, address_type: AddressType) -> Vec<&Group> {
    desired
        .groups
        .iter()
        .filter(|((t, _), _)| *t == address_type)
        .map(|(_, g)| g)
        .collect()
}

#[test]
fn a_service_without_selector_or_of_type_external_name_is_left_alone() {
    let no_selector = service(json!({"ports": [{"port": 80}]}));
    assert!(desired(&inputs(&no_selector, &[])).is_none());
    let external = service(
        json!({"type": "ExternalName", "externalName": "x.example", "selector": {"app": "web"}}),
    );
    assert!(desired(&inputs(&external, &[])).is_none());
}

#[test]
fn conditions_follow_readiness_and_termination() {
    let svc = service(
        json!({"selector": {"app": "web"}, "ipFamilies": ["IPv4"], "clusterIP": "10.96.0.10",
                              "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    );
    let mut terminating = pod("c", "n1", &["10.0.0.3"], true);
    terminating.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2025-01-01T00:05:00Z".parse().unwrap(),
        ));
    let mut done = pod("d", "n1", &["10.0.0.4"], false);
    done.status.as_mut().unwrap().phase = Some("Succeeded".to_owned());
    let no_ip = pod("e", "n1", &[], false);
    let pods = [
        pod("a", "n1", &["10.0.0.1"], true),
        pod("b", "n2", &["10.0.0.2"], false),
        terminating,
        done,
        no_ip,
    ];
    let desired = desired(&inputs(&svc, &pods)).unwrap();
    let groups = group_of(&desired, AddressType::IPv4);
    assert_eq!(groups.len(), 1);
    let conditions: Vec<(String, bool, bool, bool, Option<String>)> = groups[0]
        .endpoints
        .values()
        .map(|e| {
            let c = e.conditions.clone().unwrap();
            (
                e.addresses.join(","),
                c.ready.unwrap(),
                c.serving.unwrap(),
                c.terminating.unwrap(),
                e.zone.clone(),
            )
        })
        .collect();
    assert_eq!(
        conditions,
        vec![
            (
                "10.0.0.1".to_owned(),
                true,
                true,
                false,
                Some("z1".to_owned())
            ),
            ("10.0.0.2".to_owned(), false, false, false, None),
            (
                "10.0.0.3".to_owned(),
                false,
                true,
                true,
                Some("z1".to_owned())
            ),
        ]
    );
    let a = groups[0].endpoints.values().next().unwrap();
    let target = a.target_ref.clone().unwrap();
    assert_eq!(
        (
            target.kind.as_deref(),
            target.namespace.as_deref(),
            target.name.as_deref(),
            target.uid.as_deref()
        ),
        (Some("Pod"), Some("ns"), Some("a"), Some("uid-a"))
    );
    assert_eq!(a.node_name.as_deref(), Some("n1"));
    assert_eq!(
        groups[0].ports,
        vec![EndpointPort {
            name: Some("http".to_owned()),
            port: Some(8080),
            protocol: Some("TCP".to_owned()),
            app_protocol: None
        }]
    );
    assert!(!desired.template.headless);
    assert_eq!(
        desired
            .template
            .labels()
            .get(LABEL_MANAGED_BY)
            .map(String::as_str),
        Some(CONTROLLER_NAME)
    );
    assert_eq!(
        desired
            .template
            .labels()
            .get(LABEL_SERVICE_NAME)
            .map(String::as_str),
        Some("web")
    );
    assert_eq!(
        desired.template.labels().get("app").map(String::as_str),
        Some("web")
    );
}

#[test]
fn publish_not_ready_addresses_makes_every_endpoint_ready() {
    let svc = service(
        json!({"selector": {"app": "web"}, "ipFamilies": ["IPv4"], "publishNotReadyAddresses": true,
                              "ports": [{"port": 80}]}),
    );
    let desired = desired(&inputs(&svc, &[pod("b", "gone", &["10.0.0.2"], false)])).unwrap();
    let endpoint = group_of(&desired, AddressType::IPv4)[0]
        .endpoints
        .values()
        .next()
        .unwrap()
        .clone();
    let conditions = endpoint.conditions.unwrap();
    assert_eq!(
        (conditions.ready, conditions.serving),
        (Some(true), Some(false))
    );
    // Published although its node does not exist, as upstream does with publishNotReadyAddresses.
    assert!(desired.missing_nodes.is_empty());
}

#[test]
fn a_pod_on_a_missing_node_is_left_out_and_reported() {
    let svc = service(
        json!({"selector": {"app": "web"}, "ipFamilies": ["IPv4"], "ports": [{"port": 80}]}),
    );
    let desired = desired(&inputs(&svc, &[pod("b", "gone", &["10.0.0.2"], true)])).unwrap();
    assert_eq!(desired.missing_nodes, ["b"]);
    assert!(
        group_of(&desired, AddressType::IPv4)[0]
            .endpoints
            .is_empty()
    );
}

#[test]
fn dual_stack_pods_give_one_group_per_family() {
    let svc = service(
        json!({"selector": {"app": "web"}, "ipFamilies": ["IPv6", "IPv4"], "ports": [{"port": 80}]}),
    );
    let desired = desired(&inputs(
        &svc,
        &[pod("a", "n1", &["10.0.0.1", "fd00::0001"], true)],
    ))
    .unwrap();
    assert_eq!(
        desired.address_types,
        BTreeSet::from([AddressType::IPv4, AddressType::IPv6])
    );
    let v6 = group_of(&desired, AddressType::IPv6)[0]
        .endpoints
        .values()
        .next()
        .unwrap();
    assert_eq!(v6.addresses, ["fd00::1"]);
    let v4 = group_of(&desired, AddressType::IPv4)[0]
        .endpoints
        .values()
        .next()
        .unwrap();
    assert_eq!(v4.addresses, ["10.0.0.1"]);
}

#[test]
fn address_types_fall_back_to_the_cluster_ip_then_both() {
    let v6 = service(json!({"clusterIP": "fd00::10"}));
    assert_eq!(address_types(&v6), BTreeSet::from([AddressType::IPv6]));
    let headless = service(json!({"clusterIP": "None"}));
    assert_eq!(
        address_types(&headless),
        BTreeSet::from([AddressType::IPv4, AddressType::IPv6])
    );
}

#[test]
fn named_ports_resolve_per_pod_and_split_groups() {
    let svc = service(json!({"selector": {"app": "web"}, "ipFamilies": ["IPv4"],
        "ports": [{"name": "web", "port": 80, "targetPort": "http", "protocol": "TCP", "appProtocol": "http"},
                  {"name": "dns", "port": 53, "targetPort": "http", "protocol": "UDP"}]}));
    let a = pod("a", "n1", &["10.0.0.1"], true);
    let mut b = pod("b", "n1", &["10.0.0.2"], true);
    b.spec.as_mut().unwrap().containers[0]
        .ports
        .as_mut()
        .unwrap()[0]
        .container_port = 9090;
    let desired = desired(&inputs(&svc, &[a, b])).unwrap();
    let groups = group_of(&desired, AddressType::IPv4);
    assert_eq!(groups.len(), 2);
    let ports: BTreeSet<(i32, usize)> = groups
        .iter()
        .map(|g| (g.ports[0].port.unwrap(), g.endpoints.len()))
        .collect();
    assert_eq!(ports, BTreeSet::from([(8080, 1), (9090, 1)]));
    // The UDP port has no UDP container port named `http`: left out.
    assert!(groups.iter().all(|g| g.ports.len() == 1));
    assert_eq!(groups[0].ports[0].app_protocol.as_deref(), Some("http"));
    assert_eq!(groups[0].ports[0].name.as_deref(), Some("web"));
}

#[test]
fn reserved_labels_of_the_service_are_not_copied_and_headless_is_marked() {
    let mut svc =
        service(json!({"selector": {"app": "web"}, "clusterIP": "None", "ipFamilies": ["IPv4"]}));
    svc.metadata.labels = Some(BTreeMap::from([
        ("app".to_owned(), "web".to_owned()),
        (LABEL_MANAGED_BY.to_owned(), "someone-else".to_owned()),
    ]));
    let desired = desired(&inputs(&svc, &[])).unwrap();
    assert!(desired.template.headless);
    let labels = desired.template.labels();
    assert_eq!(
        labels.get(LABEL_MANAGED_BY).map(String::as_str),
        Some(CONTROLLER_NAME)
    );
    assert_eq!(labels.get(LABEL_HEADLESS).map(String::as_str), Some(""));
    assert_eq!(desired.template.owner.controller, Some(true));
    assert_eq!(desired.template.owner.block_owner_deletion, Some(true));
    assert_eq!(desired.template.generate_name, "web-");
}

#[test]
fn the_endpoint_controller_name_label_changes_nothing_as_upstream() {
    // KEP-4770 was never implemented in kube-controller-manager.
    let mut svc = service(
        json!({"selector": {"app": "web"}, "ipFamilies": ["IPv4"], "ports": [{"port": 80}]}),
    );
    svc.metadata.labels = Some(BTreeMap::from([(
        "service.kubernetes.io/endpoint-controller-name".to_owned(),
        "custom".to_owned(),
    )]));
    let desired = desired(&inputs(&svc, &[pod("a", "n1", &["10.0.0.1"], true)])).unwrap();
    assert_eq!(group_of(&desired, AddressType::IPv4)[0].endpoints.len(), 1);
}
