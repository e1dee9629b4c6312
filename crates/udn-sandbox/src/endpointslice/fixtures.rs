//! Objects for the unit tests of the pure parts.

use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::{Value, json};

use super::inputs::Inputs;
use super::plan::{Plan, SliceOp};

pub(super) fn service(spec: Value) -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid", "labels": {"app": "web"},
                     "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": spec,
    }))
    .unwrap()
}

/// A running pod `name` on `node` with `ips`, Ready or not.
pub(super) fn pod(name: &str, node: &str, ips: &[&str], ready: bool) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "labels": {"app": "web"}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i",
                 "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}]},
        "status": {"phase": "Running", "podIP": ips.first(),
                   "podIPs": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>(),
                   "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                                   "lastTransitionTime": "2025-01-01T00:01:00Z"}]},
    }))
    .unwrap()
}

pub(super) fn node(name: &str, zone: Option<&str>) -> Node {
    let labels = zone.map_or_else(|| json!({}), |z| json!({"topology.kubernetes.io/zone": z}));
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

pub(super) fn inputs(service: &Service, pods: &[Pod]) -> Inputs {
    let nodes = [node("n1", Some("z1")), node("n2", None)];
    Inputs::gather(service, pods, &nodes)
}

/// `existing` after `plan` ran (created slices named `<generateName>N`).
pub(super) fn converge(existing: &[EndpointSlice], plan: &Plan) -> Vec<EndpointSlice> {
    let mut slices = existing.to_vec();
    for (index, op) in plan.ops.iter().enumerate() {
        match op {
            SliceOp::Create(slice) => {
                let mut slice = slice.clone();
                slice.metadata.name = Some(format!(
                    "{}{index}",
                    slice.metadata.generate_name.clone().unwrap_or_default()
                ));
                slices.push(slice);
            }
            SliceOp::Update(slice) => {
                let position = slices
                    .iter()
                    .position(|s| s.metadata.name == slice.metadata.name)
                    .expect("an update names an existing slice");
                slices[position] = slice.clone();
            }
            SliceOp::Delete(name) => slices.retain(|s| s.metadata.name.as_deref() != Some(name)),
        }
    }
    slices
}
