//! The helpers the dataplane tests use: management port, a second pod interface, the
//! gateway bridge's patch port and flows, captures and listeners at the external host, daemon
//! status, RSS, `nb_cfg`, pod removal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::IpAddr;
use std::time::Duration;

use udn_ovn_lab::{
    DaemonKind, InterfaceSpec, Lab, LabConfig, LabError, MgmtPortSpec, Ping, PodSpec,
};

const WAIT: Duration = Duration::from_secs(20);

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

#[test]
fn mgmt_port_second_interface_and_pod_removal() {
    let lab = Lab::start(LabConfig::with_nodes(2).single_zone()).unwrap();
    let node1 = lab.node("node1").unwrap();
    // The node switch with the management port and a pod; a second network "blue".
    node1
        .nbctl(&[
            "ls-add",
            "node1",
            "--",
            "lsp-add",
            "node1",
            "k8s-node1",
            "--",
            "lsp-set-addresses",
            "k8s-node1",
            "0a:58:0a:f4:01:02 10.244.1.2",
            "--",
            "lsp-add",
            "node1",
            "ns_a",
            "--",
            "lsp-set-addresses",
            "ns_a",
            "0a:58:0a:f4:01:05 10.244.1.5",
            "--",
            "ls-add",
            "blue",
            "--",
            "lsp-add",
            "blue",
            "blue_ns_a",
            "--",
            "lsp-set-addresses",
            "blue_ns_a",
            "0a:58:0a:80:00:05 10.128.0.5",
            "--",
            "lsp-add",
            "blue",
            "blue_ns_b",
            "--",
            "lsp-set-addresses",
            "blue_ns_b",
            "0a:58:0a:80:00:06 10.128.0.6",
        ])
        .unwrap();
    node1
        .add_mgmt_port(
            &MgmtPortSpec::new("node1", "0a:58:0a:f4:01:02").ip("10.244.1.2/24".parse().unwrap()),
        )
        .unwrap();
    node1.wait_installed("ovn-k8s-mp0", WAIT).unwrap();
    let mp0 = node1
        .exec(&["ip", "-o", "link", "show", "ovn-k8s-mp0"])
        .unwrap();
    assert!(mp0.stdout.contains("0a:58:0a:f4:01:02"), "{}", mp0.stdout);

    let spec = PodSpec::new("a", "node1").disable_ipv6().interface(
        InterfaceSpec::new("eth0", "ns_a", "0a:58:0a:f4:01:05")
            .ip("10.244.1.5/24".parse().unwrap())
            .external_id("iface-id-ver", "uid-a")
            .external_id("k8s.ovn.org/network", "default")
            .external_id("ip_addresses", "10.244.1.5/24"),
    );
    let a = lab.add_pod(spec).unwrap();
    let udn = InterfaceSpec::new("ovn-udn1", "blue_ns_a", "0a:58:0a:80:00:05")
        .ip("10.128.0.5/24".parse().unwrap())
        .external_id("k8s.ovn.org/nad", "ns/blue");
    let a = lab.add_pod_interface(&a.name, udn).unwrap();
    assert_eq!(a.interfaces.len(), 2);
    let b = lab
        .add_pod(
            PodSpec::new("b", "node2").interface(
                InterfaceSpec::new("ovn-udn1", "blue_ns_b", "0a:58:0a:80:00:06")
                    .ip("10.128.0.6/24".parse().unwrap()),
            ),
        )
        .unwrap();
    lab.wait_installed("a", WAIT).unwrap();
    lab.wait_installed("b", WAIT).unwrap();
    node1.wait_hv().unwrap();

    let eth0 = a.interface("eth0").unwrap();
    let ids = node1
        .vsctl(&["get", "Interface", &eth0.host_ifname, "external_ids"])
        .unwrap();
    for expected in [
        "iface-id=ns_a",
        "iface-id-ver=uid-a",
        "\"k8s.ovn.org/network\"=default",
    ] {
        assert!(ids.contains(expected), "{expected} not in {ids}");
    }
    // Host to pod through the management port; pod to pod on the second network.
    assert!(
        lab.ping(node1.netns(), ip("10.244.1.5"), Ping::default())
            .unwrap()
    );
    assert!(
        lab.ping(&a.netns, ip("10.128.0.6"), Ping::default())
            .unwrap()
    );
    assert!(
        lab.tcp_check(&b.netns, &a.netns, ip("10.128.0.5"), 7001, WAIT)
            .unwrap()
    );
    // Networks stay apart: "blue" does not reach the node switch.
    assert!(
        !lab.ping(
            &b.netns,
            ip("10.244.1.5"),
            Ping::new(1, Duration::from_secs(1))
        )
        .unwrap()
    );

    lab.remove_pod("b").unwrap();
    assert!(!lab.netns_names().contains(&b.netns));
    assert!(matches!(lab.pod("b"), Err(LabError::NotFound { .. })));
    node1
        .nbctl(&["wait-until", "Logical_Switch_Port", "blue_ns_b", "up=false"])
        .unwrap();
    let ports = lab
        .node("node2")
        .unwrap()
        .vsctl(&["list-ports", "br-int"])
        .unwrap();
    assert!(!ports.contains(&b.interfaces[0].host_ifname), "{ports}");
}

#[test]
fn gateway_bridge_external_host_and_daemons() {
    let lab = Lab::start(LabConfig::with_nodes(2).single_zone()).unwrap();
    let [node1, node2] = lab.nodes() else {
        panic!("two nodes")
    };
    let external = lab.external();

    // Source address of packets arriving at the external host.
    let capture = lab.capture_external("icmp").unwrap();
    assert!(
        lab.ping(node1.netns(), external.ip().into(), Ping::default())
            .unwrap()
    );
    assert_eq!(capture.wait_source(WAIT), Some(node1.node_ip().into()));
    let listener = lab.listen_tcp(external.netns(), 8080, WAIT).unwrap();
    assert!(
        lab.tcp_send(node2.netns(), external.ip().into(), 8080, b"hello", WAIT)
            .unwrap()
    );
    let received = listener.received(WAIT).unwrap();
    assert_eq!(received.data, b"hello");
    assert_eq!(received.peer, Some(node2.node_ip().into()));
    // Nothing listens there any more.
    assert!(
        !lab.tcp_send(node2.netns(), external.ip().into(), 8080, b"x", WAIT)
            .unwrap()
    );

    // A localnet port on a switch with a local pod: ovn-controller patches breth0 to br-int.
    node1
        .nbctl(&[
            "ls-add",
            "ext_node1",
            "--",
            "lsp-add",
            "ext_node1",
            "breth0_node1",
            "--",
            "lsp-set-type",
            "breth0_node1",
            "localnet",
            "--",
            "lsp-set-addresses",
            "breth0_node1",
            "unknown",
            "--",
            "lsp-set-options",
            "breth0_node1",
            "network_name=physnet",
            "--",
            "lsp-add",
            "ext_node1",
            "vif",
            "--",
            "lsp-set-addresses",
            "vif",
            "0a:58:ac:12:00:09 172.18.0.9",
        ])
        .unwrap();
    let vif = PodSpec::new("vif", "node1").interface(InterfaceSpec::new(
        "eth0",
        "vif",
        "0a:58:ac:12:00:09",
    ));
    lab.add_pod(vif).unwrap();
    node1
        .wait_port("breth0", "patch-breth0_node1-to-br-int", WAIT)
        .unwrap();
    let wrong = node1.wait_port("br-int", "patch-breth0_node1-to-br-int", WAIT);
    assert!(matches!(wrong, Err(LabError::Invalid { .. })), "{wrong:?}");
    let missing = node1.wait_port("breth0", "no-such-port", Duration::from_secs(1));
    assert!(
        matches!(missing, Err(LabError::Timeout { .. })),
        "{missing:?}"
    );

    let before = node1.flow_count("breth0").unwrap();
    node1
        .add_flows(
            "breth0",
            &["cookie=0xdeff105,table=0,priority=10,arp,actions=NORMAL"],
        )
        .unwrap();
    assert_eq!(node1.flow_count("breth0").unwrap(), before + 1);
    assert!(node1.flow_count("br-int").unwrap() > 0);

    let status = node1
        .appctl(DaemonKind::Controller, &["connection-status"])
        .unwrap();
    assert_eq!(status.trim(), "connected");
    let northd = node1.appctl(DaemonKind::Northd, &["status"]).unwrap();
    assert!(northd.contains("active"), "{northd}");
    assert!(
        node1
            .appctl(DaemonKind::Vswitchd, &["version"])
            .unwrap()
            .contains("ovs-vswitchd")
    );
    assert!(matches!(
        node2.appctl(DaemonKind::Northd, &["status"]),
        Err(LabError::NotFound { .. })
    ));

    let rss1 = node1.rss().unwrap();
    assert!(rss1.nb.unwrap() > 0 && rss1.sb.unwrap() > 0 && rss1.northd.unwrap() > 0);
    assert!(rss1.controller > 0 && rss1.vswitchd > 0 && rss1.ovsdb > 0);
    let rss2 = node2.rss().unwrap();
    assert_eq!((rss2.nb, rss2.sb, rss2.northd), (None, None, None));
    assert!(rss2.total_kib() >= rss2.vswitchd);

    node2.wait_hv().unwrap();
    let cfg = node2.nb_cfg().unwrap();
    assert!(cfg.nb_cfg > 0);
    assert_eq!((cfg.sb_cfg, cfg.hv_cfg), (cfg.nb_cfg, cfg.nb_cfg));
    let log = node2.northd_log().unwrap();
    assert!(log.contains("ovn-northd"), "{log}");
    assert!(
        !log.contains("parse error") && !log.contains("Syntax error"),
        "{log}"
    );

    let out = lab
        .exec(
            external.netns(),
            &["ip", "-o", "-4", "addr", "show", "eth0"],
        )
        .unwrap();
    assert!(
        out.success() && out.stdout.contains("172.18.0.1/16"),
        "{out:?}"
    );
    assert!(matches!(lab.node("node9"), Err(LabError::NotFound { .. })));
    let bad = PodSpec::new("bad", "node1").interface(
        InterfaceSpec::new("eth0", "bad", "0a:58:00:00:00:01").host_ifname("much-too-long-name"),
    );
    assert!(matches!(lab.add_pod(bad), Err(LabError::Invalid { .. })));
    assert!(
        !lab.netns_names()
            .iter()
            .any(|name| name.ends_with("-pod-bad"))
    );
}
