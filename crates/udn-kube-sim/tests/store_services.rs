//! Services through the store as kube-apiserver treats them: type-dependent defaults,
//! node ports and health check node ports allocated on create and update, kept when an
//! update leaves them out, dropped with the type, refused when taken, and free again
//! once their Service is deleted, changed or restored elsewhere.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure
#![allow(clippy::result_large_err)] // ApiError mirrors metav1.Status; see the crate root

mod store_support;

use serde_json::{Value, json};
use store_support::*;
use udn_kube_sim::{ApiError, DeleteOptions, PatchKind, Sim, Subresource, WriteOptions};

fn setup() -> Sim {
    let sim = sim();
    create_namespace(&sim, "blue");
    create_namespace(&sim, "green");
    sim
}

fn create(sim: &Sim, namespace: &str, name: &str, spec: Value) -> Result<Value, ApiError> {
    sim.create(
        &services(),
        Some(namespace),
        json!({"metadata": {"name": name}, "spec": spec}),
        &write(),
    )
}

fn put(sim: &Sim, namespace: &str, name: &str, body: Value) -> Result<Value, ApiError> {
    sim.update(
        &services(),
        Some(namespace),
        name,
        body,
        Subresource::Main,
        &write(),
    )
}

fn merge_patch(sim: &Sim, namespace: &str, name: &str, body: &Value) -> Result<Value, ApiError> {
    let bytes = serde_json::to_vec(body).unwrap();
    sim.patch(
        &services(),
        Some(namespace),
        name,
        PatchKind::StrategicMerge,
        &bytes,
        Subresource::Main,
        &write(),
    )
}

fn delete(sim: &Sim, namespace: &str, name: &str) {
    sim.delete(
        &services(),
        Some(namespace),
        name,
        &DeleteOptions::default(),
    )
    .unwrap();
}

fn node_ports(svc: &Value) -> Vec<Value> {
    svc["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|port| port.get("nodePort").cloned().unwrap_or(Value::Null))
        .collect()
}

#[test]
fn node_port_services_get_defaults_and_the_lowest_free_dynamic_ports() {
    let sim = setup();
    let svc = create(
        &sim,
        "blue",
        "web",
        json!({"type": "NodePort", "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}),
    )
    .unwrap();
    assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(svc["spec"]["internalTrafficPolicy"], "Cluster");
    assert_eq!(svc["spec"].get("allocateLoadBalancerNodePorts"), None);
    assert_eq!(svc["spec"].get("healthCheckNodePort"), None);
    // 30000-30085 is the static band: dynamic allocation starts above it.
    assert_eq!(node_ports(&svc), [json!(30086), json!(30087)]);
    // Node ports are unique across namespaces.
    let other = create(
        &sim,
        "green",
        "web",
        json!({"type": "NodePort", "ports": [{"port": 80}]}),
    )
    .unwrap();
    assert_eq!(node_ports(&other), [json!(30088)]);

    let plain = create(&sim, "blue", "plain", json!({"ports": [{"port": 80}]})).unwrap();
    assert_eq!(plain["spec"]["type"], "ClusterIP");
    assert_eq!(plain["spec"].get("externalTrafficPolicy"), None);
    assert_eq!(node_ports(&plain), [Value::Null]);
}

#[test]
fn load_balancers_get_node_ports_unless_told_not_to_and_a_health_check_port_when_local() {
    let sim = setup();
    let lb = create(
        &sim,
        "blue",
        "lb",
        json!({"type": "LoadBalancer", "ports": [{"port": 80}]}),
    )
    .unwrap();
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
    assert_eq!(lb["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(node_ports(&lb), [json!(30086)]);
    assert_eq!(lb["spec"].get("healthCheckNodePort"), None);

    let bare = create(
        &sim,
        "blue",
        "bare",
        json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
            "ports": [{"port": 80}, {"port": 81, "nodePort": 30081}]}),
    )
    .unwrap();
    assert_eq!(node_ports(&bare), [Value::Null, json!(30081)]);

    let local = create(
        &sim,
        "blue",
        "local",
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [{"port": 80}]}),
    )
    .unwrap();
    assert_eq!(node_ports(&local), [json!(30087)]);
    assert_eq!(local["spec"]["healthCheckNodePort"], 30088);

    let taken = create(
        &sim,
        "green",
        "taken",
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "healthCheckNodePort": 30081, "ports": [{"port": 80}]}),
    )
    .unwrap_err();
    assert_eq!(taken.code, 500);
    assert_eq!(
        taken.message,
        "Internal error occurred: failed to allocate requested HealthCheck NodePort 30081: provided port is already allocated"
    );
}

#[test]
fn taken_and_out_of_range_node_ports_are_refused_and_deletion_frees_them() {
    let sim = setup();
    create(
        &sim,
        "blue",
        "a",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
    )
    .unwrap();
    let error = create(
        &sim,
        "green",
        "b",
        json!({"type": "NodePort", "ports": [{"port": 81}, {"port": 80, "nodePort": 30080}]}),
    )
    .unwrap_err();
    assert_eq!(error.code, 422);
    assert_eq!(error.reason, "Invalid");
    assert_eq!(
        error.message,
        r#"Service "b" is invalid: spec.ports[1].nodePort: Invalid value: 30080: provided port is already allocated"#
    );
    assert_eq!(error.causes.len(), 1);
    assert_eq!(error.causes[0].field, "spec.ports[1].nodePort");
    assert_eq!(error.causes[0].reason, "FieldValueInvalid");

    let error = create(
        &sim,
        "green",
        "c",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 8080}]}),
    )
    .unwrap_err();
    assert_eq!(
        error.message,
        r#"Service "c" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767"#
    );

    // A dry run holds nothing.
    let dry = WriteOptions {
        dry_run: true,
        ..WriteOptions::default()
    };
    sim.create(
        &services(),
        Some("green"),
        json!({"metadata": {"name": "d"}, "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30090}]}}),
        &dry,
    )
    .unwrap();
    create(
        &sim,
        "green",
        "d",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30090}]}),
    )
    .unwrap();

    delete(&sim, "blue", "a");
    let b = create(
        &sim,
        "green",
        "b",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
    )
    .unwrap();
    assert_eq!(node_ports(&b), [json!(30080)]);
}

#[test]
fn updates_keep_allocated_ports_and_allocate_added_ones() {
    let sim = setup();
    let svc = create(
        &sim,
        "blue",
        "web",
        json!({"type": "NodePort", "ports": [{"name": "http", "port": 80}]}),
    )
    .unwrap();
    assert_eq!(node_ports(&svc), [json!(30086)]);
    // A PUT of the original manifest (no clusterIP, no nodePort) is a no-op.
    let same = put(
        &sim,
        "blue",
        "web",
        json!({"metadata": {"name": "web"}, "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}]}}),
    )
    .unwrap();
    assert_eq!(same, svc);
    // An added port gets a node port of its own.
    let grown = put(
        &sim,
        "blue",
        "web",
        json!({"metadata": {"name": "web"}, "spec": {"type": "NodePort", "ports": [
            {"name": "http", "port": 80}, {"name": "https", "port": 443}]}}),
    )
    .unwrap();
    assert_eq!(node_ports(&grown), [json!(30086), json!(30087)]);
    assert_eq!(grown["spec"]["clusterIP"], svc["spec"]["clusterIP"]);

    // Another Service's port is refused on update too.
    create(
        &sim,
        "green",
        "other",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30100}]}),
    )
    .unwrap();
    let mut taken = grown;
    taken["spec"]["ports"][1]["nodePort"] = json!(30100);
    let error = put(&sim, "blue", "web", taken).unwrap_err();
    assert_eq!(
        error.message,
        r#"Service "web" is invalid: spec.ports[1].nodePort: Invalid value: 30100: provided port is already allocated"#
    );
}

#[test]
fn changing_the_type_to_cluster_ip_drops_and_frees_unchanged_node_ports() {
    let sim = setup();
    create(
        &sim,
        "blue",
        "web",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
    )
    .unwrap();
    // A user-changed node port stays, and ClusterIP refuses it.
    let error = merge_patch(
        &sim,
        "blue",
        "web",
        &json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80, "nodePort": 30081}]}}),
    )
    .unwrap_err();
    assert_eq!(error.code, 422);
    assert_eq!(
        error.message,
        "Service \"web\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
    );

    let cluster_ip =
        merge_patch(&sim, "blue", "web", &json!({"spec": {"type": "ClusterIP"}})).unwrap();
    assert_eq!(node_ports(&cluster_ip), [Value::Null]);
    assert_eq!(cluster_ip["spec"].get("externalTrafficPolicy"), None);
    let reused = create(
        &sim,
        "green",
        "web",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
    )
    .unwrap();
    assert_eq!(node_ports(&reused), [json!(30080)]);

    // Back to NodePort: a new port, not the old one (now taken).
    let again = merge_patch(&sim, "blue", "web", &json!({"spec": {"type": "NodePort"}})).unwrap();
    assert_eq!(node_ports(&again), [json!(30086)]);
    assert_eq!(again["spec"]["externalTrafficPolicy"], "Cluster");
}

#[test]
fn the_health_check_port_follows_the_traffic_policy() {
    let sim = setup();
    let lb = create(
        &sim,
        "blue",
        "lb",
        json!({"type": "LoadBalancer", "ports": [{"port": 80}]}),
    )
    .unwrap();
    assert_eq!(lb["spec"].get("healthCheckNodePort"), None);
    let local = merge_patch(
        &sim,
        "blue",
        "lb",
        &json!({"spec": {"externalTrafficPolicy": "Local"}}),
    )
    .unwrap();
    assert_eq!(local["spec"]["healthCheckNodePort"], 30087);
    assert_eq!(node_ports(&local), [json!(30086)]);
    let error = merge_patch(
        &sim,
        "blue",
        "lb",
        &json!({"spec": {"healthCheckNodePort": 30200}}),
    )
    .unwrap_err();
    assert_eq!(
        error.message,
        "Service \"lb\" is invalid: spec.healthCheckNodePort: Forbidden: field is immutable"
    );
    let cluster = merge_patch(
        &sim,
        "blue",
        "lb",
        &json!({"spec": {"externalTrafficPolicy": "Cluster"}}),
    )
    .unwrap();
    assert_eq!(cluster["spec"].get("healthCheckNodePort"), None);
    let next = create(
        &sim,
        "green",
        "next",
        json!({"type": "NodePort", "ports": [{"port": 80}]}),
    )
    .unwrap();
    assert_eq!(
        node_ports(&next),
        [json!(30087)],
        "the health check port is free again"
    );
}

#[test]
fn restored_services_hold_their_node_ports() {
    let sim = setup();
    create(
        &sim,
        "blue",
        "web",
        json!({"type": "NodePort", "ports": [{"port": 80}]}),
    )
    .unwrap();
    let restored = store_support::sim();
    restored.import(sim.export()).unwrap();
    let next = create(
        &restored,
        "green",
        "next",
        json!({"type": "NodePort", "ports": [{"port": 80}]}),
    )
    .unwrap();
    assert_eq!(node_ports(&next), [json!(30087)]);
    let error = create(
        &restored,
        "green",
        "same",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30086}]}),
    )
    .unwrap_err();
    assert_eq!(error.code, 422);
}
