//! Layer2 networks in the legacy gateway topology: primary (gateway router on the switch,
//! remote gateway ports) and secondary (the switch and pods only).

use std::collections::BTreeMap;

use super::fixtures::*;
use crate::model::{Network, Node, PodAttachment, ZoneConfig};
use crate::topology::{CLUSTER_UNIT, NODE_UNIT, NetworkDesired, REMOTE_NODE_UNIT, SchemaFeatures};

const SWITCH: &str = "l2.net_ovn_layer2_switch";
const GR: &str = "GR_l2.net_node1";

fn layer2(role: &str, config: &ZoneConfig) -> Network {
    udn("l2-net", "layer2", role, "10.100.0.0/16", 3, config)
}

fn nodes() -> Vec<Node> {
    let mut local = node1();
    local.layer2_gateway_tunnel_ids = BTreeMap::from([("l2-net".into(), 5)]);
    let mut node2 = remote("node2", 2, CHASSIS2);
    node2.layer2_gateway_tunnel_ids = BTreeMap::from([("l2-net".into(), 6)]);
    vec![local, node2]
}

fn pods() -> Vec<PodAttachment> {
    let mut local = pod("ns1", "a", "node1", "ns1/l2-net", &["10.100.0.5/16"]);
    local.tunnel_id = Some(7);
    let mut far = pod("ns1", "b", "node2", "ns1/l2-net", &["10.100.0.6/16"]);
    far.tunnel_id = Some(8);
    vec![local, far]
}

fn markers() -> BTreeMap<String, String> {
    pairs(&[
        ("k8s.ovn.org/network", "l2-net"),
        ("k8s.ovn.org/topology", "layer2"),
    ])
}

fn primary() -> NetworkDesired {
    let config = zone_config();
    render(&layer2("primary", &config), &config, &nodes(), &pods())
}

#[test]
fn one_switch_that_is_also_the_transit_switch() {
    let d = primary();
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert_references_resolve(&d);
    assert_unique(&d);
    assert!(
        rows(&d, "Logical_Router").iter().all(|r| r.id == GR),
        "no cluster router"
    );
    let ls = row(&d, "Logical_Switch", SWITCH);
    let mut ids = markers();
    ids.insert("k8s.ovn.org/role".into(), "primary".into());
    assert_eq!(map(ls, "external_ids"), ids);
    assert_eq!(
        map(ls, "other_config"),
        pairs(&[
            ("subnet", "10.100.0.0/16"),
            ("interconn-ts", SWITCH),
            ("requested-tnl-key", "16711686"),
            ("mcast_snoop", "true"),
            ("mcast_querier", "false"),
            ("mcast_flood_unregistered", "true"),
        ])
    );
    assert_eq!(refs(ls, "load_balancer_group").len(), 2);
    assert_eq!(
        refs(ls, "ports"),
        [
            "stor-l2.net_ovn_layer2_switch",
            "k8s-l2.net_node1",
            "stor-l2.net_ovn_layer2_switch_node2",
            "ns1.l2.net_ns1_a",
            "ns1.l2.net_ns1_b",
        ]
        .map(String::from)
        .into()
    );
    assert_eq!(
        refs(ls, "acls"),
        ["l2-net-network-controller:NetpolNode:l2.net_ovn_layer2_switch:10.100.0.2".to_owned()]
            .into()
    );
    assert!(
        unit(&d, CLUSTER_UNIT, "l2-net")
            .rows
            .iter()
            .any(|r| r.id == SWITCH)
    );
    assert_eq!(rows(&d, "Port_Group").len(), 2);
}

#[test]
fn gateway_router_hangs_off_the_switch() {
    let d = primary();
    let gr = row(&d, "Logical_Router", GR);
    assert_eq!(map(gr, "options")["lb_force_snat_ip"], "100.65.0.4");
    let port = row(&d, "Logical_Router_Port", "rtos-l2.net_ovn_layer2_switch");
    assert_eq!(
        set(port, "networks"),
        ["100.65.0.4/16", "10.100.0.1/16"].map(String::from).into()
    );
    assert_eq!(s(port, "mac"), "0a:58:64:41:00:04");
    assert_eq!(map(port, "external_ids"), markers());
    let peer = row(&d, "Logical_Switch_Port", "stor-l2.net_ovn_layer2_switch");
    assert_eq!(
        map(peer, "options"),
        pairs(&[
            ("router-port", "rtos-l2.net_ovn_layer2_switch"),
            ("requested-tnl-key", "5")
        ])
    );
    assert_eq!(map(peer, "external_ids"), markers());
    let mut nats: Vec<(String, String, String, Option<String>)> = targets(&d, gr, "nat")
        .into_iter()
        .map(|n| {
            (
                s(n, "external_ip"),
                s(n, "logical_ip"),
                s(n, "match"),
                get(n, "logical_port"),
            )
        })
        .collect();
    nats.sort();
    assert_eq!(
        nats,
        [
            (
                "169.254.169.15".into(),
                "10.100.0.0/16".into(),
                "outport == \"rtoe-GR_l2.net_node1\"".into(),
                None
            ),
            (
                "169.254.169.15".into(),
                "100.65.0.4".into(),
                String::new(),
                None
            ),
            (
                "169.254.169.16".into(),
                "10.100.0.0/16".into(),
                "eth.dst == 0a:58:0a:64:00:02".into(),
                Some("rtoj-GR_l2.net_node1".into())
            ),
        ]
    );
    let policies: Vec<String> = targets(&d, gr, "policies")
        .iter()
        .map(|p| s(p, "match"))
        .collect();
    assert_eq!(
        policies,
        [
            "inport == \"rtos-l2.net_ovn_layer2_switch\" && ip4.dst == 192.168.126.202 /* l2.net_ovn_layer2_switch */"
        ]
    );
    let mut routes: Vec<String> = targets(&d, gr, "static_routes")
        .iter()
        .map(|r| s(r, "ip_prefix"))
        .collect();
    routes.sort();
    assert_eq!(routes, ["0.0.0.0/0", "169.254.169.0/24"]);
    assert_eq!(
        unit(&d, NODE_UNIT, "node1")
            .rows
            .iter()
            .filter(|r| r.table == "Logical_Router")
            .count(),
        1
    );
}

#[test]
fn without_nat_match_only_the_cluster_subnet_snat_is_written() {
    let config = zone_config();
    let d = render_with(
        &layer2("primary", &config),
        &config,
        &nodes(),
        &pods(),
        SchemaFeatures::VENDORED,
    );
    let nats = targets(&d, row(&d, "Logical_Router", GR), "nat");
    assert_eq!(nats.len(), 2);
    assert!(nats.iter().all(|n| !n.columns.contains_key("match")));
    assert!(nats.iter().all(|n| s(n, "external_ip") == "169.254.169.15"));
}

#[test]
fn remote_gateway_ports_and_remote_pods() {
    let d = primary();
    let port = row(
        &d,
        "Logical_Switch_Port",
        "stor-l2.net_ovn_layer2_switch_node2",
    );
    assert_eq!(s(port, "type"), "remote");
    assert_eq!(
        set(port, "addresses"),
        ["0a:58:64:41:00:02 100.65.0.2/16".to_owned()].into()
    );
    assert_eq!(
        map(port, "options"),
        pairs(&[("requested-tnl-key", "6"), ("requested-chassis", CHASSIS2)])
    );
    let mut ids = markers();
    ids.insert("k8s.ovn.org/node".into(), "node2".into());
    assert_eq!(map(port, "external_ids"), ids);
    unit(&d, REMOTE_NODE_UNIT, "node2");
    let local = row(&d, "Logical_Switch_Port", "ns1.l2.net_ns1_a");
    assert_eq!(s(local, "type"), "");
    assert_eq!(
        map(local, "options"),
        pairs(&[
            ("iface-id-ver", "a-uid"),
            ("requested-chassis", CHASSIS),
            ("requested-tnl-key", "7")
        ])
    );
    assert_eq!(
        map(local, "external_ids"),
        pairs(&[
            ("namespace", "ns1"),
            ("pod", "true"),
            ("k8s.ovn.org/network", "l2-net"),
            ("k8s.ovn.org/nad", "ns1/l2-net"),
            ("k8s.ovn.org/topology", "layer2"),
        ])
    );
    assert_eq!(
        set(local, "addresses"),
        ["0a:58:0a:64:00:05 10.100.0.5".to_owned()].into()
    );
    assert_eq!(set(local, "port_security"), set(local, "addresses"));
    let far = row(&d, "Logical_Switch_Port", "ns1.l2.net_ns1_b");
    assert_eq!(s(far, "type"), "remote");
    assert_eq!(map(far, "options")["requested-chassis"], CHASSIS2);
    assert_eq!(map(far, "options")["requested-tnl-key"], "8");
}

#[test]
fn secondary_layer2_is_the_switch_and_pods() {
    let config = zone_config();
    let d = render(&layer2("secondary", &config), &config, &nodes(), &pods());
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert!(rows(&d, "Logical_Router").is_empty());
    assert!(rows(&d, "Port_Group").is_empty());
    assert!(rows(&d, "ACL").is_empty());
    let ls = row(&d, "Logical_Switch", SWITCH);
    assert_eq!(map(ls, "external_ids")["k8s.ovn.org/role"], "secondary");
    assert_eq!(
        refs(ls, "ports"),
        ["ns1.l2.net_ns1_a", "ns1.l2.net_ns1_b"]
            .map(String::from)
            .into()
    );
    assert_eq!(d.units.len(), 3, "{:?}", keys(&d));
    assert!(d.static_mac_bindings.is_empty());
}

#[test]
fn dual_stack_primary_layer2_router_port_advertises_ipv6() {
    let config = dual_stack_config();
    let net = udn(
        "l2-net",
        "layer2",
        "primary",
        "10.100.0.0/16,fd10::/64",
        3,
        &config,
    );
    let mut nodes = nodes();
    nodes[0].gateway = Some(gateway(
        &["192.168.126.202/24", "fc00::2/64"],
        &["192.168.126.1", "fc00::1"],
    ));
    let d = render(&net, &config, &nodes, &[]);
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    let port = row(&d, "Logical_Router_Port", "rtos-l2.net_ovn_layer2_switch");
    assert_eq!(
        set(port, "networks"),
        ["100.65.0.4/16", "fd99::4/64", "10.100.0.1/16", "fd10::1/64"]
            .map(String::from)
            .into()
    );
    assert_eq!(
        map(port, "ipv6_ra_configs"),
        pairs(&[
            ("address_mode", "dhcpv6_stateful"),
            ("send_periodic", "true"),
            ("max_interval", "900"),
            ("min_interval", "300"),
            ("router_preference", "LOW"),
            ("mtu", "1400"),
        ])
    );
    let ls = row(&d, "Logical_Switch", SWITCH);
    assert_eq!(map(ls, "other_config")["ipv6_prefix"], "fd10::");
    let remote = row(
        &d,
        "Logical_Switch_Port",
        "stor-l2.net_ovn_layer2_switch_node2",
    );
    assert_eq!(
        set(remote, "addresses"),
        ["0a:58:64:41:00:02 100.65.0.2/16 fd99::2/64".to_owned()].into()
    );
    let gr = row(&d, "Logical_Router", GR);
    assert_eq!(map(gr, "options")["lb_force_snat_ip"], "100.65.0.4 fd99::4");
}
