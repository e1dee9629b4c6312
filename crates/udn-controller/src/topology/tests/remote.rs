//! Remote nodes: transit switch `remote` ports with the remote node's tunnel key and
//! chassis, and cluster router routes through its transit IP marked `ic-node`.

use super::fixtures::*;
use crate::model::Network;
use crate::topology::REMOTE_NODE_UNIT;

#[test]
fn remote_nodes_of_a_primary_layer3_network() {
    let config = zone_config();
    let nodes = [
        node1(),
        remote("node2", 2, CHASSIS2),
        remote("node3", 3, CHASSIS3),
    ];
    let d = render(&isolatednet(&config), &config, &nodes, &[]);
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    let port = row(&d, "Logical_Switch_Port", "isolatednet_tstor-node2");
    assert_eq!(s(port, "type"), "remote");
    assert_eq!(
        set(port, "addresses"),
        ["0a:58:64:58:00:02 100.88.0.2/16".to_owned()].into()
    );
    assert_eq!(
        map(port, "options"),
        pairs(&[("requested-tnl-key", "2"), ("requested-chassis", CHASSIS2)])
    );
    assert_eq!(map(port, "external_ids"), pairs(&[("node", "node2")]));
    let ts = row(&d, "Logical_Switch", "isolatednet_transit_switch");
    assert_eq!(
        refs(ts, "ports"),
        [
            "isolatednet_tstor-node1",
            "isolatednet_tstor-node2",
            "isolatednet_tstor-node3"
        ]
        .map(String::from)
        .into()
    );
    assert_eq!(
        map(ts, "external_ids"),
        pairs(&[
            ("k8s.ovn.org/network", "isolatednet"),
            ("k8s.ovn.org/role", "primary"),
            ("k8s.ovn.org/topology", "layer3"),
        ])
    );
    assert_eq!(map(ts, "other_config")["requested-tnl-key"], "16711685");
    let unit = unit(&d, REMOTE_NODE_UNIT, "node3");
    let mut routes: Vec<(String, String)> = unit
        .rows
        .iter()
        .filter(|r| r.table == "Logical_Router_Static_Route")
        .map(|r| {
            assert_eq!(
                map(r, "external_ids"),
                pairs(&[("ic-node", "node3"), ("k8s.ovn.org/network", "isolatednet")])
            );
            (s(r, "ip_prefix"), s(r, "nexthop"))
        })
        .collect();
    routes.sort();
    assert_eq!(
        routes,
        [
            ("100.65.0.3/32".into(), "100.88.0.3".into()),
            ("192.168.3.0/24".into(), "100.88.0.3".into()),
        ]
    );
    let cr = row(&d, "Logical_Router", "isolatednet_ovn_cluster_router");
    assert_eq!(refs(cr, "static_routes").len(), 6);
    assert_references_resolve(&d);
}

#[test]
fn remote_nodes_of_the_default_network_are_marked_with_network_default() {
    let config = zone_config();
    let nodes = [node1(), remote("node2", 2, CHASSIS2)];
    let d = render(&Network::default_network(), &config, &nodes, &[]);
    let port = row(&d, "Logical_Switch_Port", "tstor-node2");
    assert_eq!(s(port, "type"), "remote");
    let routes: Vec<_> = unit(&d, REMOTE_NODE_UNIT, "node2")
        .rows
        .iter()
        .filter(|r| r.table == "Logical_Router_Static_Route")
        .map(|r| (s(r, "ip_prefix"), map(r, "external_ids")))
        .collect();
    assert_eq!(routes.len(), 2);
    for (_, ids) in &routes {
        assert_eq!(
            *ids,
            pairs(&[("ic-node", "node2"), ("k8s.ovn.org/network", "default")])
        );
    }
    assert!(routes.iter().any(|(p, _)| p == "100.64.0.2/32"));
}

#[test]
fn dual_stack_remote_node_routes_per_family() {
    let config = dual_stack_config();
    let net = udn(
        "isolatednet",
        "layer3",
        "primary",
        "192.168.0.0/16/24,fd12::/48/64",
        2,
        &config,
    );
    let mut local = node1();
    local.transit_ips = vec![net_("100.88.0.3/16"), net_("fd97::3/64")];
    local.subnets.insert(
        "isolatednet".into(),
        vec![net_("192.168.1.0/24"), net_("fd12:0:0:1::/64")],
    );
    local.gateway = Some(gateway(
        &["192.168.126.202/24", "fc00::2/64"],
        &["192.168.126.1", "fc00::1"],
    ));
    let mut node2 = remote("node2", 2, CHASSIS2);
    node2.transit_ips = vec![net_("100.88.0.2/16"), net_("fd97::2/64")];
    node2.subnets.insert(
        "isolatednet".into(),
        vec![net_("192.168.2.0/24"), net_("fd12:0:0:2::/64")],
    );
    let d = render(&net, &config, &[local, node2], &[]);
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    let mut routes: Vec<(String, String)> = unit(&d, REMOTE_NODE_UNIT, "node2")
        .rows
        .iter()
        .filter(|r| r.table == "Logical_Router_Static_Route")
        .map(|r| (s(r, "ip_prefix"), s(r, "nexthop")))
        .collect();
    routes.sort();
    assert_eq!(
        routes,
        [
            ("100.65.0.2/32".into(), "100.88.0.2".into()),
            ("192.168.2.0/24".into(), "100.88.0.2".into()),
            ("fd12:0:0:2::/64".into(), "fd97::2".into()),
            ("fd99::2/128".into(), "fd97::2".into()),
        ]
    );
    let port = row(&d, "Logical_Switch_Port", "isolatednet_tstor-node2");
    assert_eq!(
        set(port, "addresses"),
        ["0a:58:64:58:00:02 100.88.0.2/16 fd97::2/64".to_owned()].into()
    );
    // The local node, dual-stack: both families everywhere.
    let rtos = row(&d, "Logical_Router_Port", "rtos-isolatednet_node1");
    assert_eq!(
        set(rtos, "networks"),
        ["192.168.1.1/24", "fd12:0:0:1::1/64"]
            .map(String::from)
            .into()
    );
    assert_eq!(s(rtos, "mac"), "0a:58:c0:a8:01:01");
    let ls = row(&d, "Logical_Switch", "isolatednet_node1");
    assert_eq!(
        map(ls, "other_config"),
        pairs(&[
            ("subnet", "192.168.1.0/24"),
            ("ipv6_prefix", "fd12:0:0:1::")
        ])
    );
    let mgmt = row(&d, "Logical_Switch_Port", "k8s-isolatednet_node1");
    assert_eq!(
        set(mgmt, "addresses"),
        ["0a:58:c0:a8:01:02 192.168.1.2 fd12:0:0:1::2".to_owned()].into()
    );
    let acl6 = row(
        &d,
        "ACL",
        "isolatednet-network-controller:NetpolNode:isolatednet_node1:fd12:0:0:1::2",
    );
    assert_eq!(s(acl6, "match"), "ip6.src==fd12:0:0:1::2");
    let cr = row(&d, "Logical_Router", "isolatednet_ovn_cluster_router");
    let policies: Vec<String> = targets(&d, cr, "policies")
        .iter()
        .map(|p| s(p, "match"))
        .collect();
    assert_eq!(policies.len(), 4);
    assert!(policies.iter().any(|m| m.contains("ip6.dst == fc00::2")));
    let nats = targets(&d, cr, "nat");
    assert_eq!(nats.len(), 2);
    let gr = row(&d, "Logical_Router", "GR_isolatednet_node1");
    let mut defaults: Vec<String> = targets(&d, gr, "static_routes")
        .iter()
        .filter(|r| s(r, "ip_prefix").ends_with("/0"))
        .map(|r| s(r, "nexthop"))
        .collect();
    defaults.sort();
    assert_eq!(defaults, ["192.168.126.1", "fc00::1"]);
    assert_eq!(d.static_mac_bindings.len(), 4);
}

fn net_(s: &str) -> ipnetwork::IpNetwork {
    net(s)
}
