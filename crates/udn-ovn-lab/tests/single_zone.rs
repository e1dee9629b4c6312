//! One zone, two nodes: a logical switch written with ovn-nbctl, a pod on each node, traffic
//! across nodes through geneve; the nodes reach the external host.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udn_ovn_lab::{InterfaceSpec, Lab, LabConfig, Ping, PodSpec};

const WAIT: Duration = Duration::from_secs(20);

fn pod(name: &str, node: &str, last: u8) -> PodSpec {
    let mac = format!("0a:58:0a:00:00:{last:02x}");
    PodSpec::new(name, node).interface(
        InterfaceSpec::new("eth0", name, &mac)
            .ip(format!("10.0.0.{last}/24").parse().unwrap())
            .gateway("10.0.0.1".parse().unwrap()),
    )
}

#[test]
fn pods_on_two_nodes_talk_through_geneve() {
    let lab = Lab::start(LabConfig::with_nodes(2).single_zone()).unwrap();
    let node1 = lab.node("node1").unwrap();
    node1
        .nbctl(&[
            "ls-add",
            "net",
            "--",
            "lsp-add",
            "net",
            "a",
            "--",
            "lsp-set-addresses",
            "a",
            "0a:58:0a:00:00:0a 10.0.0.10",
            "--",
            "lsp-add",
            "net",
            "b",
            "--",
            "lsp-set-addresses",
            "b",
            "0a:58:0a:00:00:0b 10.0.0.11",
        ])
        .unwrap();
    let a = lab.add_pod(pod("a", "node1", 10)).unwrap();
    let b = lab.add_pod(pod("b", "node2", 11)).unwrap();
    lab.wait_installed("a", WAIT).unwrap();
    lab.wait_installed("b", WAIT).unwrap();
    node1.wait_hv().unwrap();

    let b_ip = b.ip().unwrap();
    assert!(
        lab.ping(&a.netns, b_ip, Ping::default()).unwrap(),
        "{}",
        lab.diagnostics()
    );
    assert!(lab.tcp_check(&a.netns, &b.netns, b_ip, 7000, WAIT).unwrap());
    // Not on the switch: no answer.
    let absent = "10.0.0.99".parse().unwrap();
    assert!(
        !lab.ping(&a.netns, absent, Ping::new(1, Duration::from_secs(1)))
            .unwrap()
    );
    // The traffic crossed the underlay as geneve between the node IPs.
    let ids = node1
        .vsctl(&[
            "--bare",
            "--columns=name",
            "find",
            "Interface",
            "type=geneve",
        ])
        .unwrap();
    assert!(!ids.trim().is_empty(), "no geneve port on node1");

    // Each node reaches the external host through breth0.
    for node in lab.nodes() {
        let ok = lab
            .ping(node.netns(), lab.external().ip().into(), Ping::default())
            .unwrap();
        assert!(ok, "{} cannot reach the external host", node.name());
    }

    // A stateful ACL: ovn-controller commits connections without an all-zero SNAT (the lab
    // hides the capability; OVS 3.1.0's userspace conntrack aborts on it), and the traffic
    // still flows and ovs-vswitchd lives.
    node1
        .nbctl(&["acl-add", "net", "to-lport", "1000", "ip4", "allow-related"])
        .unwrap();
    for node in lab.nodes() {
        let caps = node
            .vsctl(&["get", "Open_vSwitch", ".", "datapaths:netdev"])
            .and_then(|dp| node.vsctl(&["get", "Datapath", dp.trim(), "capabilities:ct_zero_snat"]))
            .unwrap();
        assert_eq!(caps.trim(), "\"false\"", "{}", node.name());
    }
    let deadline = std::time::Instant::now() + WAIT;
    let flows = loop {
        let flows = node1.ofctl(&["dump-flows", "br-int"]).unwrap();
        if flows.contains("ct(commit") || std::time::Instant::now() > deadline {
            break flows;
        }
        std::thread::park_timeout(Duration::from_millis(200));
    };
    assert!(
        flows.contains("ct(commit"),
        "no conntrack commit for the ACL"
    );
    assert!(
        !flows.contains("nat(src)"),
        "an all-zero SNAT commit is back"
    );
    for port in 7001..7011 {
        assert!(
            lab.tcp_check(&a.netns, &b.netns, b_ip, port, WAIT).unwrap(),
            "port {port}"
        );
    }
    for node in lab.nodes() {
        for (kind, pid) in node.pids() {
            // A zombie keeps its /proc entry (PID 1 does not reap here): read the state.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
            let alive = matches!(state, Some(Some(s)) if s != 'Z' && s != 'X');
            assert!(
                alive,
                "{kind:?} on {} died: {}",
                node.name(),
                lab.diagnostics()
            );
        }
    }
}
