use std::collections::BTreeMap;

use super::super::per_node::LbNode;
use super::super::view::{EndpointView, ServicePortView};
use super::*;

const HAIRPIN: &str = "169.254.0.5 fd69::5";

fn service(namespace: &str, ips: &[&str], ports: &[(&str, &str, u16)]) -> ServiceView {
    ServiceView {
        namespace: namespace.to_owned(),
        name: "web".to_owned(),
        cluster_ips: ips.iter().map(|ip| ip.parse().unwrap()).collect(),
        ports: ports
            .iter()
            .map(|(name, protocol, port)| ServicePortView {
                name: (*name).to_owned(),
                protocol: (*protocol).to_owned(),
                port: *port,
                node_port: None,
            })
            .collect(),
        affinity_timeout: None,
        external_ips: Vec::new(),
        etp_local: false,
        itp_local: false,
    }
}

fn slice(
    namespace: &str,
    network: Option<&str>,
    ports: &[(&str, u16, &str)],
    endpoints: &[(&str, bool, bool, bool)],
) -> SliceView {
    SliceView {
        namespace: namespace.to_owned(),
        service: "web".to_owned(),
        network: network.map(str::to_owned),
        ports: ports
            .iter()
            .map(|(n, p, proto)| ((*n).to_owned(), *p, (*proto).to_owned()))
            .collect(),
        endpoints: endpoints
            .iter()
            .map(|(ip, ready, serving, terminating)| EndpointView {
                addresses: vec![ip.parse().unwrap()],
                ready: *ready,
                serving: *serving,
                terminating: *terminating,
                node: None,
            })
            .collect(),
    }
}

fn on_node(mut slice: SliceView, nodes: &[&str]) -> SliceView {
    for (e, node) in slice.endpoints.iter_mut().zip(nodes) {
        e.node = Some((*node).to_owned());
    }
    slice
}

struct Fixture {
    subnets: Vec<IpNetwork>,
    cidrs: Vec<IpNetwork>,
    nodes: Vec<LbNode>,
}

impl Fixture {
    fn new(subnets: &[&str]) -> Self {
        Self {
            subnets: subnets.iter().map(|s| s.parse().unwrap()).collect(),
            cidrs: vec![
                "10.96.0.0/16".parse().unwrap(),
                "fd00:10:96::/112".parse().unwrap(),
            ],
            nodes: vec![LbNode {
                name: "node1".to_owned(),
                host_addresses: vec!["172.18.0.2".parse().unwrap()],
                node_port_enabled: true,
                gateway_router: true,
            }],
        }
    }

    fn ctx<'a>(&'a self, network: Option<&'a str>, prefix: &'a str) -> NetLbContext<'a> {
        NetLbContext {
            network,
            prefix,
            hairpin_snat_ip: HAIRPIN,
            subnets: &self.subnets,
            service_cidrs: &self.cidrs,
            nodes: &self.nodes,
            host_masquerade: ("169.254.0.2".parse().unwrap(), "fd69::2".parse().unwrap()),
            etp_local_masquerade: ("169.254.0.3".parse().unwrap(), "fd69::3".parse().unwrap()),
        }
    }
}

fn names(lbs: &[LbSpec]) -> Vec<&str> {
    lbs.iter().map(|l| l.name.as_str()).collect()
}

fn by_name<'a>(lbs: &'a [LbSpec], name: &str) -> &'a LbSpec {
    lbs.iter().find(|l| l.name == name).unwrap()
}

fn node_attach(switch: bool, router: bool) -> LbAttach {
    LbAttach::Nodes {
        switches: if switch { vec!["node1".into()] } else { vec![] },
        routers: if router { vec!["node1".into()] } else { vec![] },
    }
}

#[test]
fn a_udn_service_balances_over_its_mirrored_endpoints_only() {
    let services = [service(
        "blue",
        &["10.96.0.10", "fd00:10:96::a"],
        &[("http", "TCP", 88), ("dns", "UDP", 53)],
    )];
    let slices = [
        // Kubernetes' slice: the pods' default-network IPs.
        slice(
            "blue",
            None,
            &[("http", 80, "TCP"), ("dns", 5353, "UDP")],
            &[("10.244.0.5", true, true, false)],
        ),
        slice(
            "blue",
            Some("blue_net"),
            &[("http", 80, "TCP"), ("dns", 5353, "UDP")],
            &[
                ("103.103.1.5", true, true, false),
                ("103.103.0.5", true, true, false),
            ],
        ),
    ];
    let f = Fixture::new(&["103.103.0.0/16"]);
    let lbs = network_lbs(&f.ctx(Some("blue_net"), "blue_net_"), &services, &slices);
    assert_eq!(
        names(&lbs),
        [
            "blue_net_Service_blue/web_TCP_cluster",
            "blue_net_Service_blue/web_UDP_cluster"
        ]
    );
    let tcp = &lbs[0];
    assert_eq!(tcp.protocol, "tcp");
    assert_eq!(tcp.attach, LbAttach::ClusterGroup);
    assert_eq!(
        tcp.vips,
        BTreeMap::from([
            (
                "10.96.0.10:88".to_owned(),
                "103.103.0.5:80,103.103.1.5:80".to_owned()
            ),
            ("[fd00:10:96::a]:88".to_owned(), String::new()),
        ])
    );
    assert_eq!(
        lbs[1].vips["10.96.0.10:53"],
        "103.103.0.5:5353,103.103.1.5:5353"
    );
    assert_eq!(tcp.external_ids["k8s.ovn.org/network"], "blue_net");
    assert_eq!(tcp.external_ids["k8s.ovn.org/role"], "primary");
    assert_eq!(tcp.options["hairpin_snat_ip"], HAIRPIN);
    assert_eq!(tcp.options["reject"], "true");
    // The default network's slices of the same Service are not the UDN's.
    let default = network_lbs(&f.ctx(None, ""), &services, &slices);
    assert_eq!(default[0].vips["10.96.0.10:88"], "10.244.0.5:80");
}

#[test]
fn the_default_network_uses_kubernetes_slices_and_the_terminating_fallback() {
    let mut svc = service("default", &["10.96.0.20"], &[("", "TCP", 80)]);
    svc.affinity_timeout = Some(10_800);
    let slices = [
        slice(
            "default",
            None,
            &[("", 8080, "TCP")],
            &[
                ("10.244.0.7", false, true, true),
                ("10.244.0.8", false, false, true),
            ],
        ),
        slice(
            "default",
            Some("blue_net"),
            &[("", 8080, "TCP")],
            &[("103.103.0.9", true, true, false)],
        ),
    ];
    let f = Fixture::new(&["10.244.0.0/16"]);
    let lbs = network_lbs(&f.ctx(None, ""), &[svc], &slices);
    assert_eq!(names(&lbs), ["Service_default/web_TCP_cluster"]);
    // No ready endpoint: the serving terminating one; never the mirror's UDN address.
    assert_eq!(lbs[0].vips["10.96.0.20:80"], "10.244.0.7:8080");
    assert_eq!(lbs[0].options["affinity_timeout"], "10800");
    assert!(lbs[0].selection_fields.is_empty());
    assert!(!lbs[0].external_ids.contains_key("k8s.ovn.org/network"));
}

#[test]
fn the_longest_affinity_selects_by_addresses() {
    let mut svc = service("default", &["10.96.0.20"], &[("", "TCP", 80)]);
    svc.affinity_timeout = Some(86_400);
    let f = Fixture::new(&["10.244.0.0/16"]);
    let lbs = network_lbs(&f.ctx(None, ""), &[svc], &[]);
    assert!(!lbs[0].options.contains_key("affinity_timeout"));
    assert_eq!(lbs[0].selection_fields, ["ip_src", "ip_dst"]);
}

#[test]
fn headless_services_get_no_load_balancer() {
    let headless = service("default", &[], &[("", "TCP", 80)]);
    let f = Fixture::new(&["10.244.0.0/16"]);
    assert!(network_lbs(&f.ctx(None, ""), &[headless], &[]).is_empty());
}

#[test]
fn a_node_port_gets_one_router_and_switch_load_balancer_with_the_node_address() {
    let mut svc = service("blue", &["10.96.0.10"], &[("http", "TCP", 88)]);
    svc.ports[0].node_port = Some(30088);
    svc.external_ips = vec!["192.0.2.10".parse().unwrap()];
    let slices = [slice(
        "blue",
        Some("blue_net"),
        &[("http", 80, "TCP")],
        &[("103.103.0.5", true, true, false)],
    )];
    let f = Fixture::new(&["103.103.0.0/16"]);
    let lbs = network_lbs(&f.ctx(Some("blue_net"), "blue_net_"), &[svc], &slices);
    assert_eq!(
        names(&lbs),
        [
            "blue_net_Service_blue/web_TCP_cluster",
            "blue_net_Service_blue/web_TCP_node_router+switch_node1",
        ]
    );
    // The external IP joins the cluster IP (externalTrafficPolicy Cluster).
    assert_eq!(
        lbs[0].vips,
        BTreeMap::from([
            ("10.96.0.10:88".to_owned(), "103.103.0.5:80".to_owned()),
            ("192.0.2.10:88".to_owned(), "103.103.0.5:80".to_owned()),
        ])
    );
    let node = &lbs[1];
    assert_eq!(
        node.vips,
        BTreeMap::from([("172.18.0.2:30088".to_owned(), "103.103.0.5:80".to_owned())])
    );
    assert_eq!(node.attach, node_attach(true, true));
    assert_eq!(node.options["skip_snat"], "false");
    assert_eq!(node.external_ids["k8s.ovn.org/network"], "blue_net");
}

#[test]
fn node_ports_are_skipped_on_a_node_with_node_ports_disabled() {
    let mut svc = service("default", &["10.96.0.10"], &[("", "TCP", 80)]);
    svc.ports[0].node_port = Some(30080);
    let mut f = Fixture::new(&["10.244.0.0/16"]);
    f.nodes[0].node_port_enabled = false;
    let lbs = network_lbs(&f.ctx(None, ""), &[svc], &[]);
    assert_eq!(names(&lbs), ["Service_default/web_TCP_cluster"]);
}

#[test]
fn etp_local_keeps_local_endpoints_on_the_router_without_snat() {
    let mut svc = service("default", &["10.96.0.10"], &[("", "TCP", 80)]);
    svc.ports[0].node_port = Some(30080);
    svc.etp_local = true;
    let slices = [on_node(
        slice(
            "default",
            None,
            &[("", 8080, "TCP")],
            &[
                ("10.244.1.5", true, true, false),
                ("10.244.2.5", true, true, false),
            ],
        ),
        &["node1", "node2"],
    )];
    let f = Fixture::new(&["10.244.0.0/16"]);
    let lbs = network_lbs(&f.ctx(None, ""), &[svc], &slices);
    assert_eq!(
        names(&lbs),
        [
            "Service_default/web_TCP_cluster",
            "Service_default/web_TCP_node_local_router_node1",
            "Service_default/web_TCP_node_switch_node1",
        ]
    );
    let router = by_name(&lbs, "Service_default/web_TCP_node_local_router_node1");
    assert_eq!(router.options["skip_snat"], "true");
    assert_eq!(router.vips["172.18.0.2:30080"], "10.244.1.5:8080");
    assert_eq!(router.attach, node_attach(false, true));
    let switch = by_name(&lbs, "Service_default/web_TCP_node_switch_node1");
    // The switch balances the NodePort over every endpoint, and the ETP=Local masquerade
    // VIP over the local ones.
    assert_eq!(
        switch.vips,
        BTreeMap::from([
            (
                "172.18.0.2:30080".to_owned(),
                "10.244.1.5:8080,10.244.2.5:8080".to_owned()
            ),
            ("169.254.0.3:30080".to_owned(), "10.244.1.5:8080".to_owned()),
        ])
    );
    assert_eq!(switch.attach, node_attach(true, false));
}

#[test]
fn etp_local_without_local_endpoints_rejects_on_the_router() {
    let mut svc = service("default", &["10.96.0.10"], &[("", "TCP", 80)]);
    svc.external_ips = vec!["192.0.2.10".parse().unwrap()];
    svc.etp_local = true;
    let slices = [on_node(
        slice(
            "default",
            None,
            &[("", 8080, "TCP")],
            &[("10.244.2.5", true, true, false)],
        ),
        &["node2"],
    )];
    let f = Fixture::new(&["10.244.0.0/16"]);
    let lbs = network_lbs(&f.ctx(None, ""), &[svc], &slices);
    // The cluster IP stays cluster-wide without the external IP.
    let cluster = by_name(&lbs, "Service_default/web_TCP_cluster");
    assert!(!cluster.vips.contains_key("192.0.2.10:80"));
    let router = by_name(&lbs, "Service_default/web_TCP_node_router_node1");
    assert_eq!(router.vips["192.0.2.10:80"], "");
    assert_eq!(router.options["skip_snat"], "false");
    let switch = by_name(&lbs, "Service_default/web_TCP_node_switch_node1");
    assert_eq!(switch.vips["192.0.2.10:80"], "10.244.2.5:8080");
}

#[test]
fn itp_local_keeps_local_endpoints_on_the_switch_only() {
    let mut svc = service("default", &["10.96.0.10"], &[("", "TCP", 80)]);
    svc.itp_local = true;
    let slices = [on_node(
        slice(
            "default",
            None,
            &[("", 8080, "TCP")],
            &[
                ("10.244.1.5", true, true, false),
                ("10.244.2.5", true, true, false),
            ],
        ),
        &["node1", "node2"],
    )];
    let f = Fixture::new(&["10.244.0.0/16"]);
    let lbs = network_lbs(&f.ctx(None, ""), &[svc], &slices);
    assert_eq!(
        names(&lbs),
        [
            "Service_default/web_TCP_node_router_node1",
            "Service_default/web_TCP_node_switch_node1",
        ]
    );
    assert_eq!(
        by_name(&lbs, "Service_default/web_TCP_node_switch_node1").vips["10.96.0.10:80"],
        "10.244.1.5:8080"
    );
    assert_eq!(
        by_name(&lbs, "Service_default/web_TCP_node_router_node1").vips["10.96.0.10:80"],
        "10.244.1.5:8080,10.244.2.5:8080"
    );
}

#[test]
fn a_host_network_endpoint_on_the_node_is_reached_through_the_host_masquerade_ip() {
    let svc = service("default", &["10.96.0.1"], &[("https", "TCP", 443)]);
    let slices = [slice(
        "default",
        None,
        &[("https", 6443, "TCP")],
        &[("172.18.0.2", true, true, false)],
    )];
    let f = Fixture::new(&["10.244.0.0/16"]);
    let lbs = network_lbs(&f.ctx(None, ""), &[svc], &slices);
    assert_eq!(
        names(&lbs),
        [
            "Service_default/web_TCP_node_router_node1",
            "Service_default/web_TCP_node_switch_node1",
        ]
    );
    assert_eq!(
        by_name(&lbs, "Service_default/web_TCP_node_router_node1").vips["10.96.0.1:443"],
        "169.254.0.2:6443"
    );
    assert_eq!(
        by_name(&lbs, "Service_default/web_TCP_node_switch_node1").vips["10.96.0.1:443"],
        "172.18.0.2:6443"
    );
}

#[test]
fn identical_per_node_load_balancers_of_two_nodes_merge() {
    let mut svc = service("default", &["10.96.0.10"], &[("", "TCP", 80)]);
    svc.itp_local = true;
    let mut f = Fixture::new(&["10.244.0.0/16"]);
    let mut second = f.nodes[0].clone();
    second.name = "node2".to_owned();
    f.nodes.push(second);
    // No endpoints: every node's rules are the same.
    let lbs = network_lbs(&f.ctx(None, ""), &[svc], &[]);
    assert_eq!(
        names(&lbs),
        ["Service_default/web_TCP_node_router+switch_node1_merged"]
    );
    assert_eq!(
        lbs[0].attach,
        LbAttach::Nodes {
            switches: vec!["node1".into(), "node2".into()],
            routers: vec!["node1".into(), "node2".into()],
        }
    );
}
