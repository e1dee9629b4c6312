//! Helpers shared by the `store_*` tests: keys of the built-in types, object builders.
#![allow(dead_code)] // each test crate uses a different subset
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use serde_json::{Value, json};
use udn_kube_sim::{ResourceKey, Sim, SimConfig, WriteOptions};

pub(crate) fn sim() -> Sim {
    Sim::new(SimConfig::default())
}

pub(crate) fn key(group: &str, plural: &str) -> ResourceKey {
    ResourceKey {
        group: group.to_owned(),
        plural: plural.to_owned(),
    }
}

pub(crate) fn namespaces() -> ResourceKey {
    key("", "namespaces")
}

pub(crate) fn pods() -> ResourceKey {
    key("", "pods")
}

pub(crate) fn nodes() -> ResourceKey {
    key("", "nodes")
}

pub(crate) fn services() -> ResourceKey {
    key("", "services")
}

pub(crate) fn events() -> ResourceKey {
    key("", "events")
}

pub(crate) fn leases() -> ResourceKey {
    key("coordination.k8s.io", "leases")
}

pub(crate) fn endpoint_slices() -> ResourceKey {
    key("discovery.k8s.io", "endpointslices")
}

pub(crate) fn crds() -> ResourceKey {
    key("apiextensions.k8s.io", "customresourcedefinitions")
}

pub(crate) fn udns() -> ResourceKey {
    key("k8s.ovn.org", "userdefinednetworks")
}

pub(crate) fn write() -> WriteOptions {
    WriteOptions::default()
}

pub(crate) fn create_namespace(sim: &Sim, name: &str) -> Value {
    sim.create(
        &namespaces(),
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        &write(),
    )
    .unwrap()
}

pub(crate) fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]},
    })
}

pub(crate) fn create_pod(sim: &Sim, namespace: &str, body: Value) -> Value {
    sim.create(&pods(), Some(namespace), body, &write())
        .unwrap()
}

pub(crate) fn meta<'a>(obj: &'a Value, field: &str) -> &'a Value {
    &obj["metadata"][field]
}

pub(crate) fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Install the real UserDefinedNetwork CRD.
pub(crate) fn install_udn_crd(sim: &Sim) -> Value {
    let crd = udn_api::crd::to_manifest_json(&udn_api::crd::user_defined_network_crd()).unwrap();
    sim.create(&crds(), None, crd, &write()).unwrap()
}

/// A valid Layer3 primary UDN.
pub(crate) fn udn(name: &str) -> Value {
    json!({
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "UserDefinedNetwork",
        "metadata": {"name": name},
        "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [{"cidr": "10.10.0.0/16"}]}},
    })
}

/// Names of the items of a list.
pub(crate) fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether an object exists.
pub(crate) fn exists(sim: &Sim, key: &ResourceKey, namespace: Option<&str>, name: &str) -> bool {
    match sim.get(key, namespace, name) {
        Ok(_) => true,
        Err(error) if error.code == 404 => false,
        Err(error) => panic!("unexpected error {error:?}"),
    }
}
