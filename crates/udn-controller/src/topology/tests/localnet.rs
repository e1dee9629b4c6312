//! Localnet networks: the switch, its localnet port (physical network name, VLAN) and the
//! local pods' ports.

use super::fixtures::*;

#[test]
fn localnet_switch_with_vlan_and_physical_network() {
    let config = zone_config();
    let net = udn_with(
        "ln-net",
        "localnet",
        "",
        "10.200.0.0/16",
        5,
        &config,
        |conf| {
            conf.vlan_id = 20;
            conf.physical_network_name = "tenant-blue".into();
        },
    );
    let pods = [
        pod("ns1", "a", "node1", "ns1/ln-net", &["10.200.0.5/16"]),
        pod("ns1", "b", "node2", "ns1/ln-net", &["10.200.0.6/16"]),
    ];
    let d = render(
        &net,
        &config,
        &[node1(), remote("node2", 2, CHASSIS2)],
        &pods,
    );
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert_references_resolve(&d);
    assert_eq!(keys(&d), ["Pod/ns1.ln.net_ns1_a", "Cluster/ln-net"]);
    let ls = row(&d, "Logical_Switch", "ln.net_ovn_localnet_switch");
    assert_eq!(
        map(ls, "external_ids"),
        pairs(&[
            ("k8s.ovn.org/network", "ln-net"),
            ("k8s.ovn.org/role", "secondary"),
            ("k8s.ovn.org/topology", "localnet"),
        ])
    );
    assert_eq!(
        map(ls, "other_config"),
        pairs(&[("subnet", "10.200.0.0/16")])
    );
    assert!(refs(ls, "load_balancer_group").is_empty());
    assert_eq!(
        refs(ls, "ports"),
        ["ln.net_ovn_localnet_port", "ns1.ln.net_ns1_a"]
            .map(String::from)
            .into()
    );
    let port = row(&d, "Logical_Switch_Port", "ln.net_ovn_localnet_port");
    assert_eq!(s(port, "type"), "localnet");
    assert_eq!(set(port, "addresses"), ["unknown".to_owned()].into());
    assert_eq!(
        map(port, "options"),
        pairs(&[("network_name", "tenant-blue")])
    );
    assert_eq!(s(port, "tag_request"), "20");
    assert!(map(port, "external_ids").is_empty());
    let pod_port = row(&d, "Logical_Switch_Port", "ns1.ln.net_ns1_a");
    assert_eq!(map(pod_port, "options")["requested-chassis"], CHASSIS);
    assert!(!map(pod_port, "options").contains_key("requested-tnl-key"));
    assert_eq!(
        map(pod_port, "external_ids")["k8s.ovn.org/topology"],
        "localnet"
    );
    assert!(d.load_balancer_groups.is_empty());
}

#[test]
fn localnet_without_physical_network_uses_the_network_name() {
    let config = zone_config();
    let net = udn("ln-net", "localnet", "", "", 5, &config);
    let d = render(&net, &config, &[node1()], &[]);
    let port = row(&d, "Logical_Switch_Port", "ln.net_ovn_localnet_port");
    assert_eq!(map(port, "options"), pairs(&[("network_name", "ln-net")]));
    assert_eq!(get(port, "tag_request"), None);
    let ls = row(&d, "Logical_Switch", "ln.net_ovn_localnet_switch");
    assert!(map(ls, "other_config").is_empty());
}
