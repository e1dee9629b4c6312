//! The UDN service mark chains and maps against the real nft, each test in its own throwaway
//! network namespace: the ruleset loads, the maps' elements follow the Services and the
//! networks, a steady state sends nothing, a flushed chain is repaired, the other owners of
//! the shared table are untouched, and a host packet to a UDN NodePort or external IP really
//! gets the network's mark (another port does not).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod support_isolation;

use support_isolation::{Netns, unique};
use udn_node::agent::mgmt_snat::{self, MgmtSnatInputs, NoSnatElements};
use udn_node::agent::udn_service_mark::{
    MARK_CHAIN, MarkedUdn, ServiceMarkInputs, ServiceMarkSync, desired,
};
use udn_node::nft::NftCli;
use udn_node::services::{Protocol, ServiceNetwork, ServicePortView, ServiceView};

fn service(name: &str, network: &str, node_port: u16, external_ip: &str) -> ServiceView {
    ServiceView {
        namespace: "ns".to_owned(),
        name: name.to_owned(),
        network: ServiceNetwork::Udn(network.to_owned()),
        cluster_ips: vec!["10.96.0.5".parse().unwrap()],
        ports: vec![ServicePortView {
            protocol: Protocol::Udp,
            port: 53,
            node_port: Some(node_port),
        }],
        external_ips: vec![external_ip.parse().unwrap()],
        ingress_ips: vec![],
        external_traffic_local: false,
    }
}

fn udn(network: &str, network_id: u32) -> MarkedUdn {
    MarkedUdn {
        network: network.to_owned(),
        network_id,
        patched: true,
    }
}

fn list_table(netns: &Netns) -> String {
    netns.nft(&["list", "table", "inet", "ovn-kubernetes"])
}

fn map_elements(netns: &Netns, map: &str) -> String {
    let listed = netns.nft(&["list", "map", "inet", "ovn-kubernetes", map]);
    listed
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("type") && !line.starts_with("comment"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn loads_follows_services_and_sends_nothing_at_steady_state() {
    let netns = Netns::create(unique("udnsvm"));
    let nft = NftCli::in_named_netns(&netns.name);
    // The management port's chain and sets are in the same table first.
    let snat = mgmt_snat::desired(&MgmtSnatInputs {
        interface: "ovn-k8s-mp0".to_owned(),
        ipv4: Some("10.244.1.2".parse().unwrap()),
        ipv6: None,
        no_snat: NoSnatElements::default(),
    });
    mgmt_snat::apply(&nft, &snat).await.unwrap();
    let snat_chain = netns.nft(&["list", "chain", "inet", "ovn-kubernetes", mgmt_snat::CHAIN]);

    let mut inputs = ServiceMarkInputs {
        udns: vec![udn("blue_net", 1), udn("red_net", 2)],
        services: vec![
            service("web", "blue_net", 30053, "192.0.2.50"),
            service("dns", "red_net", 30054, "fd00:99::53"),
        ],
    };
    let mut sync = ServiceMarkSync::default();
    let sent = sync.ensure(&nft, &desired(&inputs), false).await.unwrap();
    assert!(sent > 0);
    let table = list_table(&netns);
    for expected in [
        "chain udn-service-prerouting {",
        "type filter hook prerouting priority mangle; policy accept;",
        "iifname != \"ovn-k8s-mp0\" jump udn-service-mark",
        "chain udn-service-output {",
        "fib daddr type local meta l4proto . th dport vmap @udn-mark-nodeports",
        "chain udn-mark-0x1001 {",
        "comment \"blue_net: UDN packet marking\"",
        "meta mark set 0x00001001",
        "chain udn-mark-0x1002 {",
    ] {
        assert!(table.contains(expected), "{expected}\nnot in\n{table}");
    }
    let nodeports = map_elements(&netns, "udn-mark-nodeports");
    assert!(
        nodeports.contains("udp . 30053 : jump udn-mark-0x1001"),
        "{nodeports}"
    );
    assert!(
        nodeports.contains("udp . 30054 : jump udn-mark-0x1002"),
        "{nodeports}"
    );
    let v4 = map_elements(&netns, "udn-mark-external-ips-v4");
    assert!(
        v4.contains("192.0.2.50 . udp . 53 : jump udn-mark-0x1001"),
        "{v4}"
    );
    let v6 = map_elements(&netns, "udn-mark-external-ips-v6");
    assert!(
        v6.contains("fd00:99::53 . udp . 53 : jump udn-mark-0x1002"),
        "{v6}"
    );

    // Steady state: nothing is sent, and nft holds the same.
    assert_eq!(
        sync.ensure(&nft, &desired(&inputs), false).await.unwrap(),
        0
    );
    assert_eq!(sync.ensure(&nft, &desired(&inputs), true).await.unwrap(), 0);
    assert_eq!(list_table(&netns), table);

    // red goes with its Service: its elements and its chain go, blue's stay.
    inputs.udns.truncate(1);
    inputs.services.truncate(1);
    let sent = sync.ensure(&nft, &desired(&inputs), false).await.unwrap();
    assert_eq!(
        sent,
        2 + 2,
        "two elements, then add-then-delete of the chain"
    );
    let table = list_table(&netns);
    assert!(!table.contains("udn-mark-0x1002"), "{table}");
    assert!(!table.contains("30054"), "{table}");
    assert!(
        table.contains("udp . 30053 : jump udn-mark-0x1001"),
        "{table}"
    );
    // The management port's chain was never touched.
    assert_eq!(
        netns.nft(&["list", "chain", "inet", "ovn-kubernetes", mgmt_snat::CHAIN]),
        snat_chain
    );

    // Someone flushes the mark chain: the drift check applies everything again.
    netns.nft(&["flush", "chain", "inet", "ovn-kubernetes", MARK_CHAIN]);
    assert!(sync.ensure(&nft, &desired(&inputs), true).await.unwrap() > 0);
    assert_eq!(list_table(&netns), table);

    // A restarted agent (empty memory) with a network that went while it was down: the
    // stale chain is deleted with the full sync, nothing else changes.
    netns.nft(&["add", "chain", "inet", "ovn-kubernetes", "udn-mark-0x1009"]);
    let mut restarted = ServiceMarkSync::default();
    restarted
        .ensure(&nft, &desired(&inputs), false)
        .await
        .unwrap();
    assert_eq!(list_table(&netns), table);
}

/// A host packet to a blue NodePort on a local address, and one to blue's external IP, get
/// blue's mark in the output hook; a packet to another port gets none.
#[tokio::test]
async fn host_packets_to_a_udn_service_get_the_networks_mark() {
    let netns = Netns::create(unique("udnsvm"));
    let nft = NftCli::in_named_netns(&netns.name);
    // A routed uplink (this kernel has no dummy links: a veth pair).
    netns.ip(&["link", "add", "d0", "type", "veth", "peer", "name", "d1"]);
    netns.ip(&["addr", "add", "198.51.100.1/24", "dev", "d0"]);
    netns.ip(&["link", "set", "d0", "up"]);
    netns.ip(&["link", "set", "d1", "up"]);
    netns.ip(&["route", "add", "default", "via", "198.51.100.254"]);
    let inputs = ServiceMarkInputs {
        udns: vec![udn("blue_net", 1)],
        services: vec![service("web", "blue_net", 30053, "192.0.2.50")],
    };
    ServiceMarkSync::default()
        .ensure(&nft, &desired(&inputs), false)
        .await
        .unwrap();
    // Counters after the mangle hook: by destination and mark.
    netns.nft(&["add", "table", "inet", "probe"]);
    netns.nft(&["add chain inet probe out { type filter hook output priority 0 ; }"]);
    for (dst, port) in [
        ("127.0.0.1", 30053),
        ("127.0.0.1", 30099),
        ("192.0.2.50", 53),
    ] {
        netns.nft(&[&format!(
            "add rule inet probe out ip daddr {dst} udp dport {port} meta mark 0x1001 counter"
        )]);
        netns.nft(&[&format!(
            "add rule inet probe out ip daddr {dst} udp dport {port} meta mark 0 counter"
        )]);
    }
    for (dst, port) in [
        ("127.0.0.1", 30053),
        ("127.0.0.1", 30099),
        ("192.0.2.50", 53),
    ] {
        let status = netns
            .command(
                "bash",
                &["-c", &format!("echo probe > /dev/udp/{dst}/{port}")],
            )
            .status()
            .unwrap();
        assert!(status.success(), "sending to {dst}:{port}");
    }
    let listed = netns.nft(&["list", "chain", "inet", "probe", "out"]);
    let packets = |dst: &str, port: u16, mark: &str| -> u64 {
        let needle = format!("ip daddr {dst} udp dport {port} meta mark {mark} counter packets ");
        let line = listed
            .lines()
            .find(|line| line.contains(&needle))
            .unwrap_or_else(|| panic!("{needle} not in\n{listed}"));
        let rest = &line[line.find(&needle).unwrap() + needle.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    assert_eq!(packets("127.0.0.1", 30053, "0x00001001"), 1, "{listed}");
    assert_eq!(packets("127.0.0.1", 30053, "0x00000000"), 0, "{listed}");
    assert_eq!(packets("192.0.2.50", 53, "0x00001001"), 1, "{listed}");
    assert_eq!(packets("127.0.0.1", 30099, "0x00001001"), 0, "{listed}");
    assert_eq!(packets("127.0.0.1", 30099, "0x00000000"), 1, "{listed}");
}
