//! Table columns of the built-in types, after the real server's printers (the columns
//! `kubectl get` shows; `-o wide` adds the priority-1 ones).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{Column, age, field, text};

const NONE: &str = "<none>";

/// The columns of a built-in type (`group`, `plural`); types without a printer get the
/// server's default `Name` and `Created At`.
pub(super) fn columns(group: &str, plural: &str) -> Vec<Column> {
    match (group, plural) {
        ("events.k8s.io" | "", "events") => event_columns(group.is_empty()),
        ("", "namespaces") => vec![
            Column::name(),
            Column::new("Status", "string", 0, |o, _| {
                json!(text(o, &["status", "phase"]).unwrap_or_default())
            }),
            Column::age(),
        ],
        ("", "nodes") => node_columns(),
        ("", "pods") => pod_columns(),
        ("", "services") => service_columns(),
        ("discovery.k8s.io", "endpointslices") => endpoint_slice_columns(),
        ("", "configmaps") => vec![
            Column::name(),
            Column::new("Data", "string", 0, |o, _| {
                let count = |key| o.get(key).and_then(Value::as_object).map_or(0, |m| m.len());
                json!(count("data") + count("binaryData"))
            }),
            Column::age(),
        ],
        ("coordination.k8s.io", "leases") => vec![
            Column::name(),
            Column::new("Holder", "string", 0, |o, _| {
                json!(text(o, &["spec", "holderIdentity"]).unwrap_or_default())
            }),
            Column::age(),
        ],
        _ => vec![
            Column::name(),
            Column::new("Created At", "date", 0, |o, _| {
                json!(text(o, &["metadata", "creationTimestamp"]).unwrap_or_default())
            }),
        ],
    }
}

fn strings(value: Option<&Value>) -> impl Iterator<Item = &str> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn items(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn or_none(s: String) -> Value {
    json!(if s.is_empty() { NONE.to_owned() } else { s })
}

fn node_columns() -> Vec<Column> {
    let address = |kind: &'static str| {
        move |o: &Value, _: Timestamp| {
            let found = items(field(o, &["status", "addresses"]))
                .iter()
                .find(|a| text(a, &["type"]) == Some(kind))
                .and_then(|a| text(a, &["address"]));
            json!(found.unwrap_or(NONE))
        }
    };
    let info = |key: &'static str| {
        move |o: &Value, _: Timestamp| {
            json!(text(o, &["status", "nodeInfo", key]).unwrap_or_default())
        }
    };
    vec![
        Column::name(),
        Column::new("Status", "string", 0, |o, _| json!(node_status(o))),
        Column::new("Roles", "string", 0, |o, _| json!(node_roles(o))),
        Column::age(),
        Column::new("Version", "string", 0, info("kubeletVersion")),
        Column::new("Internal-IP", "string", 1, address("InternalIP")),
        Column::new("External-IP", "string", 1, address("ExternalIP")),
        Column::new("OS-Image", "string", 1, info("osImage")),
        Column::new("Kernel-Version", "string", 1, info("kernelVersion")),
        Column::new(
            "Container-Runtime",
            "string",
            1,
            info("containerRuntimeVersion"),
        ),
    ]
}

fn node_status(node: &Value) -> String {
    let ready = items(field(node, &["status", "conditions"]))
        .iter()
        .find(|c| text(c, &["type"]) == Some("Ready"))
        .and_then(|c| text(c, &["status"]));
    let mut status = match ready {
        Some("True") => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }
    .to_owned();
    if field(node, &["spec", "unschedulable"]).and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    status
}

fn node_roles(node: &Value) -> String {
    let labels = field(node, &["metadata", "labels"]).and_then(Value::as_object);
    let mut roles: Vec<&str> = labels
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| {
            key.strip_prefix("node-role.kubernetes.io/").or_else(|| {
                (key == "kubernetes.io/role")
                    .then(|| value.as_str())
                    .flatten()
            })
        })
        .filter(|role| !role.is_empty())
        .collect();
    roles.sort_unstable();
    roles.dedup();
    if roles.is_empty() {
        NONE.to_owned()
    } else {
        roles.join(",")
    }
}

fn pod_columns() -> Vec<Column> {
    let or_none_at = |path: &'static [&'static str]| {
        move |o: &Value, _: Timestamp| {
            json!(text(o, path).filter(|s| !s.is_empty()).unwrap_or(NONE))
        }
    };
    vec![
        Column::name(),
        Column::new("Ready", "string", 0, |o, _| {
            let total = items(field(o, &["spec", "containers"])).len();
            let ready = items(field(o, &["status", "containerStatuses"]))
                .iter()
                .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
                .count();
            json!(format!("{ready}/{total}"))
        }),
        Column::new("Status", "string", 0, |o, _| json!(pod_status(o))),
        Column::new("Restarts", "string", 0, |o, _| {
            let restarts: u64 = items(field(o, &["status", "containerStatuses"]))
                .iter()
                .filter_map(|c| c.get("restartCount").and_then(Value::as_u64))
                .sum();
            json!(restarts.to_string())
        }),
        Column::age(),
        Column::new("IP", "string", 1, or_none_at(&["status", "podIP"])),
        Column::new("Node", "string", 1, or_none_at(&["spec", "nodeName"])),
        Column::new(
            "Nominated Node",
            "string",
            1,
            or_none_at(&["status", "nominatedNodeName"]),
        ),
        Column::new("Readiness Gates", "string", 1, |o, _| {
            let gates: Vec<&str> = items(field(o, &["spec", "readinessGates"]))
                .iter()
                .filter_map(|g| text(g, &["conditionType"]))
                .collect();
            or_none(gates.join(","))
        }),
    ]
}

fn pod_status(pod: &Value) -> String {
    if field(pod, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null()) {
        return "Terminating".to_owned();
    }
    let waiting_or_terminated = items(field(pod, &["status", "containerStatuses"]))
        .iter()
        .filter_map(|c| {
            text(c, &["state", "waiting", "reason"])
                .or_else(|| text(c, &["state", "terminated", "reason"]))
        })
        .next_back();
    waiting_or_terminated
        .or_else(|| text(pod, &["status", "reason"]))
        .or_else(|| text(pod, &["status", "phase"]))
        .unwrap_or("Pending")
        .to_owned()
}

fn service_columns() -> Vec<Column> {
    vec![
        Column::name(),
        Column::new("Type", "string", 0, |o, _| {
            json!(text(o, &["spec", "type"]).unwrap_or("ClusterIP"))
        }),
        Column::new("Cluster-IP", "string", 0, |o, _| {
            json!(
                text(o, &["spec", "clusterIP"])
                    .filter(|s| !s.is_empty())
                    .unwrap_or(NONE)
            )
        }),
        Column::new("External-IP", "string", 0, |o, _| {
            json!(service_external_ip(o))
        }),
        Column::new("Port(s)", "string", 0, |o, _| {
            let ports: Vec<String> = items(field(o, &["spec", "ports"]))
                .iter()
                .map(|p| {
                    let port = p.get("port").map(Value::to_string).unwrap_or_default();
                    let protocol = text(p, &["protocol"]).unwrap_or("TCP");
                    match p.get("nodePort").and_then(Value::as_u64) {
                        Some(node_port) => format!("{port}:{node_port}/{protocol}"),
                        None => format!("{port}/{protocol}"),
                    }
                })
                .collect();
            or_none(ports.join(","))
        }),
        Column::age(),
        Column::new("Selector", "string", 1, |o, _| {
            let selector: Vec<String> = field(o, &["spec", "selector"])
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect();
            or_none(selector.join(","))
        }),
    ]
}

fn service_external_ip(service: &Value) -> String {
    let mut ips: Vec<&str> = Vec::new();
    if text(service, &["spec", "type"]) == Some("LoadBalancer") {
        ips.extend(
            items(field(service, &["status", "loadBalancer", "ingress"]))
                .iter()
                .filter_map(|i| text(i, &["ip"]).or_else(|| text(i, &["hostname"]))),
        );
        if ips.is_empty() {
            return "<pending>".to_owned();
        }
    }
    ips.extend(strings(field(service, &["spec", "externalIPs"])));
    if text(service, &["spec", "type"]) == Some("ExternalName") {
        ips.extend(text(service, &["spec", "externalName"]));
    }
    if ips.is_empty() {
        NONE.to_owned()
    } else {
        ips.join(",")
    }
}

fn endpoint_slice_columns() -> Vec<Column> {
    vec![
        Column::name(),
        Column::new("AddressType", "string", 0, |o, _| {
            json!(text(o, &["addressType"]).unwrap_or_default())
        }),
        Column::new("Ports", "string", 0, |o, _| {
            let ports: Vec<String> = items(o.get("ports"))
                .iter()
                .filter_map(|p| p.get("port").map(Value::to_string))
                .collect();
            json!(if ports.is_empty() {
                "<unset>".to_owned()
            } else {
                ports.join(",")
            })
        }),
        Column::new("Endpoints", "string", 0, |o, _| {
            let addresses: Vec<&str> = items(o.get("endpoints"))
                .iter()
                .flat_map(|e| strings(e.get("addresses")))
                .collect();
            let shown = addresses
                .iter()
                .take(3)
                .copied()
                .collect::<Vec<_>>()
                .join(",");
            json!(match addresses.len() {
                0 => "<unset>".to_owned(),
                1..=3 => shown,
                n => format!("{shown} + {} more...", n - 3),
            })
        }),
        Column::age(),
    ]
}

fn event_columns(core: bool) -> Vec<Column> {
    let (regarding, note) = if core {
        ("involvedObject", "message")
    } else {
        ("regarding", "note")
    };
    vec![
        Column::new("Last Seen", "string", 0, move |o, now| {
            let last = [
                &["series", "lastObservedTime"][..],
                &["lastTimestamp"],
                &["deprecatedLastTimestamp"],
                &["eventTime"],
                &["metadata", "creationTimestamp"],
            ]
            .iter()
            .find_map(|path| text(o, path));
            json!(age(last, now))
        }),
        Column::new("Type", "string", 0, |o, _| {
            json!(text(o, &["type"]).unwrap_or_default())
        }),
        Column::new("Reason", "string", 0, |o, _| {
            json!(text(o, &["reason"]).unwrap_or_default())
        }),
        Column::new("Object", "string", 0, move |o, _| {
            let kind = text(o, &[regarding, "kind"])
                .unwrap_or_default()
                .to_lowercase();
            let name = text(o, &[regarding, "name"]).unwrap_or_default();
            json!(format!("{kind}/{name}"))
        }),
        Column::new("Message", "string", 0, move |o, _| {
            json!(text(o, &[note]).unwrap_or_default())
        }),
        Column {
            priority: 1,
            ..Column::name()
        },
    ]
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use serde_json::json;

    use super::*;

    fn cells(group: &str, plural: &str, object: &Value) -> Vec<Value> {
        columns(group, plural)
            .iter()
            .map(|c| (c.cell)(object, Timestamp::UNIX_EPOCH))
            .collect()
    }

    #[test]
    fn pod_node_and_service_cells() {
        let pod = json!({
            "metadata": {"name": "p", "creationTimestamp": "1970-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIP": "10.0.0.5", "containerStatuses": [
                {"ready": true, "restartCount": 2}, {"ready": false, "restartCount": 1}
            ]}
        });
        assert_eq!(
            cells("", "pods", &pod),
            vec![
                json!("p"),
                json!("1/2"),
                json!("Running"),
                json!("3"),
                json!("0s"),
                json!("10.0.0.5"),
                json!("n1"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        let node = json!({
            "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        });
        assert_eq!(
            cells("", "nodes", &node).get(1..3).map(<[Value]>::to_vec),
            Some(vec![
                json!("Ready,SchedulingDisabled"),
                json!("control-plane")
            ])
        );
        let service = json!({
            "metadata": {"name": "s"},
            "spec": {"type": "NodePort", "clusterIP": "10.96.0.10",
                     "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}],
                     "selector": {"app": "web"}}
        });
        let service_cells = cells("", "services", &service);
        assert_eq!(service_cells.get(4), Some(&json!("80:30080/TCP")));
        assert_eq!(service_cells.get(3), Some(&json!("<none>")));
        assert_eq!(service_cells.get(6), Some(&json!("app=web")));
    }
}
