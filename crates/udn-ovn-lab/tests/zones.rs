//! Per-node zones (interconnect, as upstream runs): each node has its own NB, SB and northd,
//! its ovn-controller registers in its own SB, and two zones forward to each other through a
//! transit switch once each knows the other's chassis and ports (spec §3.7).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udn_ovn_lab::{InterfaceSpec, Lab, LabConfig, Node, Ping, PodSpec};

const WAIT: Duration = Duration::from_secs(20);

fn get(node: &Node, table: &str, column: &str) -> String {
    node.nbctl(&["--bare", "get", table, ".", column])
        .unwrap()
        .trim()
        .to_owned()
}

#[test]
fn every_node_runs_its_own_zone() {
    let lab = Lab::start(LabConfig::with_nodes(2)).unwrap();
    let [node1, node2] = lab.nodes() else {
        panic!("two nodes")
    };
    assert_ne!(node1.chassis_id(), node2.chassis_id());
    assert_ne!(node1.nb_socket(), node2.nb_socket());
    assert_ne!(node1.sb_socket(), node2.sb_socket());
    for node in [node1, node2] {
        assert!(node.runs_zone());
        assert_eq!(node.zone(), node.name());
        assert_eq!(get(node, "NB_Global", "name"), node.name());
        assert_eq!(get(node, "NB_Global", "options:name"), node.name());
        // northd runs: it copied the options into SB_Global.
        let sb_name = node
            .sbctl(&["--bare", "get", "SB_Global", ".", "options:name"])
            .unwrap();
        assert_eq!(sb_name.trim(), node.name());
        // Only this node's chassis in this zone's SB, interconnect-capable.
        let chassis = node
            .sbctl(&["--bare", "--columns=name", "list", "Chassis"])
            .unwrap();
        assert_eq!(
            chassis.split_whitespace().collect::<Vec<_>>(),
            [node.chassis_id()]
        );
        let other = node
            .sbctl(&[
                "get",
                "Chassis",
                node.chassis_id(),
                "other_config:is-interconn",
            ])
            .unwrap();
        assert_eq!(other.trim(), "\"true\"");
        let hostname = node
            .sbctl(&["get", "Chassis", node.chassis_id(), "hostname"])
            .unwrap();
        assert_eq!(hostname.trim().trim_matches('"'), node.name());
        let cfg = node.nb_cfg().unwrap();
        assert_eq!((cfg.sb_cfg, cfg.hv_cfg), (cfg.nb_cfg, cfg.nb_cfg));
    }
}

#[test]
fn open_vswitch_and_breth0_are_set_up_as_upstream_node_leaves_them() {
    let lab = Lab::start(LabConfig::with_nodes(1)).unwrap();
    let node = &lab.nodes()[0];
    let id = |key: &str| {
        let value = node.vsctl(&["get", "Open_vSwitch", ".", &format!("external_ids:{key}")]);
        value.unwrap().trim().trim_matches('"').to_owned()
    };
    assert_eq!(id("system-id"), node.chassis_id());
    assert_eq!(id("hostname"), "node1");
    assert_eq!(id("ovn-remote"), node.sb_remote());
    assert_eq!(id("ovn-encap-type"), "geneve");
    assert_eq!(id("ovn-encap-ip"), node.encap_ip().to_string());
    assert_eq!(id("ovn-is-interconn"), "true");
    assert_eq!(id("ovn-monitor-all"), "true");
    assert_eq!(id("ovn-bridge-mappings"), "physnet:breth0");
    assert_eq!(id("ovn-bridge-datapath-type"), "netdev");
    assert!(uuid_like(node.chassis_id()), "{}", node.chassis_id());

    assert_eq!(
        node.vsctl(&["list-ports", "breth0"]).unwrap().trim(),
        "eth0"
    );
    let link = node.exec(&["ip", "-o", "link", "show", "breth0"]).unwrap();
    assert!(link.stdout.contains(node.breth0_mac()), "{}", link.stdout);
    assert!(link.stdout.contains("mtu 9000"), "{}", link.stdout);
    let addr = node
        .exec(&["ip", "-o", "-4", "addr", "show", "breth0"])
        .unwrap();
    assert!(
        addr.stdout.contains(&node.node_cidr().to_string()),
        "{}",
        addr.stdout
    );
    let route = node.exec(&["ip", "route", "show", "default"]).unwrap();
    assert!(
        route
            .stdout
            .contains(&format!("via {} dev breth0", node.next_hop()))
    );
    assert_eq!(node.next_hop(), lab.external().ip());
    assert_eq!(node.node_ip().to_string(), "172.18.0.2");
    assert_eq!(lab.external().ip().to_string(), "172.18.0.1");
    let fail_mode = node.vsctl(&["get-fail-mode", "br-int"]).unwrap();
    assert_eq!(fail_mode.trim(), "secure");
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().filter(|c| *c == '-').count() == 4
}

/// The transit switch key of the default network (16711683 + network id 0).
const TRANSIT_KEY: &str = "16711683";

/// Zone `local` has pod `name` (tunnel key `key`) on the transit switch and the other zone's
/// pod as a `remote` port bound to the other chassis.
fn write_zone(local: &Node, remote: &Node, pods: [(&str, &str, &str); 2]) {
    let [(name, addresses, key), (rname, raddresses, rkey)] = pods;
    local
        .nbctl(&[
            "ls-add",
            "ts",
            "--",
            "set",
            "Logical_Switch",
            "ts",
            "other_config:interconn-ts=ts",
            &format!("other_config:requested-tnl-key={TRANSIT_KEY}"),
            "--",
            "lsp-add",
            "ts",
            name,
            "--",
            "lsp-set-addresses",
            name,
            addresses,
            "--",
            "lsp-set-options",
            name,
            &format!("requested-tnl-key={key}"),
            "--",
            "lsp-add",
            "ts",
            rname,
            "--",
            "lsp-set-type",
            rname,
            "remote",
            "--",
            "lsp-set-addresses",
            rname,
            raddresses,
            "--",
            "lsp-set-options",
            rname,
            &format!("requested-chassis={}", remote.chassis_id()),
            &format!("requested-tnl-key={rkey}"),
        ])
        .unwrap();
    local
        .sbctl(&[
            "chassis-add",
            remote.chassis_id(),
            "geneve",
            &remote.encap_ip().to_string(),
        ])
        .unwrap();
    local
        .sbctl(&[
            "set",
            "Chassis",
            remote.chassis_id(),
            "other_config:is-remote=true",
            &format!("hostname={}", remote.name()),
        ])
        .unwrap();
    // northd 23.03 does not bind a remote port to its requested-chassis (newer OVN does):
    // bind it in SB, as upstream did before it relied on northd.
    local.nbctl(&["--wait=sb", "sync"]).unwrap();
    local
        .sbctl(&["lsp-bind", rname, remote.chassis_id()])
        .unwrap();
}

#[test]
fn two_zones_forward_through_a_transit_switch() {
    let lab = Lab::start(LabConfig::with_nodes(2)).unwrap();
    let [node1, node2] = lab.nodes() else {
        panic!("two nodes")
    };
    let a = ("a", "0a:58:0a:00:00:0a 10.0.0.10", "10");
    let b = ("b", "0a:58:0a:00:00:0b 10.0.0.11", "11");
    write_zone(node1, node2, [a, b]);
    write_zone(node2, node1, [b, a]);
    for (name, node, last) in [("a", "node1", 10), ("b", "node2", 11)] {
        let mac = format!("0a:58:0a:00:00:{last:02x}");
        let ip = format!("10.0.0.{last}/24").parse().unwrap();
        let spec =
            PodSpec::new(name, node).interface(InterfaceSpec::new("eth0", name, &mac).ip(ip));
        lab.add_pod(spec).unwrap();
        lab.wait_installed(name, WAIT).unwrap();
    }
    node1.wait_hv().unwrap();
    node2.wait_hv().unwrap();
    let (pa, pb) = (lab.pod("a").unwrap(), lab.pod("b").unwrap());
    let ok = lab
        .ping(&pa.netns, pb.ip().unwrap(), Ping::default())
        .unwrap();
    assert!(ok, "{}", lab.diagnostics());
    assert!(
        lab.tcp_check(&pb.netns, &pa.netns, pa.ip().unwrap(), 7000, WAIT)
            .unwrap()
    );
}
