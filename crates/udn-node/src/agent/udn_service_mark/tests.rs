//! The chains and maps against upstream's texts; elements per network, family and protocol;
//! incremental plans; what the sync sends and when.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::nft::RecordingNft;
use crate::services::{Protocol, ServicePortView};

/// Upstream's objects (`gateway_init_linux_test.go` `nftablesRulesUDN`, HEAD 8871cd9), which
/// `configureUDNServicesNFTables` writes.
const UPSTREAM_OBJECTS: &[&str] = &[
    "add map inet ovn-kubernetes udn-mark-nodeports { type inet_proto . inet_service : verdict ; comment \"UDN services NodePorts mark\" ; }",
    "add map inet ovn-kubernetes udn-mark-external-ips-v4 { type ipv4_addr . inet_proto . inet_service : verdict ; comment \"UDN services External IPs mark (IPv4)\" ; }",
    "add map inet ovn-kubernetes udn-mark-external-ips-v6 { type ipv6_addr . inet_proto . inet_service : verdict ; comment \"UDN services External IPs mark (IPv6)\" ; }",
    "add chain inet ovn-kubernetes udn-service-mark { comment \"UDN services packet mark\" ; }",
    "add rule inet ovn-kubernetes udn-service-mark fib daddr type local meta l4proto . th dport vmap @udn-mark-nodeports",
    "add rule inet ovn-kubernetes udn-service-mark ip daddr . meta l4proto . th dport vmap @udn-mark-external-ips-v4",
    "add rule inet ovn-kubernetes udn-service-mark ip6 daddr . meta l4proto . th dport vmap @udn-mark-external-ips-v6",
    "add chain inet ovn-kubernetes udn-service-prerouting { type filter hook prerouting priority -150 ; comment \"UDN services packet mark - Prerouting\" ; }",
    "add rule inet ovn-kubernetes udn-service-prerouting iifname != ovn-k8s-mp0 jump udn-service-mark",
    "add chain inet ovn-kubernetes udn-service-output { type filter hook output priority -150 ; comment \"UDN services packet mark - Output\" ; }",
    "add rule inet ovn-kubernetes udn-service-output jump udn-service-mark",
];

fn udn(network: &str, network_id: u32, patched: bool) -> MarkedUdn {
    MarkedUdn {
        network: network.to_owned(),
        network_id,
        patched,
    }
}

fn service(name: &str, network: &str, node_port: Option<u16>, ips: &[&str]) -> ServiceView {
    ServiceView {
        namespace: "ns".to_owned(),
        name: name.to_owned(),
        network: if network.is_empty() {
            ServiceNetwork::Default
        } else {
            ServiceNetwork::Udn(network.to_owned())
        },
        cluster_ips: vec!["10.96.0.5".parse().unwrap()],
        ports: vec![
            ServicePortView {
                protocol: Protocol::Tcp,
                port: 80,
                node_port,
            },
            ServicePortView {
                protocol: Protocol::Udp,
                port: 53,
                node_port: node_port.map(|p| p + 1),
            },
        ],
        external_ips: ips.iter().map(|ip| ip.parse().unwrap()).collect(),
        ingress_ips: vec![],
        external_traffic_local: false,
    }
}

fn blue_and_red() -> ServiceMarkInputs {
    ServiceMarkInputs {
        udns: vec![udn("blue_net", 1, true), udn("red_net", 2, false)],
        services: vec![
            service("web", "blue_net", Some(30080), &["1.1.1.1", "fd00::1"]),
            service("default-web", "", Some(30090), &["2.2.2.2"]),
            service("red-web", "red_net", Some(30100), &["3.3.3.3"]),
        ],
    }
}

fn render(tx: &Transaction) -> String {
    tx.render().unwrap()
}

#[test]
fn static_objects_are_upstreams() {
    let text = render(&full_transaction(&DesiredServiceMark::default(), &[]));
    let lines: Vec<&str> = text.lines().collect();
    for expected in UPSTREAM_OBJECTS {
        assert!(lines.contains(expected), "missing {expected}\n{text}");
    }
    // Only our own chains and maps are flushed; nothing is deleted.
    let flushed: Vec<&str> = lines
        .iter()
        .filter_map(|line| line.strip_prefix("flush "))
        .collect();
    assert_eq!(
        flushed,
        [
            "chain inet ovn-kubernetes udn-service-mark",
            "chain inet ovn-kubernetes udn-service-prerouting",
            "chain inet ovn-kubernetes udn-service-output",
            "map inet ovn-kubernetes udn-mark-nodeports",
            "map inet ovn-kubernetes udn-mark-external-ips-v4",
            "map inet ovn-kubernetes udn-mark-external-ips-v6",
        ]
    );
    assert!(!lines.iter().any(|line| line.starts_with("delete")));
}

#[test]
fn a_patched_udns_services_jump_to_its_mark_chain() {
    let desired = desired(&blue_and_red());
    // Both networks have their chain; only blue (patched) has elements; the default
    // network's Service has none.
    assert_eq!(
        desired.chains.keys().collect::<Vec<_>>(),
        ["udn-mark-0x1001", "udn-mark-0x1002"]
    );
    let text = render(&full_transaction(&desired, &[]));
    insta::assert_snapshot!(text);
    for expected in [
        "add chain inet ovn-kubernetes udn-mark-0x1001 { comment \"blue_net: UDN packet marking\" ; }",
        "add rule inet ovn-kubernetes udn-mark-0x1001 meta mark set 0x1001",
        "add element inet ovn-kubernetes udn-mark-nodeports { tcp . 30080 : jump udn-mark-0x1001 }",
        "add element inet ovn-kubernetes udn-mark-nodeports { udp . 30081 : jump udn-mark-0x1001 }",
        "add element inet ovn-kubernetes udn-mark-external-ips-v4 { 1.1.1.1 . tcp . 80 : jump udn-mark-0x1001 }",
        "add element inet ovn-kubernetes udn-mark-external-ips-v6 { fd00::1 . udp . 53 : jump udn-mark-0x1001 }",
    ] {
        assert!(
            text.lines().any(|line| line == expected),
            "missing {expected}\n{text}"
        );
    }
    assert_eq!(text.matches("add element").count(), 6, "{text}");
}

#[test]
fn updates_send_only_the_differences() {
    let inputs = blue_and_red();
    let before = desired(&inputs);
    assert!(update_transaction(&before, &before).is_empty());

    // A Service goes: exactly its elements are deleted.
    let mut fewer = inputs.clone();
    fewer.services.retain(|service| service.name != "web");
    let tx = update_transaction(&before, &desired(&fewer));
    let text = render(&tx);
    assert_eq!(tx.len(), 6, "{text}");
    assert!(
        text.lines().all(|line| line.starts_with("delete element")),
        "{text}"
    );
    assert!(text.contains("delete element inet ovn-kubernetes udn-mark-nodeports { tcp . 30080 }"));

    // red gets its patch port: its Service's elements are added, nothing else.
    let mut red = inputs.clone();
    red.udns[1].patched = true;
    let text = render(&update_transaction(&before, &desired(&red)));
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(
        text.lines()
            .all(|line| line.starts_with("add element")
                && line.ends_with(": jump udn-mark-0x1002 }"))
    );

    // blue goes: its elements, then its chain (add-then-delete, so a missing one is fine).
    let mut no_blue = inputs;
    no_blue.udns.remove(0);
    let text = render(&update_transaction(&before, &desired(&no_blue)));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8, "{text}");
    assert!(
        lines[..6]
            .iter()
            .all(|line| line.starts_with("delete element"))
    );
    assert_eq!(
        &lines[6..],
        [
            "add chain inet ovn-kubernetes udn-mark-0x1001",
            "delete chain inet ovn-kubernetes udn-mark-0x1001",
        ]
    );
}

#[test]
fn a_key_wanted_by_two_services_keeps_the_first() {
    let mut inputs = blue_and_red();
    inputs.udns[1].patched = true;
    inputs.services[2].external_ips = vec!["1.1.1.1".parse().unwrap()];
    let desired = desired(&inputs);
    let key = (
        MarkMap::ExternalIpsV4,
        vec!["1.1.1.1".to_owned(), "tcp".to_owned(), "80".to_owned()],
    );
    assert_eq!(desired.elements[&key], "udn-mark-0x1001");
}

#[test]
fn stale_network_chains_are_found_and_deleted_at_a_full_sync() {
    let listing = "table inet ovn-kubernetes {\n\tchain udn-mark-0x1001 {\n\t\tcomment \"blue_net: UDN packet marking\"\n\t\tmeta mark set 0x00001001\n\t}\n\tchain udn-mark-0x1009 {\n\t}\n\tchain udn-mark-nodeports-like {\n\t}\n\tmap udn-mark-nodeports {\n\t}\n}\n";
    let stale = listed_network_chains(listing);
    assert_eq!(stale, ["udn-mark-0x1001", "udn-mark-0x1009"]);
    let text = render(&full_transaction(&desired(&blue_and_red()), &stale));
    assert!(text.ends_with(
        "add chain inet ovn-kubernetes udn-mark-0x1009\ndelete chain inet ovn-kubernetes udn-mark-0x1009\n"
    ));
    assert!(!text.contains("delete chain inet ovn-kubernetes udn-mark-0x1001"));
}

#[tokio::test]
async fn the_sync_sends_nothing_at_steady_state_and_repairs_drift() {
    let nft = RecordingNft::new();
    let mut sync = ServiceMarkSync::default();
    let chain = ListTarget::Chain(table_id(), MARK_CHAIN.to_owned());
    nft.set_listing(&chain, Some("listed".to_owned()));
    let inputs = blue_and_red();
    let wanted = desired(&inputs);

    let sent = sync.ensure(&nft, &wanted, false).await.unwrap();
    let runs = nft.take_runs();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].contains("add chain inet ovn-kubernetes udn-service-prerouting"));
    assert_eq!(sent, full_transaction(&wanted, &[]).len());

    // Nothing changed: nothing sent, with or without the drift check.
    assert_eq!(sync.ensure(&nft, &wanted, false).await.unwrap(), 0);
    assert_eq!(sync.ensure(&nft, &wanted, true).await.unwrap(), 0);
    assert!(nft.take_runs().is_empty());

    // A Service goes: only its elements.
    let mut fewer = inputs;
    fewer.services.retain(|service| service.name != "web");
    let fewer = desired(&fewer);
    assert_eq!(sync.ensure(&nft, &fewer, false).await.unwrap(), 6);
    assert!(nft.take_runs()[0].starts_with("delete element"));

    // The chain lists differently (flushed by someone): everything again.
    nft.set_listing(&chain, Some("flushed".to_owned()));
    assert!(sync.ensure(&nft, &fewer, true).await.unwrap() > 6);
    assert!(nft.take_runs()[0].contains("flush map inet ovn-kubernetes udn-mark-nodeports"));

    // A failed run is not remembered: the next call sends everything.
    nft.fail_when(crate::nft::FailOn::Run, "add element", "no");
    assert!(sync.ensure(&nft, &wanted, false).await.is_err());
    nft.clear_failures();
    nft.take_runs();
    sync.ensure(&nft, &wanted, false).await.unwrap();
    assert!(nft.take_runs()[0].starts_with("add table"));
}
