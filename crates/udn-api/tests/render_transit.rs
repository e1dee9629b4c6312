//! Primary Layer2 transit subnet computation (upstream "should correctly assign transit
//! Subnets") and its effect on rendered configs.

mod render_support;

use render_support::*;
use udn_api::cluster::ClusterConfig;
use udn_api::crd::NetworkRole;
use udn_api::netconf::NetConf;
use udn_api::render::set_transit_subnets;

fn transit(subnets: &str, join: &str) -> String {
    let mut conf = NetConf {
        role: "primary".to_owned(),
        topology: "layer2".to_owned(),
        subnets: subnets.to_owned(),
        join_subnet: join.to_owned(),
        ..NetConf::default()
    };
    match set_transit_subnets(&mut conf, &ClusterConfig::default()) {
        Ok(()) => conf.transit_subnet,
        Err(err) => panic!("{subnets} / {join}: {err}"),
    }
}

#[test]
fn no_overlap_uses_the_cluster_transit_subnets() {
    assert_eq!(
        transit("10.12.0.0/16,fd12:dbba::/64", ""),
        "100.88.0.0/16,fd97::/64"
    );
}

#[test]
fn subnet_overlapping_the_default_transit_moves_past_it() {
    assert_eq!(
        transit("100.88.0.0/15,fd97::/63", ""),
        "100.90.0.0/16,fd97:0:0:2::/64"
    );
}

#[test]
fn join_subnet_overlapping_the_default_transit_moves_past_it() {
    assert_eq!(
        transit("10.12.0.0/16,fd12:dbba::/64", "100.88.0.0/17,fd97::/65"),
        "100.89.0.0/16,fd97:0:0:1::/64"
    );
}

#[test]
fn subnet_then_join_overlap_move_twice() {
    assert_eq!(
        transit("100.88.0.0/15,fd97::/65", "100.90.0.0/16,fd97:0:0:1::/64"),
        "100.91.0.0/16,fd97:0:0:2::/64"
    );
}

#[test]
fn follows_subnet_order_and_families() {
    assert_eq!(
        transit("fd12:dbba::/64,10.12.0.0/16", ""),
        "fd97::/64,100.88.0.0/16"
    );
    assert_eq!(transit("10.12.0.0/16", ""), "100.88.0.0/16");
}

#[test]
fn rendered_primary_layer2_gets_the_shifted_transit() {
    let cfg = l2(NetworkRole::Primary, &["100.88.0.0/15", "fd97::/63"]);
    assert_eq!(
        render_udn(udn_spec_l2(cfg), &cluster()).unwrap(),
        r#"{"cniVersion":"1.1.0","joinSubnet":"100.65.0.0/16,fd99::/64","name":"mynamespace_test-net","netAttachDefName":"mynamespace/test-net","role":"primary","subnets":"100.88.0.0/15,fd97::/63","topology":"layer2","transitSubnet":"100.90.0.0/16,fd97:0:0:2::/64","type":"ovn-k8s-cni-overlay"}"#
    );
}

#[test]
fn custom_cluster_transit_subnet_is_the_start() {
    let cluster = ClusterConfig {
        transit_subnet_v4: "100.99.0.0/16".parse().unwrap(),
        ..ClusterConfig::default()
    };
    let mut conf = NetConf {
        role: "primary".to_owned(),
        topology: "layer2".to_owned(),
        subnets: "10.12.0.0/16".to_owned(),
        ..NetConf::default()
    };
    set_transit_subnets(&mut conf, &cluster).unwrap();
    assert_eq!(conf.transit_subnet, "100.99.0.0/16");
}
