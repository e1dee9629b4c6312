use std::net::{IpAddr, Ipv6Addr};

use proptest::prelude::*;

use super::*;
use crate::annotations::test_strategies::{cidr_of, ip_of, label};

/// The compacted example from upstream `docs/features/user-defined-networks/user-defined-networks.md`.
const SPEC_EXAMPLE: &str = r#"
{"default":{"ip_addresses":["10.244.0.6/24"],"mac_address":"0a:58:0a:f4:00:06",
  "routes":[{"dest":"10.244.0.0/16","nextHop":"10.244.0.1"},{"dest":"100.64.0.0/16","nextHop":"10.244.0.1"}],
  "ip_address":"10.244.0.6/24","role":"infrastructure-locked"},
 "green/green-network":{"ip_addresses":["203.203.2.5/24"],"mac_address":"0a:58:c8:0a:02:05",
  "gateway_ips":["203.203.2.1"],
  "routes":[{"dest":"203.203.0.0/16","nextHop":"203.203.2.1"},{"dest":"10.96.0.0/16","nextHop":"203.203.2.1"},
            {"dest":"100.65.0.0/16","nextHop":"203.203.2.1"}],
  "ip_address":"203.203.2.5/24","gateway_ip":"203.203.2.1","role":"primary"},
 "green/green-secondary-network":{"ip_addresses":["100.10.1.7/24"],"mac_address":"0a:58:64:0a:01:07",
  "routes":[{"dest":"100.10.0.0/16","nextHop":"100.10.1.1"}],"ip_address":"100.10.1.7/24","role":"secondary"}}
"#;

fn cidr(text: &str) -> IpNetwork {
    text.parse().unwrap()
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn mac() -> MacAddress {
    "0a:58:fd:98:00:01".parse().unwrap()
}

fn entry() -> PodNetworkAnnotation {
    PodNetworkAnnotation {
        ip_addresses: vec![],
        mac_address: mac(),
        gateway_ips: vec![],
        routes: vec![],
        ipv6_lla_gateway_ip: None,
        tunnel_id: 0,
        role: None,
    }
}

fn format_default(entry: PodNetworkAnnotation) -> Result<String, AnnotationError> {
    format_pod_networks(&PodNetworks::from([("default".to_owned(), entry)]))
}

fn parse_error(value: &str) -> String {
    parse_pod_networks(value).unwrap_err().to_string()
}

#[test]
fn spec_example_parses_and_reformats_byte_identical() {
    let parsed = parse_pod_networks(SPEC_EXAMPLE).unwrap();
    let green = &parsed["green/green-network"];
    assert_eq!(green.ip_addresses, vec![cidr("203.203.2.5/24")]);
    assert_eq!(green.gateway_ips, vec![ip("203.203.2.1")]);
    assert_eq!(green.role, Some(PodNetworkRole::Primary));
    assert_eq!(green.routes.len(), 3);
    assert_eq!(
        parsed["default"].role,
        Some(PodNetworkRole::InfrastructureLocked)
    );
    let compact: String = SPEC_EXAMPLE.split_whitespace().collect();
    assert_eq!(format_pod_networks(&parsed).unwrap(), compact);
}

#[test]
fn writes_upstream_marshal_test_strings() {
    let m = r#""mac_address":"0a:58:fd:98:00:01""#;
    assert_eq!(
        format_default(entry()).unwrap(),
        format!(r#"{{"default":{{"ip_addresses":null,{m}}}}}"#)
    );
    let primary = PodNetworkAnnotation {
        role: Some(PodNetworkRole::Primary),
        ..entry()
    };
    assert_eq!(
        format_default(primary).unwrap(),
        format!(r#"{{"default":{{"ip_addresses":null,{m},"role":"primary"}}}}"#)
    );
    let single = PodNetworkAnnotation {
        ip_addresses: vec![cidr("192.168.0.5/24")],
        ..entry()
    };
    assert_eq!(
        format_default(single).unwrap(),
        format!(
            r#"{{"default":{{"ip_addresses":["192.168.0.5/24"],{m},"ip_address":"192.168.0.5/24"}}}}"#
        )
    );
    let dual = PodNetworkAnnotation {
        ip_addresses: vec![cidr("192.168.0.5/24"), cidr("fd01::1234/64")],
        ..entry()
    };
    assert_eq!(
        format_default(dual).unwrap(),
        format!(r#"{{"default":{{"ip_addresses":["192.168.0.5/24","fd01::1234/64"],{m}}}}}"#)
    );
    let gateway = PodNetworkAnnotation {
        ip_addresses: vec![cidr("192.168.0.5/24")],
        gateway_ips: vec![ip("192.168.0.1")],
        role: Some(PodNetworkRole::Secondary),
        ..entry()
    };
    assert_eq!(
        format_default(gateway).unwrap(),
        format!(
            r#"{{"default":{{"ip_addresses":["192.168.0.5/24"],{m},"gateway_ips":["192.168.0.1"],"ip_address":"192.168.0.5/24","gateway_ip":"192.168.0.1","role":"secondary"}}}}"#
        )
    );
    let routed = PodNetworkAnnotation {
        routes: vec![PodRoute {
            dest: cidr("192.168.1.0/24"),
            next_hop: Some(ip("192.168.1.1")),
        }],
        role: Some(PodNetworkRole::InfrastructureLocked),
        ..entry()
    };
    assert_eq!(
        format_default(routed).unwrap(),
        format!(
            r#"{{"default":{{"ip_addresses":null,{m},"routes":[{{"dest":"192.168.1.0/24","nextHop":"192.168.1.1"}}],"role":"infrastructure-locked"}}}}"#
        )
    );
    let no_next_hop = PodNetworkAnnotation {
        routes: vec![PodRoute {
            dest: cidr("192.168.1.0/24"),
            next_hop: None,
        }],
        ..entry()
    };
    assert_eq!(
        format_default(no_next_hop).unwrap(),
        format!(
            r#"{{"default":{{"ip_addresses":null,{m},"routes":[{{"dest":"192.168.1.0/24","nextHop":""}}]}}}}"#
        )
    );
    let lla = PodNetworkAnnotation {
        ipv6_lla_gateway_ip: Some("fe80::".parse().unwrap()),
        tunnel_id: 100,
        ..entry()
    };
    assert_eq!(
        format_default(lla).unwrap(),
        format!(
            r#"{{"default":{{"ip_addresses":null,{m},"ipv6_lla_gateway_ip":"fe80::","tunnel_id":100}}}}"#
        )
    );
}

#[test]
fn format_rejects_what_upstream_refuses_to_write() {
    let two_gateways = PodNetworkAnnotation {
        ip_addresses: vec![cidr("192.168.0.5/24")],
        gateway_ips: vec![ip("192.168.1.0"), ip("fd01::1")],
        ..entry()
    };
    assert_eq!(
        format_default(two_gateways).unwrap_err().to_string(),
        "annotation k8s.ovn.org/pod-networks: NAD key \"default\": field gateway_ips \
         \"192.168.1.0,fd01::1\": a single-stack network can only have a single gateway"
    );
    let default_route = PodNetworkAnnotation {
        routes: vec![PodRoute {
            dest: cidr("0.0.0.0/0"),
            next_hop: Some(ip("192.168.1.1")),
        }],
        ..entry()
    };
    assert!(
        format_default(default_route)
            .unwrap_err()
            .to_string()
            .contains(
                "field routes.dest \"0.0.0.0/0\": a default route must be given as a gateway"
            )
    );
    let not_lla = PodNetworkAnnotation {
        ipv6_lla_gateway_ip: Some("2001:db8::1".parse().unwrap()),
        ..entry()
    };
    assert!(format_default(not_lla).is_err());
}

#[test]
fn parses_upstream_unmarshal_success_cases() {
    let full = r#"{"default":{"ip_addresses":["192.168.0.5/24"],"mac_address":"0a:58:fd:98:00:01","gateway_ips":["192.168.0.1"],"routes":[{"dest":"192.168.1.0/24","nextHop":"192.168.1.1"}],"ip_address":"192.168.0.5/24","gateway_ip":"192.168.0.1","role":"primary"}}"#;
    let parsed = parse_pod_networks(full).unwrap();
    assert_eq!(
        parsed["default"],
        PodNetworkAnnotation {
            ip_addresses: vec![cidr("192.168.0.5/24")],
            gateway_ips: vec![ip("192.168.0.1")],
            routes: vec![PodRoute {
                dest: cidr("192.168.1.0/24"),
                next_hop: Some(ip("192.168.1.1")),
            }],
            role: Some(PodNetworkRole::Primary),
            ..entry()
        }
    );
    assert_eq!(format_pod_networks(&parsed).unwrap(), full);

    let mac_only =
        parse_pod_networks(r#"{"default":{"mac_address":"0a:58:fd:98:00:01"}}"#).unwrap();
    assert_eq!(mac_only["default"], entry());

    let lla = parse_pod_networks(
        r#"{"test_ns/l2":{"mac_address":"0a:58:fd:98:00:01","ipv6_lla_gateway_ip":"fe80::858:fdff:fe98:1"}}"#,
    )
    .unwrap();
    assert_eq!(
        lla["test_ns/l2"].ipv6_lla_gateway_ip,
        Some("fe80::858:fdff:fe98:1".parse::<Ipv6Addr>().unwrap())
    );

    let legacy_ip = parse_pod_networks(
        r#"{"default":{"ip_addresses":null,"mac_address":"0a:58:fd:98:00:01", "ip_address":"192.168.0.11/24"}}"#,
    )
    .unwrap();
    assert_eq!(
        legacy_ip["default"].ip_addresses,
        vec![cidr("192.168.0.11/24")]
    );

    let legacy_gateway = parse_pod_networks(
        r#"{"default":{"ip_addresses":["192.168.0.5/24"],"gateway_ips":[], "gateway_ip":"192.168.0.1","mac_address":"0a:58:fd:98:00:01","ip_address":"192.168.0.5/24"}}"#,
    )
    .unwrap();
    assert_eq!(
        legacy_gateway["default"].gateway_ips,
        vec![ip("192.168.0.1")]
    );

    assert_eq!(parse_pod_networks("{}").unwrap(), PodNetworks::new());
    assert_eq!(parse_pod_networks("null").unwrap(), PodNetworks::new());
}

#[test]
fn parse_errors_name_the_nad_key_and_field() {
    let cases = [
        (
            r#"{"default":{"ip_addresses":null,"mac_address":"}}"#,
            "annotation k8s.ovn.org/pod-networks: value is not JSON of the expected shape",
        ),
        (
            r#"{"default":{"ip_addresses":null,"mac_address":""}}"#,
            "NAD key \"default\": field mac_address \"\": not a MAC address",
        ),
        (
            r#"{"default":{"ip_addresses":["192.168.0.5/24"],"mac_address":"0a:58:fd:98:00:01","ip_address":"192.168.0.11/24"}}"#,
            "field ip_address \"192.168.0.11/24\": conflicts with ip_addresses[0] \"192.168.0.5/24\"",
        ),
        (
            r#"{"default":{"ip_addresses":["192.168.0./24"],"mac_address":"0a:58:fd:98:00:01","ip_address":"192.168.0./24"}}"#,
            "field ip_addresses \"192.168.0./24\": not an IP in CIDR notation",
        ),
        (
            r#"{"default":{"ip_addresses":["192.168.0.5/24"],"gateway_ips":["192.168.0.1"], "gateway_ip":"192.168.1.1","mac_address":"0a:58:fd:98:00:01","ip_address":"192.168.0.5/24"}}"#,
            "field gateway_ip \"192.168.1.1\": conflicts with gateway_ips[0] \"192.168.0.1\"",
        ),
        (
            r#"{"default":{"ip_addresses":["192.168.0.5/24"],"gateway_ips":["192.168.0."], "gateway_ip":"192.168.0.","mac_address":"0a:58:fd:98:00:01","ip_address":"192.168.0.5/24"}}"#,
            "field gateway_ips \"192.168.0.\": not an IP address",
        ),
        (
            r#"{"default":{"ip_addresses":["192.168.0.5/24"],"mac_address":"0a:58:fd:98:00:01","gateway_ips":["192.168.0.1"],"routes":[{"dest":"192.168.1./24"}],"ip_address":"192.168.0.5/24","gateway_ip":"192.168.0.1"}}"#,
            "field routes.dest \"192.168.1./24\": not a CIDR",
        ),
        (
            r#"{"default":{"ip_addresses":["192.168.0.5/24"],"mac_address":"0a:58:fd:98:00:01","gateway_ips":["192.168.0.1"],"routes":[{"dest":"0.0.0.0/0"}],"ip_address":"192.168.0.5/24","gateway_ip":"192.168.0.1"}}"#,
            "field routes.dest \"0.0.0.0/0\": a default route must be given as a gateway, not a route",
        ),
        (
            r#"{"default":{"ip_addresses":["192.168.0.5/24"],"mac_address":"0a:58:fd:98:00:01","gateway_ips":["192.168.0.1"],"routes":[{"dest":"192.168.1.0/24","nextHop":"192.168.1."}],"ip_address":"192.168.0.5/24","gateway_ip":"192.168.0.1"}}"#,
            "field routes.nextHop \"192.168.1.\": not an IP address",
        ),
        (
            r#"{"default":{"ip_addresses":["192.168.0.5/24"],"mac_address":"0a:58:fd:98:00:01","gateway_ips":["192.168.0.1"],"routes":[{"dest":"fd01::1234/64","nextHop":"192.168.1.1"}],"ip_address":"192.168.0.5/24","gateway_ip":"192.168.0.1"}}"#,
            "field routes.nextHop \"192.168.1.1\": next hop is of a different IP family than destination fd01::/64",
        ),
        (
            r#"{"test_ns/l2":{"mac_address":"0a:58:fd:98:00:01","ipv6_lla_gateway_ip":"2001:0db8::1"}}"#,
            "NAD key \"test_ns/l2\": field ipv6_lla_gateway_ip \"2001:0db8::1\": not an IPv6 link-local address",
        ),
        (
            r#"{"test_ns/l2":{"mac_address":"0a:58:fd:98:00:01","ipv6_lla_gateway_ip":"192.168.0.5"}}"#,
            "field ipv6_lla_gateway_ip \"192.168.0.5\": not an IPv6 link-local address",
        ),
        (
            r#"{"a/b":{"mac_address":"0a:58:fd:98:00:01","role":"default"}}"#,
            "NAD key \"a/b\": field role \"default\": not one of primary, secondary, infrastructure-locked",
        ),
        (
            r#"{"a/b":{"mac_address":"0a:58:fd:98:00:01","tunnel_id":-1}}"#,
            "field tunnel_id \"-1\": not a tunnel key",
        ),
        (
            r#"{"a/b":{"mac_address":"0a:58:fd:98:00:01","ip_addresses":["10.0.0.2/24"],"gateway_ips":["10.0.0.1","10.0.0.254"]}}"#,
            "field gateway_ips \"10.0.0.1,10.0.0.254\": a single-stack network can only have a single gateway",
        ),
        (
            "",
            "annotation k8s.ovn.org/pod-networks: value is not JSON of the expected shape",
        ),
        (
            "[]",
            "annotation k8s.ovn.org/pod-networks: value is not JSON of the expected shape",
        ),
    ];
    for (value, expected) in cases {
        let message = parse_error(value);
        assert!(message.contains(expected), "{value}\n  got: {message}");
    }
}

#[test]
fn route_destination_is_masked_like_go_parse_cidr() {
    let parsed = parse_pod_networks(
        r#"{"default":{"mac_address":"0a:58:fd:98:00:01","routes":[{"dest":"10.96.1.1/16","nextHop":"10.244.0.1"}]}}"#,
    )
    .unwrap();
    assert_eq!(parsed["default"].routes[0].dest, cidr("10.96.0.0/16"));
}

#[test]
fn update_keeps_other_keys_and_refuses_to_change_ips() {
    let first = PodNetworkAnnotation {
        ip_addresses: vec![cidr("10.244.0.6/24")],
        ..entry()
    };
    let value = update_pod_networks(None, "default", first.clone()).unwrap();
    let second = PodNetworkAnnotation {
        ip_addresses: vec![cidr("203.203.2.5/24")],
        role: Some(PodNetworkRole::Primary),
        ..entry()
    };
    let value = update_pod_networks(Some(&value), "green/green-network", second).unwrap();
    let parsed = parse_pod_networks(&value).unwrap();
    assert_eq!(parsed.len(), 2);
    assert_eq!(parsed["default"], first);

    let same_ips = PodNetworkAnnotation {
        role: Some(PodNetworkRole::InfrastructureLocked),
        ..first
    };
    assert!(update_pod_networks(Some(&value), "default", same_ips).is_ok());
    let moved = PodNetworkAnnotation {
        ip_addresses: vec![cidr("10.244.0.7/24")],
        ..entry()
    };
    let err = update_pod_networks(Some(&value), "default", moved).unwrap_err();
    assert!(err.to_string().contains("would override the IPs"), "{err}");
}

fn route_strategy() -> impl Strategy<Value = PodRoute> {
    any::<bool>().prop_flat_map(|v6| {
        (
            cidr_of(v6).prop_filter("not a default route", |c| {
                !masked(*c).network().is_unspecified()
            }),
            proptest::option::of(ip_of(v6)),
        )
            .prop_map(|(dest, next_hop)| PodRoute {
                dest: masked(dest),
                next_hop,
            })
    })
}

fn entry_strategy() -> impl Strategy<Value = PodNetworkAnnotation> {
    let ips = prop_oneof![
        Just(vec![]),
        cidr_of(false).prop_map(|c| vec![c]),
        cidr_of(true).prop_map(|c| vec![c]),
        (cidr_of(false), cidr_of(true)).prop_map(|(a, b)| vec![a, b]),
    ];
    let role = proptest::option::of(prop_oneof![
        Just(PodNetworkRole::Primary),
        Just(PodNetworkRole::Secondary),
        Just(PodNetworkRole::InfrastructureLocked),
    ]);
    let lla = proptest::option::of(
        any::<u64>().prop_map(|low| Ipv6Addr::from((0xfe80_u128 << 112) | u128::from(low))),
    );
    (
        ips,
        any::<[u8; 6]>(),
        proptest::collection::vec(any::<bool>().prop_flat_map(ip_of), 0..3),
        proptest::collection::vec(route_strategy(), 0..4),
        lla,
        any::<u32>(),
        role,
    )
        .prop_map(
            |(ip_addresses, mac, mut gateway_ips, routes, lla, tunnel_id, role)| {
                if ip_addresses.len() == 1 {
                    gateway_ips.truncate(1);
                }
                PodNetworkAnnotation {
                    ip_addresses,
                    mac_address: MacAddress(mac),
                    gateway_ips,
                    routes,
                    ipv6_lla_gateway_ip: lla,
                    tunnel_id,
                    role,
                }
            },
        )
}

fn nad_key_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("default".to_owned()),
        (label(), label()).prop_map(|(ns, name)| format!("{ns}/{name}")),
        (label(), label(), 1u8..4).prop_map(|(ns, name, i)| format!("{ns}/{name}/{i}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parse_never_panics(value in ".{0,64}") {
        let _ = parse_pod_networks(&value);
    }

    #[test]
    fn parse_never_panics_on_json_shaped_input(
        key in ".{0,6}",
        ip in ".{0,20}",
        mac in "[0-9a-fA-F:.-]{0,18}",
        gw in ".{0,16}",
        dest in ".{0,20}",
        hop in ".{0,16}",
        lla in ".{0,16}",
        tunnel in any::<i64>(),
        role in ".{0,8}",
    ) {
        let value = serde_json::json!({ key: {
            "ip_addresses": [ip], "mac_address": mac, "gateway_ips": [gw],
            "routes": [{"dest": dest, "nextHop": hop}],
            "ipv6_lla_gateway_ip": lla, "tunnel_id": tunnel, "role": role,
        }});
        if let Ok(parsed) = parse_pod_networks(&value.to_string()) {
            // Whatever parse accepts, format accepts.
            prop_assert!(format_pod_networks(&parsed).is_ok());
        }
    }

    #[test]
    fn format_parse_format_is_stable(
        networks in proptest::collection::btree_map(nad_key_strategy(), entry_strategy(), 0..4),
    ) {
        let formatted = format_pod_networks(&networks).unwrap();
        let parsed = parse_pod_networks(&formatted).unwrap();
        prop_assert_eq!(&parsed, &networks);
        prop_assert_eq!(format_pod_networks(&parsed).unwrap(), formatted);
    }
}
