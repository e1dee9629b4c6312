//! What ovn-nbctl shows after the first reconcile.

use udn_controller::topology::DEFAULT_COPP;
use udn_ovsdb::testing::OvsdbServer;

use super::inputs::CHASSIS2;

fn nbctl(server: &OvsdbServer, args: &[&str]) -> String {
    server.nbctl(args).unwrap()
}

fn assert_contains(text: &str, expected: &[&str]) {
    for e in expected {
        assert!(text.contains(e), "{e:?} missing from\n{text}");
    }
}

pub(crate) fn check_layer3(server: &OvsdbServer) {
    let routes = nbctl(server, &["lr-route-list", "ns1_blue_ovn_cluster_router"]);
    assert_contains(
        &routes,
        &[
            "103.103.2.0/24",
            "100.65.0.2",
            "src-ip",
            "103.103.3.0/24",
            "100.88.0.3",
            "fd33:0:0:4::/64",
            "fd97::4",
            "100.88.0.4 dst-ip",
            "fd97::3 dst-ip",
        ],
    );
    let gr_routes = nbctl(server, &["lr-route-list", "GR_ns1_blue_node1"]);
    assert_contains(
        &gr_routes,
        &[
            "103.103.0.0/16",
            "100.65.0.1",
            "0.0.0.0/0",
            "172.18.0.1",
            "rtoe-GR_ns1_blue_node1",
            "169.254.0.0/17",
            "169.254.0.4",
            "fd69::/112",
            "fc00:f853:ccd:e793::1",
        ],
    );
    let nats = nbctl(server, &["lr-nat-list", "GR_ns1_blue_node1"]);
    assert_contains(
        &nats,
        &[
            "snat",
            "169.254.0.11",
            "100.65.0.2",
            "103.103.0.0/16",
            "fd69::b",
            "fd33::/48",
        ],
    );
    let cr_nats = nbctl(server, &["lr-nat-list", "ns1_blue_ovn_cluster_router"]);
    assert_contains(&cr_nats, &["169.254.0.12", "103.103.2.0/24", "fd69::c"]);
    let port = nbctl(
        server,
        &[
            "--bare",
            "--columns=logical_port",
            "find",
            "NAT",
            "external_ip=\"169.254.0.12\"",
        ],
    );
    assert_eq!(port.trim(), "rtos-ns1_blue_node1");
    let policies = nbctl(server, &["lr-policy-list", "ns1_blue_ovn_cluster_router"]);
    assert_contains(
        &policies,
        &[
            "1004",
            "inport == \"rtos-ns1_blue_node1\" && ip4.dst == 172.18.0.2 /* ns1_blue_node1 */",
            "ip4.dst == 169.254.0.11",
            "ip6.dst == fc00:f853:ccd:e793::2",
            "reroute",
            "103.103.2.2",
        ],
    );
    let acls = nbctl(server, &["acl-list", "ns1_blue_node1"]);
    assert_contains(
        &acls,
        &[
            "to-lport  1001 (ip4.src==103.103.2.2) allow-related",
            "ip6.src==fd33:0:0:2::2",
        ],
    );
    let owner_type = nbctl(
        server,
        &[
            "--bare",
            "--columns=external_ids",
            "find",
            "ACL",
            "match=\"ip4.src==103.103.2.2\"",
        ],
    );
    assert_contains(
        &owner_type,
        &[
            "k8s.ovn.org/owner-type=NetpolNode",
            "k8s.ovn.org/id=ns1_blue-network-controller:NetpolNode:ns1_blue_node1:103.103.2.2",
        ],
    );
    let remote = nbctl(
        server,
        &[
            "--bare",
            "--columns=name",
            "find",
            "Logical_Switch_Port",
            "type=remote",
        ],
    );
    assert_contains(
        &remote,
        &[
            "ns1_blue_tstor-node2",
            "ns1_blue_tstor-node3",
            "tstor-node2",
            "stor-ns2_green_ovn_layer2_switch_node3",
        ],
    );
    let chassis = nbctl(
        server,
        &[
            "get",
            "Logical_Switch_Port",
            "ns1_blue_tstor-node2",
            "options",
        ],
    );
    assert_contains(&chassis, &[CHASSIS2, "requested-tnl-key=\"3\""]);
    let ports = nbctl(server, &["lsp-list", "ns1_blue_node1"]);
    assert_contains(
        &ports,
        &[
            "stor-ns1_blue_node1",
            "k8s-ns1_blue_node1",
            "ns1.blue_ns1_pod1",
        ],
    );
}

pub(crate) fn check_default_network(server: &OvsdbServer) {
    let acls = nbctl(server, &["acl-list", "a8747502060113802905"]);
    assert_contains(
        &acls,
        &[
            "from-lport  1000 (inport == @a8747502060113802905) drop",
            "to-lport  1000 (outport == @a8747502060113802905) drop",
            "to-lport  1001 (outport == @a8747502060113802905 && (ip4.src==10.244.2.2 || ip6.src==fd00:10:244:2::2)) allow-related",
            "arp.tpa == 10.244.2.2",
            "nd.target == fd00:10:244:2::2",
            "outport == \"ns1_pod1\" && (arp || nd || (tcp.dst == 80))",
        ],
    );
    let members = nbctl(
        server,
        &[
            "--bare",
            "--columns=ports",
            "list",
            "Port_Group",
            "a8747502060113802905",
        ],
    );
    assert_eq!(members.split_whitespace().count(), 1, "{members}");
    let stor = nbctl(
        server,
        &[
            "get",
            "Logical_Switch_Port",
            "stor-node1",
            "options:arp_proxy",
        ],
    );
    assert_contains(
        &stor,
        &["0a:58:a9:fe:01:01 169.254.1.1 fe80::1 10.244.0.0/16 fd00:10:244::/48"],
    );
    let gr = nbctl(
        server,
        &["get", "Logical_Router", "GR_node1", "options:snat-ct-zone"],
    );
    assert_eq!(gr.trim().trim_matches('"'), "0");
    let copp = nbctl(
        server,
        &["get", "Logical_Router", "GR_ns1_blue_node1", "copp"],
    );
    let copp_name = nbctl(server, &["get", "Copp", copp.trim(), "name"]);
    assert_eq!(copp_name.trim().trim_matches('"'), DEFAULT_COPP);
    let meters = nbctl(server, &["--bare", "--columns=name", "list", "Meter"]);
    assert_contains(
        &meters,
        &[
            "acl-logging",
            "arp-rate-limiter",
            "svc-monitor-rate-limiter",
        ],
    );
    let bindings = nbctl(server, &["list", "Static_MAC_Binding"]);
    assert_contains(
        &bindings,
        &[
            "rtoe-GR_node1",
            "169.254.0.4",
            "fd69::4",
            "rtoe-GR_ns1_blue_node1",
            "169.254.0.2",
        ],
    );
    let transit = nbctl(
        server,
        &[
            "get",
            "Logical_Switch",
            "transit_switch",
            "other_config:requested-tnl-key",
        ],
    );
    assert_eq!(transit.trim().trim_matches('"'), "16711683");
}

pub(crate) fn check_layer2_and_localnet(server: &OvsdbServer) {
    let ports = nbctl(server, &["lsp-list", "ns2_green_ovn_layer2_switch"]);
    assert_contains(
        &ports,
        &[
            "stor-ns2_green_ovn_layer2_switch",
            "stor-ns2_green_ovn_layer2_switch_node2",
            "k8s-ns2_green_node1",
            "ns2.green_ns2_a",
            "ns2.green_ns2_b",
        ],
    );
    let peer = nbctl(
        server,
        &[
            "get",
            "Logical_Switch_Port",
            "stor-ns2_green_ovn_layer2_switch",
            "options",
        ],
    );
    assert_contains(
        &peer,
        &[
            "requested-tnl-key=\"12\"",
            "router-port=rtos-ns2_green_ovn_layer2_switch",
        ],
    );
    let remote_pod = nbctl(
        server,
        &["get", "Logical_Switch_Port", "ns2.green_ns2_b", "type"],
    );
    assert_eq!(remote_pod.trim(), "remote");
    let policies = nbctl(server, &["lr-policy-list", "GR_ns2_green_node1"]);
    assert_contains(
        &policies,
        &[
            "ip4.dst == 172.18.0.2 /* ns2_green_ovn_layer2_switch */",
            "10.200.0.2",
        ],
    );
    let nats = nbctl(server, &["lr-nat-list", "GR_ns2_green_node1"]);
    assert_contains(&nats, &["169.254.0.13", "10.200.0.0/16", "100.65.0.2"]);
    let localnet = nbctl(
        server,
        &[
            "get",
            "Logical_Switch_Port",
            "cluster_udn_ln_ovn_localnet_port",
            "tag_request",
        ],
    );
    assert_eq!(localnet.trim(), "10");
    let ln_ports = nbctl(server, &["lsp-list", "cluster_udn_ln_ovn_localnet_switch"]);
    assert_contains(
        &ln_ports,
        &["cluster_udn_ln_ovn_localnet_port", "ns3.ln_ns3_x"],
    );
    assert!(!ln_ports.contains("ns3_y"), "{ln_ports}");
}
