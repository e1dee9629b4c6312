//! The node's own annotations, as upstream's ovnkube-node writes them
//! (`node-and-interconnect.md` §1): desired values from plain facts (pure), and the merge
//! patch that moves the Node there (written on `nodes/status`, as upstream).

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use serde_json::{Map, Value as Json, json};
use udn_api::annotations::AnnotationError;
use udn_api::annotations::if_addrs::IfAddrs;
use udn_api::annotations::mac_address::MacAddress;
use udn_api::annotations::node_gateway::{
    L3GatewayConfig, L3GatewayMode, format_gateway_mtu_support, format_host_cidrs,
    format_l3_gateway_config, format_node_encap_ips, format_node_masquerade_subnet,
    format_node_primary_ifaddr,
};
use udn_api::names::{
    ANNOTATION_GATEWAY_MTU_SUPPORT, ANNOTATION_HOST_CIDRS, ANNOTATION_L3_GATEWAY_CONFIG,
    ANNOTATION_NODE_CHASSIS_ID, ANNOTATION_NODE_ENCAP_IPS, ANNOTATION_NODE_MASQUERADE_SUBNET,
    ANNOTATION_NODE_PRIMARY_IFADDR, ANNOTATION_ZONE_NAME,
};

/// The annotations this agent owns on its Node.
pub const OWNED: [&str; 8] = [
    ANNOTATION_NODE_CHASSIS_ID,
    ANNOTATION_NODE_ENCAP_IPS,
    ANNOTATION_L3_GATEWAY_CONFIG,
    ANNOTATION_NODE_PRIMARY_IFADDR,
    ANNOTATION_HOST_CIDRS,
    ANNOTATION_NODE_MASQUERADE_SUBNET,
    ANNOTATION_GATEWAY_MTU_SUPPORT,
    ANNOTATION_ZONE_NAME,
];

/// The node's gateway (shared mode): the bridge and what the host learnt of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayFacts {
    /// The gateway bridge, `breth0`.
    pub bridge: String,
    /// Its MAC.
    pub mac: MacAddress,
    /// Its addresses (with prefix lengths).
    pub addresses: Vec<IpNetwork>,
    /// The default gateways.
    pub next_hops: Vec<IpAddr>,
    /// The VLAN of the gateway interface (`0`: none).
    pub vlan_id: u16,
}

/// What the node's annotations say, gathered by the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFacts {
    /// The node.
    pub node: String,
    /// Its zone.
    pub zone: String,
    /// OVS's `system-id` (the chassis).
    pub chassis_id: String,
    /// Tunnel endpoint IPs.
    pub encap_ips: Vec<IpAddr>,
    /// The gateway, or `None` while it is not set up (the annotation is then not written).
    pub gateway: Option<GatewayFacts>,
    /// The node's primary address per family (on the gateway interface).
    pub primary_ifaddr: IfAddrs,
    /// Every address of the host (`host-cidrs`).
    pub host_cidrs: Vec<IpNetwork>,
    /// The configured masquerade subnets (both families, always).
    pub masquerade_subnet: IfAddrs,
    /// Whether the gateway interface supports the MTU (`gateway-mtu-support`).
    pub mtu_supported: bool,
}

/// The annotation values the node should carry: `Some` to set, `None` to remove.
pub fn desired(
    facts: &NodeFacts,
) -> Result<BTreeMap<&'static str, Option<String>>, AnnotationError> {
    let mut out = BTreeMap::new();
    out.insert(ANNOTATION_NODE_CHASSIS_ID, Some(facts.chassis_id.clone()));
    out.insert(
        ANNOTATION_NODE_ENCAP_IPS,
        Some(format_node_encap_ips(&facts.encap_ips)?),
    );
    if let Some(gateway) = &facts.gateway {
        let config = L3GatewayConfig {
            mode: L3GatewayMode::Shared,
            bridge_id: gateway.bridge.clone(),
            interface_id: format!("{}_{}", gateway.bridge, facts.node),
            mac_address: Some(gateway.mac),
            ip_addresses: gateway.addresses.clone(),
            next_hops: gateway.next_hops.clone(),
            node_port_enable: true,
            vlan_id: Some(gateway.vlan_id),
            ..L3GatewayConfig::default()
        };
        out.insert(
            ANNOTATION_L3_GATEWAY_CONFIG,
            Some(format_l3_gateway_config(&config)?),
        );
    }
    out.insert(
        ANNOTATION_NODE_PRIMARY_IFADDR,
        Some(format_node_primary_ifaddr(&facts.primary_ifaddr)),
    );
    out.insert(
        ANNOTATION_HOST_CIDRS,
        Some(format_host_cidrs(&facts.host_cidrs)?),
    );
    out.insert(
        ANNOTATION_NODE_MASQUERADE_SUBNET,
        Some(format_node_masquerade_subnet(&facts.masquerade_subnet)),
    );
    out.insert(
        ANNOTATION_GATEWAY_MTU_SUPPORT,
        format_gateway_mtu_support(facts.mtu_supported).map(str::to_owned),
    );
    out.insert(ANNOTATION_ZONE_NAME, Some(facts.zone.clone()));
    Ok(out)
}

/// The JSON merge patch moving `current` to `desired` (only what differs), or `None` when
/// the node already carries it.
pub fn patch(
    current: &BTreeMap<String, String>,
    desired: &BTreeMap<&'static str, Option<String>>,
) -> Option<Json> {
    let mut changes = Map::new();
    for (key, value) in desired {
        match (current.get(*key), value) {
            (Some(have), Some(want)) if have == want => {}
            (None, None) => {}
            (_, Some(want)) => {
                changes.insert((*key).to_owned(), Json::String(want.clone()));
            }
            (Some(_), None) => {
                changes.insert((*key).to_owned(), Json::Null);
            }
        }
    }
    (!changes.is_empty()).then(|| json!({"metadata": {"annotations": changes}}))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn facts() -> NodeFacts {
        NodeFacts {
            node: "node1".into(),
            zone: "node1".into(),
            chassis_id: "6a3c9d1e-0000-4000-8000-000000000001".into(),
            encap_ips: vec!["172.18.0.2".parse().unwrap()],
            gateway: Some(GatewayFacts {
                bridge: "breth0".into(),
                mac: "0a:58:ac:12:00:02".parse().unwrap(),
                addresses: vec!["172.18.0.2/16".parse().unwrap()],
                next_hops: vec!["172.18.0.1".parse().unwrap()],
                vlan_id: 0,
            }),
            primary_ifaddr: IfAddrs {
                ipv4: Some("172.18.0.2/16".parse().unwrap()),
                ipv6: None,
            },
            host_cidrs: vec!["172.18.0.2/16".parse().unwrap()],
            masquerade_subnet: IfAddrs {
                ipv4: Some("169.254.0.0/17".parse().unwrap()),
                ipv6: Some("fd69::/112".parse().unwrap()),
            },
            mtu_supported: true,
        }
    }

    #[test]
    fn upstream_formats() {
        let want = desired(&facts()).unwrap();
        assert_eq!(
            want[ANNOTATION_L3_GATEWAY_CONFIG].as_deref(),
            Some(
                r#"{"default":{"mode":"shared","bridge-id":"breth0","interface-id":"breth0_node1","mac-address":"0a:58:ac:12:00:02","ip-addresses":["172.18.0.2/16"],"ip-address":"172.18.0.2/16","next-hops":["172.18.0.1"],"next-hop":"172.18.0.1","node-port-enable":"true","vlan-id":"0"}}"#
            )
        );
        assert_eq!(
            want[ANNOTATION_NODE_ENCAP_IPS].as_deref(),
            Some(r#"["172.18.0.2"]"#)
        );
        assert_eq!(
            want[ANNOTATION_NODE_PRIMARY_IFADDR].as_deref(),
            Some(r#"{"ipv4":"172.18.0.2/16"}"#)
        );
        assert_eq!(
            want[ANNOTATION_NODE_MASQUERADE_SUBNET].as_deref(),
            Some(r#"{"ipv4":"169.254.0.0/17","ipv6":"fd69::/112"}"#)
        );
        assert_eq!(
            want[ANNOTATION_HOST_CIDRS].as_deref(),
            Some(r#"["172.18.0.2/16"]"#)
        );
        assert_eq!(want[ANNOTATION_GATEWAY_MTU_SUPPORT], None);
        assert_eq!(want[ANNOTATION_ZONE_NAME].as_deref(), Some("node1"));
    }

    #[test]
    fn patch_only_what_differs() {
        let want = desired(&facts()).unwrap();
        let mut current: BTreeMap<String, String> = want
            .iter()
            .filter_map(|(k, v)| v.clone().map(|v| ((*k).to_owned(), v)))
            .collect();
        assert_eq!(patch(&current, &want), None);
        current.insert(ANNOTATION_GATEWAY_MTU_SUPPORT.into(), "false".into());
        current.insert(ANNOTATION_ZONE_NAME.into(), "other".into());
        assert_eq!(
            patch(&current, &want),
            Some(json!({"metadata": {"annotations": {
                ANNOTATION_GATEWAY_MTU_SUPPORT: null,
                ANNOTATION_ZONE_NAME: "node1",
            }}}))
        );
    }
}
