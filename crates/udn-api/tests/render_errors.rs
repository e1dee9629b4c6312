//! Every render error, with the exact upstream text (cases mirror upstream "should fail to
//! render NAD spec/manifest given").

mod render_support;

use render_support::*;
use udn_api::cluster::{ClusterConfig, GatewayMode};
use udn_api::crd::{
    EvpnConfig, IpamLifecycle, IpamMode, NetworkRole, NetworkTopology, TransportOption,
    UserDefinedNetworkSpec, VrfConfig,
};
use udn_api::render::{NetworkSource, RenderError, render_nad};

fn udn_err(spec: UserDefinedNetworkSpec, cluster: &ClusterConfig) -> String {
    match render_udn(spec, cluster) {
        Ok(config) => panic!("rendered {config}"),
        Err(err) => err.to_string(),
    }
}

fn cudn_err(spec: udn_api::crd::NetworkSpec, cluster: &ClusterConfig) -> String {
    match render_cudn(spec, cluster) {
        Ok(config) => panic!("rendered {config}"),
        Err(err) => err.to_string(),
    }
}

const PREFIX: &str = "failed to render CNI network config: ";

#[test]
fn empty_namespace() {
    let mut udn = udn(udn_spec_l2(l2(NetworkRole::Secondary, &["10.0.0.0/24"])));
    udn.metadata.namespace = None;
    let err = render_nad(&NetworkSource::Udn(&udn), &cluster()).unwrap_err();
    assert_eq!(err, RenderError::EmptyNamespace);
    assert_eq!(err.to_string(), "namespace should not be empty");
}

#[test]
fn topology_config_mismatch() {
    let spec = UserDefinedNetworkSpec {
        layer3: Some(l3(NetworkRole::Primary, &[])),
        ..udn_spec_l2(l2(NetworkRole::Primary, &[]))
    };
    let spec = UserDefinedNetworkSpec {
        layer2: None,
        ..spec
    };
    assert_eq!(
        udn_err(spec, &cluster()),
        "invalid topology specified: topology Layer2 is specified but Layer2 config is nil"
    );
    let spec = udn_api::crd::NetworkSpec {
        layer2: Some(l2(NetworkRole::Secondary, &[])),
        ..net_spec(NetworkTopology::Localnet)
    };
    assert_eq!(
        cudn_err(spec, &cluster()),
        "invalid topology specified: topology Localnet is specified but Localnet config is nil"
    );
    assert_eq!(
        cudn_err(net_spec(NetworkTopology::Layer3), &cluster()),
        "invalid topology specified: topology Layer3 is specified but Layer3 config is nil"
    );
}

#[test]
fn ipam_lifecycle_with_disabled_ipam() {
    let mut cfg = l2(NetworkRole::Secondary, &["192.168.100.0/16"]);
    cfg.ipam = ipam(Some(IpamMode::Disabled), Some(IpamLifecycle::Persistent));
    assert_eq!(
        udn_err(udn_spec_l2(cfg), &cluster()),
        format!("{PREFIX}lifecycle Persistent is only supported when ipam.mode is Enabled")
    );
}

#[test]
fn ipam_enabled_without_subnets() {
    let mut cfg = l2(NetworkRole::Secondary, &[]);
    cfg.ipam = ipam(Some(IpamMode::Enabled), None);
    assert_eq!(
        udn_err(udn_spec_l2(cfg), &cluster()),
        format!("{PREFIX}subnets is required with ipam.mode is Enabled or unset")
    );
}

#[test]
fn ipam_disabled_with_subnets() {
    let mut cfg = l2(NetworkRole::Secondary, &["192.168.100.0/16"]);
    cfg.ipam = ipam(Some(IpamMode::Disabled), None);
    assert_eq!(
        udn_err(udn_spec_l2(cfg), &cluster()),
        format!("{PREFIX}subnets must be unset when ipam.mode is Disabled")
    );
}

#[test]
fn transit_unparsable_subnet() {
    assert_eq!(
        udn_err(udn_spec_l2(l2(NetworkRole::Primary, &["abc"])), &cluster()),
        format!(
            r#"{PREFIX}can't generate transit subnets: failed to parse CIDR "abc": invalid CIDR address: abc"#
        )
    );
}

#[test]
fn transit_search_surfaces_join_subnet_errors() {
    let mut cfg = l2(NetworkRole::Primary, &["10.10.0.0/24"]);
    cfg.join_subnets = Some(dual(&["abc"]));
    assert_eq!(
        udn_err(udn_spec_l2(cfg.clone()), &cluster()),
        format!(r#"{PREFIX}error while parsing subnets: CIDR "abc" not properly formatted"#)
    );
    cfg.join_subnets = Some(dual(&["fd50::0/125", "!"]));
    assert_eq!(
        udn_err(udn_spec_l2(cfg), &cluster()),
        format!(r#"{PREFIX}error while parsing subnets: CIDR "!" not properly formatted"#)
    );
}

#[test]
fn join_subnet_overlapping_built_in_join() {
    let mut cfg = l2(NetworkRole::Primary, &["10.10.0.0/24"]);
    cfg.join_subnets = Some(dual(&["100.64.10.0/24"]));
    assert_eq!(
        udn_err(udn_spec_l2(cfg.clone()), &cluster()),
        format!(
            r#"{PREFIX}pod or join subnet overlaps with already configured internal subnets: user defined join subnet "100.64.10.0/24" overlaps built-in join subnet "100.64.0.0/16""#
        )
    );
    cfg.join_subnets = Some(dual(&["fd98::4/127"]));
    assert_eq!(
        udn_err(udn_spec_l2(cfg.clone()), &cluster()),
        format!(
            r#"{PREFIX}pod or join subnet overlaps with already configured internal subnets: user defined join subnet "fd98::4/127" overlaps built-in join subnet "fd98::/64""#
        )
    );
    cfg.join_subnets = Some(dual(&["100.64.10.0/24", "fd98::4/127"]));
    assert_eq!(
        udn_err(udn_spec_l2(cfg), &cluster()),
        format!(
            r#"{PREFIX}pod or join subnet overlaps with already configured internal subnets: user defined join subnet "100.64.10.0/24" overlaps built-in join subnet "100.64.0.0/16""#
        )
    );
}

#[test]
fn layer2_primary_family_not_in_cluster() {
    assert_eq!(
        udn_err(
            udn_spec_l2(l2(NetworkRole::Primary, &["fd12::/64"])),
            &ClusterConfig::ipv4_only()
        ),
        format!(
            "{PREFIX}error while parsing subnets: network mynamespace_test-net is attempting to use ipv6 subnets but the cluster does not support ipv6"
        )
    );
}

#[test]
fn transit_search_exhausted() {
    let mut cluster = cluster();
    cluster.service_cidrs = (88..98)
        .map(|b| format!("100.{b}.0.0/16").parse().unwrap())
        .collect();
    assert_eq!(
        udn_err(
            udn_spec_l2(l2(NetworkRole::Primary, &["10.10.0.0/24"])),
            &cluster
        ),
        format!(
            "{PREFIX}can't generate transit subnets: failed to find non-overlapping transit subnet after 10 attempts"
        )
    );
}

#[test]
fn evpn_feature_disabled() {
    let mut spec = net_l2(l2(NetworkRole::Primary, &["192.168.100.0/24"]));
    spec.transport = Some(TransportOption::Evpn);
    spec.evpn = Some(EvpnConfig {
        vtep: "my-vtep".to_owned(),
        mac_vrf: Some(VrfConfig {
            vni: 100,
            route_target: None,
        }),
        ip_vrf: None,
    });
    assert_eq!(
        cudn_err(spec, &cluster()),
        format!("{PREFIX}EVPN transport requested but EVPN feature is not enabled")
    );
}

#[test]
fn persistent_ips_feature_disabled() {
    let mut cfg = l2(NetworkRole::Secondary, &["192.168.100.0/24"]);
    cfg.ipam = persistent();
    assert_eq!(
        udn_err(udn_spec_l2(cfg), &ClusterConfig::default()),
        format!("{PREFIX}allowPersistentIPs is set but persistentIPs is Disabled")
    );
}

#[test]
fn layer3_subnet_parse_errors() {
    let cases = [
        (("!", Some(16)), "invalid CIDR address: !/16"),
        (
            ("10.10.0.0/24", Some(-1)),
            "cannot use a host subnet length mask shorter than or equal to the cluster subnet mask. host subnet length: 24, cluster subnet length: 24",
        ),
        (
            ("10.10.0.0/24", Some(16)),
            "cannot use a host subnet length mask shorter than or equal to the cluster subnet mask. host subnet length: 16, cluster subnet length: 24",
        ),
        (
            ("10.10.0.0/24", Some(24)),
            "cannot use a host subnet length mask shorter than or equal to the cluster subnet mask. host subnet length: 24, cluster subnet length: 24",
        ),
        (
            ("10.10.0.0/24", Some(33)),
            "invalid host subnet, IPv4 subnet must be < 32",
        ),
        (
            ("2001:dbb::/48", Some(60)),
            "IPv6 only supports /64 host subnets",
        ),
    ];
    for ((cidr, host), reason) in cases {
        let spec = udn_spec_l3(l3(NetworkRole::Secondary, &[(cidr, host)]));
        assert_eq!(
            udn_err(spec, &cluster()),
            format!("{PREFIX}invalid subnet configuration: error while parsing subnets: {reason}")
        );
    }
}

#[test]
fn layer2_secondary_unparsable_subnet() {
    assert_eq!(
        udn_err(
            udn_spec_l2(l2(NetworkRole::Secondary, &["abc"])),
            &cluster()
        ),
        format!(
            r#"{PREFIX}invalid subnet configuration: error while parsing subnets: invalid network subnets for layer2 netconf mynamespace_test-net: CIDR "abc" not properly formatted"#
        )
    );
}

#[test]
fn layer3_primary_family_not_in_cluster() {
    let spec = udn_spec_l3(l3(NetworkRole::Primary, &[("10.100.0.0/16", None)]));
    assert_eq!(
        udn_err(spec, &ClusterConfig::ipv6_only()),
        format!(
            "{PREFIX}invalid subnet configuration: error while parsing subnets: network mynamespace_test-net is attempting to use ipv4 subnets but the cluster does not support ipv4"
        )
    );
}

#[test]
fn layer3_subnet_overlapping_cluster_transit() {
    let spec = udn_spec_l3(l3(NetworkRole::Primary, &[("100.88.0.0/16", None)]));
    assert_eq!(
        udn_err(spec, &cluster()),
        format!(
            r#"{PREFIX}invalid subnet configuration: pod or join subnet overlaps with already configured internal subnets: user defined subnet "100.88.0.0/16" overlaps transit switch subnet "100.88.0.0/16""#
        )
    );
}

#[test]
fn secondary_subnet_overlapping_default_udn_join() {
    // Upstream fills both default UDN join subnets even for secondary networks.
    let spec = udn_spec_l3(l3(NetworkRole::Secondary, &[("100.65.0.0/16", None)]));
    assert_eq!(
        udn_err(spec, &cluster()),
        format!(
            r#"{PREFIX}invalid subnet configuration: pod or join subnet overlaps with already configured internal subnets: user defined join subnet "100.65.0.0/16" overlaps user defined subnet "100.65.0.0/16""#
        )
    );
}

#[test]
fn subnet_overlapping_cluster_and_service_subnets() {
    let spec = udn_spec_l2(l2(NetworkRole::Secondary, &["10.244.1.0/24"]));
    assert_eq!(
        udn_err(spec, &cluster()),
        format!(
            r#"{PREFIX}invalid subnet configuration: pod or join subnet overlaps with already configured internal subnets: user defined subnet "10.244.1.0/24" overlaps cluster subnet "10.244.0.0/16""#
        )
    );
    let spec = udn_spec_l3(l3(NetworkRole::Secondary, &[("169.254.0.0/16", None)]));
    assert_eq!(
        udn_err(spec, &cluster()),
        format!(
            r#"{PREFIX}invalid subnet configuration: pod or join subnet overlaps with already configured internal subnets: user defined subnet "169.254.0.0/16" overlaps masquerade subnet "169.254.0.0/17""#
        )
    );
    let spec = udn_spec_l3(l3(NetworkRole::Secondary, &[("10.96.0.0/12", None)]));
    assert_eq!(
        udn_err(spec, &cluster()),
        format!(
            r#"{PREFIX}invalid subnet configuration: pod or join subnet overlaps with already configured internal subnets: user defined subnet "10.96.0.0/12" overlaps service subnet "10.96.0.0/16""#
        )
    );
}

#[test]
fn localnet_with_primary_role() {
    let mut cfg = localnet("physnet", &["192.168.0.0/16"]);
    cfg.role = NetworkRole::Primary;
    assert_eq!(
        cudn_err(net_localnet(cfg), &cluster()),
        format!(
            r#"{PREFIX}unexpected network field "role" primary for "localnet" topology, localnet topology does not allow network roles to be set since its always a secondary network"#
        )
    );
}

#[test]
fn uplink_outside_shared_gateway_mode() {
    let mut cudn = cudn(net_l3(l3(
        NetworkRole::Primary,
        &[("192.168.100.0/16", None)],
    )));
    cudn.spec.uplinks = Some(vec!["br-test".to_owned()]);
    let mut cluster = cluster();
    cluster.gateway_mode = GatewayMode::Local;
    let source = NetworkSource::Cudn {
        cudn: &cudn,
        namespace: NS,
    };
    assert_eq!(
        render_nad(&source, &cluster).unwrap_err().to_string(),
        format!(r#"{PREFIX}uplink "br-test" is supported only in shared gateway mode"#)
    );
}

#[test]
fn localnet_excluded_subnets_outside_subnets() {
    for (exclude, shown) in [
        ("192.200.0.0/30", "192.200.0.0/30"),
        ("2001:aaa::/127", "2001:aaa::/127"),
    ] {
        let mut cfg = localnet("localnet1", &["192.168.0.0/16", "2001:dbb::/64"]);
        cfg.exclude_subnets = Some(cidrs(&[exclude]));
        assert_eq!(
            cudn_err(net_localnet(cfg), &cluster()),
            format!("{PREFIX}the provided network subnets do not contain excluded subnets {shown}")
        );
    }
}

#[test]
fn localnet_unparsable_subnet() {
    assert_eq!(
        cudn_err(net_localnet(localnet("localnet1", &["abc"])), &cluster()),
        format!(
            r#"{PREFIX}invalid localnet netconf cluster_udn_test-net: CIDR "abc" not properly formatted"#
        )
    );
}
