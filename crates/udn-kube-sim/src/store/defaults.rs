//! What the built-in types' registry strategies do to an object on create and update:
//! initial status, defaults, Service cluster IPs, the namespace name label and finalizer.

use serde_json::{Map, Value, json};

use super::meta;
use super::registry::{Builtin, TypeEntry};

/// The namespace finalizer the namespace controller removes once the namespace is empty.
pub(super) const NAMESPACE_FINALIZER: &str = "kubernetes";
/// The label every namespace carries with its own name.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

fn object(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj.as_object_mut()
}

fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_owned(), value);
    }
}

/// `PrepareForCreate` of the type: status set or dropped, defaults filled in.
/// `next_cluster_ip` hands out Service ClusterIPs.
pub(super) fn prepare_for_create(entry: &TypeEntry, obj: &mut Value, next_cluster_ip: &mut u32) {
    match entry.builtin() {
        Some(Builtin::Namespace) => {
            name_label(obj);
            let Some(map) = object(obj) else { return };
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if !spec.is_object() {
                *spec = json!({});
            }
            let mut finalizers = meta::string_list(spec.get("finalizers"));
            if !finalizers.iter().any(|f| f == NAMESPACE_FINALIZER) {
                finalizers.push(NAMESPACE_FINALIZER.to_owned());
            }
            spec["finalizers"] = json!(finalizers);
            map.insert("status".to_owned(), json!({"phase": "Active"}));
        }
        Some(Builtin::Pod) => {
            let qos = qos_class(obj);
            let Some(map) = object(obj) else { return };
            if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
                set_default(spec, "restartPolicy", json!("Always"));
                set_default(spec, "dnsPolicy", json!("ClusterFirst"));
                set_default(spec, "schedulerName", json!("default-scheduler"));
                set_default(spec, "terminationGracePeriodSeconds", json!(30));
                set_default(spec, "enableServiceLinks", json!(true));
            }
            map.insert(
                "status".to_owned(),
                json!({"phase": "Pending", "qosClass": qos}),
            );
        }
        Some(Builtin::Service) => {
            let Some(map) = object(obj) else { return };
            if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
                service_defaults(spec, next_cluster_ip);
            }
            map.insert("status".to_owned(), json!({"loadBalancer": {}}));
        }
        Some(Builtin::Crd) => {
            if let Some(map) = object(obj) {
                map.remove("status");
            }
        }
        Some(
            Builtin::Node
            | Builtin::Event
            | Builtin::EventsV1
            | Builtin::EndpointSlice
            | Builtin::Lease
            | Builtin::ConfigMap,
        ) => {}
        None => {
            if entry.rt.status_subresource
                && let Some(map) = object(obj)
            {
                map.remove("status");
            }
        }
    }
}

/// `PrepareForUpdate` additions of the type (besides the status split).
pub(super) fn prepare_for_update(entry: &TypeEntry, obj: &mut Value, old: &Value) {
    if entry.is(Builtin::Namespace) {
        name_label(obj);
        // spec.finalizers only change through the namespace controller's finalize call.
        let finalizers = old.pointer("/spec/finalizers").cloned();
        if let Some(map) = object(obj) {
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if !spec.is_object() {
                *spec = json!({});
            }
            if let Some(spec) = spec.as_object_mut() {
                match finalizers {
                    Some(finalizers) => spec.insert("finalizers".to_owned(), finalizers),
                    None => spec.remove("finalizers"),
                };
            }
        }
    }
}

fn name_label(obj: &mut Value) {
    let name = meta::meta_str(obj, "name").to_owned();
    if let Some(meta) = meta::meta_mut(obj) {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        labels[NAMESPACE_NAME_LABEL] = Value::String(name);
    }
}

/// The pod's QoS class from its containers' requests and limits.
fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["/spec/containers", "/spec/initContainers"]
        .iter()
        .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
        .flatten()
        .collect();
    let resource = |c: &Value, kind: &str, name: &str| {
        c.pointer(&format!("/resources/{kind}/{name}")).cloned()
    };
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for container in &containers {
        for name in ["cpu", "memory"] {
            let request = resource(container, "requests", name);
            let limit = resource(container, "limits", name);
            any |= request.is_some() || limit.is_some();
            match (&request, &limit) {
                (_, None) => guaranteed = false,
                (Some(request), Some(limit)) if request != limit => guaranteed = false,
                _ => {}
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Whether the Service is reachable from outside the cluster (`ExternallyAccessible`):
/// what `externalTrafficPolicy` applies to.
pub(super) fn externally_accessible(spec: &Map<String, Value>) -> bool {
    match spec.get("type").and_then(Value::as_str) {
        Some("NodePort" | "LoadBalancer") => true,
        Some("ClusterIP") => spec
            .get("externalIPs")
            .and_then(Value::as_array)
            .is_some_and(|ips| !ips.is_empty()),
        _ => false,
    }
}

/// `SetDefaults_Service`, which the real server applies to every Service it decodes,
/// created or updated: type, session affinity, port protocol and target port,
/// `externalTrafficPolicy: Cluster` when externally accessible,
/// `internalTrafficPolicy: Cluster` unless ExternalName, and
/// `allocateLoadBalancerNodePorts: true` for LoadBalancers.
pub(super) fn set_service_defaults(spec: &mut Map<String, Value>) {
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(port, "protocol", json!("TCP"));
            if let Some(number) = port.get("port").cloned() {
                set_default(port, "targetPort", number);
            }
        }
    }
    if externally_accessible(spec) {
        set_default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if matches!(kind.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer") {
        set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        set_default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

/// The IP family fields and ClusterIP of a Service that needs one (not ExternalName):
/// the given ClusterIP kept (`None` for headless), else the next one of 10.96.0.0/12.
/// `old_policy` is the stored Service's `ipFamilyPolicy` on update, which an update that
/// leaves it out keeps (`initIPFamilyFields`).
pub(super) fn init_cluster_ip(
    spec: &mut Map<String, Value>,
    next_cluster_ip: &mut u32,
    old_policy: Option<&Value>,
) {
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return;
    }
    set_default(spec, "ipFamilies", json!(["IPv4"]));
    let policy = old_policy.cloned().unwrap_or_else(|| json!("SingleStack"));
    set_default(spec, "ipFamilyPolicy", policy);
    let given = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let ip = if given.is_empty() {
        let host = *next_cluster_ip;
        *next_cluster_ip = next_cluster_ip.wrapping_add(1);
        let address = std::net::Ipv4Addr::from(0x0a60_0000_u32 | (host & 0x000f_ffff));
        address.to_string()
    } else {
        given
    };
    spec.insert("clusterIP".to_owned(), json!(ip));
    let no_ips = spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_ips {
        spec.insert("clusterIPs".to_owned(), json!([ip]));
    }
}

/// Service defaults on create: `SetDefaults_Service`, then the IP family fields and
/// ClusterIP.
fn service_defaults(spec: &mut Map<String, Value>, next_cluster_ip: &mut u32) {
    set_service_defaults(spec);
    init_cluster_ip(spec, next_cluster_ip, None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_classes() {
        assert_eq!(
            qos_class(&json!({"spec": {"containers": [{}]}})),
            "BestEffort"
        );
        let limited = json!({"spec": {"containers": [{"resources": {
            "limits": {"cpu": "1", "memory": "1Gi"}}}]}});
        assert_eq!(qos_class(&limited), "Guaranteed");
        let requested = json!({"spec": {"containers": [{"resources": {
            "requests": {"cpu": "1"}}}]}});
        assert_eq!(qos_class(&requested), "Burstable");
    }

    #[test]
    fn services_get_cluster_ips_in_order() {
        let mut next = 1;
        let mut spec = Map::new();
        spec.insert("ports".to_owned(), json!([{"port": 80}]));
        service_defaults(&mut spec, &mut next);
        assert_eq!(spec["clusterIP"], "10.96.0.1");
        assert_eq!(spec["ports"][0]["targetPort"], 80);
        assert_eq!(spec["ports"][0]["protocol"], "TCP");
        let mut headless = Map::new();
        headless.insert("clusterIP".to_owned(), json!("None"));
        service_defaults(&mut headless, &mut next);
        assert_eq!(headless["clusterIP"], "None");
        assert_eq!(next, 2);
    }

    #[test]
    fn traffic_policy_and_node_port_defaults_follow_the_type() {
        let defaulted = |spec: Value| {
            let Value::Object(mut spec) = spec else {
                panic!("not an object")
            };
            set_service_defaults(&mut spec);
            spec
        };
        let cluster_ip = defaulted(json!({}));
        assert_eq!(cluster_ip.get("externalTrafficPolicy"), None);
        assert_eq!(cluster_ip.get("allocateLoadBalancerNodePorts"), None);
        assert_eq!(cluster_ip["internalTrafficPolicy"], "Cluster");
        let external_ips = defaulted(json!({"externalIPs": ["192.0.2.1"]}));
        assert_eq!(external_ips["externalTrafficPolicy"], "Cluster");
        let node_port = defaulted(json!({"type": "NodePort"}));
        assert_eq!(node_port["externalTrafficPolicy"], "Cluster");
        assert_eq!(node_port.get("allocateLoadBalancerNodePorts"), None);
        let lb = defaulted(json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local"}));
        assert_eq!(lb["externalTrafficPolicy"], "Local");
        assert_eq!(lb["allocateLoadBalancerNodePorts"], true);
        let kept =
            defaulted(json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false}));
        assert_eq!(kept["allocateLoadBalancerNodePorts"], false);
        let external_name = defaulted(json!({"type": "ExternalName"}));
        assert_eq!(external_name.get("internalTrafficPolicy"), None);
        assert_eq!(external_name.get("externalTrafficPolicy"), None);
    }
}
