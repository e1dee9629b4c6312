//! A gateway interface that is a plain NIC moves into a new `breth0`, as upstream's
//! `NicToBridge` does, against the real thing: a throwaway node netns whose `eth0` (a veth
//! to a peer netns, MTU 9000) carries the node's addresses and routes, a private
//! `ovsdb-server`, and `ovs-vswitchd` with the userspace datapath started inside the node
//! netns as the lab's nodes run it (so `breth0` is a tap there). The agent's facts step runs
//! in the node netns; then the bridge in OVS, the addresses, routes and link in the kernel,
//! and pings to the peer through the bridge are checked, and a second run changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support_wiring;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::Value;
use support_wiring::TestNetns;
use udn_api::cluster_args::ClusterArgs;
use udn_node::agent::facts;
use udn_node::agent::nic_to_bridge::{self, NicToBridge};
use udn_node::annotations::NodeFacts;
use udn_node::config::{Config, NodeArgs};
use udn_node::netlink::in_netns;
use udn_node::ovs::{Ovs, OvsConfig};
use udn_ovsdb::testing::{OvsdbServer, process_alive};

const MAC: &str = "02:00:0a:09:00:05";

/// The agent's flags, as its binary parses them.
#[derive(Debug, Parser)]
struct Flags {
    #[command(flatten)]
    node: NodeArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// `ovs-vswitchd` detached inside a netns; asked to exit (then killed) on drop.
#[derive(Debug)]
struct Vswitchd {
    pid: u32,
    ctl: PathBuf,
    _dir: tempfile::TempDir,
}

impl Vswitchd {
    fn start(netns: &TestNetns, ovsdb: &OvsdbServer) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("udn-vswitchd-")
            .tempdir()
            .unwrap();
        let (pidfile, ctl) = (
            dir.path().join("ovs-vswitchd.pid"),
            dir.path().join("ovs-vswitchd.ctl"),
        );
        let output = Command::new("nsenter")
            .arg(format!("--net=/var/run/netns/{}", netns.name))
            .arg("ovs-vswitchd")
            .arg(format!("unix:{}", ovsdb.socket().display()))
            .arg(format!("--pidfile={}", pidfile.display()))
            .arg(format!("--unixctl={}", ctl.display()))
            .arg(format!(
                "--log-file={}",
                dir.path().join("ovs-vswitchd.log").display()
            ))
            .args(["--detach", "--no-chdir"])
            .env("OVS_RUNDIR", dir.path())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "ovs-vswitchd: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        // --detach returns once the daemon is initialised and has written its pidfile.
        let pid = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        Self {
            pid,
            ctl,
            _dir: dir,
        }
    }
}

impl Drop for Vswitchd {
    fn drop(&mut self) {
        let _ = Command::new("ovs-appctl")
            .arg(format!("--target={}", self.ctl.display()))
            .arg("exit")
            .output();
        let deadline = Instant::now() + Duration::from_secs(10);
        while process_alive(self.pid) && Instant::now() < deadline {
            std::thread::yield_now();
        }
        if process_alive(self.pid)
            && let Some(pid) = i32::try_from(self.pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// A node: its netns with `eth0` (and vswitchd in it), the peer at the other end of `eth0`,
/// its OVS database. Dropped in this order: vswitchd, the namespaces, the database.
#[derive(Debug)]
struct Node {
    _vswitchd: Vswitchd,
    netns: TestNetns,
    peer: TestNetns,
    ovsdb: OvsdbServer,
}

impl Node {
    /// eth0 with 10.9.0.5/24, fd00:9::5/64, default routes via the peer (10.9.0.1,
    /// fd00:9::1) and a static route with a metric.
    fn start(tag: &str) -> Self {
        let ovsdb = OvsdbServer::start_vswitch().unwrap();
        ovsdb
            .vsctl(&[
                "set",
                "Open_vSwitch",
                ".",
                "external_ids:system-id=chassis-nic",
            ])
            .unwrap();
        let netns = TestNetns::new(tag);
        let peer = TestNetns::new(&format!("{tag}-peer"));
        netns.ok(&[
            "ip", "link", "add", "eth0", "mtu", "9000", "address", MAC, "type", "veth", "peer",
            "name", "peer0", "mtu", "9000", "netns", &peer.name,
        ]);
        peer.ok(&["ip", "link", "set", "peer0", "up"]);
        peer.ok(&["ip", "addr", "add", "10.9.0.1/24", "dev", "peer0"]);
        peer.ok(&["ip", "addr", "add", "fd00:9::1/64", "dev", "peer0", "nodad"]);
        netns.ok(&["ip", "link", "set", "eth0", "up"]);
        netns.ok(&["ip", "addr", "add", "10.9.0.5/24", "dev", "eth0"]);
        netns.ok(&["ip", "addr", "add", "fd00:9::5/64", "dev", "eth0", "nodad"]);
        netns.ok(&[
            "ip", "route", "add", "default", "via", "10.9.0.1", "dev", "eth0",
        ]);
        netns.ok(&[
            "ip",
            "route",
            "add",
            "198.51.100.0/24",
            "via",
            "10.9.0.1",
            "dev",
            "eth0",
            "metric",
            "50",
            "proto",
            "static",
        ]);
        netns.ok(&[
            "ip",
            "-6",
            "route",
            "add",
            "default",
            "via",
            "fd00:9::1",
            "dev",
            "eth0",
        ]);
        let vswitchd = Vswitchd::start(&netns, &ovsdb);
        Self {
            _vswitchd: vswitchd,
            netns,
            peer,
            ovsdb,
        }
    }

    fn config(&self, gateway_interface: Option<&str>) -> Config {
        let socket = format!("unix:{}", self.ovsdb.socket().display());
        let mut argv = vec![
            "udn-node",
            "--node-name",
            "node1",
            "--ovs-datapath-type",
            "netdev",
            "--ovs-address",
            &socket,
        ];
        if let Some(interface) = gateway_interface {
            argv.extend(["--gateway-interface", interface]);
        }
        let flags = Flags::parse_from(argv);
        Config::from_args(&flags.node, &flags.cluster).unwrap()
    }

    /// The agent's facts step, run in the node netns (as the agent runs in the host's).
    async fn gather(&self, gateway_interface: Option<&str>) -> NodeFacts {
        let config = self.config(gateway_interface);
        let endpoint = self.ovsdb.endpoint();
        in_netns(&self.netns.path(), move |_| async move {
            let ovs = connect(endpoint).await;
            Ok(facts::gather(&config, &ovs).await.map_err(|e| chain(&e)))
        })
        .await
        .unwrap()
        .unwrap_or_else(|error| panic!("facts: {error}\n{}", self.diagnostics()))
    }

    /// The move step alone; the steps it took.
    async fn move_step(&self) -> Vec<String> {
        let endpoint = self.ovsdb.endpoint();
        in_netns(&self.netns.path(), move |netlink| async move {
            let ovs = connect(endpoint).await;
            let spec = NicToBridge::for_nic("eth0", "netdev");
            Ok(nic_to_bridge::ensure(&ovs, &netlink, &spec)
                .await
                .map(|ops| ops.iter().map(|op| format!("{op:?}")).collect())
                .map_err(|e| chain(&e)))
        })
        .await
        .unwrap()
        .unwrap_or_else(|error| panic!("move: {error}\n{}", self.diagnostics()))
    }

    fn vsctl(&self, args: &[&str]) -> String {
        self.ovsdb.vsctl(args).unwrap().trim().to_owned()
    }

    /// `ovs-vsctl` waiting for ovs-vswitchd to apply the change.
    fn vsctl_applied(&self, args: &[&str]) {
        let output = Command::new("ovs-vsctl")
            .arg(format!("--db=unix:{}", self.ovsdb.socket().display()))
            .arg("--timeout=10")
            .args(args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "ovs-vsctl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// What the host and OVS hold that the move touches: global addresses, main-table
    /// routes, the links, and the bridge's, ports' and interfaces' configuration.
    fn snapshot(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for argv in [
            &["ip", "-j", "addr", "show", "scope", "global"][..],
            &["ip", "-j", "-4", "route", "show", "table", "main"],
            &["ip", "-j", "-6", "route", "show", "table", "main"],
            &["ip", "-j", "link", "show"],
        ] {
            lines.push(self.netns.ok(argv));
        }
        for (table, columns) in [
            (
                "Bridge",
                "name,ports,fail_mode,datapath_type,external_ids,other_config",
            ),
            ("Port", "name,interfaces,other_config"),
            ("Interface", "name,type,mtu_request,ofport"),
        ] {
            lines.push(self.vsctl(&[&format!("--columns={columns}"), "list", table]));
        }
        lines
    }

    fn diagnostics(&self) -> String {
        let mut text = String::new();
        for argv in [
            &["ip", "addr"][..],
            &["ip", "route", "show", "table", "all"],
            &["ip", "-6", "route", "show", "table", "all"],
        ] {
            text.push_str(&String::from_utf8_lossy(&self.netns.run(argv).stdout));
        }
        text.push_str(&self.ovsdb.vsctl(&["show"]).unwrap_or_default());
        text
    }

    fn addresses(&self, link: &str) -> Vec<String> {
        let json = self
            .netns
            .ip_json(&["addr", "show", "dev", link, "scope", "global"]);
        // A link without such addresses is listed with empty entries.
        json.as_array()
            .unwrap()
            .iter()
            .filter_map(|link| link["addr_info"].as_array())
            .flatten()
            .filter_map(|a| Some(format!("{}/{}", a["local"].as_str()?, a["prefixlen"])))
            .collect()
    }

    /// `dest dev via metric proto` of every main-table route of both families.
    fn routes(&self) -> Vec<String> {
        let mut routes = Vec::new();
        for family in ["-4", "-6"] {
            let json = self
                .netns
                .ip_json(&[family, "route", "show", "table", "main"]);
            for route in json.as_array().unwrap() {
                let field = |name: &str| route[name].as_str().map(str::to_owned);
                routes.push(format!(
                    "{} dev {} via {} metric {} proto {}",
                    field("dst").unwrap(),
                    field("dev").unwrap(),
                    field("gateway").unwrap_or_else(|| "-".into()),
                    route["metric"].as_u64().unwrap_or(0),
                    // ip leaves out `boot`, the protocol of a route added without one.
                    field("protocol").unwrap_or_else(|| "boot".into()),
                ));
            }
        }
        routes
    }

    fn ping(&self, ip: &str) -> bool {
        self.netns
            .run(&["ping", "-c", "1", "-W", "5", ip])
            .status
            .success()
    }

    /// On the userspace datapath the kernel still gets every frame that arrives on eth0
    /// (vswitchd reads it with a packet socket, which sees frames before the netdev ingress
    /// hook): drop them there, so the host only hears the peer through the bridge.
    fn cut_eth0_from_the_host(&self) {
        self.netns
            .ok(&["nft", "add", "table", "netdev", "nic_test"]);
        self.netns.ok(&[
            "nft",
            "add chain netdev nic_test uplink { type filter hook ingress device eth0 priority 0; policy drop; }",
        ]);
    }
}

async fn connect(endpoint: udn_ovsdb::client::Endpoint) -> Ovs {
    Ovs::connect(&OvsConfig {
        endpoint,
        request_timeout: Duration::from_secs(10),
    })
    .await
    .unwrap()
}

fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

fn field(text: &str, column: &str) -> String {
    text.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            (name.trim() == column).then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no {column} in {text}"))
}

/// The state after a completed move, checked in OVS, the kernel and on the wire.
fn assert_moved(node: &Node, facts: &NodeFacts) {
    let gateway = facts.gateway.as_ref().unwrap();
    assert_eq!(gateway.bridge, "breth0");
    assert_eq!(gateway.mac.to_string(), MAC);
    let mut addresses: Vec<String> = gateway.addresses.iter().map(ToString::to_string).collect();
    addresses.sort();
    assert_eq!(addresses, ["10.9.0.5/24", "fd00:9::5/64"]);
    let hops: Vec<String> = gateway.next_hops.iter().map(ToString::to_string).collect();
    assert_eq!(hops, ["10.9.0.1", "fd00:9::1"]);
    assert!(
        facts
            .host_cidrs
            .iter()
            .any(|c| c.to_string() == "10.9.0.5/24"),
        "{:?}",
        facts.host_cidrs
    );
    // OVS: upstream's bridge, the NIC its port.
    let bridge = node.vsctl(&["list", "Bridge", "breth0"]);
    assert_eq!(field(&bridge, "fail_mode"), "standalone");
    assert_eq!(field(&bridge, "datapath_type"), "netdev");
    assert_eq!(
        field(&bridge, "external_ids"),
        r#"{bridge-id=breth0, bridge-uplink=eth0}"#
    );
    assert_eq!(
        field(&bridge, "other_config"),
        format!(r#"{{hwaddr="{MAC}"}}"#)
    );
    assert_eq!(node.vsctl(&["list-ports", "breth0"]), "eth0");
    assert_eq!(
        node.vsctl(&["get", "Port", "eth0", "other_config:transient"]),
        r#""true""#
    );
    assert_eq!(
        node.vsctl(&["get", "Interface", "breth0", "type"]),
        "internal"
    );
    // The kernel: the addresses and routes moved, breth0 a tap with the NIC's MAC, up.
    assert_eq!(node.addresses("breth0"), ["10.9.0.5/24", "fd00:9::5/64"]);
    assert_eq!(node.addresses("eth0"), Vec::<String>::new());
    let label = node.netns.ip_json(&["-4", "addr", "show", "dev", "breth0"]);
    assert_eq!(label[0]["addr_info"][0]["label"], "breth0");
    let routes = node.routes();
    for expected in [
        "default dev breth0 via 10.9.0.1 metric 0 proto boot",
        "198.51.100.0/24 dev breth0 via 10.9.0.1 metric 50 proto static",
        "10.9.0.0/24 dev breth0 via - metric 0 proto kernel",
        "default dev breth0 via fd00:9::1 metric 1024 proto boot",
        "fd00:9::/64 dev breth0 via - metric 256 proto kernel",
    ] {
        assert!(
            routes.iter().any(|r| r == expected),
            "{expected} not in {routes:#?}"
        );
    }
    let on_eth0: Vec<&String> = routes.iter().filter(|r| r.contains(" dev eth0 ")).collect();
    assert_eq!(
        on_eth0,
        ["fe80::/64 dev eth0 via - metric 256 proto kernel"]
    );
    let link = node.netns.ip_json(&["-d", "link", "show", "breth0"]);
    assert_eq!(link[0]["address"], MAC);
    assert_eq!(
        link[0]["linkinfo"]["info_kind"], "tun",
        "a userspace-datapath tap: {link}"
    );
    assert!(
        link[0]["flags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "UP"),
        "{link}"
    );
    // The peer answers through the bridge, over both families.
    assert!(node.ping("10.9.0.1"), "{}", node.diagnostics());
    assert!(node.ping("fd00:9::1"), "{}", node.diagnostics());
}

#[tokio::test]
async fn the_default_route_nic_moves_into_a_new_breth0_and_a_second_run_changes_nothing() {
    let node = Node::start("nic");
    assert!(
        node.ping("10.9.0.1"),
        "the peer answers on eth0 before the move"
    );
    // No --gateway-interface: the default route's interface, eth0, a plain NIC.
    let facts = node.gather(None).await;
    assert_moved(&node, &facts);
    assert_eq!(
        node.vsctl(&["get", "Interface", "breth0", "mtu_request"]),
        "9000"
    );
    let link = node.netns.ip_json(&["link", "show", "breth0"]);
    assert_eq!(link[0]["mtu"], 9000, "the tap has the NIC's MTU: {link}");
    node.cut_eth0_from_the_host();
    assert!(
        node.ping("10.9.0.1"),
        "only through OVS: {}",
        node.diagnostics()
    );
    assert!(
        node.ping("fd00:9::1"),
        "only through OVS: {}",
        node.diagnostics()
    );
    let before = node.snapshot();
    // The second run: breth0 now holds the default route; nothing to do.
    assert_eq!(node.gather(None).await, facts);
    assert_eq!(node.move_step().await, Vec::<String>::new());
    assert_eq!(node.snapshot(), before);
    assert!(node.ping("10.9.0.1"));
}

#[tokio::test]
async fn a_nic_already_in_the_bridge_with_its_addresses_is_finished() {
    let node = Node::start("nicx");
    // Where upstream's order stops if the agent dies right after its OVS transaction: the
    // bridge with the NIC as a port, the addresses and routes still on the NIC.
    // Without --no-wait: ovs-vsctl returns once ovs-vswitchd has applied it (eth0 opened).
    node.vsctl_applied(&[
        "add-br",
        "breth0",
        "--",
        "set",
        "Bridge",
        "breth0",
        "datapath_type=netdev",
        "fail_mode=standalone",
        "external_ids:bridge-id=breth0",
        "external_ids:bridge-uplink=eth0",
        &format!("other_config:hwaddr=\"{MAC}\""),
        "--",
        "add-port",
        "breth0",
        "eth0",
        "--",
        "set",
        "Port",
        "eth0",
        "other_config:transient=true",
    ]);
    assert_eq!(node.vsctl(&["get", "Interface", "eth0", "ofport"]), "1");
    assert_eq!(node.addresses("eth0"), ["10.9.0.5/24", "fd00:9::5/64"]);
    let facts = node.gather(Some("eth0")).await;
    assert_moved(&node, &facts);
    node.cut_eth0_from_the_host();
    assert!(
        node.ping("10.9.0.1"),
        "only through OVS: {}",
        node.diagnostics()
    );
    let before = node.snapshot();
    assert_eq!(node.gather(Some("eth0")).await, facts);
    assert_eq!(node.move_step().await, Vec::<String>::new());
    assert_eq!(node.snapshot(), before);
    // The peer end is still the one it was.
    assert_eq!(
        node.peer.ip_json(&["link", "show", "peer0"])[0]["mtu"],
        Value::from(9000)
    );
}
