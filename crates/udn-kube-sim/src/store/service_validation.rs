//! The parts of `ValidateService` / `ValidateServiceUpdate` about node ports and traffic
//! policies, with the real messages: what is left after allocation and the dropping of
//! type-dependent fields is refused here.

use serde_json::{Map, Value};
use udn_schema::{FieldError, FieldErrorKind};

use super::defaults::externally_accessible;
use super::node_ports::number;
use super::service_alloc::needs_health_check;

const ETP: &str = "spec.externalTrafficPolicy";
const HEALTH_CHECK: &str = "spec.healthCheckNodePort";

fn quoted(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// `spec.ports[i].nodePort` on a ClusterIP Service, and one node port used twice for one
/// protocol.
fn node_port_errors(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    let ports = spec
        .get("ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let cluster_ip = spec.get("type").and_then(Value::as_str) == Some("ClusterIP");
    if cluster_ip {
        for (i, port) in ports.iter().enumerate() {
            if number(port.get("nodePort")) != 0 {
                errors.push(FieldError::new(
                    format!("spec.ports[{i}].nodePort"),
                    FieldErrorKind::Forbidden,
                    None,
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut seen: Vec<(&str, i64)> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let node_port = number(port.get("nodePort"));
        if node_port == 0 {
            continue;
        }
        let protocol = port
            .get("protocol")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if seen.contains(&(protocol, node_port)) {
            errors.push(FieldError::new(
                format!("spec.ports[{i}].nodePort"),
                FieldErrorKind::Duplicate,
                Some(node_port.to_string()),
                "",
            ));
        }
        seen.push((protocol, node_port));
    }
}

/// `validateServiceExternalTrafficPolicy`: the policy only on externally accessible
/// Services (and then Cluster or Local), the health check node port exactly when needed.
fn traffic_policy_errors(spec: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    let policy = spec.get("externalTrafficPolicy").filter(|v| !v.is_null());
    let policy_text = policy.and_then(Value::as_str).unwrap_or_default();
    if !externally_accessible(spec) {
        // An empty string is Go's unset value.
        if let Some(value) = policy.filter(|v| v.as_str() != Some("")) {
            errors.push(FieldError::new(
                ETP,
                FieldErrorKind::Invalid,
                Some(quoted(value)),
                "may only be set for externally-accessible services",
            ));
        }
    } else if policy_text.is_empty() {
        errors.push(FieldError::new(ETP, FieldErrorKind::Required, None, ""));
    } else if !matches!(policy_text, "Cluster" | "Local") {
        errors.push(FieldError::new(
            ETP,
            FieldErrorKind::NotSupported,
            Some(format!("{policy_text:?}")),
            r#"supported values: "Cluster", "Local""#,
        ));
    }
    let port = number(spec.get("healthCheckNodePort"));
    if !needs_health_check(spec) {
        if port != 0 {
            errors.push(FieldError::new(
                HEALTH_CHECK,
                FieldErrorKind::Invalid,
                Some(port.to_string()),
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if port == 0 {
        errors.push(FieldError::new(
            HEALTH_CHECK,
            FieldErrorKind::Required,
            None,
            "",
        ));
    } else if !(1..=65535).contains(&port) {
        errors.push(FieldError::new(
            HEALTH_CHECK,
            FieldErrorKind::Invalid,
            Some(port.to_string()),
            "must be between 1 and 65535, inclusive",
        ));
    }
}

/// The Service errors of a create (`old` None) or update.
pub(super) fn service_errors(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(spec) = obj.get("spec").and_then(Value::as_object) else {
        return errors;
    };
    node_port_errors(spec, &mut errors);
    let flag = spec
        .get("allocateLoadBalancerNodePorts")
        .filter(|v| !v.is_null());
    let load_balancer = spec.get("type").and_then(Value::as_str) == Some("LoadBalancer");
    if flag.is_some() && !load_balancer {
        errors.push(FieldError::new(
            "spec.allocateLoadBalancerNodePorts",
            FieldErrorKind::Forbidden,
            None,
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    traffic_policy_errors(spec, &mut errors);
    let old_spec = old
        .and_then(|old| old.get("spec"))
        .and_then(Value::as_object);
    if let Some(old_spec) = old_spec
        && needs_health_check(old_spec)
        && needs_health_check(spec)
        && number(old_spec.get("healthCheckNodePort")) != number(spec.get("healthCheckNodePort"))
    {
        errors.push(FieldError::new(
            HEALTH_CHECK,
            FieldErrorKind::Forbidden,
            None,
            "field is immutable",
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(obj: &Value, old: Option<&Value>) -> Vec<String> {
        service_errors(obj, old)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn cluster_ip_services_may_not_name_node_ports() {
        let svc = json!({"spec": {"type": "ClusterIP", "ports": [
            {"port": 80, "protocol": "TCP", "nodePort": 30080},
            {"port": 81, "protocol": "TCP"}]}});
        assert_eq!(
            messages(&svc, None),
            ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]
        );
    }

    #[test]
    fn traffic_policy_fields_follow_the_type() {
        let svc = json!({"spec": {"type": "ClusterIP", "externalTrafficPolicy": "Local",
            "allocateLoadBalancerNodePorts": true, "healthCheckNodePort": 30200}});
        assert_eq!(
            messages(&svc, None),
            [
                "spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'",
                r#"spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services"#,
                "spec.healthCheckNodePort: Invalid value: 30200: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ]
        );
        let lb = json!({"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "allocateLoadBalancerNodePorts": true, "healthCheckNodePort": 30200,
            "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30100},
                      {"port": 81, "protocol": "TCP", "nodePort": 30100}]}});
        let moved = json!({"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "allocateLoadBalancerNodePorts": true, "healthCheckNodePort": 30201}});
        assert_eq!(
            messages(&moved, Some(&lb)),
            ["spec.healthCheckNodePort: Forbidden: field is immutable"]
        );
        assert_eq!(
            messages(&lb, None),
            ["spec.ports[1].nodePort: Duplicate value: 30100"]
        );
    }
}
