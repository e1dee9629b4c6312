use proptest::prelude::*;

use super::*;
use crate::annotations::test_strategies::{ip, label, text};

fn element(namespace: &str, name: &str, interface: &str) -> NetworkSelectionElement {
    NetworkSelectionElement {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        interface: interface.to_owned(),
        ..NetworkSelectionElement::default()
    }
}

fn error_of(value: &str) -> String {
    parse_network_selection(value).unwrap_err().to_string()
}

#[test]
fn text_form_examples() {
    assert_eq!(
        parse_network_selection("foo-network").unwrap(),
        vec![element("", "foo-network", "")]
    );
    assert_eq!(
        parse_network_selection("foo-network, foo-network").unwrap(),
        vec![
            element("", "foo-network", ""),
            element("", "foo-network", "")
        ]
    );
    assert_eq!(
        parse_network_selection("default/br0").unwrap(),
        vec![element("default", "br0", "")]
    );
    assert_eq!(
        parse_network_selection("ns1/macvlan@net2").unwrap(),
        vec![element("ns1", "macvlan", "net2")]
    );
    assert_eq!(
        parse_network_selection(" \tns1 / macvlan @ net2 ,\n bar\t").unwrap(),
        vec![element("ns1", "macvlan", "net2"), element("", "bar", "")]
    );
    assert_eq!(
        parse_network_selection("/foo").unwrap(),
        vec![element("", "foo", "")]
    );
    // Not JSON (no `[`, `{` or `"`), so a network literally named "null", as upstream.
    assert_eq!(
        parse_network_selection("null").unwrap(),
        vec![element("", "null", "")]
    );
}

#[test]
fn empty_value_is_no_networks() {
    assert_eq!(parse_network_selection("").unwrap(), vec![]);
    assert_eq!(parse_network_selection(" \t\n").unwrap(), vec![]);
    assert_eq!(parse_network_selection("[]").unwrap(), vec![]);
}

#[test]
fn text_form_errors_name_item_and_reason() {
    let prefix = "annotation k8s.v1.cni.cncf.io/networks: ";
    let cases = [
        ("foo,", r#"item "": field name "": empty network name"#),
        ("foo,,bar", r#"item "": field name "": empty network name"#),
        ("ns/", r#"item "ns/": field name "": empty network name"#),
        (
            "ns/@net1",
            r#"item "ns/@net1": field name "": empty network name"#,
        ),
        (
            "a/b/c",
            r#"item "a/b/c": field item "a/b/c": more than one '/'"#,
        ),
        (
            "a@b@c",
            r#"item "a@b@c": field item "a@b@c": more than one '@'"#,
        ),
        (
            "ns1/foo@ ",
            r#"item "ns1/foo@": field interface "": empty interface name after '@'"#,
        ),
        (
            "Foo",
            r#"item "Foo": field name "Foo": must consist of lower case alphanumeric characters or '-', and start and end with an alphanumeric character"#,
        ),
        ("yo!", r#"item "yo!": field name "yo!": must consist"#),
        (
            "-ns/foo",
            r#"item "-ns/foo": field namespace "-ns": must consist"#,
        ),
        (
            "foo@eth0.100",
            r#"item "foo@eth0.100": field interface "eth0.100": must consist"#,
        ),
        (
            "ns 1/foo",
            r#"item "ns 1/foo": field namespace "ns 1": must consist"#,
        ),
    ];
    for (value, expected) in cases {
        let message = error_of(value);
        assert_eq!(
            message
                .strip_prefix(prefix)
                .map(|m| m.starts_with(expected)),
            Some(true),
            "{value}: {message}"
        );
    }
}

#[test]
fn json_form() {
    let full = r#"[{"name":"macvlan","namespace":"ns1","ips":["10.1.1.5/24"],"mac":"0a:58:0a:01:01:05","infiniband-guid":"c2:11:22:33:44:55:66:77","interface":"net1","portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}],"bandwidth":{"ingressRate":1000,"ingressBurst":100,"egressRate":2000,"egressBurst":200},"cni-args":{"a":{"y":1,"x":[{"d":1,"c":2}]},"b":true},"default-route":["10.1.1.1"],"ipam-claim-reference":"vm-a.net1"},{"name":"yo!"}]"#;
    let parsed = parse_network_selection(full).unwrap();
    assert_eq!(parsed.len(), 2);
    let first = &parsed[0];
    assert_eq!(first.nad_key("pod-ns"), "ns1/macvlan");
    assert_eq!(
        first.default_route,
        vec!["10.1.1.1".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(first.ipam_claim_reference, "vm-a.net1");
    assert_eq!(
        first.port_mappings,
        vec![PortMapEntry {
            host_port: 8080,
            container_port: 80,
            protocol: "tcp".to_owned(),
            host_ip: String::new(),
        }]
    );
    // JSON names are not validated (upstream accepts `yo!`).
    assert_eq!(parsed[1], element("", "yo!", ""));
    // Go writes nested cni-args objects with sorted keys.
    let expected = full.replace(
        r#"{"y":1,"x":[{"d":1,"c":2}]}"#,
        r#"{"x":[{"c":2,"d":1}],"y":1}"#,
    );
    assert_eq!(format_network_selection(&parsed).unwrap(), expected);

    let with_nulls =
        r#"[{"name":"a","namespace":null,"ips":null,"default-route":null,"cni-args":null}]"#;
    assert_eq!(
        parse_network_selection(with_nulls).unwrap(),
        vec![element("", "a", "")]
    );
}

#[test]
fn json_form_errors() {
    let json_error =
        "annotation k8s.v1.cni.cncf.io/networks: value is not JSON of the expected shape";
    for bad in [
        r#"[{"name":}]"#,
        r#"{"name":"x"}"#,
        "[null]",
        r#"[{"name":"a","default-route":["10.1.1."]}]"#,
        r#""foo""#,
        "[",
    ] {
        assert_eq!(error_of(bad), json_error, "{bad}");
    }
    assert_eq!(
        error_of(r#"[{"name":"a"},{"namespace":"ns1"}]"#),
        r#"annotation k8s.v1.cni.cncf.io/networks: element 1: field name "": empty network name"#
    );
}

#[test]
fn missing_namespace_resolves_to_the_pod_namespace() {
    let resolved = parse_network_selection_for_pod("foo, other/bar@net2, /baz", "pod-ns").unwrap();
    assert_eq!(
        resolved,
        vec![
            element("pod-ns", "foo", ""),
            element("other", "bar", "net2"),
            element("pod-ns", "baz", ""),
        ]
    );
    let json = parse_network_selection_for_pod(r#"[{"name":"foo"}]"#, "pod-ns").unwrap();
    assert_eq!(json, vec![element("pod-ns", "foo", "")]);
    let unresolved = element("", "foo", "");
    assert_eq!(unresolved.namespace_or("pod-ns"), "pod-ns");
    assert_eq!(unresolved.nad_key("pod-ns"), "pod-ns/foo");
}

fn element_strategy() -> impl Strategy<Value = NetworkSelectionElement> {
    let opt_text = || proptest::option::of(text()).prop_map(Option::unwrap_or_default);
    let port = (any::<u16>(), any::<u16>(), opt_text()).prop_map(|(h, c, protocol)| PortMapEntry {
        host_port: i64::from(h),
        container_port: i64::from(c),
        protocol,
        host_ip: String::new(),
    });
    let bandwidth =
        proptest::option::of(any::<[u32; 4]>().prop_map(|[a, b, c, d]| BandwidthEntry {
            ingress_rate: i64::from(a),
            ingress_burst: i64::from(b),
            egress_rate: i64::from(c),
            egress_burst: i64::from(d),
        }));
    let cni_args = proptest::option::of(proptest::collection::btree_map(
        text(),
        any::<i32>().prop_map(serde_json::Value::from),
        0..3,
    ));
    (
        (
            text(),
            opt_text(),
            proptest::collection::vec(text(), 0..2),
            opt_text(),
        ),
        (
            opt_text(),
            opt_text(),
            proptest::collection::vec(port, 0..2),
            bandwidth,
        ),
        (cni_args, proptest::collection::vec(ip(), 0..2), opt_text()),
    )
        .prop_map(
            |(
                (name, namespace, ips, mac),
                (infiniband_guid, interface, port_mappings, bandwidth),
                (cni_args, default_route, ipam_claim_reference),
            )| NetworkSelectionElement {
                name,
                namespace,
                ips,
                mac,
                infiniband_guid,
                interface,
                port_mappings,
                bandwidth,
                cni_args,
                default_route,
                ipam_claim_reference,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parse_never_panics(value in ".{0,64}") {
        let _ = parse_network_selection(&value);
        let _ = parse_network_selection_for_pod(&value, "ns");
    }

    #[test]
    fn parse_never_panics_on_text_shaped_input(value in "[a-z0-9 /@,\t-]{0,40}") {
        let _ = parse_network_selection(&value);
    }

    #[test]
    fn json_format_parse_format_is_stable(
        elements in proptest::collection::vec(element_strategy(), 0..4),
    ) {
        let formatted = format_network_selection(&elements).unwrap();
        let parsed = parse_network_selection(&formatted).unwrap();
        prop_assert_eq!(&parsed, &elements);
        prop_assert_eq!(format_network_selection(&parsed).unwrap(), formatted);
    }

    #[test]
    fn text_form_items_parse_to_their_parts(
        items in proptest::collection::vec(
            (proptest::option::of(label()), label(), proptest::option::of(label()), "[ \t]{0,2}", "[ \t]{0,2}"),
            1..4,
        ),
    ) {
        let text: Vec<String> = items
            .iter()
            .map(|(ns, name, iface, pre, post)| {
                let ns = ns.as_ref().map(|n| format!("{n}{pre}/{post}")).unwrap_or_default();
                let iface = iface.as_ref().map(|i| format!("{post}@{pre}{i}")).unwrap_or_default();
                format!("{pre}{ns}{name}{iface}{post}")
            })
            .collect();
        let parsed = parse_network_selection(&text.join(",")).unwrap();
        let expected: Vec<NetworkSelectionElement> = items
            .iter()
            .map(|(ns, name, iface, _, _)| element(
                ns.as_deref().unwrap_or(""),
                name,
                iface.as_deref().unwrap_or(""),
            ))
            .collect();
        prop_assert_eq!(parsed, expected);
    }
}
