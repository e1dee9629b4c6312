//! Object builders as JSON (what a user would apply).

use serde_json::{Value, json};

/// A Namespace; `primary` adds the `k8s.ovn.org/primary-user-defined-network` label.
pub fn namespace(name: &str, primary: bool) -> Value {
    let mut labels = serde_json::Map::new();
    if primary {
        labels.insert(
            udn_api::names::LABEL_PRIMARY_UDN_NAMESPACE.to_owned(),
            json!(""),
        );
    }
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

/// A Node.
pub fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
}

/// A Layer3 UDN with one subnet (`cidr`, host subnet 24 for IPv4 / 64 for IPv6 by default).
pub fn l3_udn(namespace: &str, name: &str, role: &str, cidrs: &[&str]) -> Value {
    let subnets: Vec<Value> = cidrs.iter().map(|c| json!({"cidr": c})).collect();
    json!({
        "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"topology": "Layer3", "layer3": {"role": role, "subnets": subnets}},
    })
}

/// A Layer2 UDN.
pub fn l2_udn(namespace: &str, name: &str, role: &str, subnets: &[&str]) -> Value {
    json!({
        "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"topology": "Layer2", "layer2": {"role": role, "subnets": subnets}},
    })
}

/// A CUDN selecting namespaces with `selector` labels, with the given `network` spec.
pub fn cudn(name: &str, selector: Value, network: Value) -> Value {
    json!({
        "apiVersion": "k8s.ovn.org/v1", "kind": "ClusterUserDefinedNetwork",
        "metadata": {"name": name},
        "spec": {"namespaceSelector": selector, "network": network},
    })
}

/// A Pod scheduled on `node` (unscheduled when `None`).
pub fn pod(namespace: &str, name: &str, node: Option<&str>) -> Value {
    pod_with_annotations(namespace, name, node, json!({}))
}

/// A Pod with annotations.
pub fn pod_with_annotations(
    namespace: &str,
    name: &str,
    node: Option<&str>,
    annotations: Value,
) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "registry.example/app:1"}]});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": spec,
    })
}
