//! Nodes, from their annotations, as the zone sees them ([`crate::model::Node`]). Pure.
//!
//! | field | annotation | written by |
//! |---|---|---|
//! | `id` | `k8s.ovn.org/node-id` | cluster-manager |
//! | `transit_ips` | `k8s.ovn.org/node-transit-switch-port-ifaddr` | cluster-manager |
//! | `subnets` | `k8s.ovn.org/node-subnets` | cluster-manager |
//! | `layer2_gateway_tunnel_ids` | `k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids` | cluster-manager |
//! | `chassis_id` | `k8s.ovn.org/node-chassis-id` | node agent |
//! | `gateway` | `k8s.ovn.org/l3-gateway-config` (`default`) | node agent |
//! | `encap_ips` | `k8s.ovn.org/node-encap-ips` | node agent |
//! | `host_cidrs` | `k8s.ovn.org/host-cidrs` | node agent |
//! | `gateway_mtu_support` | `k8s.ovn.org/gateway-mtu-support` | node agent |
//!
//! An unreadable annotation leaves its field empty and is reported (a Warning Event on the
//! Node, reason `ErrorReconcilingNode` as upstream); a missing one simply leaves it empty.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node as KubeNode;
use udn_api::annotations::{
    AnnotationError, L3GatewayMode, node_l3_gateway, parse_gateway_mtu_support, parse_host_cidrs,
    parse_node_encap_ips, parse_node_id, parse_node_layer2_tunnel_ids, parse_node_subnets,
    parse_node_transit_switch_port_ifaddr,
};
use udn_api::names::{
    ANNOTATION_GATEWAY_MTU_SUPPORT, ANNOTATION_HOST_CIDRS, ANNOTATION_NODE_CHASSIS_ID,
    ANNOTATION_NODE_ENCAP_IPS, ANNOTATION_NODE_ID,
    ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS, ANNOTATION_NODE_SUBNETS,
    ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR, ANNOTATION_ZONE_NAME,
};

use crate::model::{GatewayConfig, GatewayConfigMode, Node};

/// Whether a node is in `zone`: its name is the zone, or (older upstreams' multi-node zones)
/// its `k8s.ovn.org/zone-name` annotation names it.
pub fn is_local(name: &str, annotations: &BTreeMap<String, String>, zone: &str) -> bool {
    name == zone
        || annotations
            .get(ANNOTATION_ZONE_NAME)
            .is_some_and(|z| z == zone)
}

/// The node and the annotations that could not be read.
pub fn node_from_kube(node: &KubeNode, zone: &str) -> (Node, Vec<AnnotationError>) {
    let name = node.metadata.name.clone().unwrap_or_default();
    let empty = BTreeMap::new();
    let annotations = node.metadata.annotations.as_ref().unwrap_or(&empty);
    let mut out = Node::new(name.clone(), is_local(&name, annotations, zone));
    let mut errors = Vec::new();
    let get = |key: &str| annotations.get(key).map(String::as_str);
    let mut note = |result: Result<(), AnnotationError>| {
        if let Err(error) = result {
            errors.push(error);
        }
    };
    if let Some(value) = get(ANNOTATION_NODE_ID) {
        note(parse_node_id(value).map(|id| out.id = Some(id)));
    }
    if let Some(value) = get(ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR) {
        note(parse_node_transit_switch_port_ifaddr(value).map(|a| out.transit_ips = a.to_vec()));
    }
    if let Some(value) = get(ANNOTATION_NODE_SUBNETS) {
        note(parse_node_subnets(value).map(|s| out.subnets = s));
    }
    if let Some(value) = get(ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS) {
        note(parse_node_layer2_tunnel_ids(value).map(|ids| out.layer2_gateway_tunnel_ids = ids));
    }
    if let Some(value) = get(ANNOTATION_NODE_ENCAP_IPS) {
        note(parse_node_encap_ips(value).map(|ips| out.encap_ips = ips));
    }
    if let Some(value) = get(ANNOTATION_HOST_CIDRS) {
        note(parse_host_cidrs(value).map(|cidrs| out.host_cidrs = cidrs));
    }
    out.gateway_mtu_support = parse_gateway_mtu_support(get(ANNOTATION_GATEWAY_MTU_SUPPORT));
    out.chassis_id = get(ANNOTATION_NODE_CHASSIS_ID)
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    match node_l3_gateway(annotations) {
        Ok(Some(gateway)) => {
            if gateway.chassis_id.is_some() {
                out.chassis_id = gateway.chassis_id;
            }
            let config = gateway.config;
            let mode = match config.mode {
                L3GatewayMode::Shared => GatewayConfigMode::Shared,
                L3GatewayMode::Local => GatewayConfigMode::Local,
                L3GatewayMode::Disabled => GatewayConfigMode::Disabled,
            };
            out.gateway = match (mode, config.mac_address) {
                (GatewayConfigMode::Disabled, _) | (_, None) => None,
                (mode, Some(mac)) => Some(GatewayConfig {
                    mode,
                    bridge_id: config.bridge_id,
                    interface_id: config.interface_id,
                    mac,
                    ips: config.ip_addresses,
                    next_hops: config.next_hops,
                    node_port_enable: config.node_port_enable,
                    vlan_id: config.vlan_id.unwrap_or(0),
                }),
            };
        }
        Ok(None) => {}
        Err(error) => errors.push(error),
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn kube_node(name: &str, annotations: serde_json::Value) -> KubeNode {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": annotations},
        }))
        .unwrap()
    }

    #[test]
    fn a_fully_annotated_node() {
        let node = kube_node(
            "ovn-worker",
            json!({
                "k8s.ovn.org/node-id": "2",
                "k8s.ovn.org/node-transit-switch-port-ifaddr": r#"{"ipv4":"100.88.0.2/16"}"#,
                "k8s.ovn.org/node-subnets": r#"{"default":["10.244.1.0/24"],"ns1_blue":["10.132.3.0/24"]}"#,
                "k8s.ovn.org/node-chassis-id": "c391c626-e1f0-4b1e-af0b-66f0807f9495",
                "k8s.ovn.org/l3-gateway-config": r#"{"default":{"mode":"shared","bridge-id":"breth0","interface-id":"breth0_ovn-worker","mac-address":"02:42:ac:12:00:03","ip-addresses":["172.18.0.3/16"],"ip-address":"172.18.0.3/16","next-hops":["172.18.0.1"],"next-hop":"172.18.0.1","node-port-enable":"true","vlan-id":"0"}}"#,
                "k8s.ovn.org/node-encap-ips": r#"["172.18.0.3"]"#,
                "k8s.ovn.org/host-cidrs": r#"["172.18.0.3/16"]"#,
                "k8s.ovn.org/gateway-mtu-support": "false",
            }),
        );
        let (node, errors) = node_from_kube(&node, "ovn-worker");
        assert!(errors.is_empty(), "{errors:?}");
        assert!(node.local);
        assert_eq!(node.id, Some(2));
        assert_eq!(node.transit_ips[0].to_string(), "100.88.0.2/16");
        assert_eq!(node.subnets_of("ns1_blue")[0].to_string(), "10.132.3.0/24");
        assert_eq!(
            node.chassis_id.as_deref(),
            Some("c391c626-e1f0-4b1e-af0b-66f0807f9495")
        );
        let gateway = node.gateway.unwrap();
        assert_eq!(gateway.bridge_id, "breth0");
        assert_eq!(gateway.mac.to_string(), "02:42:ac:12:00:03");
        assert_eq!(gateway.next_hops[0].to_string(), "172.18.0.1");
        assert_eq!(node.encap_ips[0].to_string(), "172.18.0.3");
        assert!(!node.gateway_mtu_support);
    }

    #[test]
    fn missing_annotations_leave_fields_empty_and_bad_ones_are_reported() {
        let (node, errors) = node_from_kube(&kube_node("n2", json!({})), "n1");
        assert!(!node.local && errors.is_empty() && node.id.is_none() && node.gateway.is_none());
        assert!(node.gateway_mtu_support);
        let (node, errors) = node_from_kube(
            &kube_node(
                "n2",
                json!({"k8s.ovn.org/node-id": "two", "k8s.ovn.org/zone-name": "n1"}),
            ),
            "n1",
        );
        assert!(node.local, "zone-name names the zone");
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].to_string().contains("k8s.ovn.org/node-id"),
            "{}",
            errors[0]
        );
    }
}
