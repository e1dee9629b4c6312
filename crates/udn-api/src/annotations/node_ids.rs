//! The per-node identity annotations cluster-manager writes (upstream
//! `util/node_annotations.go`, `clustermanager/node_allocation_controller.go`):
//!
//! - `k8s.ovn.org/node-id`: decimal string, `"2"`. Node IDs start at 2.
//! - `k8s.ovn.org/node-transit-switch-port-ifaddr`: the transit switch port addresses
//!   (transit subnet base + node ID, with the subnet's mask),
//!   `{"ipv4":"100.88.0.2/16","ipv6":"fd97::2/64"}` ([`IfAddrs`]).
//! - `k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids`: legacy Layer2 topology only,
//!   network name -> decimal string, `{"ns1_blue":"5","ns2_red":"10"}`.
//!
//! The obsolete `k8s.ovn.org/node-gateway-router-lrp-ifaddrs` is only ever deleted
//! ([`ANNOTATION_NODE_GATEWAY_ROUTER_LRP_IFADDRS`](crate::names::ANNOTATION_NODE_GATEWAY_ROUTER_LRP_IFADDRS)):
//! the gateway router join address is derived from the node ID instead.

use std::collections::BTreeMap;

use super::network_map::{format_network_numbers, parse_network_numbers};
use super::{AnnotationError, IfAddrs, if_addrs};
use crate::names::{
    ANNOTATION_NODE_ID, ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS,
    ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR,
};

/// Parses `k8s.ovn.org/node-id`: a non-negative decimal integer (Go `strconv.Atoi` syntax:
/// optional `+`, leading zeros allowed).
pub fn parse_node_id(value: &str) -> Result<u32, AnnotationError> {
    value.parse::<u32>().map_err(|_| {
        AnnotationError::invalid(
            ANNOTATION_NODE_ID,
            format!("{value:?} is not a non-negative decimal node ID"),
        )
    })
}

/// Formats `k8s.ovn.org/node-id` (Go `strconv.Itoa`).
pub fn format_node_id(id: u32) -> String {
    id.to_string()
}

/// Parses `k8s.ovn.org/node-transit-switch-port-ifaddr`.
pub fn parse_node_transit_switch_port_ifaddr(value: &str) -> Result<IfAddrs, AnnotationError> {
    if_addrs::parse_if_addrs(ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR, value)
}

/// Formats `k8s.ovn.org/node-transit-switch-port-ifaddr`.
pub fn format_node_transit_switch_port_ifaddr(addrs: &IfAddrs) -> String {
    if_addrs::format_if_addrs(addrs)
}

/// Network name -> tunnel ID of the node's gateway router port on that network.
pub type NodeLayer2TunnelIds = BTreeMap<String, u32>;

/// Parses `k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids`. An empty object is an
/// error (as upstream).
pub fn parse_node_layer2_tunnel_ids(value: &str) -> Result<NodeLayer2TunnelIds, AnnotationError> {
    parse_network_numbers(
        ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS,
        value,
        "tunnel ID",
    )
}

/// Formats `k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids` (keys sorted);
/// `Ok(None)` when empty, meaning the annotation should be deleted.
pub fn format_node_layer2_tunnel_ids(
    ids: &NodeLayer2TunnelIds,
) -> Result<Option<String>, AnnotationError> {
    format_network_numbers(ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS, ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::test_strategies::{cidr_of, label};
    use proptest::prelude::*;

    #[test]
    fn node_id_is_a_decimal_string() {
        assert_eq!(parse_node_id("2").unwrap(), 2);
        assert_eq!(parse_node_id("+5000").unwrap(), 5000);
        assert_eq!(format_node_id(2), "2");
        for bad in ["", "-1", "2.0", " 2", "two"] {
            assert!(parse_node_id(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_node_id("x").unwrap_err().to_string(),
            "annotation k8s.ovn.org/node-id: \"x\" is not a non-negative decimal node ID"
        );
    }

    /// The spec's examples, byte for byte.
    #[test]
    fn transit_switch_port_ifaddr_examples() {
        let dual = parse_node_transit_switch_port_ifaddr(
            r#"{"ipv4":"100.88.0.2/16","ipv6":"fd97::2/64"}"#,
        )
        .unwrap();
        assert_eq!(
            format_node_transit_switch_port_ifaddr(&dual),
            r#"{"ipv4":"100.88.0.2/16","ipv6":"fd97::2/64"}"#
        );
        let single = parse_node_transit_switch_port_ifaddr(r#"{"ipv4":"100.88.0.2/16"}"#).unwrap();
        assert_eq!(single.ipv6, None);
        assert_eq!(
            parse_node_transit_switch_port_ifaddr("{}")
                .unwrap_err()
                .annotation(),
            "k8s.ovn.org/node-transit-switch-port-ifaddr"
        );
    }

    #[test]
    fn layer2_tunnel_ids_example() {
        let text = r#"{"l2-network-a":"5","l2-network-b":"10"}"#;
        let ids = parse_node_layer2_tunnel_ids(text).unwrap();
        assert_eq!(ids["l2-network-b"], 10);
        assert_eq!(
            format_node_layer2_tunnel_ids(&ids).unwrap().as_deref(),
            Some(text)
        );
        assert_eq!(
            format_node_layer2_tunnel_ids(&NodeLayer2TunnelIds::new()).unwrap(),
            None
        );
        assert_eq!(
            parse_node_layer2_tunnel_ids(r#"{"n":"x"}"#)
                .unwrap_err()
                .to_string(),
            "annotation k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids: network \"n\": \
             field id \"x\": not a non-negative decimal tunnel ID"
        );
        assert!(parse_node_layer2_tunnel_ids("{}").is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parsers_never_panic(value in ".{0,48}") {
            let _ = parse_node_id(&value);
            let _ = parse_node_transit_switch_port_ifaddr(&value);
            let _ = parse_node_layer2_tunnel_ids(&value);
        }

        #[test]
        fn round_trips(
            id in any::<u32>(),
            v4 in proptest::option::of(cidr_of(false)),
            v6 in proptest::option::of(cidr_of(true)),
            ids in proptest::collection::btree_map(label(), any::<u32>(), 0..4),
        ) {
            prop_assert_eq!(parse_node_id(&format_node_id(id)).unwrap(), id);
            let addrs = IfAddrs::from_cidrs(&v4.into_iter().chain(v6).collect::<Vec<_>>());
            if !addrs.is_empty() {
                let text = format_node_transit_switch_port_ifaddr(&addrs);
                prop_assert_eq!(parse_node_transit_switch_port_ifaddr(&text).unwrap(), addrs);
            }
            match format_node_layer2_tunnel_ids(&ids).unwrap() {
                None => prop_assert!(ids.is_empty()),
                Some(text) => prop_assert_eq!(parse_node_layer2_tunnel_ids(&text).unwrap(), ids),
            }
        }
    }
}
