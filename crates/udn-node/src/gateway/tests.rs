#![allow(clippy::unwrap_used, clippy::expect_used)]

use ipnetwork::IpNetwork;
use udn_api::annotations::MacAddress;
use udn_api::cluster::{ClusterConfig, GatewayMode};

use super::ofctl::{parse_flow_diff, parse_no_flood_ports};
use super::*;
use crate::netlink::neighbor::ObservedNeighbor;

fn net(text: &str) -> IpNetwork {
    text.parse().unwrap()
}

fn mac(text: &str) -> MacAddress {
    text.parse().unwrap()
}

/// The lab's node1: breth0 holding eth0 (ofport 1), the default network's patch port 2, IPv4.
fn lab_like(udns: Vec<UdnPatch>) -> BridgeInputs {
    BridgeInputs {
        bridge: "breth0".into(),
        mac: mac("02:00:ac:12:00:02"),
        ofport_phys: Some(OfPort::Number(1)),
        ofport_host: OfPort::Local,
        default_patch: OfPort::Number(2),
        bridge_ips: vec![net("172.18.0.2/16")],
        host_addresses: vec![net("172.18.0.2/16")],
        udns,
        bridge_ports: vec![],
        services: vec![],
        cluster: GatewayCluster::from_cluster(&ClusterConfig::ipv4_only()),
    }
}

fn udn(network: &str, network_id: u32, ofport: Option<u32>) -> UdnPatch {
    UdnPatch {
        network: network.into(),
        network_id,
        ofport: ofport.map(OfPort::Number),
    }
}

fn texts(inputs: &BridgeInputs) -> Vec<String> {
    desired_flows(inputs)
        .unwrap()
        .iter()
        .map(|flow| flow.as_str().to_owned())
        .collect()
}

fn has(flows: &[String], expected: &str) -> bool {
    flows.iter().any(|flow| flow == expected)
}

#[track_caller]
fn expect_flow(flows: &[String], expected: &str) {
    assert!(
        has(flows, expected),
        "expected flow not found:\n{expected}\n\nall flows:\n{}",
        flows.join("\n")
    );
}

#[test]
fn default_network_ipv4_table() {
    insta::assert_snapshot!(texts(&lab_like(vec![])).join("\n"));
}

#[test]
fn two_udns_ipv4_table() {
    let inputs = lab_like(vec![
        udn("red_net", 2, Some(4)),
        udn("blue_net", 1, Some(3)),
    ]);
    insta::assert_snapshot!(texts(&inputs).join("\n"));
}

#[test]
fn dual_stack_udn_table() {
    let mut inputs = lab_like(vec![udn("blue_net", 1, Some(3))]);
    inputs.cluster = GatewayCluster::from_cluster(&ClusterConfig::default());
    inputs.bridge_ips = vec![net("172.18.0.2/16"), net("fc00:f853:ccd:e793::2/64")];
    inputs.host_addresses = vec![
        net("172.18.0.2/16"),
        net("fc00:f853:ccd:e793::2/64"),
        net("192.168.5.10/24"),
    ];
    insta::assert_snapshot!(texts(&inputs).join("\n"));
}

/// The masquerade SNAT of a UDN (§4.4 of the spec, upstream `commonFlows`): egress from its
/// patch port with the bridge MAC and its GR masquerade IP is committed in zone 64000 with
/// SNAT to the node IP and its own conntrack mark; replies with that mark go back to it.
#[test]
fn udn_masquerade_snat_and_replies() {
    let flows = texts(&lab_like(vec![udn("blue_net", 1, Some(3))]));
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=100, in_port=3, dl_src=02:00:ac:12:00:02, ip, ip_src=169.254.0.11, actions=ct(commit, zone=64000, nat(src=172.18.0.2), exec(set_field:0x4->ct_mark)), output:1",
    );
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=100, table=1, ip, ct_state=+trk+est, ct_mark=0x4, actions=output:3",
    );
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=100, table=1, ip, ct_state=+trk+rel, ct_mark=0x4, actions=output:3",
    );
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=115, in_port=3, ip, ip_dst=10.96.0.0/16,actions=drop",
    );
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=200, table=2, ip, ip_src=169.254.0.12, actions=drop",
    );
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=250, table=2, ip, pkt_mark=0x1001, actions=set_field:02:00:ac:12:00:02->eth_dst,output:3",
    );
}

#[test]
fn the_default_network_commits_without_nat() {
    let flows = texts(&lab_like(vec![]));
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=100, in_port=2, dl_src=02:00:ac:12:00:02, ip, actions=ct(commit, zone=64000, exec(set_field:0x1->ct_mark)), output:1",
    );
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=100, in_port=LOCAL, ip, actions=ct(commit, zone=64000, exec(set_field:0x2->ct_mark)), output:1",
    );
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=50, ip, dl_dst=02:00:ac:12:00:02, actions=ct(zone=64000, nat, table=1)",
    );
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=102, in_port=2, dl_src=02:00:ac:12:00:02, ip, nw_dst=172.18.0.0/16, actions=ct(commit, zone=64000, exec(set_field:0x1->ct_mark)), output:NORMAL",
    );
    expect_flow(&flows, NORMAL_FLOW);
    assert!(
        !flows
            .iter()
            .any(|flow| flow.contains("nat(src=172.18.0.2)") && flow.contains("priority=100"))
    );
}

/// Adding a network only adds flows (and rewrites the three that list every patch port);
/// removing it gives back exactly the table without it.
#[test]
fn a_network_adds_and_removes_only_its_flows() {
    let without = texts(&lab_like(vec![udn("red_net", 2, Some(4))]));
    let with = texts(&lab_like(vec![
        udn("red_net", 2, Some(4)),
        udn("blue_net", 1, Some(3)),
    ]));
    let gone: Vec<&String> = without.iter().filter(|flow| !has(&with, flow)).collect();
    // The flows that list every patch port: the bridge-MAC fan-out and the ARP broadcast copy.
    assert_eq!(gone.len(), 2, "{gone:#?}");
    assert!(gone.iter().all(|flow| flow.contains("output:2,output:4,")));
    let added: Vec<&String> = with.iter().filter(|flow| !has(&without, flow)).collect();
    for flow in &added {
        assert!(
            flow.contains("in_port=3")
                || flow.contains("output:3")
                || flow.contains("0x1001")
                || flow.contains("169.254.0.12"),
            "{flow}"
        );
    }
    assert_eq!(added.len(), 13, "{added:#?}");
}

#[test]
fn an_unpatched_udn_has_no_flows_yet() {
    assert_eq!(
        texts(&lab_like(vec![udn("blue_net", 1, None)])),
        texts(&lab_like(vec![]))
    );
}

#[test]
fn network_order_does_not_change_the_table() {
    let a = texts(&lab_like(vec![udn("a", 1, Some(3)), udn("b", 2, Some(4))]));
    let b = texts(&lab_like(vec![udn("b", 2, Some(4)), udn("a", 1, Some(3))]));
    assert_eq!(a, b);
}

#[test]
fn every_flow_but_normal_carries_the_cookie_and_none_repeats() {
    let inputs = lab_like(vec![udn("a", 1, Some(3))]);
    let flows = desired_flows(&inputs).unwrap();
    for flow in &flows {
        if flow.as_str() != NORMAL_FLOW {
            assert_eq!(flow.cookie(), Some(DEFAULT_OPENFLOW_COOKIE), "{flow}");
        }
    }
    let mut unique = flows.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), flows.len());
}

#[test]
fn flow_table_and_priority() {
    let flow = Flow::new("cookie=0xdeff105, priority=100, table=1, ip, actions=output:3");
    assert_eq!((flow.table(), flow.priority()), (1, 100));
    let flow = Flow::new("cookie=0xdeff105, table=3,  actions=move:NXM_OF_ETH_DST[]->x");
    assert_eq!((flow.table(), flow.priority()), (3, 32768));
    assert_eq!(Flow::new(NORMAL_FLOW).cookie(), None);
}

#[test]
fn local_gateway_mode_is_refused() {
    let mut inputs = lab_like(vec![]);
    inputs.cluster.mode = GatewayMode::Local;
    assert_eq!(
        desired_flows(&inputs),
        Err(DesiredError::LocalGatewayMode {
            bridge: "breth0".into()
        })
    );
}

#[test]
fn a_missing_node_ip_is_named() {
    let mut inputs = lab_like(vec![]);
    inputs.bridge_ips.clear();
    let error = desired_flows(&inputs).unwrap_err();
    assert_eq!(
        error.to_string(),
        "bridge breth0: unable to determine the IPv4 physical IP of the host (no IPv4 bridge IP)"
    );
}

#[test]
fn a_network_id_outside_the_masquerade_subnet_is_named() {
    let mut inputs = lab_like(vec![udn("far", 50_000, Some(3))]);
    inputs.cluster.masquerade_subnet_v4 = "169.254.0.0/17".parse().unwrap();
    let error = desired_flows(&inputs).unwrap_err();
    assert!(
        matches!(&error, DesiredError::UdnMasquerade { network, .. } if network == "far"),
        "{error:?}"
    );
}

#[test]
fn no_uplink_leaves_only_the_port_checks_and_dispatch() {
    let mut inputs = lab_like(vec![udn("a", 1, Some(3))]);
    inputs.ofport_phys = None;
    let flows = texts(&inputs);
    assert!(flows.iter().all(|flow| !flow.contains("output:1")));
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=9, table=0, in_port=3, actions=drop",
    );
    assert!(!flows.iter().any(|flow| flow.contains("table=1")));
}

// Exact texts stated in upstream's `bridgeflows_test.go` (HEAD 8871cd9). Its inputs use port
// names where the agent uses numbers.

/// `TestUplinkBridgeServiceFlowsUseUDNMark`: the flows it expects that the default bridge
/// renders the same way (its pkt_mark host-to-service flow exists only on uplink bridges).
#[test]
fn upstream_udn_mark_flows() {
    let mut cluster = GatewayCluster::from_cluster(&ClusterConfig::default());
    cluster.service_cidrs = vec![net("10.96.0.0/16"), net("fd10:96::/112")];
    let inputs = BridgeInputs {
        bridge: "breth0".into(),
        mac: mac("62:41:d0:54:3d:64"),
        ofport_phys: Some(OfPort::Name("eth1".into())),
        ofport_host: OfPort::Local,
        default_patch: OfPort::Name("patch-breth0_ov".into()),
        bridge_ips: vec![net("172.28.0.3/24"), net("fd28::3/64")],
        host_addresses: vec![],
        udns: vec![UdnPatch {
            network: "bluenet".into(),
            network_id: 1,
            ofport: Some(OfPort::Name("patch-ovsbr1_bluenet".into())),
        }],
        bridge_ports: vec![],
        services: vec![],
        cluster,
    };
    let flows = texts(&inputs);
    for expected in [
        "cookie=0xdeff105, priority=250, table=2, ip, pkt_mark=0x1001, actions=set_field:62:41:d0:54:3d:64->eth_dst,output:patch-ovsbr1_bluenet",
        "cookie=0xdeff105, priority=500, in_port=patch-ovsbr1_bluenet, ip, ip_src=10.96.0.0/16, ip_dst=169.254.0.0/17,actions=ct(zone=64001,nat,table=3)",
        "cookie=0xdeff105, priority=100, table=1, ip, ct_state=+trk+est, ct_mark=0x4, actions=output:patch-ovsbr1_bluenet",
        "cookie=0xdeff105, priority=250, table=2, ipv6, pkt_mark=0x1001, actions=set_field:62:41:d0:54:3d:64->eth_dst,output:patch-ovsbr1_bluenet",
        "cookie=0xdeff105, priority=500, in_port=patch-ovsbr1_bluenet, ipv6, ipv6_src=fd10:96::/112, ipv6_dst=fd69::/112,actions=ct(zone=64001,nat,table=3)",
        "cookie=0xdeff105, priority=100, table=1, ipv6, ct_state=+trk+est, ct_mark=0x4, actions=output:patch-ovsbr1_bluenet",
        "cookie=0xdeff105, table=3,  actions=move:NXM_OF_ETH_DST[]->NXM_OF_ETH_SRC[],set_field:62:41:d0:54:3d:64->eth_dst,output:LOCAL",
    ] {
        expect_flow(&flows, expected);
    }
    // The default bridge SNATs host-to-service by destination only.
    assert!(
        !flows
            .iter()
            .any(|flow| flow.contains("priority=500, in_port=LOCAL, ip, pkt_mark="))
    );
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=500, in_port=LOCAL, ip, ip_dst=10.96.0.0/16, actions=ct(commit,zone=64001,nat(src=169.254.0.2),table=2)",
    );
}

/// `TestArpFanoutFilterFlowsIncludeVLAN`.
#[test]
fn upstream_arp_fanout_filter_with_vlan() {
    let mut cluster = GatewayCluster::from_cluster(&ClusterConfig::default());
    cluster.vlan_id = Some(100);
    let inputs = BridgeInputs {
        bridge: "breth0".into(),
        mac: mac("62:41:d0:54:3d:64"),
        ofport_phys: Some(OfPort::Name("eth0".into())),
        ofport_host: OfPort::Local,
        default_patch: OfPort::Name("patch-breth0_ov".into()),
        bridge_ips: vec![net("172.18.0.3/24"), net("fd00::3/64")],
        host_addresses: vec![],
        udns: vec![UdnPatch {
            network: "bluenet".into(),
            network_id: 1,
            ofport: Some(OfPort::Name("patch-breth0_bluenet".into())),
        }],
        bridge_ports: vec![],
        services: vec![],
        cluster,
    };
    let flows = texts(&inputs);
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=12, table=0, dl_vlan=100, arp, arp_op=1, arp_tpa=172.18.0.3, actions=output:patch-breth0_ov,NORMAL",
    );
    expect_flow(
        &flows,
        "cookie=0xdeff105, priority=12, table=0, dl_vlan=100, icmp6, icmpv6_type=135, nd_target=fd00::3, actions=output:patch-breth0_ov,NORMAL",
    );
    let contains_all = |parts: &[&str]| {
        flows
            .iter()
            .any(|flow| parts.iter().all(|part| flow.contains(part)))
    };
    assert!(contains_all(&[
        "cookie=0xdeff105",
        "priority=11",
        "in_port=eth0",
        "dl_vlan=100",
        "dl_dst=ff:ff:ff:ff:ff:ff",
        "arp",
        "actions=",
        "output:patch-breth0_bluenet",
        "output:patch-breth0_ov",
        "NORMAL",
    ]));
    assert!(contains_all(&[
        "cookie=0xdeff105",
        "priority=11",
        "in_port=eth0",
        "dl_vlan=100",
        "dl_dst=33:33:00:00:00:01",
        "icmpv6_type=136",
        "actions=",
        "output:patch-breth0_bluenet",
        "output:patch-breth0_ov",
        "NORMAL",
    ]));
}

#[test]
fn masquerade_neighbors_per_udn_and_family() {
    let mut inputs = lab_like(vec![udn("blue_net", 1, None), udn("red_net", 2, Some(4))]);
    let neighbors = desired_neighbors(&inputs).unwrap();
    let pairs: Vec<(String, String)> = neighbors
        .iter()
        .map(|entry| {
            (
                entry.neighbor.ip.to_string(),
                entry.neighbor.mac.to_string(),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [
            ("169.254.0.11".into(), "0a:58:a9:fe:00:0b".into()),
            ("169.254.0.13".into(), "0a:58:a9:fe:00:0d".into()),
        ]
    );
    inputs.cluster = GatewayCluster::from_cluster(&ClusterConfig::default());
    let v6: Vec<String> = desired_neighbors(&inputs)
        .unwrap()
        .iter()
        .filter(|entry| entry.neighbor.ip.is_ipv6())
        .map(|entry| entry.neighbor.ip.to_string())
        .collect();
    assert_eq!(v6, ["fd69::b", "fd69::d"]);
}

#[test]
fn neighbor_plan_replaces_wrong_entries_and_removes_only_ours() {
    let inputs = lab_like(vec![udn("blue_net", 1, Some(3))]);
    let desired = desired_neighbors(&inputs).unwrap();
    let subnets = masquerade_subnets(&inputs);
    let entry = |ip: &str, mac: Option<&str>, permanent| ObservedNeighbor {
        ip: ip.parse().unwrap(),
        mac: mac.map(self::mac),
        permanent,
    };
    // Converged.
    let plan = plan_neighbors(
        &desired,
        &[entry("169.254.0.11", Some("0a:58:a9:fe:00:0b"), true)],
        &subnets,
    );
    assert!(plan.is_empty(), "{plan:?}");
    // A learnt (not permanent) entry is replaced.
    let plan = plan_neighbors(
        &desired,
        &[entry("169.254.0.11", Some("0a:58:a9:fe:00:0b"), false)],
        &subnets,
    );
    assert_eq!(plan.replace.len(), 1);
    let observed = [
        // A gone network's entry: ours, removed.
        entry("169.254.0.13", Some("0a:58:a9:fe:00:0d"), true),
        // The default network's next hops (offsets 1 and 4) are someone else's.
        entry("169.254.0.1", Some("0a:58:a9:fe:00:01"), true),
        entry("169.254.0.4", Some("0a:58:a9:fe:00:04"), true),
        // Not permanent, another MAC, outside the subnet: not ours.
        entry("169.254.0.15", Some("0a:58:a9:fe:00:0f"), false),
        entry("169.254.0.17", Some("02:00:00:00:00:01"), true),
        entry("172.18.0.1", Some("02:00:ac:12:00:01"), true),
    ];
    let plan = plan_neighbors(&desired, &observed, &subnets);
    assert_eq!(
        plan.remove,
        ["169.254.0.13".parse::<std::net::IpAddr>().unwrap()]
    );
    assert_eq!(plan.replace, desired);
}

#[test]
fn no_flood_ports_from_dump_ports_desc() {
    let text = "OFPST_PORT_DESC reply (OF1.3) (xid=0x2):
 1(eth0): addr:02:00:ac:12:00:02
     config:     0
     state:      LIVE
 3(patch-a): addr:aa:aa:aa:aa:aa:aa
     config:     NO_FLOOD
     state:      LIVE
 4(patch-b): addr:aa:aa:aa:aa:aa:ab
     config:     PORT_DOWN NO_FLOOD
 LOCAL(breth0): addr:02:00:ac:12:00:02
     config:     NO_FLOOD
";
    assert_eq!(
        parse_no_flood_ports(text).into_iter().collect::<Vec<_>>(),
        [3, 4]
    );
}

#[test]
fn ofctl_targets_the_bridge_management_socket() {
    let ofctl = Ofctl::new().with_rundir("/tmp/lab/node1");
    assert_eq!(ofctl.target("breth0"), "unix:/tmp/lab/node1/breth0.mgmt");
}

#[test]
fn patch_port_names() {
    assert_eq!(
        patch_port_name("breth0", "", "node1"),
        "patch-breth0_node1-to-br-int"
    );
    assert_eq!(
        patch_port_name("breth0", &udn_api::names::ovn_prefix("blue_net"), "node1"),
        "patch-breth0_blue_net_node1-to-br-int"
    );
}

#[test]
fn identical_texts_on_both_sides_of_a_diff_are_no_difference() {
    let text =
        "-priority=110,ip,in_port=1,nw_frag=yes cookie=0xdeff105 actions=ct(table=0,zone=64004)
+priority=110,ip,in_port=1,nw_frag=yes cookie=0xdeff105 actions=ct(table=0,zone=64004)
-table=7 priority=9 cookie=0x1234 actions=drop
+priority=5 actions=drop
-priority=6 actions=drop
+priority=6 actions=output:2
";
    let diff = parse_flow_diff(text);
    assert_eq!(
        diff.remove,
        [
            "table=7 priority=9 cookie=0x1234 actions=drop",
            "priority=6 actions=drop"
        ]
    );
    assert_eq!(
        diff.add,
        ["priority=5 actions=drop", "priority=6 actions=output:2"]
    );
}
