//! The host-side plan/apply pieces against the real kernel, in a throwaway netns with a veth
//! pair: link MTU/up, exact address sets, routes of a table scope, rules of owned
//! priorities, permanent neighbors and sysctls. Each reconcile is repeated to show it
//! converges to an empty plan, and the result is read back with `ip -j`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support_wiring;

use std::collections::BTreeSet;

use ipnetwork::IpNetwork;
use support_wiring::TestNetns;
use udn_node::netlink::address::{AddressOp, DesiredAddresses, reconcile_addresses};
use udn_node::netlink::in_netns;
use udn_node::netlink::link::{DesiredLink, LinkOp, reconcile_link};
use udn_node::netlink::neighbor::{Neighbor, ensure_neighbor};
use udn_node::netlink::route::{DesiredRoutes, RouteKind, RouteSpec, reconcile_routes};
use udn_node::netlink::rule::{DesiredRules, IpFamily, Rule, RuleOp, reconcile_rules};
use udn_node::netlink::sysctl::Sysctl;

fn net(text: &str) -> IpNetwork {
    text.parse().unwrap()
}

fn with_veth(tag: &str) -> TestNetns {
    let netns = TestNetns::new(tag);
    netns.ok(&[
        "ip", "link", "add", "mp", "type", "veth", "peer", "name", "mp-peer",
    ]);
    netns.ok(&["ip", "link", "set", "mp-peer", "up"]);
    netns
}

#[tokio::test]
async fn link_and_exact_address_set_converge() {
    let netns = with_veth("addr");
    netns.ok(&["ip", "addr", "add", "10.9.0.2/24", "dev", "mp"]);
    let (first, second) = in_netns(&netns.path(), |netlink| async move {
        let link = DesiredLink::up("mp", Some(1400));
        let link_ops = (
            reconcile_link(&netlink, &link).await?,
            reconcile_link(&netlink, &link).await?,
        );
        let desired = DesiredAddresses {
            link: "mp".into(),
            addresses: BTreeSet::from([net("10.244.1.2/24"), net("fd00:10:244:1::2/64")]),
            nodad: true,
        };
        let first = reconcile_addresses(&netlink, &desired).await?;
        let second = reconcile_addresses(&netlink, &desired).await?;
        assert_eq!(
            link_ops,
            (vec![LinkOp::SetMtu(1400), LinkOp::SetUp], vec![])
        );
        Ok((first, second))
    })
    .await
    .unwrap();
    assert_eq!(
        first,
        [
            AddressOp::Remove(net("10.9.0.2/24")),
            AddressOp::Add(net("10.244.1.2/24")),
            AddressOp::Add(net("fd00:10:244:1::2/64")),
        ]
    );
    assert_eq!(second, []);
    let addresses = netns.ok(&["ip", "-o", "addr", "show", "dev", "mp"]);
    assert!(addresses.contains("inet 10.244.1.2/24"), "{addresses}");
    assert!(
        addresses.contains("inet6 fd00:10:244:1::2/64"),
        "{addresses}"
    );
    assert!(!addresses.contains("10.9.0.2"), "{addresses}");
    let links = netns.ip_json(&["link", "show", "mp"]);
    assert_eq!(links[0]["mtu"], 1400);
}

#[tokio::test]
async fn routes_of_a_table_converge_and_leave_other_scopes_alone() {
    let netns = with_veth("route");
    netns.ok(&["ip", "link", "set", "mp", "up"]);
    netns.ok(&["ip", "addr", "add", "10.244.1.2/24", "dev", "mp"]);
    netns.ok(&["ip", "addr", "add", "fd00::2/64", "dev", "mp", "nodad"]);
    netns.ok(&[
        "ip",
        "route",
        "add",
        "10.50.0.0/16",
        "via",
        "10.244.1.1",
        "table",
        "1005",
    ]);
    netns.ok(&["ip", "route", "add", "10.60.0.0/16", "via", "10.244.1.1"]);
    let mut cluster = RouteSpec::via(
        net("10.244.0.0/16"),
        Some("10.244.1.1".parse().unwrap()),
        "mp",
    );
    cluster.table = 1005;
    cluster.mtu = Some(1300);
    let unreachable = |dest: &str| RouteSpec {
        dest: net(dest),
        gateway: None,
        link: None,
        table: 1005,
        mtu: None,
        src: None,
        kind: RouteKind::Unreachable,
        metric: Some(4_278_198_272),
    };
    let mut v6 = RouteSpec::via(net("fd69::3/128"), Some("fd00::1".parse().unwrap()), "mp");
    v6.table = 1005;
    let desired = DesiredRoutes {
        table: 1005,
        link: None,
        routes: BTreeSet::from([cluster, unreachable("0.0.0.0/0"), unreachable("::/0"), v6]),
    };
    let (first, second) = in_netns(&netns.path(), move |netlink| async move {
        Ok((
            reconcile_routes(&netlink, &desired).await?,
            reconcile_routes(&netlink, &desired).await?,
        ))
    })
    .await
    .unwrap();
    assert_eq!(first.len(), 5, "{first:?}");
    assert_eq!(second, [], "second pass: {second:#?}");
    let v4 = netns.ok(&["ip", "route", "show", "table", "1005"]);
    assert!(
        v4.contains("10.244.0.0/16 via 10.244.1.1 dev mp proto static mtu 1300"),
        "{v4}"
    );
    assert!(
        v4.contains("unreachable default proto static metric 4278198272"),
        "{v4}"
    );
    assert!(!v4.contains("10.50.0.0"), "{v4}");
    let v6 = netns.ok(&["ip", "-6", "route", "show", "table", "1005"]);
    assert!(
        v6.contains("fd69::3 via fd00::1 dev mp proto static"),
        "{v6}"
    );
    assert!(
        v6.contains("unreachable default dev lo proto static metric 4278198272"),
        "{v6}"
    );
    let main = netns.ok(&["ip", "route", "show"]);
    assert!(
        main.contains("10.60.0.0/16 via 10.244.1.1 dev mp"),
        "{main}"
    );
}

#[tokio::test]
async fn rules_of_owned_priorities_converge() {
    let netns = TestNetns::new("rule");
    netns.ok(&[
        "ip", "rule", "add", "prio", "2000", "to", "1.2.3.4", "lookup", "1006",
    ]);
    netns.ok(&[
        "ip", "rule", "add", "prio", "2001", "to", "1.2.3.5", "lookup", "1006",
    ]);
    let udn = Rule::fwmark(IpFamily::V4, 2000, 0x1001, 1005);
    let masq = Rule::to(2000, net("169.254.169.12/32"), 1005);
    let masq6 = Rule::to(2000, net("fd69::12/128"), 1005);
    let desired = DesiredRules {
        priorities: BTreeSet::from([2000]),
        rules: BTreeSet::from([udn.clone(), masq.clone(), masq6.clone()]),
    };
    let (first, second) = in_netns(&netns.path(), move |netlink| async move {
        Ok((
            reconcile_rules(&netlink, &desired).await?,
            reconcile_rules(&netlink, &desired).await?,
        ))
    })
    .await
    .unwrap();
    assert_eq!(
        first,
        [
            RuleOp::Remove(Rule::to(2000, net("1.2.3.4/32"), 1006)),
            RuleOp::Add(masq),
            RuleOp::Add(udn),
            RuleOp::Add(masq6),
        ]
    );
    assert_eq!(second, []);
    let rules = netns.ok(&["ip", "rule", "show"]);
    for expected in [
        "2000:\tfrom all fwmark 0x1001 lookup 1005",
        "2000:\tfrom all to 169.254.169.12 lookup 1005",
        "2001:\tfrom all to 1.2.3.5 lookup 1006",
    ] {
        assert!(rules.contains(expected), "{expected:?} not in {rules}");
    }
    assert!(!rules.contains("1.2.3.4"), "{rules}");
    let rules6 = netns.ok(&["ip", "-6", "rule", "show"]);
    assert!(
        rules6.contains("2000:\tfrom all to fd69::12 lookup 1005"),
        "{rules6}"
    );
}

#[tokio::test]
async fn permanent_neighbors_and_sysctls_converge() {
    let netns = with_veth("neigh");
    let neighbor = Neighbor {
        link: "mp".into(),
        ip: "10.244.1.1".parse().unwrap(),
        mac: "0a:58:0a:f4:01:01".parse().unwrap(),
    };
    let (neighbors, sysctls) = in_netns(&netns.path(), move |netlink| async move {
        let neighbors = (
            ensure_neighbor(&netlink, &neighbor).await?,
            ensure_neighbor(&netlink, &neighbor).await?,
        );
        let forwarding = Sysctl::interface(IpFamily::V4, "mp", "forwarding");
        let rp_filter = Sysctl::interface(IpFamily::V4, "mp", "rp_filter");
        let sysctls = (
            forwarding.ensure(netlink.netns(), "1")?,
            forwarding.ensure(netlink.netns(), "1")?,
            rp_filter.ensure(netlink.netns(), "2")?,
        );
        Ok((neighbors, sysctls))
    })
    .await
    .unwrap();
    assert_eq!(neighbors, (true, false));
    assert_eq!(sysctls, (true, false, true));
    let neigh = netns.ok(&["ip", "neigh", "show", "dev", "mp"]);
    assert!(
        neigh.contains("10.244.1.1 lladdr 0a:58:0a:f4:01:01 PERMANENT"),
        "{neigh}"
    );
    let forwarding = netns.ok(&["cat", "/proc/sys/net/ipv4/conf/mp/forwarding"]);
    assert_eq!(forwarding.trim(), "1");
    // The worker wrote the test netns's sysctl, not the host's.
    let host_has_mp = std::path::Path::new("/proc/sys/net/ipv4/conf/mp").exists();
    assert!(!host_has_mp);
}
