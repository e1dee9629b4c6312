//! Test objects for the planner's tests, and the API server's part (applying a plan).

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::{Value, json};
use udn_api::names::ANNOTATION_NETWORK_STATUS;

use super::plan::SliceOp;

/// A Service `default/<name>` (uid `svc-uid`) with `annotations`, `labels` and `spec`.
pub(crate) fn service(name: &str, annotations: Value, labels: Value, spec: Value) -> Service {
    serde_json::from_value(json!({
        "metadata": {
            "name": name, "namespace": "default", "uid": "svc-uid",
            "annotations": annotations, "labels": labels,
        },
        "spec": spec,
    }))
    .unwrap()
}

/// Seed 002's Service: headless, selector-less, `app: nginx-nad`, ports 80 and 443, on
/// `default/macvlan`.
pub(crate) fn nginx_nad() -> Service {
    service(
        "nginx-nad",
        json!({"isim.dev/network": "macvlan"}),
        json!({"app": "nginx-nad"}),
        json!({"clusterIP": "None", "ports": [
            {"name": "http", "port": 80, "protocol": "TCP"},
            {"name": "https", "port": 443, "protocol": "TCP"},
        ]}),
    )
}

/// A Running pod `<namespace>/<name>` on node1 with `labels`, Ready or not, whose
/// network-status lists the default network and `networks` (`(name, ips)`).
pub(crate) fn pod(
    namespace: &str,
    name: &str,
    labels: Value,
    networks: &[(&str, &[&str])],
    ready: bool,
) -> Pod {
    let mut status = vec![
        json!({"name": "kindnet", "interface": "eth0", "ips": ["10.244.0.9"], "default": true}),
    ];
    status.extend(
        networks
            .iter()
            .enumerate()
            .map(|(i, (network, ips))| json!({"name": network, "interface": format!("net{}", i + 1), "ips": ips})),
    );
    serde_json::from_value(json!({
        "metadata": {
            "name": name, "namespace": namespace, "uid": format!("uid-{name}"), "labels": labels,
            "annotations": {ANNOTATION_NETWORK_STATUS: Value::Array(status).to_string()},
        },
        "spec": {"nodeName": "node1", "containers": [{"name": "c"}]},
        "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": if ready { "True" } else { "False" }},
        ]},
    }))
    .unwrap()
}

/// `slices` after `ops`, as the API server would have them: a created slice is named
/// `<generateName>gen<n>` (counting from `next`), an update replaces the slice of its name.
pub(crate) fn applied(
    slices: &[EndpointSlice],
    ops: &[SliceOp],
    next: &mut usize,
) -> Vec<EndpointSlice> {
    let mut result = slices.to_vec();
    for op in ops {
        match op {
            SliceOp::Create(slice) => {
                let mut slice = (**slice).clone();
                let prefix = slice.metadata.generate_name.clone().unwrap_or_default();
                slice.metadata.name = Some(format!("{prefix}gen{next}"));
                *next += 1;
                result.push(slice);
            }
            SliceOp::Update(slice) => {
                for existing in result
                    .iter_mut()
                    .filter(|s| s.metadata.name == slice.metadata.name)
                {
                    *existing = (**slice).clone();
                }
            }
            SliceOp::Delete { name } => result.retain(|s| s.metadata.name.as_deref() != Some(name)),
        }
    }
    result
}
