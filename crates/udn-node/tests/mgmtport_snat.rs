//! The management port's SNAT chain against the real nft, each test in its own throwaway
//! network namespace: what nft lists after an apply, re-applying changes nothing, host
//! isolation's chain and sets in the same table survive it (and it survives theirs), host
//! traffic leaving through `ovn-k8s-mp0` gets the port's address, and the legacy iptables
//! chain's removal.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod support_isolation;

use std::io::Write as _;

use support_isolation::{Netns, unique};
use udn_node::agent::mgmt_snat::{
    self, LegacyIptables, LegacyOutcome, MgmtSnatInputs, NoSnatElements, NodePort, Protocol,
    ServicePort,
};
use udn_node::isolation::{ChainSpec, chain_transaction, cleanup_transaction, table_id};
use udn_node::nft::{Chain, Element, NftCli, NftExecutor, Rule, Transaction};

const MP0: &str = "ovn-k8s-mp0";
const MP0_V4: &str = "10.244.1.2";
const MP0_V6: &str = "fd00:10:244:1::2";

fn inputs(no_snat: NoSnatElements) -> MgmtSnatInputs {
    MgmtSnatInputs {
        interface: MP0.to_owned(),
        ipv4: Some(MP0_V4.parse().unwrap()),
        ipv6: Some(MP0_V6.parse().unwrap()),
        no_snat,
    }
}

/// One element per hash set (nft lists those in the kernel's order), two in an interval set.
fn some_elements() -> NoSnatElements {
    NoSnatElements {
        nodeports: [NodePort {
            protocol: Protocol::Tcp,
            port: 30080,
        }]
        .into(),
        services: [
            ServicePort {
                ip: "172.18.0.100".parse().unwrap(),
                protocol: Protocol::Tcp,
                port: 80,
            },
            ServicePort {
                ip: "fd00:172:18::100".parse().unwrap(),
                protocol: Protocol::Udp,
                port: 53,
            },
        ]
        .into(),
        subnets: [
            "192.168.10.0/24",
            "10.0.0.0/8",
            "10.9.0.0/16",
            "fd00:99::/64",
        ]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect(),
    }
}

/// `nft list chain inet ovn-kubernetes mgmtport-snat` for the dual-stack inputs: nft prints
/// upstream's rules with the name quoted and the explicit `meta nfproto` folded into the
/// address match.
const LISTED_CHAIN: &str = "table inet ovn-kubernetes {
\tchain mgmtport-snat {
\t\tcomment \"OVN SNAT to Management Port\"
\t\ttype nat hook postrouting priority srcnat; policy accept;
\t\toifname != \"ovn-k8s-mp0\" return
\t\tmeta l4proto . th dport @mgmtport-no-snat-nodeports return
\t\tip saddr 10.244.1.2 return
\t\tip daddr . meta l4proto . th dport @mgmtport-no-snat-services-v4 return
\t\tip saddr @mgmtport-no-snat-subnets-v4 return
\t\tsnat ip to 10.244.1.2
\t\tip6 saddr fd00:10:244:1::2 return
\t\tip6 daddr . meta l4proto . th dport @mgmtport-no-snat-services-v6 return
\t\tip6 saddr @mgmtport-no-snat-subnets-v6 return
\t\tsnat ip6 to fd00:10:244:1::2
\t}
}
";

/// The sets as nft lists them, with [`some_elements`] (the nested /16 is not there).
const LISTED_SETS: &[&str] = &[
    "\tset mgmtport-no-snat-nodeports {
\t\ttype inet_proto . inet_service
\t\tcomment \"NodePorts not subject to management port SNAT\"
\t\telements = { tcp . 30080 }
\t}",
    "\tset mgmtport-no-snat-services-v4 {
\t\ttype ipv4_addr . inet_proto . inet_service
\t\tcomment \"eTP:Local short-circuit not subject to management port SNAT (IPv4)\"
\t\telements = { 172.18.0.100 . tcp . 80 }
\t}",
    "\tset mgmtport-no-snat-services-v6 {
\t\ttype ipv6_addr . inet_proto . inet_service
\t\tcomment \"eTP:Local short-circuit not subject to management port SNAT (IPv6)\"
\t\telements = { fd00:172:18::100 . udp . 53 }
\t}",
    "\tset mgmtport-no-snat-subnets-v4 {
\t\ttype ipv4_addr
\t\tflags interval
\t\tcomment \"subnets not subject to management port SNAT (IPv4)\"
\t\telements = { 10.0.0.0/8, 192.168.10.0/24 }
\t}",
    "\tset mgmtport-no-snat-subnets-v6 {
\t\ttype ipv6_addr
\t\tflags interval
\t\tcomment \"subnets not subject to management port SNAT (IPv6)\"
\t\telements = { fd00:99::/64 }
\t}",
];

fn list_chain(netns: &Netns, chain: &str) -> String {
    netns.nft(&["list", "chain", "inet", "ovn-kubernetes", chain])
}

fn list_table(netns: &Netns) -> String {
    netns.nft(&["list", "table", "inet", "ovn-kubernetes"])
}

#[tokio::test]
async fn applies_upstreams_chain_and_reapplying_changes_nothing() {
    let netns = Netns::create(unique("udnmps"));
    let nft = NftCli::in_named_netns(&netns.name);
    let desired = mgmt_snat::desired(&inputs(some_elements()));
    mgmt_snat::apply(&nft, &desired).await.unwrap();
    assert_eq!(list_chain(&netns, mgmt_snat::CHAIN), LISTED_CHAIN);
    let table = list_table(&netns);
    for set in LISTED_SETS {
        assert!(table.contains(set), "{set}\nnot in\n{table}");
    }

    // Again: the same chain, sets and elements.
    mgmt_snat::apply(&nft, &desired).await.unwrap();
    assert_eq!(list_table(&netns), table);

    // Fewer elements: the sets hold exactly the new ones, the chain is the same.
    let mut fewer = some_elements();
    fewer.subnets = ["10.9.0.0/16".parse().unwrap()].into();
    fewer.services.clear();
    mgmt_snat::apply(&nft, &mgmt_snat::desired(&inputs(fewer)))
        .await
        .unwrap();
    let table = list_table(&netns);
    assert!(table.contains("elements = { 10.9.0.0/16 }"), "{table}");
    assert!(!table.contains("10.0.0.0/8"), "{table}");
    assert!(!table.contains("172.18.0.100"), "{table}");
    assert_eq!(table.matches("elements = ").count(), 2, "{table}");
    assert_eq!(list_chain(&netns, mgmt_snat::CHAIN), LISTED_CHAIN);
}

#[tokio::test]
async fn coexists_with_host_isolation_in_the_same_table() {
    let netns = Netns::create(unique("udnmps"));
    let nft = NftCli::in_named_netns(&netns.name);
    // Host isolation's chain and sets, one of its elements, and a chain of someone else.
    let spec = ChainSpec {
        ipv4: true,
        ipv6: true,
        kubelet: None,
    };
    nft.run(&chain_transaction(&spec)).await.unwrap();
    let mut extra = Transaction::new(table_id());
    extra
        .add(Element::set(
            "udn-pod-default-ips-v4",
            vec!["10.77.0.2".to_owned()],
        ))
        .add(Chain::named("someone-else"))
        .add(Rule::new("someone-else", "ip daddr 192.0.2.1 drop"));
    nft.run(&extra).await.unwrap();
    let isolation = list_chain(&netns, "udn-isolation");
    let isolation_ips = netns.nft(&[
        "list",
        "set",
        "inet",
        "ovn-kubernetes",
        "udn-pod-default-ips-v4",
    ]);
    assert!(isolation_ips.contains("10.77.0.2"), "{isolation_ips}");
    let foreign = list_chain(&netns, "someone-else");

    let desired = mgmt_snat::desired(&inputs(some_elements()));
    for _ in 0..2 {
        mgmt_snat::apply(&nft, &desired).await.unwrap();
        assert_eq!(list_chain(&netns, "udn-isolation"), isolation);
        assert_eq!(
            netns.nft(&[
                "list",
                "set",
                "inet",
                "ovn-kubernetes",
                "udn-pod-default-ips-v4"
            ]),
            isolation_ips
        );
        assert_eq!(list_chain(&netns, "someone-else"), foreign);
    }
    // Host isolation reloading its chain, then removing itself, leaves ours as it was.
    nft.run(&chain_transaction(&spec)).await.unwrap();
    assert_eq!(list_chain(&netns, mgmt_snat::CHAIN), LISTED_CHAIN);
    nft.run(&cleanup_transaction()).await.unwrap();
    assert_eq!(list_chain(&netns, mgmt_snat::CHAIN), LISTED_CHAIN);
    let table = list_table(&netns);
    assert!(!table.contains("udn-isolation"), "{table}");
    for set in LISTED_SETS {
        assert!(table.contains(set), "{set}\nnot in\n{table}");
    }
    assert_eq!(list_chain(&netns, "someone-else"), foreign);
}

/// A host namespace whose `ovn-k8s-mp0` (one end of a veth) leads to a pod namespace that
/// counts the echo requests it gets by source address, and routes replies to the host's
/// other addresses back through the port (so a ping answers with or without SNAT; the
/// counters say which source arrived).
struct MgmtNet {
    pod: Netns,
    host: Netns,
}

const POD_V4: &str = "10.244.1.3";
const POD_V6: &str = "fd00:10:244:1::3";
/// Host addresses on `lo`: one SNATed, one in the no-SNAT subnets.
const HOST_V4: &str = "172.18.0.10";
const HOST_V4_EXEMPT: &str = "172.18.0.11";
const HOST_V6: &str = "fd00:172:18::10";

/// The pod's counters: (name, match).
const COUNTERS: &[(&str, &str)] = &[
    ("v4-from-mp0", "ip saddr 10.244.1.2 icmp type echo-request"),
    (
        "v4-from-host",
        "ip saddr 172.18.0.10 icmp type echo-request",
    ),
    (
        "v4-from-host-exempt",
        "ip saddr 172.18.0.11 icmp type echo-request",
    ),
    (
        "v6-from-mp0",
        "ip6 saddr fd00:10:244:1::2 icmpv6 type echo-request",
    ),
    (
        "v6-from-host",
        "ip6 saddr fd00:172:18::10 icmpv6 type echo-request",
    ),
];

impl MgmtNet {
    fn start() -> Self {
        let base = unique("udnmps");
        let host = Netns::create(format!("{base}-h"));
        let pod = Netns::create(format!("{base}-p"));
        host.ip(&[
            "link", "add", MP0, "type", "veth", "peer", "name", "eth0", "netns", &pod.name,
        ]);
        host.ip(&["addr", "add", &format!("{MP0_V4}/24"), "dev", MP0]);
        host.ip(&["addr", "add", &format!("{MP0_V6}/64"), "dev", MP0, "nodad"]);
        for ip in [HOST_V4, HOST_V4_EXEMPT] {
            host.ip(&["addr", "add", &format!("{ip}/32"), "dev", "lo"]);
        }
        host.ip(&["addr", "add", &format!("{HOST_V6}/128"), "dev", "lo"]);
        pod.ip(&["addr", "add", &format!("{POD_V4}/24"), "dev", "eth0"]);
        pod.ip(&[
            "addr",
            "add",
            &format!("{POD_V6}/64"),
            "dev",
            "eth0",
            "nodad",
        ]);
        host.ip(&["link", "set", MP0, "up"]);
        pod.ip(&["link", "set", "eth0", "up"]);
        pod.ip(&["route", "add", "172.18.0.0/24", "via", MP0_V4]);
        pod.ip(&["-6", "route", "add", "fd00:172:18::/64", "via", MP0_V6]);
        let mut script = String::from(
            "add table inet probe\nadd chain inet probe in { type filter hook input priority 0 ; }\n",
        );
        for (name, matches) in COUNTERS {
            script.push_str(&format!("add counter inet probe {name}\n"));
            script.push_str(&format!(
                "add rule inet probe in {matches} counter name {name}\n"
            ));
        }
        let mut load = pod
            .command("nft", &["-f", "-"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        load.stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        assert!(load.wait().unwrap().success(), "{script}");
        Self { pod, host }
    }

    /// One ping from `source` in the host namespace; whether it was answered.
    fn ping(&self, source: &str, target: &str) -> bool {
        self.host
            .command("ping", &["-c", "1", "-W", "5", "-q", "-I", source, target])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    }

    fn packets(&self, counter: &str) -> u64 {
        let listed = self.pod.nft(&["list", "counter", "inet", "probe", counter]);
        listed
            .split_whitespace()
            .skip_while(|word| *word != "packets")
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no packet count in {listed}"))
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        COUNTERS
            .iter()
            .map(|(name, _)| (*name, self.packets(name)))
            .collect()
    }
}

#[tokio::test]
async fn host_traffic_leaving_through_mp0_gets_the_ports_address() {
    let net = MgmtNet::start();
    let nft = NftCli::in_named_netns(&net.host.name);
    let no_snat = NoSnatElements {
        subnets: [format!("{HOST_V4_EXEMPT}/32").parse().unwrap()].into(),
        ..NoSnatElements::default()
    };
    mgmt_snat::apply(&nft, &mgmt_snat::desired(&inputs(no_snat)))
        .await
        .unwrap();

    assert!(net.ping(HOST_V4, POD_V4), "IPv4 ping from {HOST_V4}");
    assert!(
        net.ping(HOST_V4_EXEMPT, POD_V4),
        "IPv4 ping from {HOST_V4_EXEMPT}"
    );
    assert!(net.ping(HOST_V6, POD_V6), "IPv6 ping from {HOST_V6}");
    // The port's own address is left as it is (and counted as from the port).
    assert!(net.ping(MP0_V4, POD_V4), "IPv4 ping from {MP0_V4}");
    assert_eq!(
        net.counts(),
        [
            ("v4-from-mp0", 2),
            ("v4-from-host", 0),
            ("v4-from-host-exempt", 1),
            ("v6-from-mp0", 1),
            ("v6-from-host", 0),
        ]
    );
}

#[tokio::test]
async fn deletes_the_legacy_iptables_chain_where_iptables_is_installed() {
    let netns = Netns::create(unique("udnmps"));
    let legacy = LegacyIptables::in_named_netns(&netns.name);
    if !installed("iptables") || !installed("ip6tables") {
        // Nothing to test against; the agent skips the clean-up the same way.
        let outcomes = legacy.delete_chain(MP0).await;
        assert!(
            outcomes
                .iter()
                .all(|(_, outcome)| *outcome == LegacyOutcome::NotInstalled),
            "{outcomes:?}"
        );
        return;
    }
    // Nothing there: nothing done, and nothing created.
    let outcomes = legacy.delete_chain(MP0).await;
    assert_eq!(
        outcomes,
        [
            ("iptables".to_owned(), LegacyOutcome::Absent),
            ("ip6tables".to_owned(), LegacyOutcome::Absent),
        ]
    );
    assert_eq!(netns.nft(&["list", "ruleset"]), "");

    // What an older ovnkube-node left: the chain and the jump to it, in both families.
    for (program, address) in [("iptables", MP0_V4), ("ip6tables", MP0_V6)] {
        let iptables = |args: &[&str]| {
            let mut all = vec![program, "-t", "nat"];
            all.extend_from_slice(args);
            let status = netns.command(all[0], &all[1..]).status().unwrap();
            assert!(status.success(), "{all:?}");
        };
        iptables(&["-N", mgmt_snat::LEGACY_CHAIN]);
        iptables(&[
            "-A",
            mgmt_snat::LEGACY_CHAIN,
            "-o",
            MP0,
            "-j",
            "SNAT",
            "--to-source",
            address,
        ]);
        iptables(&[
            "-A",
            "POSTROUTING",
            "-o",
            MP0,
            "-j",
            mgmt_snat::LEGACY_CHAIN,
        ]);
    }
    let outcomes = legacy.delete_chain(MP0).await;
    assert_eq!(
        outcomes,
        [
            ("iptables".to_owned(), LegacyOutcome::Deleted),
            ("ip6tables".to_owned(), LegacyOutcome::Deleted),
        ]
    );
    for program in ["iptables-save", "ip6tables-save"] {
        let output = netns.command(program, &["-t", "nat"]).output().unwrap();
        let saved = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{program}");
        assert!(saved.contains(":POSTROUTING"), "{saved}");
        assert!(!saved.contains(mgmt_snat::LEGACY_CHAIN), "{saved}");
    }
    assert_eq!(
        legacy.delete_chain(MP0).await,
        [
            ("iptables".to_owned(), LegacyOutcome::Absent),
            ("ip6tables".to_owned(), LegacyOutcome::Absent),
        ]
    );
}

/// Whether `program` is an executable in a `PATH` directory.
fn installed(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(program))
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
    })
}
