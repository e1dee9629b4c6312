//! The per-Service flows against upstream's texts (`gateway_localnet_linux_test.go`, HEAD
//! 8871cd9, shared gateway mode, whose bridge is eth0 + `patch-breth0_ov` with MAC
//! `0a:0b:0c:0d:0e:0f` and whose `ovs-ofctl show` fails, so the ARP bypass goes to LOCAL),
//! and what the network, the families, the bridge's ports and a VLAN change.

#![allow(clippy::unwrap_used)]

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_api::cluster::ClusterConfig;

use super::*;
use crate::services::{Protocol, ServiceNetwork, ServicePortView, ServiceView};

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn upstream_bridge(services: Vec<ServiceView>) -> BridgeInputs {
    let node: IpNetwork = "192.168.18.15/24".parse().unwrap();
    BridgeInputs {
        bridge: "breth0".into(),
        mac: "0a:0b:0c:0d:0e:0f".parse().unwrap(),
        ofport_phys: Some(OfPort::Name("eth0".into())),
        ofport_host: OfPort::Local,
        default_patch: OfPort::Name("patch-breth0_ov".into()),
        bridge_ips: vec![node],
        host_addresses: vec![node],
        udns: vec![],
        bridge_ports: vec![],
        services,
        cluster: GatewayCluster::from_cluster(&ClusterConfig::ipv4_only()),
    }
}

/// upstream's `service1` in `namespace1`: TCP 8080, NodePort 31111.
fn service1(network: ServiceNetwork) -> ServiceView {
    ServiceView {
        namespace: "namespace1".into(),
        name: "service1".into(),
        network,
        cluster_ips: vec![ip("10.129.0.2")],
        ports: vec![ServicePortView {
            protocol: Protocol::Tcp,
            port: 8080,
            node_port: Some(31111),
        }],
        external_ips: vec![],
        ingress_ips: vec![],
        external_traffic_local: false,
    }
}

fn texts(inputs: &BridgeInputs) -> Vec<String> {
    desired_flows(inputs)
        .unwrap()
        .iter()
        .map(|flow| flow.as_str().to_owned())
        .collect()
}

/// The flows whose cookie is not the bridge's own (the per-Service ones), in order.
fn service_texts(inputs: &BridgeInputs) -> Vec<String> {
    texts(inputs)
        .into_iter()
        .filter(|text| text.starts_with("cookie=") && !text.starts_with("cookie=0xdeff105,"))
        .collect()
}

#[test]
fn cookies_are_upstreams_svc_to_cookie() {
    assert_eq!(
        service_cookie("namespace1", "service1", "tcp", 31111),
        "0x453ae29bcbbc08bd"
    );
    assert_eq!(
        service_cookie("namespace1", "service1", "5.5.5.5", 8080),
        "0x10c6b89e483ea111"
    );
    assert_eq!(
        service_cookie("namespace1", "service1", "1.1.1.1", 8080),
        "0x71765945a31dc2f1"
    );
}

/// "should add iptables rules and flows for a LoadBalancer service with ExternalIPs and
/// ingress IPs" (ETP=Local without a local host-network endpoint: upstream's case2).
#[test]
fn load_balancer_flows_are_upstreams() {
    let mut lb = service1(ServiceNetwork::Default);
    lb.external_ips = vec![ip("1.1.1.1")];
    lb.ingress_ips = vec![ip("5.5.5.5")];
    lb.external_traffic_local = true;
    let flows = service_texts(&upstream_bridge(vec![lb]));
    assert_eq!(
        flows,
        [
            "cookie=0x453ae29bcbbc08bd, priority=110, in_port=eth0, tcp, tp_dst=31111, actions=output:patch-breth0_ov",
            "cookie=0x453ae29bcbbc08bd, priority=110, in_port=patch-breth0_ov, dl_src=0a:0b:0c:0d:0e:0f, tcp, tp_src=31111, actions=output:eth0",
            "cookie=0x10c6b89e483ea111, priority=110, in_port=eth0, arp, arp_op=1, arp_tpa=5.5.5.5, actions=output:LOCAL",
            "cookie=0x10c6b89e483ea111, priority=110, in_port=eth0, icmp, nw_dst=5.5.5.5, icmp_type=3, icmp_code=4, actions=output:patch-breth0_ov",
            "cookie=0x10c6b89e483ea111, priority=110, in_port=eth0, tcp, nw_dst=5.5.5.5, tp_dst=8080, actions=output:patch-breth0_ov",
            "cookie=0x10c6b89e483ea111, priority=110, in_port=patch-breth0_ov, dl_src=0a:0b:0c:0d:0e:0f, tcp, nw_src=5.5.5.5, tp_src=8080, actions=output:eth0",
            "cookie=0x71765945a31dc2f1, priority=110, in_port=eth0, arp, arp_op=1, arp_tpa=1.1.1.1, actions=output:LOCAL",
            "cookie=0x71765945a31dc2f1, priority=110, in_port=eth0, icmp, nw_dst=1.1.1.1, icmp_type=3, icmp_code=4, actions=output:patch-breth0_ov",
            "cookie=0x71765945a31dc2f1, priority=110, in_port=eth0, tcp, nw_dst=1.1.1.1, tp_dst=8080, actions=output:patch-breth0_ov",
            "cookie=0x71765945a31dc2f1, priority=110, in_port=patch-breth0_ov, dl_src=0a:0b:0c:0d:0e:0f, tcp, nw_src=1.1.1.1, tp_src=8080, actions=output:eth0",
        ]
    );
}

#[test]
fn a_udns_service_goes_to_its_patch_port_once_it_exists() {
    let blue = ServiceNetwork::Udn("blue_net".into());
    let mut svc = service1(blue);
    svc.external_ips = vec![ip("1.1.1.1")];
    let mut inputs = upstream_bridge(vec![svc]);
    inputs.udns = vec![UdnPatch {
        network: "blue_net".into(),
        network_id: 1,
        ofport: None,
    }];
    // No patch port yet: no flows (upstream's getActiveNetwork is nil).
    assert_eq!(service_texts(&inputs), Vec::<String>::new());

    inputs.udns[0].ofport = Some(OfPort::Name("patch-breth0_blue".into()));
    inputs.bridge_ports = vec![
        OfPort::Name("eth0".into()),
        OfPort::Name("patch-breth0_ov".into()),
        OfPort::Name("patch-breth0_blue".into()),
        OfPort::Local,
    ];
    let flows = service_texts(&inputs);
    assert_eq!(flows.len(), 6, "{flows:#?}");
    assert_eq!(
        flows[0],
        "cookie=0x453ae29bcbbc08bd, priority=110, in_port=eth0, tcp, tp_dst=31111, actions=output:patch-breth0_blue"
    );
    assert_eq!(
        flows[1],
        "cookie=0x453ae29bcbbc08bd, priority=110, in_port=patch-breth0_blue, dl_src=0a:0b:0c:0d:0e:0f, tcp, tp_src=31111, actions=output:eth0"
    );
    // The bypass goes everywhere but the uplink and the Service's own patch port.
    assert_eq!(
        flows[2],
        "cookie=0x71765945a31dc2f1, priority=110, in_port=eth0, arp, arp_op=1, arp_tpa=1.1.1.1, actions=output:patch-breth0_ov,LOCAL"
    );
    assert!(
        flows[3..]
            .iter()
            .all(|flow| flow.contains("patch-breth0_blue"))
    );
    // An unknown network (no NAD on this node) has no flows.
    inputs.services[0].network = ServiceNetwork::Udn("red_net".into());
    assert_eq!(service_texts(&inputs), Vec::<String>::new());
}

#[test]
fn ipv6_and_dual_stack_texts() {
    let mut svc = service1(ServiceNetwork::Default);
    svc.ports[0].protocol = Protocol::Udp;
    svc.external_ips = vec![ip("fd00::10")];
    let mut inputs = upstream_bridge(vec![svc]);
    inputs.cluster = GatewayCluster::from_cluster(&ClusterConfig::default());
    inputs.bridge_ips.push("fd00::3/64".parse().unwrap());
    let flows = service_texts(&inputs);
    let c4 = service_cookie("namespace1", "service1", "udp", 31111);
    let c6 = service_cookie("namespace1", "service1", "udp6", 31111);
    let cx = service_cookie("namespace1", "service1", "fd00::10", 8080);
    assert_eq!(
        flows,
        [
            format!(
                "cookie={c4}, priority=110, in_port=eth0, udp, tp_dst=31111, actions=output:patch-breth0_ov"
            ),
            format!(
                "cookie={c4}, priority=110, in_port=patch-breth0_ov, dl_src=0a:0b:0c:0d:0e:0f, udp, tp_src=31111, actions=output:eth0"
            ),
            format!(
                "cookie={c6}, priority=110, in_port=eth0, udp6, tp_dst=31111, actions=output:patch-breth0_ov"
            ),
            format!(
                "cookie={c6}, priority=110, in_port=patch-breth0_ov, dl_src=0a:0b:0c:0d:0e:0f, udp6, tp_src=31111, actions=output:eth0"
            ),
            format!(
                "cookie={cx}, priority=110, in_port=eth0, icmp6, icmp_type=135, icmp_code=0, nd_target=fd00::10, actions=output:LOCAL"
            ),
            format!(
                "cookie={cx}, priority=110, in_port=eth0, icmp6, ipv6_dst=fd00::10, icmp_type=2, icmp_code=0, actions=output:patch-breth0_ov"
            ),
            format!(
                "cookie={cx}, priority=110, in_port=eth0, udp6, ipv6_dst=fd00::10, tp_dst=8080, actions=output:patch-breth0_ov"
            ),
            format!(
                "cookie={cx}, priority=110, in_port=patch-breth0_ov, dl_src=0a:0b:0c:0d:0e:0f, udp6, ipv6_src=fd00::10, tp_src=8080, actions=output:eth0"
            ),
        ]
    );
}

/// The same external IP on two ports differs only in the cookie for the ARP and ICMP flows:
/// kept once, the first port's.
#[test]
fn flows_that_differ_only_in_cookie_are_kept_once() {
    let mut svc = service1(ServiceNetwork::Default);
    svc.ports.push(ServicePortView {
        protocol: Protocol::Tcp,
        port: 8443,
        node_port: None,
    });
    svc.external_ips = vec![ip("1.1.1.1")];
    let flows = service_texts(&upstream_bridge(vec![svc]));
    let arp: Vec<&String> = flows.iter().filter(|f| f.contains("arp_tpa")).collect();
    assert_eq!(arp.len(), 1);
    assert!(arp[0].starts_with(&format!(
        "cookie={}",
        service_cookie("namespace1", "service1", "1.1.1.1", 8080)
    )));
    assert_eq!(
        flows.iter().filter(|f| f.contains("icmp_type=3")).count(),
        1
    );
    assert_eq!(
        flows.iter().filter(|f| f.contains("tp_dst=8443")).count(),
        1
    );
    assert_eq!(flows.len(), 2 + 4 + 2);
}

#[test]
fn vlan_strips_the_tag_on_the_bypass() {
    let mut svc = service1(ServiceNetwork::Default);
    svc.ports[0].node_port = None;
    svc.ingress_ips = vec![ip("5.5.5.5")];
    let mut inputs = upstream_bridge(vec![svc]);
    inputs.cluster.vlan_id = Some(100);
    inputs.bridge_ports = vec![
        OfPort::Name("eth0".into()),
        OfPort::Name("patch-breth0_ov".into()),
        OfPort::Local,
    ];
    let flows = service_texts(&inputs);
    assert_eq!(
        flows[0],
        "cookie=0x10c6b89e483ea111, priority=110, in_port=eth0, dl_vlan=100,, arp, arp_op=1, arp_tpa=5.5.5.5, actions=strip_vlan,output:LOCAL"
    );
}

#[test]
fn allowed_default_services_get_table_2_flows() {
    let mut dns = service1(ServiceNetwork::Default);
    dns.namespace = "kube-system".into();
    dns.name = "kube-dns".into();
    dns.ports[0].node_port = None;
    dns.cluster_ips = vec![ip("10.96.0.10"), ip("fd00:10:96::a")];
    let mut other = dns.clone();
    other.name = "metrics".into();
    let mut inputs = upstream_bridge(vec![dns.clone(), other]);
    let flows = texts(&inputs);
    let table2: Vec<&String> = flows
        .iter()
        .filter(|f| f.contains("priority=300"))
        .collect();
    assert_eq!(
        table2,
        [
            "cookie=0xdeff105, priority=300, table=2, ip, ip_dst=10.96.0.10, actions=set_field:0a:0b:0c:0d:0e:0f->eth_dst,output:patch-breth0_ov",
            "cookie=0xdeff105, priority=300, table=2, ipv6, ipv6_dst=fd00:10:96::a, actions=set_field:0a:0b:0c:0d:0e:0f->eth_dst,output:patch-breth0_ov",
        ]
    );
    inputs.cluster.vlan_id = Some(100);
    assert!(has(
        &texts(&inputs),
        "cookie=0xdeff105, priority=300, table=2, ip, ip_dst=10.96.0.10, actions=set_field:0a:0b:0c:0d:0e:0f->eth_dst,mod_vlan_vid:100,output:patch-breth0_ov"
    ));
    // Not listed, or without network segmentation: none.
    inputs.cluster.udn_allowed_default_services = vec!["default/kubernetes".into()];
    assert!(!texts(&inputs).iter().any(|f| f.contains("priority=300")));
    inputs.cluster.udn_allowed_default_services = vec!["kube-system/kube-dns".into()];
    inputs.cluster.network_segmentation = false;
    assert!(!texts(&inputs).iter().any(|f| f.contains("priority=300")));
}

#[test]
fn no_uplink_means_no_ingress_flows() {
    let mut svc = service1(ServiceNetwork::Default);
    svc.external_ips = vec![ip("1.1.1.1")];
    let mut inputs = upstream_bridge(vec![svc]);
    inputs.ofport_phys = None;
    assert_eq!(service_texts(&inputs), Vec::<String>::new());
}

fn has(flows: &[String], expected: &str) -> bool {
    flows.iter().any(|flow| flow == expected)
}
