//! What the Service REST storage does around its strategy: node ports and the health
//! check node port allocated on create (`allocateCreate`), and on update the allocated
//! values a body left out carried over (`patchAllocatedValues`), new ones allocated
//! (`allocateUpdate`) and the fields the new type no longer uses dropped
//! (`dropTypeDependentFields`), in kube-apiserver's order: allocation errors come before
//! validation's.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};
use udn_schema::{FieldError, FieldErrorKind, FieldErrors};

use super::defaults;
use super::node_ports::{NodePortError, NodePortOp, number};
use super::state::State;
use super::validate;
use crate::error::ApiError;

type Spec = Map<String, Value>;

fn kind(spec: &Spec) -> &str {
    spec.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn needs_cluster_ip(spec: &Spec) -> bool {
    kind(spec) != "ExternalName"
}

pub(super) fn needs_node_port(spec: &Spec) -> bool {
    matches!(kind(spec), "NodePort" | "LoadBalancer")
}

/// `NeedsHealthCheck`: a LoadBalancer with `externalTrafficPolicy: Local`.
pub(super) fn needs_health_check(spec: &Spec) -> bool {
    kind(spec) == "LoadBalancer"
        && spec.get("externalTrafficPolicy").and_then(Value::as_str) == Some("Local")
}

/// `shouldAllocateNodePorts`: NodePort, or LoadBalancer unless
/// `allocateLoadBalancerNodePorts: false`.
fn should_allocate(spec: &Spec) -> bool {
    match kind(spec) {
        "NodePort" => true,
        "LoadBalancer" => spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)),
        _ => false,
    }
}

fn ports(spec: &Spec) -> &[Value] {
    spec.get("ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn ports_mut(spec: &mut Spec) -> &mut [Value] {
    spec.get_mut("ports")
        .and_then(Value::as_array_mut)
        .map(Vec::as_mut_slice)
        .unwrap_or_default()
}

fn node_port(port: &Value) -> i64 {
    number(port.get("nodePort"))
}

/// Set a port's `nodePort`; 0 removes it (Go's `omitempty`).
fn set_node_port(port: &mut Value, value: i64) {
    if let Some(port) = port.as_object_mut() {
        if value == 0 {
            port.remove("nodePort");
        } else {
            port.insert("nodePort".to_owned(), json!(value));
        }
    }
}

fn health_check_port(spec: &Spec) -> i64 {
    number(spec.get("healthCheckNodePort"))
}

fn set_health_check_port(spec: &mut Spec, value: i64) {
    if value == 0 {
        spec.remove("healthCheckNodePort");
    } else {
        spec.insert("healthCheckNodePort".to_owned(), json!(value));
    }
}

/// The ports' non-zero node ports (`collectServiceNodePorts`).
fn node_ports(spec: &Spec) -> BTreeSet<i64> {
    ports(spec)
        .iter()
        .map(node_port)
        .filter(|port| *port != 0)
        .collect()
}

/// 422 `spec.ports[i].nodePort: Invalid value: <n>: <allocator error>`.
fn invalid_node_port(name: &str, index: usize, port: i64, error: NodePortError) -> ApiError {
    let errors = FieldErrors(vec![FieldError::new(
        format!("spec.ports[{index}].nodePort"),
        FieldErrorKind::Invalid,
        Some(port.to_string()),
        error.to_string(),
    )]);
    validate::invalid("", "Service", name, &errors)
}

fn internal(message: &str) -> ApiError {
    ApiError::internal(format!("Internal error occurred: {message}"))
}

/// `initNodePorts`: a Service's first node ports. Ports with the same port number share
/// one node port (the real allocator's `svcPortToNodePort`), a requested one if any of
/// them names it.
fn init_node_ports(spec: &mut Spec, op: &mut NodePortOp<'_>, name: &str) -> Result<(), ApiError> {
    let allocate = should_allocate(spec);
    let requested: Vec<(i64, i64)> = ports(spec)
        .iter()
        .map(|port| (number(port.get("port")), node_port(port)))
        .collect();
    let mut by_port: BTreeMap<i64, i64> = BTreeMap::new();
    for (i, port) in ports_mut(spec).iter_mut().enumerate() {
        let (number, given) = requested.get(i).copied().unwrap_or_default();
        if given == 0 && !allocate {
            continue;
        }
        match by_port.get(&number).copied() {
            None => {
                let wanted = requested
                    .iter()
                    .find(|(n, node)| *n == number && *node != 0)
                    .map_or(0, |(_, node)| *node);
                let chosen = if wanted != 0 {
                    op.allocate(wanted)
                        .map_err(|e| invalid_node_port(name, i, wanted, e))?;
                    wanted
                } else {
                    op.allocate_next()
                        .map_err(|e| internal(&format!("failed to allocate a nodePort: {e}")))?
                };
                set_node_port(port, chosen);
                by_port.insert(number, chosen);
            }
            Some(shared) if given == 0 => set_node_port(port, shared),
            Some(shared) if given != shared => op
                .allocate(given)
                .map_err(|e| invalid_node_port(name, i, given, e))?,
            Some(_) => {}
        }
    }
    Ok(())
}

/// `allocHealthCheckNodePort`: the requested one, else the next free one; failures are
/// internal errors, as upstream.
fn alloc_health_check_port(spec: &mut Spec, op: &mut NodePortOp<'_>) -> Result<(), ApiError> {
    let given = health_check_port(spec);
    if given != 0 {
        op.allocate(given).map_err(|e| {
            internal(&format!(
                "failed to allocate requested HealthCheck NodePort {given}: {e}"
            ))
        })
    } else {
        let port = op
            .allocate_next()
            .map_err(|e| internal(&format!("failed to allocate a HealthCheck NodePort 0: {e}")))?;
        set_health_check_port(spec, port);
        Ok(())
    }
}

/// `updateNodePorts`: node ports the old Service did not have are allocated (given or
/// next free); one node port twice for the same protocol is refused.
fn update_node_ports(
    spec: &mut Spec,
    old: &Spec,
    op: &mut NodePortOp<'_>,
    name: &str,
) -> Result<(), ApiError> {
    let allocate = should_allocate(spec);
    let old_ports = node_ports(old);
    let mut allocated = BTreeSet::new();
    let mut seen: Vec<(String, i64)> = Vec::new();
    for (i, port) in ports_mut(spec).iter_mut().enumerate() {
        let mut chosen = node_port(port);
        if chosen == 0 && !allocate {
            continue;
        }
        if chosen != 0 {
            if !old_ports.contains(&chosen) && !allocated.contains(&chosen) {
                op.allocate(chosen)
                    .map_err(|e| invalid_node_port(name, i, chosen, e))?;
                allocated.insert(chosen);
            }
        } else {
            chosen = op
                .allocate_next()
                .map_err(|e| internal(&format!("failed to allocate a nodePort: {e}")))?;
            set_node_port(port, chosen);
        }
        let protocol = port
            .get("protocol")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if seen.iter().any(|(p, n)| *p == protocol && *n == chosen) {
            return Err(internal(&format!(
                "duplicate nodePort: {{{protocol} {chosen}}}"
            )));
        }
        seen.push((protocol, chosen));
    }
    Ok(())
}

/// `patchAllocatedValues`: what the server allocated and the body leaves out is kept, so
/// resubmitting the created YAML (or a PUT without them) works. Node ports are matched
/// by port name, and not carried to a port when another port of the body names them.
fn patch_allocated_values(spec: &mut Spec, old: &Spec) {
    if needs_cluster_ip(old) && needs_cluster_ip(spec) {
        let empty = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
        if empty(spec.get("clusterIP"))
            && let Some(ip) = old.get("clusterIP")
        {
            spec.insert("clusterIP".to_owned(), ip.clone());
        }
        let none = |v: Option<&Value>| v.and_then(Value::as_array).is_none_or(Vec::is_empty);
        if none(spec.get("clusterIPs"))
            && !none(old.get("clusterIPs"))
            && let Some(ips) = old.get("clusterIPs")
        {
            spec.insert("clusterIPs".to_owned(), ips.clone());
        }
    }
    if needs_node_port(old) && needs_node_port(spec) {
        let used: BTreeSet<i64> = node_ports(old)
            .intersection(&node_ports(spec))
            .copied()
            .collect();
        let by_name: BTreeMap<&str, i64> = ports(old)
            .iter()
            .map(|p| {
                let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
                (name, node_port(p))
            })
            .collect();
        let mut patched: Vec<Value> = ports(spec).to_vec();
        for port in &mut patched {
            let name = port.get("name").and_then(Value::as_str).unwrap_or_default();
            let previous = by_name.get(name).copied().unwrap_or(0);
            if node_port(port) == 0 && !used.contains(&previous) {
                set_node_port(port, previous);
            }
        }
        if spec.contains_key("ports") {
            spec.insert("ports".to_owned(), Value::Array(patched));
        }
    }
    if needs_health_check(old) && needs_health_check(spec) && health_check_port(spec) == 0 {
        set_health_check_port(spec, health_check_port(old));
    }
}

/// `dropTypeDependentFields`: when the new type does not use a field and the update left
/// it as it was, it goes (its ports and address are then free); a value the user changed
/// stays for validation to refuse.
fn drop_type_dependent_fields(spec: &mut Spec, old: &Spec) {
    if needs_cluster_ip(old) && !needs_cluster_ip(spec) {
        let same = |spec: &Spec, field: &str| spec.get(field) == old.get(field);
        if same(spec, "clusterIP") && same(spec, "clusterIPs") {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        for field in ["ipFamilies", "ipFamilyPolicy"] {
            if same(spec, field) {
                spec.remove(field);
            }
        }
        // The real server hides it on read (`defaultOnReadInternalTrafficPolicy`).
        spec.remove("internalTrafficPolicy");
    }
    if needs_node_port(old)
        && !needs_node_port(spec)
        && node_ports(spec).is_subset(&node_ports(old))
    {
        for port in ports_mut(spec) {
            set_node_port(port, 0);
        }
    }
    if needs_health_check(old)
        && !needs_health_check(spec)
        && health_check_port(spec) == health_check_port(old)
    {
        set_health_check_port(spec, 0);
    }
    if kind(old) == "LoadBalancer" && kind(spec) != "LoadBalancer" {
        let flag = spec.get("allocateLoadBalancerNodePorts");
        if flag.is_some_and(Value::is_boolean) && flag == old.get("allocateLoadBalancerNodePorts") {
            spec.remove("allocateLoadBalancerNodePorts");
        }
        if spec.get("loadBalancerClass") == old.get("loadBalancerClass") {
            spec.remove("loadBalancerClass");
        }
    }
    if defaults::externally_accessible(old)
        && !defaults::externally_accessible(spec)
        && spec.get("externalTrafficPolicy") == old.get("externalTrafficPolicy")
    {
        spec.remove("externalTrafficPolicy");
    }
}

fn spec_of(obj: &mut Value) -> Option<&mut Spec> {
    obj.get_mut("spec").and_then(Value::as_object_mut)
}

impl State {
    /// `allocateCreate` (after defaulting, before validation): node ports for NodePort
    /// and LoadBalancer Services, and the health check node port when needed.
    pub(super) fn allocate_service_create(&self, obj: &mut Value) -> Result<(), ApiError> {
        let name = super::meta::meta_str(obj, "name").to_owned();
        let Some(spec) = spec_of(obj) else {
            return Ok(());
        };
        let mut op = NodePortOp::new(&self.node_ports);
        if needs_node_port(spec) {
            init_node_ports(spec, &mut op, &name)?;
        }
        if needs_health_check(spec) {
            alloc_health_check_port(spec, &mut op)?;
        }
        Ok(())
    }

    /// A Service update of the main resource, before validation: defaults, the values
    /// allocated before carried over, new allocations (a ClusterIP for a Service that
    /// had none, node ports, the health check node port), then the fields the new type
    /// drops.
    pub(super) fn prepare_service_update(
        &mut self,
        new: &mut Value,
        old: &Value,
    ) -> Result<(), ApiError> {
        let name = super::meta::meta_str(new, "name").to_owned();
        let Some(old_spec) = old.get("spec").and_then(Value::as_object) else {
            return Ok(());
        };
        let Some(spec) = spec_of(new) else {
            return Ok(());
        };
        defaults::set_service_defaults(spec);
        patch_allocated_values(spec, old_spec);
        if needs_cluster_ip(spec) {
            defaults::init_cluster_ip(
                spec,
                &mut self.next_cluster_ip,
                old_spec.get("ipFamilyPolicy"),
            );
        }
        let mut op = NodePortOp::new(&self.node_ports);
        if needs_node_port(spec) {
            update_node_ports(spec, old_spec, &mut op, &name)?;
        }
        if !needs_health_check(old_spec) && needs_health_check(spec) {
            alloc_health_check_port(spec, &mut op)?;
        }
        drop_type_dependent_fields(spec, old_spec);
        let load_balancer = kind(spec) == "LoadBalancer";
        if !load_balancer && let Some(status) = new.get_mut("status").and_then(Value::as_object_mut)
        {
            status.insert("loadBalancer".to_owned(), json!({}));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::node_ports::NodePortIndex;

    fn spec(value: Value) -> Spec {
        match value {
            Value::Object(map) => map,
            _ => Spec::new(),
        }
    }

    fn node_port_list(spec: &Spec) -> Vec<i64> {
        ports(spec).iter().map(node_port).collect()
    }

    #[test]
    fn same_port_numbers_share_a_node_port_on_create() {
        let index = NodePortIndex::default();
        let mut op = NodePortOp::new(&index);
        let mut s = spec(json!({"type": "NodePort", "ports": [
            {"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP", "nodePort": 30053},
            {"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}]}));
        init_node_ports(&mut s, &mut op, "dns").unwrap();
        assert_eq!(node_port_list(&s), [30053, 30053, 30086, 30086]);

        // Another port number may not take the same node port.
        let mut op = NodePortOp::new(&index);
        let mut s = spec(json!({"type": "NodePort", "ports": [
            {"port": 80, "nodePort": 30080}, {"port": 81, "nodePort": 30080}]}));
        let error = init_node_ports(&mut s, &mut op, "web").unwrap_err();
        assert_eq!(error.code, 422);
        assert_eq!(
            error.message,
            "Service \"web\" is invalid: spec.ports[1].nodePort: Invalid value: 30080: provided port is already allocated"
        );
    }

    #[test]
    fn load_balancers_may_skip_node_ports_but_keep_requested_ones() {
        let index = NodePortIndex::default();
        let mut op = NodePortOp::new(&index);
        let mut s = spec(
            json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
            "ports": [{"port": 80}, {"port": 443, "nodePort": 30443}]}),
        );
        init_node_ports(&mut s, &mut op, "lb").unwrap();
        assert_eq!(node_port_list(&s), [0, 30443]);
    }

    #[test]
    fn updates_keep_node_ports_by_name_and_allocate_new_ones() {
        let old = spec(json!({"type": "NodePort", "ports": [
            {"name": "http", "port": 80, "nodePort": 30100},
            {"name": "https", "port": 443, "nodePort": 30101}]}));
        let mut index = NodePortIndex::default();
        index.add(&json!({"spec": old}));
        // https moved to port 8443 and http took https's node port explicitly.
        let mut new = spec(json!({"type": "NodePort", "ports": [
            {"name": "http", "port": 80, "nodePort": 30101},
            {"name": "https", "port": 8443},
            {"name": "metrics", "port": 9090}]}));
        patch_allocated_values(&mut new, &old);
        assert_eq!(node_port_list(&new), [30101, 0, 0]);
        let mut op = NodePortOp::new(&index);
        update_node_ports(&mut new, &old, &mut op, "web").unwrap();
        assert_eq!(node_port_list(&new), [30101, 30086, 30087]);
    }

    #[test]
    fn updates_refuse_a_node_port_twice_for_one_protocol() {
        let old = spec(json!({"type": "ClusterIP", "ports": [{"port": 80}]}));
        let index = NodePortIndex::default();
        let mut op = NodePortOp::new(&index);
        let mut new = spec(json!({"type": "NodePort", "ports": [
            {"port": 80, "protocol": "TCP", "nodePort": 30100},
            {"port": 81, "protocol": "UDP", "nodePort": 30100},
            {"port": 82, "protocol": "TCP", "nodePort": 30100}]}));
        let error = update_node_ports(&mut new, &old, &mut op, "web").unwrap_err();
        assert_eq!(error.code, 500);
        assert_eq!(
            error.message,
            "Internal error occurred: duplicate nodePort: {TCP 30100}"
        );
    }

    #[test]
    fn unchanged_type_dependent_fields_go_with_the_type() {
        let old = spec(
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "healthCheckNodePort": 30200, "allocateLoadBalancerNodePorts": true,
            "ports": [{"port": 80, "nodePort": 30100}]}),
        );
        let mut unchanged = old.clone();
        unchanged.insert("type".to_owned(), json!("ClusterIP"));
        drop_type_dependent_fields(&mut unchanged, &old);
        assert_eq!(
            Value::Object(unchanged),
            json!({"type": "ClusterIP", "ports": [{"port": 80}]})
        );
        let mut changed = old.clone();
        changed.insert("type".to_owned(), json!("ClusterIP"));
        changed.insert("ports".to_owned(), json!([{"port": 80, "nodePort": 30101}]));
        drop_type_dependent_fields(&mut changed, &old);
        assert_eq!(changed["ports"], json!([{"port": 80, "nodePort": 30101}]));
    }
}
