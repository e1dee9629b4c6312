//! `validate_netconf` (upstream `ValidateNetConf`) on configs as NAD consumers see them,
//! and the round trip render -> parse -> validate.

mod render_support;

use render_support::*;
use udn_api::cluster::{ClusterConfig, GatewayMode};
use udn_api::crd::NetworkRole;
use udn_api::netconf::NetConf;
use udn_api::render::{
    NetworkSource, ValidateError, render_netconf, subnet_overlap_check, validate_netconf,
};

fn conf(topology: &str, role: &str, subnets: &str) -> NetConf {
    NetConf {
        cni_version: "1.1.0".to_owned(),
        plugin_type: "ovn-k8s-cni-overlay".to_owned(),
        name: "ns_net".to_owned(),
        nad_name: "ns/net".to_owned(),
        topology: topology.to_owned(),
        role: role.to_owned(),
        subnets: subnets.to_owned(),
        ..NetConf::default()
    }
}

fn err(mut conf: NetConf) -> String {
    match validate_netconf("ns/net", &mut conf, &ClusterConfig::default()) {
        Ok(()) => panic!("{conf:?} validated"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn nad_name_and_name_fields() {
    let mut c = conf("layer2", "", "10.1.0.0/24");
    assert_eq!(
        validate_netconf("ns/other", &mut c, &ClusterConfig::default())
            .unwrap_err()
            .to_string(),
        "net-attach-def name (ns/other) is inconsistent with config (ns/net)"
    );
    let mut c = conf("layer2", "", "10.1.0.0/24");
    c.name = "ovn-kubernetes".to_owned();
    assert_eq!(
        err(c),
        "invalid name in in secondary network netconf (ovn-kubernetes)"
    );
    let mut c = conf("layer2", "", "10.1.0.0/24");
    c.nad_name.clear();
    assert_eq!(
        validate_netconf("", &mut c, &ClusterConfig::default())
            .unwrap_err()
            .to_string(),
        "missing NADName in secondary network netconf ns_net"
    );
}

#[test]
fn role_persistence_and_ipam_rules() {
    let mut c = conf("layer3", "", "10.1.0.0/16");
    c.allow_persistent_ips = true;
    assert_eq!(err(c), "layer3 topology does not allow persistent IPs");
    assert_eq!(
        err(conf("layer2", "tertiary", "10.1.0.0/24")),
        "invalid network role value tertiary"
    );
    let mut c = conf("layer2", "", "10.1.0.0/24");
    c.ipam_type = "host-local".to_owned();
    assert_eq!(
        err(c),
        "error parsing Network Attachment Definition ns/net: IPAM key is not supported. Use OVN-K provided IPAM via the `subnets` attribute"
    );
}

#[test]
fn transport_and_outbound_snat() {
    let mut c = conf("layer3", "primary", "10.1.0.0/16");
    c.transport = "vxlan".to_owned();
    assert_eq!(
        err(c),
        r#"invalid transport "vxlan": must be one of ["no-overlay" "evpn"]"#
    );
    let mut c = conf("layer3", "primary", "10.1.0.0/16");
    c.outbound_snat = "enabled".to_owned();
    assert_eq!(
        err(c),
        r#"outboundSNAT is only valid when transport is "no-overlay""#
    );
    let mut c = conf("layer3", "primary", "10.1.0.0/16");
    c.transport = "no-overlay".to_owned();
    c.outbound_snat = "sometimes".to_owned();
    assert_eq!(
        err(c),
        r#"invalid outboundSNAT "sometimes": must be one of ["enabled" "disabled"]"#
    );
}

#[test]
fn uplink_needs_shared_gateway() {
    let mut c = conf("layer3", "primary", "10.1.0.0/16");
    c.uplink = "br-ex2".to_owned();
    let cluster = ClusterConfig {
        gateway_mode: GatewayMode::Local,
        ..ClusterConfig::default()
    };
    assert_eq!(
        validate_netconf("ns/net", &mut c, &cluster)
            .unwrap_err()
            .to_string(),
        r#"uplink "br-ex2" is supported only in shared gateway mode"#
    );
}

#[test]
fn topology_specific_lists() {
    let mut c = conf("localnet", "", "10.1.0.0/24");
    c.join_subnet = "100.66.0.0/16".to_owned();
    assert_eq!(
        err(c),
        "localnet topology does not allow specifying join-subnet as services are not supported"
    );
    assert_eq!(
        err(conf("layer2", "primary", "")),
        "the subnet attribute must be defined for layer2 primary user defined networks"
    );
    let mut c = conf("layer3", "", "10.1.0.0/16");
    c.infrastructure_subnets = "10.1.0.0/30".to_owned();
    assert_eq!(
        err(c),
        "infrastructureSubnets is only supported for layer2 topology"
    );
    let mut c = conf("localnet", "", "10.1.0.0/24");
    c.reserved_subnets = "10.1.0.0/30".to_owned();
    assert_eq!(
        err(c),
        "reservedSubnets is only supported for layer2 topology"
    );
    let mut c = conf("layer3", "", "10.1.0.0/16");
    c.default_gateway_ips = "10.1.0.1".to_owned();
    assert_eq!(
        err(c),
        "defaultGatewayIPs is only supported for layer2 topology"
    );
}

#[test]
fn missing_transit_is_computed_or_reported() {
    let mut c = conf("layer2", "primary", "100.88.0.0/15");
    validate_netconf("ns/net", &mut c, &ClusterConfig::default()).unwrap();
    assert_eq!(c.transit_subnet, "100.90.0.0/16");
    assert_eq!(
        err(conf("layer2", "primary", "bad,10.1.0.0/24")),
        r#"failed to set dynamic transit subnet for layer2 primary NAD ns_net: can't generate transit subnets: failed to parse CIDR "bad": invalid CIDR address: bad"#
    );
    // The first family's search runs the overlap check, which parses every subnet.
    assert_eq!(
        err(conf("layer2", "primary", "10.1.0.0/24,bad")),
        r#"failed to set dynamic transit subnet for layer2 primary NAD ns_net: error while parsing subnets: invalid network subnets for layer2 netconf ns_net: CIDR "bad" not properly formatted"#
    );
}

#[test]
fn excluded_subnets_are_dropped_before_the_overlap_check() {
    // A layer2 network overlapping the cluster subnet is fine when the overlap is excluded.
    let mut c = conf("layer2", "", "10.244.0.0/16");
    assert!(subnet_overlap_check(&c, &ClusterConfig::default()).is_err());
    c.exclude_subnets = "10.244.0.0/16".to_owned();
    assert_eq!(subnet_overlap_check(&c, &ClusterConfig::default()), Ok(()));
    let mut c = conf("layer2", "", "10.1.0.0/24");
    c.exclude_subnets = "10.2.0.0/24".to_owned();
    assert_eq!(
        err(c),
        "invalid subnet configuration: error while parsing subnets: the provided network subnets do not contain excluded subnets 10.2.0.0/24"
    );
}

#[test]
fn default_network_skips_the_checks() {
    let mut c = conf("", "", "");
    c.name = "default".to_owned();
    c.nad_name = "whatever".to_owned();
    assert_eq!(
        validate_netconf("ovn-kubernetes/default", &mut c, &ClusterConfig::default()),
        Ok(())
    );
    assert_eq!(
        validate_netconf(
            "ns/net",
            &mut conf("layer2", "", "10.1.0.0/24"),
            &ClusterConfig::default()
        ),
        Ok(())
    );
    let mut c = conf("layer3", "", "10.1.0.0/16");
    c.allow_persistent_ips = true;
    assert_eq!(
        validate_netconf("ns/net", &mut c, &ClusterConfig::default()),
        Err(ValidateError::Layer3PersistentIps)
    );
}

#[test]
fn rendered_configs_parse_back_and_validate() {
    let cluster = cluster();
    let mut primary_l2 = l2(NetworkRole::Primary, &["192.168.100.0/24", "2001:dbb::/64"]);
    primary_l2.ipam = persistent();
    let udns = [
        udn(udn_spec_l2(primary_l2)),
        udn(udn_spec_l3(l3(
            NetworkRole::Primary,
            &[("10.100.0.0/16", Some(24))],
        ))),
        udn(udn_spec_l2(l2(NetworkRole::Secondary, &["10.1.0.0/24"]))),
    ];
    for udn in &udns {
        let rendered = render_netconf(&NetworkSource::Udn(udn), &cluster).unwrap();
        let json = udn_api::render::cni_config_json(&rendered);
        let mut parsed = NetConf::parse(&json, 1400).unwrap();
        assert_eq!(
            NetConf {
                mtu: 1400,
                ..rendered.clone()
            },
            parsed,
            "{json}"
        );
        validate_netconf(&rendered.nad_name, &mut parsed, &cluster).unwrap();
    }
}

proptest::proptest! {
    /// Any string field survives Go-style JSON escaping: the config is valid JSON with
    /// sorted keys and parses back to the same values.
    #[test]
    fn config_json_escapes_any_string(physnet in ".*", uplink in ".*") {
        let mut conf = conf("localnet", "secondary", "10.1.0.0/24");
        conf.physical_network_name = physnet.clone();
        conf.uplink = uplink.clone();
        let json = udn_api::render::cni_config_json(&conf);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        proptest::prop_assert_eq!(value["physicalNetworkName"].as_str(), (!physnet.is_empty()).then_some(physnet.as_str()));
        proptest::prop_assert_eq!(value["uplink"].as_str(), (!uplink.is_empty()).then_some(uplink.as_str()));
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        proptest::prop_assert_eq!(keys, sorted);
        proptest::prop_assert!(!json.contains(['<', '>', '&']));
    }
}
