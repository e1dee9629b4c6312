//! Tests of the node-agent annotations: upstream's marshal/unmarshal cases, the spec's
//! examples byte for byte, and round trips.

use super::*;
use crate::annotations::test_strategies::{cidr, ip, text};
use proptest::prelude::*;

fn cidrs(texts: &[&str]) -> Vec<IpNetwork> {
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

fn mac(text: &str) -> Option<MacAddress> {
    Some(text.parse().unwrap())
}

/// The kind worker of node-and-interconnect.md §1.1.
const SPEC_EXAMPLE: &str = r#"{"default":{"mode":"shared","bridge-id":"breth0","interface-id":"breth0_ovn-worker","mac-address":"02:42:ac:12:00:03","ip-addresses":["172.18.0.3/16"],"ip-address":"172.18.0.3/16","next-hops":["172.18.0.1"],"next-hop":"172.18.0.1","node-port-enable":"true","vlan-id":"0"}}"#;

fn spec_config() -> L3GatewayConfig {
    L3GatewayConfig {
        mode: L3GatewayMode::Shared,
        bridge_id: "breth0".into(),
        interface_id: "breth0_ovn-worker".into(),
        mac_address: mac("02:42:ac:12:00:03"),
        ip_addresses: cidrs(&["172.18.0.3/16"]),
        next_hops: vec!["172.18.0.1".parse().unwrap()],
        node_port_enable: true,
        vlan_id: Some(0),
        ..L3GatewayConfig::default()
    }
}

#[test]
fn spec_example_is_byte_identical() {
    assert_eq!(
        format_l3_gateway_config(&spec_config()).unwrap(),
        SPEC_EXAMPLE
    );
    assert_eq!(
        parse_l3_gateway_config(SPEC_EXAMPLE).unwrap(),
        spec_config()
    );
}

/// Upstream `TestL3GatewayConfig_MarshalJSON`, one entry each (the annotation wraps it in
/// `{"default":…}`).
#[test]
fn upstream_marshal_cases() {
    let entry = |config: &L3GatewayConfig| {
        let text = format_l3_gateway_config(config).unwrap();
        text.strip_prefix(r#"{"default":"#)
            .and_then(|t| t.strip_suffix('}'))
            .unwrap()
            .to_owned()
    };
    assert_eq!(entry(&L3GatewayConfig::disabled()), r#"{"mode":""}"#);
    // Whatever else is set, a disabled gateway is the mode only.
    let disabled_with_fields = L3GatewayConfig {
        mode: L3GatewayMode::Disabled,
        ..spec_config()
    };
    assert_eq!(entry(&disabled_with_fields), r#"{"mode":""}"#);
    let local = L3GatewayConfig {
        mode: L3GatewayMode::Local,
        ..L3GatewayConfig::default()
    };
    assert_eq!(
        entry(&local),
        r#"{"mode":"local","node-port-enable":"false"}"#
    );
    let vlan = L3GatewayConfig {
        vlan_id: Some(1024),
        ..L3GatewayConfig::default()
    };
    assert_eq!(
        entry(&vlan),
        r#"{"mode":"shared","node-port-enable":"false","vlan-id":"1024"}"#
    );
    let single = L3GatewayConfig {
        mode: L3GatewayMode::Local,
        vlan_id: Some(1024),
        ip_addresses: cidrs(&["192.168.1.10/24"]),
        next_hops: vec!["192.168.1.1".parse().unwrap()],
        ..L3GatewayConfig::default()
    };
    assert_eq!(
        entry(&single),
        r#"{"mode":"local","ip-addresses":["192.168.1.10/24"],"ip-address":"192.168.1.10/24","next-hops":["192.168.1.1"],"next-hop":"192.168.1.1","node-port-enable":"false","vlan-id":"1024"}"#
    );
    let multiple = L3GatewayConfig {
        mode: L3GatewayMode::Local,
        vlan_id: Some(1024),
        bridge_id: "BRIDGE-ID".into(),
        interface_id: "INTERFACE-ID".into(),
        mac_address: mac("11:22:33:44:55:66"),
        ip_addresses: cidrs(&["192.168.1.10/24", "fd01::1234/64"]),
        next_hops: vec!["192.168.1.1".parse().unwrap(), "fd01::1".parse().unwrap()],
        ..L3GatewayConfig::default()
    };
    assert_eq!(
        entry(&multiple),
        r#"{"mode":"local","bridge-id":"BRIDGE-ID","interface-id":"INTERFACE-ID","mac-address":"11:22:33:44:55:66","ip-addresses":["192.168.1.10/24","fd01::1234/64"],"next-hops":["192.168.1.1","fd01::1"],"node-port-enable":"false","vlan-id":"1024"}"#
    );
}

#[test]
fn egress_gateway_fields_follow_the_main_ones() {
    let config = L3GatewayConfig {
        exgw_interface_id: "breth1_ovn-worker".into(),
        exgw_mac_address: mac("02:42:ac:13:00:03"),
        exgw_ip_addresses: cidrs(&["172.19.0.3/16"]),
        ..spec_config()
    };
    let text = format_l3_gateway_config(&config).unwrap();
    assert_eq!(
        text,
        r#"{"default":{"mode":"shared","bridge-id":"breth0","interface-id":"breth0_ovn-worker","mac-address":"02:42:ac:12:00:03","ip-addresses":["172.18.0.3/16"],"ip-address":"172.18.0.3/16","exgw-interface-id":"breth1_ovn-worker","exgw-mac-address":"02:42:ac:13:00:03","exgw-ip-addresses":["172.19.0.3/16"],"exgw-ip-address":"172.19.0.3/16","next-hops":["172.18.0.1"],"next-hop":"172.18.0.1","node-port-enable":"true","vlan-id":"0"}}"#
    );
    assert_eq!(parse_l3_gateway_config(&text).unwrap(), config);
}

fn parse_entry(entry: &str) -> Result<L3GatewayConfig, AnnotationError> {
    parse_l3_gateway_config(&format!(r#"{{"default":{entry}}}"#))
}

/// Upstream `TestL3GatewayConfig_UnmarshalJSON`. Upstream's "success" cases for a VLAN
/// and an egress interface without a MAC address in fact fail on the MAC (the test does not
/// look at the error); they fail here too.
#[test]
fn upstream_unmarshal_cases() {
    assert!(parse_l3_gateway_config("{").is_err());
    assert_eq!(
        parse_entry(r#"{"mode":""}"#).unwrap(),
        L3GatewayConfig::disabled()
    );
    assert_eq!(parse_entry("{}").unwrap(), L3GatewayConfig::disabled());
    for (entry, message) in [
        (
            r#"{"mode":"blah"}"#,
            "annotation k8s.ovn.org/l3-gateway-config: network \"default\": field mode \"blah\": bad 'mode' value",
        ),
        (r#"{"mode":"disabled"}"#, "bad 'mode' value"),
        (
            r#"{"mode":"shared","vlan-id":"A"}"#,
            "field vlan-id \"A\": not a decimal VLAN ID",
        ),
        (
            r#"{"mode":"shared","vlan-id":"4096","mac-address":"11:22:33:44:55:66"}"#,
            "vlan-id surpasses maximum supported value",
        ),
        (
            r#"{"mode":"shared","vlan-id":"223"}"#,
            "field mac-address \"\": not a MAC address",
        ),
        (
            r#"{"mode":"local","mac-address":"BADMAC"}"#,
            "field mac-address \"BADMAC\": not a MAC address",
        ),
        (
            r#"{"mode":"shared","mac-address":"11:22:33:44:55:66","exgw-interface-id":"breth0_ovn-control-plane"}"#,
            "field exgw-mac-address \"\": not a MAC address",
        ),
        (
            r#"{"mode":"local","mac-address":"11:22:33:44:55:66","ip-address":"192.168.1/24"}"#,
            "field ip-address \"192.168.1/24\": not a CIDR",
        ),
        (
            r#"{"mode":"local","mac-address":"11:22:33:44:55:66","ip-addresses":["192.168.1/24","fd01::1234/64"]}"#,
            "field ip-addresses \"192.168.1/24\": not a CIDR",
        ),
        (
            r#"{"mode":"local","mac-address":"11:22:33:44:55:66","ip-address":"192.168.1.5/24", "next-hops":["192.168.1.","fd01::1"]}"#,
            "field next-hops \"192.168.1.\": not an IP address",
        ),
    ] {
        let error = parse_entry(entry).unwrap_err().to_string();
        assert!(error.contains(message), "{entry}: {error}");
    }
    let single = parse_entry(
        r#"{"mode":"local","mac-address":"11:22:33:44:55:66","ip-address":"192.168.1.5/24"}"#,
    )
    .unwrap();
    assert_eq!(single.ip_addresses, cidrs(&["192.168.1.5/24"]));
    assert!(single.next_hops.is_empty());
    let list = parse_entry(
        r#"{"mode":"local","mac-address":"11:22:33:44:55:66","ip-addresses":["192.168.1.5/24","fd01::1234/64"]}"#,
    )
    .unwrap();
    assert_eq!(
        list.ip_addresses,
        cidrs(&["192.168.1.5/24", "fd01::1234/64"])
    );
    let hops = parse_entry(
        r#"{"mode":"local","mac-address":"11:22:33:44:55:66","ip-address":"192.168.1.5/24", "next-hops":["192.168.1.1","fd01::1"],"next-hop":"10.0.0.1"}"#,
    )
    .unwrap();
    // The deprecated single next hop is not read.
    assert_eq!(
        hops.next_hops,
        [
            "192.168.1.1".parse::<IpAddr>().unwrap(),
            "fd01::1".parse().unwrap()
        ]
    );
    // Anything but "true" is false.
    let ports = parse_entry(
        r#"{"mode":"local","mac-address":"11:22:33:44:55:66","ip-address":"192.168.1.5/24","node-port-enable":"yes"}"#,
    )
    .unwrap();
    assert!(!ports.node_port_enable);
}

#[test]
fn annotation_needs_the_default_entry_and_readable_others() {
    assert_eq!(
        parse_l3_gateway_config(r#"{"blue":{"mode":""}}"#)
            .unwrap_err()
            .to_string(),
        "annotation k8s.ovn.org/l3-gateway-config: no entry for network default"
    );
    let error = parse_l3_gateway_config(r#"{"default":{"mode":""},"x":{"mode":"odd"}}"#)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("network \"x\": field mode \"odd\""),
        "{error}"
    );
    assert!(parse_l3_gateway_config("null").is_err());
    assert_eq!(
        parse_l3_gateway_config(r#"{"default":[]}"#)
            .unwrap_err()
            .to_string(),
        "annotation k8s.ovn.org/l3-gateway-config: value is not a JSON object"
    );
}

#[test]
fn node_gateway_needs_the_chassis_unless_disabled() {
    let mut annotations = BTreeMap::new();
    assert_eq!(node_l3_gateway(&annotations).unwrap(), None);
    annotations.insert(
        ANNOTATION_L3_GATEWAY_CONFIG.to_owned(),
        SPEC_EXAMPLE.to_owned(),
    );
    assert_eq!(
        node_l3_gateway(&annotations).unwrap_err().to_string(),
        "annotation k8s.ovn.org/node-chassis-id: not set, but the gateway mode is shared or local"
    );
    annotations.insert(ANNOTATION_NODE_CHASSIS_ID.to_owned(), String::new());
    assert_eq!(
        node_l3_gateway(&annotations).unwrap_err().to_string(),
        "annotation k8s.ovn.org/node-chassis-id: empty chassis ID"
    );
    let chassis = "c391c626-e1f0-4b1e-af0b-66f0807f9495";
    annotations.insert(ANNOTATION_NODE_CHASSIS_ID.to_owned(), chassis.to_owned());
    assert_eq!(
        node_l3_gateway(&annotations).unwrap(),
        Some(NodeL3Gateway {
            config: spec_config(),
            chassis_id: Some(chassis.to_owned()),
        })
    );
    annotations.insert(
        ANNOTATION_L3_GATEWAY_CONFIG.to_owned(),
        r#"{"default":{"mode":""}}"#.to_owned(),
    );
    annotations.remove(ANNOTATION_NODE_CHASSIS_ID);
    assert_eq!(
        node_l3_gateway(&annotations).unwrap(),
        Some(NodeL3Gateway {
            config: L3GatewayConfig::disabled(),
            chassis_id: None,
        })
    );
}

#[test]
fn lists_are_go_string_sets() {
    let ips: Vec<IpAddr> = ["10.0.0.9", "10.0.0.10", "10.0.0.9"]
        .iter()
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(
        format_node_encap_ips(&ips).unwrap(),
        r#"["10.0.0.10","10.0.0.9"]"#
    );
    assert_eq!(format_node_encap_ips(&[]).unwrap(), "[]");
    assert_eq!(
        parse_node_encap_ips(r#"["172.18.0.3"]"#).unwrap(),
        ["172.18.0.3".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(parse_node_encap_ips("null").unwrap(), Vec::<IpAddr>::new());
    assert_eq!(
        parse_node_encap_ips(r#"["172.18.0.3","x"]"#)
            .unwrap_err()
            .to_string(),
        "annotation k8s.ovn.org/node-encap-ips: entry 1: field ip \"x\": not an IP address"
    );
    let host = cidrs(&["fc00:f853:ccd:e793::3/64", "172.18.0.3/16"]);
    let text = format_host_cidrs(&host).unwrap();
    assert_eq!(text, r#"["172.18.0.3/16","fc00:f853:ccd:e793::3/64"]"#);
    assert_eq!(
        parse_host_cidrs(&text).unwrap(),
        cidrs(&["172.18.0.3/16", "fc00:f853:ccd:e793::3/64"])
    );
    assert!(parse_host_cidrs(r#"["172.18.0.3"]"#).is_err());
    assert!(parse_host_cidrs(r#"{"a":1}"#).is_err());
}

#[test]
fn address_objects_and_the_mtu_flag() {
    let masquerade = IfAddrs::from_cidrs(&cidrs(&["169.254.169.0/29", "fd69::/125"]));
    let text = format_node_masquerade_subnet(&masquerade);
    assert_eq!(text, r#"{"ipv4":"169.254.169.0/29","ipv6":"fd69::/125"}"#);
    assert_eq!(parse_node_masquerade_subnet(&text).unwrap(), masquerade);
    let primary = IfAddrs::from_cidrs(&cidrs(&["172.18.0.3/16"]));
    assert_eq!(
        format_node_primary_ifaddr(&primary),
        r#"{"ipv4":"172.18.0.3/16"}"#
    );
    assert_eq!(
        parse_node_primary_ifaddr("{}").unwrap_err().annotation(),
        "k8s.ovn.org/node-primary-ifaddr"
    );
    assert!(parse_gateway_mtu_support(None));
    assert!(parse_gateway_mtu_support(Some("true")));
    assert!(!parse_gateway_mtu_support(Some("false")));
    assert_eq!(format_gateway_mtu_support(false), Some("false"));
    assert_eq!(format_gateway_mtu_support(true), None);
    assert_eq!(parse_node_chassis_id("abc").unwrap(), "abc");
}

/// A config upstream can read back: enabled with a MAC and an address, egress fields all set
/// or all empty.
fn readable_config() -> impl Strategy<Value = L3GatewayConfig> {
    let exgw = proptest::option::of((
        "[a-z0-9_-]{1,12}",
        any::<[u8; 6]>(),
        proptest::collection::vec(cidr(), 1..3),
    ));
    (
        prop_oneof![Just(L3GatewayMode::Shared), Just(L3GatewayMode::Local)],
        (text(), text()),
        any::<[u8; 6]>(),
        proptest::collection::vec(cidr(), 1..3),
        exgw,
        proptest::collection::vec(ip(), 0..3),
        any::<bool>(),
        proptest::option::of(0..=MAX_VLAN_ID),
    )
        .prop_map(
            |(mode, (bridge_id, interface_id), mac, ips, exgw, next_hops, ports, vlan_id)| {
                let (exgw_interface_id, exgw_mac_address, exgw_ip_addresses) = match exgw {
                    Some((id, mac, ips)) => (id, Some(MacAddress(mac)), ips),
                    None => (String::new(), None, Vec::new()),
                };
                L3GatewayConfig {
                    mode,
                    bridge_id,
                    interface_id,
                    mac_address: Some(MacAddress(mac)),
                    ip_addresses: ips,
                    exgw_interface_id,
                    exgw_mac_address,
                    exgw_ip_addresses,
                    next_hops,
                    node_port_enable: ports,
                    vlan_id,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parsers_never_panic(value in ".{0,64}") {
        let _ = parse_l3_gateway_config(&value);
        let _ = parse_node_encap_ips(&value);
        let _ = parse_host_cidrs(&value);
        let _ = parse_node_primary_ifaddr(&value);
    }

    #[test]
    fn l3_gateway_config_round_trips(config in readable_config()) {
        let text = format_l3_gateway_config(&config).unwrap();
        let parsed = parse_l3_gateway_config(&text).unwrap();
        prop_assert_eq!(&parsed, &config);
        prop_assert_eq!(format_l3_gateway_config(&parsed).unwrap(), text);
    }

    #[test]
    fn lists_round_trip_as_sorted_sets(
        ips in proptest::collection::vec(ip(), 0..5),
        host in proptest::collection::vec(cidr(), 0..5),
    ) {
        let text = format_node_encap_ips(&ips).unwrap();
        let parsed = parse_node_encap_ips(&text).unwrap();
        prop_assert_eq!(format_node_encap_ips(&parsed).unwrap(), text);
        let written: Vec<String> = parsed.iter().map(ToString::to_string).collect();
        let mut sorted = written.clone();
        sorted.sort();
        sorted.dedup();
        prop_assert_eq!(sorted, written);
        let text = format_host_cidrs(&host).unwrap();
        let parsed = parse_host_cidrs(&text).unwrap();
        prop_assert_eq!(format_host_cidrs(&parsed).unwrap(), text);
    }
}
