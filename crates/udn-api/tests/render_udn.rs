//! UDN -> NAD render: whole CNI config strings (cases mirror upstream
//! `net-attach-def-template_test.go` "should create UDN NAD from spec") and the NAD object.

mod render_support;

use render_support::*;
use udn_api::cluster::ClusterConfig;
use udn_api::crd::{DualStackIps, Ip, IpamMode, NetworkRole};
use udn_api::render::{NetworkSource, render_nad};

#[test]
fn primary_layer3() {
    let mut cfg = l3(
        NetworkRole::Primary,
        &[("192.168.100.0/16", None), ("2001:dbb::/60", None)],
    );
    cfg.mtu = Some(1500);
    assert_eq!(
        render_udn(udn_spec_l3(cfg), &cluster()).unwrap(),
        r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","mtu":1500,"name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"192.168.100.0/16,2001:dbb::/60","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn secondary_layer3_with_host_subnets_and_no_mtu() {
    let cfg = l3(
        NetworkRole::Secondary,
        &[("10.100.0.0/16", Some(24)), ("2001:dbb::/60", Some(64))],
    );
    assert_eq!(
        render_udn(udn_spec_l3(cfg), &cluster()).unwrap(),
        r#"{"cniVersion":"1.1.0","name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"secondary","subnets":"10.100.0.0/16/24,2001:dbb::/60/64","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn layer3_custom_join_subnets() {
    let mut cfg = l3(NetworkRole::Primary, &[("10.100.0.0/16", None)]);
    cfg.join_subnets = Some(dual(&["100.62.0.0/24", "fd92::/64"]));
    assert_eq!(
        render_udn(udn_spec_l3(cfg), &cluster()).unwrap(),
        r#"{"cniVersion":"1.1.0","joinSubnet":"100.62.0.0/24,fd92::/64","name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"10.100.0.0/16","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn primary_layer2_with_transit_and_persistent_ips() {
    let mut cfg = l2(NetworkRole::Primary, &["192.168.100.0/24", "2001:dbb::/64"]);
    cfg.mtu = Some(1500);
    cfg.ipam = persistent();
    assert_eq!(
        render_udn(udn_spec_l2(cfg), &cluster()).unwrap(),
        r#"{"allowPersistentIPs":true,"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","mtu":1500,"name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"192.168.100.0/24,2001:dbb::/64","topology":"layer2","transitSubnet":"100.88.0.0/16,fd97::/64","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn primary_layer2_overrides_join_subnets() {
    let mut cfg = l2(NetworkRole::Primary, &["192.168.100.0/24", "2001:dbb::/64"]);
    cfg.join_subnets = Some(dual(&["100.62.0.0/24", "fd92::/64"]));
    cfg.mtu = Some(1500);
    cfg.ipam = persistent();
    assert_eq!(
        render_udn(udn_spec_l2(cfg), &cluster()).unwrap(),
        r#"{"allowPersistentIPs":true,"cniVersion":"1.1.0","joinSubnet":"100.62.0.0/24,fd92::/64","mtu":1500,"name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"192.168.100.0/24,2001:dbb::/64","topology":"layer2","transitSubnet":"100.88.0.0/16,fd97::/64","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn secondary_layer2_has_no_join_or_transit() {
    let mut cfg = l2(
        NetworkRole::Secondary,
        &["192.168.100.0/24", "2001:dbb::/64"],
    );
    cfg.mtu = Some(1500);
    cfg.ipam = persistent();
    assert_eq!(
        render_udn(udn_spec_l2(cfg), &cluster()).unwrap(),
        r#"{"allowPersistentIPs":true,"cniVersion":"1.1.0","mtu":1500,"name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"secondary","subnets":"192.168.100.0/24,2001:dbb::/64","topology":"layer2","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn secondary_layer2_without_ipam_has_no_subnets() {
    let mut cfg = l2(NetworkRole::Secondary, &[]);
    cfg.ipam = ipam(Some(IpamMode::Disabled), None);
    assert_eq!(
        render_udn(udn_spec_l2(cfg), &cluster()).unwrap(),
        r#"{"cniVersion":"1.1.0","name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"secondary","topology":"layer2","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn ipv4_only_cluster_keeps_both_join_defaults() {
    let cluster = ClusterConfig::ipv4_only();
    let cfg = l3(NetworkRole::Primary, &[("10.100.0.0/16", None)]);
    assert_eq!(
        render_udn(udn_spec_l3(cfg), &cluster).unwrap(),
        r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"10.100.0.0/16","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#
    );
    let cfg = l2(NetworkRole::Primary, &["10.100.0.0/16"]);
    assert_eq!(
        render_udn(udn_spec_l2(cfg), &cluster).unwrap(),
        r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"10.100.0.0/16","topology":"layer2","transitSubnet":"100.88.0.0/16","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn ipv6_only_cluster() {
    let cluster = ClusterConfig::ipv6_only();
    let cfg = l2(NetworkRole::Primary, &["fd12:dbba::/64"]);
    assert_eq!(
        render_udn(udn_spec_l2(cfg), &cluster).unwrap(),
        r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"fd12:dbba::/64","topology":"layer2","transitSubnet":"fd97::/64","type":"ovn-k8s-cni-overlay"}"#
    );
    let cfg = l3(NetworkRole::Primary, &[("fd12:dbba::/56", None)]);
    assert_eq!(
        render_udn(udn_spec_l3(cfg), &cluster).unwrap(),
        r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"fd12:dbba::/56","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn secondary_networks_ignore_cluster_families() {
    // The family check only applies to primary networks.
    let cfg = l2(NetworkRole::Secondary, &["fd12:dbba::/64"]);
    assert!(render_udn(udn_spec_l2(cfg), &ClusterConfig::ipv4_only()).is_ok());
}

#[test]
fn preconfigured_addresses_rendered_only_with_the_feature() {
    let mut cfg = l2(NetworkRole::Primary, &["192.168.100.0/24"]);
    cfg.reserved_subnets = Some(cidrs(&["192.168.100.128/28"]));
    cfg.infrastructure_subnets = Some(cidrs(&["192.168.100.0/30"]));
    cfg.default_gateway_ips = Some(DualStackIps(vec![Ip("192.168.100.1".to_owned())]));
    let spec = udn_spec_l2(cfg);
    assert_eq!(
        render_udn(spec.clone(), &ClusterConfig::default()).unwrap(),
        r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"192.168.100.0/24","topology":"layer2","transitSubnet":"100.88.0.0/16","type":"ovn-k8s-cni-overlay"}"#
    );
    let mut cluster = ClusterConfig::default();
    cluster.features.preconfigured_udn_addresses = true;
    assert_eq!(
        render_udn(spec, &cluster).unwrap(),
        r#"{"cniVersion":"1.1.0","defaultGatewayIPs":"192.168.100.1","infrastructureSubnets":"192.168.100.0/30","joinSubnet":"100.65.0.0/16,fd99::/64","name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","reservedSubnets":"192.168.100.128/28","role":"primary","subnets":"192.168.100.0/24","topology":"layer2","transitSubnet":"100.88.0.0/16","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn whole_nad_object() {
    let mut cfg = l3(
        NetworkRole::Primary,
        &[("192.168.100.0/16", None), ("2001:dbb::/60", None)],
    );
    cfg.mtu = Some(1500);
    let mut udn = udn(udn_spec_l3(cfg));
    udn.metadata.annotations = Some(labels(&[
        ("testAnnotation", "test"),
        ("k8s.ovn.org/testAnnotation", "test"),
    ]));
    udn.metadata.labels = Some(labels(&[("testLabel", "test")]));
    let nad = render_nad(&NetworkSource::Udn(&udn), &cluster()).unwrap();
    assert_eq!(
        serde_json::to_value(&nad).unwrap(),
        serde_json::json!({
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {
                "name": "test-net",
                "namespace": "mynamespace",
                "annotations": {"testAnnotation": "test"},
                "labels": {"k8s.ovn.org/user-defined-network": "", "testLabel": "test"},
                "finalizers": ["k8s.ovn.org/user-defined-network-protection"],
                "ownerReferences": [{
                    "apiVersion": "k8s.ovn.org/v1",
                    "kind": "UserDefinedNetwork",
                    "name": "test-net",
                    "uid": "1",
                    "controller": true,
                    "blockOwnerDeletion": true
                }]
            },
            "spec": {
                "config": r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","mtu":1500,"name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"192.168.100.0/16,2001:dbb::/60","topology":"layer3","type":"ovn-k8s-cni-overlay"}"#
            }
        })
    );
}

#[test]
fn only_ovn_annotations_means_no_annotations_and_owner_labels_win() {
    let mut udn = udn(udn_spec_l2(l2(NetworkRole::Secondary, &["10.1.0.0/24"])));
    udn.metadata.annotations = Some(labels(&[("k8s.ovn.org/network-id", "3")]));
    udn.metadata.labels = Some(labels(&[("k8s.ovn.org/user-defined-network", "mine")]));
    let nad = render_nad(&NetworkSource::Udn(&udn), &cluster()).unwrap();
    assert_eq!(nad.metadata.annotations, None);
    assert_eq!(
        nad.metadata.labels,
        Some(labels(&[("k8s.ovn.org/user-defined-network", "mine")]))
    );
}
