//! The helpers the dataplane tests use: management port, a second pod interface, pod removal,
//! the gateway bridge's patch port and flows, captures and listeners at the external host,
//! daemon control sockets, RSS, `nb_cfg`, and the errors for bad requests.
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

fn single_zone() -> Lab {
    Lab::start(LabConfig::with_nodes(2).single_zone()).unwrap()
}

/// Writes one logical switch `switch` with `(port, "mac ip")` ports on the zone's NB.
fn switch(lab: &Lab, switch: &str, ports: &[(&str, &str)]) {
    let mut args = vec!["ls-add", switch];
    for (port, addresses) in ports {
        args.extend([
            "--",
            "lsp-add",
            switch,
            port,
            "--",
            "lsp-set-addresses",
            port,
            addresses,
        ]);
    }
    lab.nodes()[0].nbctl(&args).unwrap();
}

fn nic(ifname: &str, lsp: &str, mac: &str, cidr: &str) -> InterfaceSpec {
    InterfaceSpec::new(ifname, lsp, mac).ip(cidr.parse().unwrap())
}

#[test]
fn the_node_reaches_its_pods_through_the_management_port() {
    let lab = single_zone();
    let node1 = lab.node("node1").unwrap();
    switch(
        &lab,
        "node1",
        &[
            ("k8s-node1", "0a:58:0a:f4:01:02 10.244.1.2"),
            ("ns_a", "0a:58:0a:f4:01:05 10.244.1.5"),
        ],
    );
    let mp0 = MgmtPortSpec::new("node1", "0a:58:0a:f4:01:02").ip("10.244.1.2/24".parse().unwrap());
    node1.add_mgmt_port(&mp0).unwrap();
    node1.wait_installed("ovn-k8s-mp0", WAIT).unwrap();
    let link = node1
        .exec(&["ip", "-o", "link", "show", "ovn-k8s-mp0"])
        .unwrap();
    assert!(link.stdout.contains("0a:58:0a:f4:01:02"), "{}", link.stdout);
    assert!(link.stdout.contains("mtu 1400"), "{}", link.stdout);

    let nic = nic("eth0", "ns_a", "0a:58:0a:f4:01:05", "10.244.1.5/24")
        .external_id("iface-id-ver", "uid-a")
        .external_id("k8s.ovn.org/network", "default")
        .external_id("ip_addresses", "10.244.1.5/24");
    let a = lab
        .add_pod(PodSpec::new("a", "node1").interface(nic))
        .unwrap();
    lab.wait_installed("a", WAIT).unwrap();
    let eth0 = a.interface("eth0").unwrap();
    let ids = node1
        .vsctl(&["get", "Interface", &eth0.host_ifname, "external_ids"])
        .unwrap();
    for expected in [
        "iface-id=ns_a",
        "iface-id-ver=uid-a",
        "\"k8s.ovn.org/network\"=default",
        "ip_addresses=\"10.244.1.5/24\"",
        "ovn-installed=\"true\"",
    ] {
        assert!(ids.contains(expected), "{expected} not in {ids}");
    }
    assert!(
        lab.ping(node1.netns(), ip("10.244.1.5"), Ping::default())
            .unwrap()
    );
    assert!(
        lab.tcp_check(&a.netns, node1.netns(), ip("10.244.1.2"), 7002, WAIT)
            .unwrap()
    );
}

#[test]
fn a_second_pod_interface_joins_another_network_and_pods_go_away() {
    let lab = single_zone();
    let node1 = &lab.nodes()[0];
    switch(&lab, "node1", &[("ns_a", "0a:58:0a:f4:01:05 10.244.1.5")]);
    switch(
        &lab,
        "blue",
        &[
            ("blue_ns_a", "0a:58:0a:80:00:05 10.128.0.5"),
            ("blue_ns_b", "0a:58:0a:80:00:06 10.128.0.6"),
        ],
    );
    let eth0 = nic("eth0", "ns_a", "0a:58:0a:f4:01:05", "10.244.1.5/24");
    let a = lab
        .add_pod(PodSpec::new("a", "node1").disable_ipv6().interface(eth0))
        .unwrap();
    let udn = nic(
        "ovn-udn1",
        "blue_ns_a",
        "0a:58:0a:80:00:05",
        "10.128.0.5/24",
    )
    .external_id("k8s.ovn.org/nad", "ns/blue");
    let a = lab.add_pod_interface(&a.name, udn).unwrap();
    assert_eq!(a.interfaces.len(), 2);
    let v6 = lab
        .exec(
            &a.netns,
            &["cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6"],
        )
        .unwrap();
    assert_eq!(v6.stdout.trim(), "1");
    let b_nic = nic(
        "ovn-udn1",
        "blue_ns_b",
        "0a:58:0a:80:00:06",
        "10.128.0.6/24",
    );
    let b = lab
        .add_pod(PodSpec::new("b", "node2").interface(b_nic))
        .unwrap();
    lab.wait_installed("a", WAIT).unwrap();
    lab.wait_installed("b", WAIT).unwrap();
    node1.wait_hv().unwrap();

    assert!(
        lab.ping(&a.netns, ip("10.128.0.6"), Ping::default())
            .unwrap()
    );
    assert!(
        lab.tcp_check(&b.netns, &a.netns, ip("10.128.0.5"), 7001, WAIT)
            .unwrap()
    );
    // "blue" does not reach the node switch.
    let short = Ping::new(1, Duration::from_secs(1));
    assert!(!lab.ping(&b.netns, ip("10.244.1.5"), short).unwrap());

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
    assert_eq!(lab.pods().len(), 1);
}

#[test]
fn the_external_host_sees_node_addresses() {
    let lab = single_zone();
    let [node1, node2] = lab.nodes() else {
        panic!("two nodes")
    };
    let external = lab.external();
    let capture = lab.capture_external("icmp").unwrap();
    assert!(
        lab.ping(node1.netns(), external.ip().into(), Ping::default())
            .unwrap()
    );
    assert_eq!(capture.wait_source(WAIT), Some(node1.node_ip().into()));
    assert!(
        capture
            .packets()
            .iter()
            .all(|p| p.dst == Some(external.ip().into()))
    );

    let listener = lab.listen_tcp(external.netns(), 8080, WAIT).unwrap();
    assert!(
        lab.tcp_send(node2.netns(), external.ip().into(), 8080, b"hello", WAIT)
            .unwrap()
    );
    let received = listener.received(WAIT).unwrap();
    assert_eq!(received.data, b"hello");
    assert_eq!(received.peer, Some(node2.node_ip().into()));
    // Nothing listens there any more: refused.
    assert!(
        !lab.tcp_send(node2.netns(), external.ip().into(), 8080, b"x", WAIT)
            .unwrap()
    );
}

#[test]
fn a_localnet_port_patches_breth0_and_flows_can_be_added() {
    let lab = single_zone();
    let node1 = &lab.nodes()[0];
    // A localnet port on a switch with a local pod: ovn-controller patches breth0 to br-int
    // through bridge-mappings physnet:breth0.
    switch(
        &lab,
        "ext_node1",
        &[("vif", "0a:58:ac:12:00:09 172.18.0.9")],
    );
    node1
        .nbctl(&[
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
        ])
        .unwrap();
    let vif = InterfaceSpec::new("eth0", "vif", "0a:58:ac:12:00:09");
    lab.add_pod(PodSpec::new("vif", "node1").interface(vif))
        .unwrap();
    let patch = "patch-breth0_node1-to-br-int";
    node1.wait_port("breth0", patch, WAIT).unwrap();
    let wrong = node1.wait_port("br-int", patch, WAIT);
    assert!(matches!(wrong, Err(LabError::Invalid { .. })), "{wrong:?}");
    let missing = node1.wait_port("breth0", "no-such-port", Duration::from_secs(1));
    assert!(
        matches!(missing, Err(LabError::Timeout { .. })),
        "{missing:?}"
    );

    let before = node1.flow_count("breth0").unwrap();
    let flow = "cookie=0xdeff105,table=0,priority=10,arp,actions=NORMAL";
    node1.add_flows("breth0", &[flow]).unwrap();
    assert_eq!(node1.flow_count("breth0").unwrap(), before + 1);
    let flows = node1
        .ofctl(&["dump-flows", "breth0", "cookie=0xdeff105/-1"])
        .unwrap();
    assert!(flows.contains("priority=10,arp"), "{flows}");
    assert!(node1.flow_count("br-int").unwrap() > 0);
}

#[test]
fn daemons_answer_and_report_memory_and_sequence_numbers() {
    let lab = single_zone();
    let [node1, node2] = lab.nodes() else {
        panic!("two nodes")
    };
    let status = node2
        .appctl(DaemonKind::Controller, &["connection-status"])
        .unwrap();
    assert_eq!(status.trim(), "connected");
    let northd = node1.appctl(DaemonKind::Northd, &["status"]).unwrap();
    assert!(northd.contains("active"), "{northd}");
    let version = node1.appctl(DaemonKind::Vswitchd, &["version"]).unwrap();
    assert!(version.contains("ovs-vswitchd"), "{version}");
    assert!(
        !node1
            .appctl(DaemonKind::NbDb, &["ovsdb-server/list-dbs"])
            .unwrap()
            .is_empty()
    );
    let not_here = node2.appctl(DaemonKind::Northd, &["status"]);
    assert!(
        matches!(not_here, Err(LabError::NotFound { .. })),
        "{not_here:?}"
    );

    let rss1 = node1.rss().unwrap();
    assert!(rss1.nb.unwrap() > 0 && rss1.sb.unwrap() > 0 && rss1.northd.unwrap() > 0);
    assert!(rss1.controller > 0 && rss1.vswitchd > 0 && rss1.ovsdb > 0);
    let rss2 = node2.rss().unwrap();
    assert_eq!((rss2.nb, rss2.sb, rss2.northd), (None, None, None));
    assert_eq!(
        rss2.total_kib(),
        rss2.controller + rss2.vswitchd + rss2.ovsdb
    );

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
    assert_eq!(node2.nb_socket(), node1.nb_socket());
    assert_eq!(
        node2.sb_remote(),
        format!("unix:{}", node1.sb_socket().display())
    );
}

#[test]
fn bad_requests_are_refused_without_leftovers() {
    let lab = Lab::start(LabConfig::with_nodes(1)).unwrap();
    let out = lab
        .exec(
            lab.external().netns(),
            &["ip", "-o", "-4", "addr", "show", "eth0"],
        )
        .unwrap();
    assert!(
        out.success() && out.stdout.contains("172.18.0.1/16"),
        "{out:?}"
    );
    assert!(
        !lab.exec(lab.external().netns(), &["false"])
            .unwrap()
            .success()
    );
    assert!(matches!(lab.exec("x", &[]), Err(LabError::Invalid { .. })));
    assert!(matches!(lab.node("node9"), Err(LabError::NotFound { .. })));
    let long =
        InterfaceSpec::new("eth0", "bad", "0a:58:00:00:00:01").host_ifname("much-too-long-name");
    let bad = lab.add_pod(PodSpec::new("bad", "node1").interface(long));
    assert!(matches!(bad, Err(LabError::Invalid { .. })), "{bad:?}");
    assert!(
        !lab.netns_names()
            .iter()
            .any(|name| name.ends_with("-pod-bad"))
    );
    let other_node = lab.add_pod(PodSpec::new("p", "node2"));
    assert!(
        matches!(other_node, Err(LabError::NotFound { .. })),
        "{other_node:?}"
    );
    lab.add_pod(PodSpec::new("p", "node1")).unwrap();
    assert!(matches!(
        lab.add_pod(PodSpec::new("p", "node1")),
        Err(LabError::Invalid { .. })
    ));
    let missing = lab.exec(lab.external().netns(), &["no-such-program-here"]);
    let Err(LabError::MissingProgram { program, .. }) = &missing else {
        panic!("{missing:?}")
    };
    assert_eq!(program, "no-such-program-here");
}
