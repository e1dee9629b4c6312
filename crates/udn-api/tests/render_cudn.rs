//! CUDN -> NAD render: whole CNI config strings (cases mirror upstream
//! "should create CUDN NAD from spec", the controller test's role-less CUDN, uplink and
//! EVPN cases) and the CUDN NAD object.

mod render_support;

use render_support::*;
use udn_api::cluster::ClusterConfig;
use udn_api::crd::{
    AccessVlanConfig, ClusterUserDefinedNetwork, EvpnConfig, NetworkRole, NoOverlayConfig,
    NoOverlayRouting, OutboundSnat, RouteTarget, TransportOption, VlanConfig, VlanMode, VrfConfig,
};
use udn_api::render::{
    NetworkSource, cni_config_json, is_primary, nad_name, network_name, render_nad, render_netconf,
};

#[test]
fn primary_layer3() {
    let mut cfg = l3(
        NetworkRole::Primary,
        &[("192.168.100.0/16", None), ("2001:dbb::/60", None)],
    );
    cfg.mtu = Some(1500);
    assert_eq!(
        render_cudn(net_l3(cfg), &cluster()).unwrap(),
        r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","mtu":1500,"name":"cluster_udn_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"192.168.100.0/16,2001:dbb::/60","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn primary_layer2_and_join_override() {
    let mut cfg = l2(NetworkRole::Primary, &["192.168.100.0/24", "2001:dbb::/64"]);
    cfg.mtu = Some(1500);
    cfg.ipam = persistent();
    assert_eq!(
        render_cudn(net_l2(cfg.clone()), &cluster()).unwrap(),
        r#"{"allowPersistentIPs":true,"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","mtu":1500,"name":"cluster_udn_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"192.168.100.0/24,2001:dbb::/64","topology":"layer2","transitSubnet":"100.88.0.0/16,fd97::/64","type":"ovn-k8s-cni-overlay"}"#
    );
    cfg.join_subnets = Some(dual(&["100.62.0.0/24", "fd92::/64"]));
    assert_eq!(
        render_cudn(net_l2(cfg), &cluster()).unwrap(),
        r#"{"allowPersistentIPs":true,"cniVersion":"1.1.0","joinSubnet":"100.62.0.0/24,fd92::/64","mtu":1500,"name":"cluster_udn_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"192.168.100.0/24,2001:dbb::/64","topology":"layer2","transitSubnet":"100.88.0.0/16,fd97::/64","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn secondary_layer2() {
    let mut cfg = l2(
        NetworkRole::Secondary,
        &["192.168.100.0/24", "2001:dbb::/64"],
    );
    cfg.mtu = Some(1500);
    cfg.ipam = persistent();
    assert_eq!(
        render_cudn(net_l2(cfg), &cluster()).unwrap(),
        r#"{"allowPersistentIPs":true,"cniVersion":"1.1.0","mtu":1500,"name":"cluster_udn_test-net","netAttachDefName":"mynamespace/test-net","role":"secondary","subnets":"192.168.100.0/24,2001:dbb::/64","topology":"layer2","type":"ovn-k8s-cni-overlay"}"#
    );
}

fn localnet_vlan200() -> udn_api::crd::LocalnetConfig {
    let mut cfg = localnet("mylocalnet1", &["192.168.100.0/24", "2001:dbb::/64"]);
    cfg.vlan = Some(VlanConfig {
        mode: VlanMode::Access,
        access: Some(AccessVlanConfig { id: 200 }),
    });
    cfg.exclude_subnets = Some(cidrs(&["192.168.100.1/32", "2001:dbb::0/128"]));
    cfg.ipam = persistent();
    cfg
}

#[test]
fn localnet_with_vlan_and_excluded_subnets() {
    let mut cfg = localnet_vlan200();
    cfg.mtu = Some(1600);
    assert_eq!(
        render_cudn(net_localnet(cfg), &cluster()).unwrap(),
        r#"{"allowPersistentIPs":true,"cniVersion":"1.1.0","excludeSubnets":"192.168.100.1/32,2001:dbb::0/128","mtu":1600,"name":"cluster_udn_test-net","netAttachDefName":"mynamespace/test-net","physicalNetworkName":"mylocalnet1","role":"secondary","subnets":"192.168.100.0/24,2001:dbb::/64","topology":"localnet","type":"ovn-k8s-cni-overlay","vlanID":200}"#
    );
}

#[test]
fn localnet_mtu_defaults_to_cluster_mtu_plus_100() {
    assert_eq!(
        render_cudn(net_localnet(localnet_vlan200()), &cluster()).unwrap(),
        r#"{"allowPersistentIPs":true,"cniVersion":"1.1.0","excludeSubnets":"192.168.100.1/32,2001:dbb::0/128","mtu":1500,"name":"cluster_udn_test-net","netAttachDefName":"mynamespace/test-net","physicalNetworkName":"mylocalnet1","role":"secondary","subnets":"192.168.100.0/24,2001:dbb::/64","topology":"localnet","type":"ovn-k8s-cni-overlay","vlanID":200}"#
    );
    let jumbo = ClusterConfig {
        mtu: 8900,
        ..ClusterConfig::default()
    };
    let config = render_cudn(net_localnet(localnet("physnet", &[])), &jumbo).unwrap();
    assert_eq!(
        config,
        r#"{"cniVersion":"1.1.0","mtu":9000,"name":"cluster_udn_test-net","netAttachDefName":"mynamespace/test-net","physicalNetworkName":"physnet","role":"secondary","topology":"localnet","type":"ovn-k8s-cni-overlay"}"#
    );
}

/// Upstream's controller test renders a CUDN whose Layer2 config has no role (a Go zero
/// value) as `"role":""`. Our CRD type requires `role` (as the CRD schema does), so such an
/// object cannot be deserialized; the render of the role-less config is reproduced one
/// stage down, on the rendered `NetConf` with its role cleared.
#[test]
fn roleless_cudn_matches_upstream_controller_example() {
    let roleless = r#"{
        "apiVersion": "k8s.ovn.org/v1", "kind": "ClusterUserDefinedNetwork",
        "metadata": {"name": "test", "uid": "1"},
        "spec": {"namespaceSelector": {}, "network": {"topology": "Layer2", "layer2": {"subnets": ["10.10.10.0/24"]}}}
    }"#;
    let err = serde_json::from_str::<ClusterUserDefinedNetwork>(roleless).unwrap_err();
    assert!(err.to_string().contains("missing field `role`"), "{err}");

    let with_role = roleless.replace(r#""layer2": {"#, r#""layer2": {"role": "Secondary", "#);
    let cudn: ClusterUserDefinedNetwork = serde_json::from_str(&with_role).unwrap();
    let source = NetworkSource::Cudn {
        cudn: &cudn,
        namespace: "red",
    };
    let mut conf = render_netconf(&source, &ClusterConfig::default()).unwrap();
    assert_eq!(conf.role, "secondary");
    conf.role.clear();
    assert_eq!(
        cni_config_json(&conf),
        r#"{"cniVersion":"1.1.0","name":"cluster_udn_test","netAttachDefName":"red/test","role":"","subnets":"10.10.10.0/24","topology":"layer2","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn uplink_is_rendered() {
    let mut cudn = cudn(net_l3(l3(
        NetworkRole::Primary,
        &[("192.168.100.0/16", None)],
    )));
    cudn.spec.uplinks = Some(vec!["br-test".to_owned()]);
    let source = NetworkSource::Cudn {
        cudn: &cudn,
        namespace: NS,
    };
    let nad = render_nad(&source, &ClusterConfig::ipv4_only()).unwrap();
    assert_eq!(
        nad.spec.config.as_deref(),
        Some(
            r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"cluster_udn_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"192.168.100.0/16","topology":"layer3","type":"ovn-k8s-cni-overlay","uplink":"br-test"}"#
        )
    );
}

#[test]
fn no_overlay_transport() {
    let mut spec = net_l3(l3(NetworkRole::Primary, &[("10.100.0.0/16", None)]));
    spec.transport = Some(TransportOption::NoOverlay);
    spec.no_overlay = Some(NoOverlayConfig {
        outbound_snat: OutboundSnat::Enabled,
        routing: NoOverlayRouting::Managed,
    });
    assert_eq!(
        render_cudn(spec, &cluster()).unwrap(),
        r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"cluster_udn_test-net","netAttachDefName":"mynamespace/test-net","outboundSNAT":"enabled","role":"primary","subnets":"10.100.0.0/16","topology":"layer3","transport":"no-overlay","type":"ovn-k8s-cni-overlay"}"#
    );
}

fn vrf(vni: i32, route_target: Option<&str>) -> Option<VrfConfig> {
    Some(VrfConfig {
        vni,
        route_target: route_target.map(|rt| RouteTarget(rt.to_owned())),
    })
}

#[test]
fn evpn_rendered_when_the_feature_is_on() {
    let mut cluster = cluster();
    cluster.features.evpn = true;
    let mut cfg = l2(NetworkRole::Primary, &["192.168.100.0/24"]);
    cfg.mtu = Some(1500);
    let mut spec = net_l2(cfg);
    spec.transport = Some(TransportOption::Evpn);
    spec.evpn = Some(EvpnConfig {
        vtep: "my-vtep".to_owned(),
        mac_vrf: vrf(100, Some("100000:100")),
        ip_vrf: vrf(200, Some("192.168.1.1:200")),
    });
    assert_eq!(
        render_cudn(spec.clone(), &cluster).unwrap(),
        r#"{"cniVersion":"1.1.0","evpn":{"vtep":"my-vtep","macVRF":{"vni":100,"routeTarget":"100000:100"},"ipVRF":{"vni":200,"routeTarget":"192.168.1.1:200"}},"joinSubnet":"100.65.0.0/16,fd99::/64","mtu":1500,"name":"cluster_udn_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"192.168.100.0/24","topology":"layer2","transitSubnet":"100.88.0.0/16","transport":"evpn","type":"ovn-k8s-cni-overlay"}"#
    );
    spec.evpn = Some(EvpnConfig {
        vtep: "my-vtep".to_owned(),
        mac_vrf: vrf(100, None),
        ip_vrf: None,
    });
    let config = render_cudn(spec, &cluster).unwrap();
    assert!(
        config.contains(r#""evpn":{"vtep":"my-vtep","macVRF":{"vni":100}}"#),
        "{config}"
    );
}

#[test]
fn whole_cudn_nad_object_and_helpers() {
    let cudn = cudn(net_l2(l2(NetworkRole::Secondary, &["10.10.10.0/24"])));
    let source = NetworkSource::Cudn {
        cudn: &cudn,
        namespace: "red",
    };
    assert_eq!(network_name(&source), "cluster_udn_test-net");
    assert_eq!(nad_name(&source), "red/test-net");
    assert!(!is_primary(&cudn.spec.network));
    let nad = render_nad(&source, &ClusterConfig::default()).unwrap();
    assert_eq!(
        serde_json::to_value(&nad.metadata).unwrap(),
        serde_json::json!({
            "name": "test-net",
            "namespace": "red",
            "labels": {"k8s.ovn.org/user-defined-network": ""},
            "finalizers": ["k8s.ovn.org/user-defined-network-protection"],
            "ownerReferences": [{
                "apiVersion": "k8s.ovn.org/v1",
                "kind": "ClusterUserDefinedNetwork",
                "name": "test-net",
                "uid": "1",
                "controller": true,
                "blockOwnerDeletion": true
            }]
        })
    );
    let udn = udn(udn_spec_l3(l3(
        NetworkRole::Primary,
        &[("10.1.0.0/16", None)],
    )));
    let source = NetworkSource::Udn(&udn);
    assert_eq!(network_name(&source), "mynamespace_test-net");
    assert!(is_primary(&udn.spec));
    assert!(!is_primary(&net_localnet(localnet("p", &[]))));
}
