//! The gateway bridge's flow table against a real ovs-vswitchd (a udn-ovn-lab node's breth0,
//! userspace datapath): applied it is exactly the desired table, a second sync sends nothing,
//! removing a network removes only its flows, what someone else changed is put back, every
//! text variant (dual-stack, VLAN, per-Service flows) is accepted by OVS, Service flows
//! converge and go with their Service, UDN patch ports get no-flood, and the masquerade
//! neighbours converge.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gateway_support;

use std::collections::BTreeSet;
use std::time::Duration;

use gateway_support::*;
use ipnetwork::IpNetwork;
use udn_api::cluster::ClusterConfig;
use udn_node::gateway::{
    DEFAULT_OPENFLOW_COOKIE, GatewayCluster, GatewaySync, desired_flows, plan_flows,
    service_cookie, sync_flows, sync_neighbors,
};
use udn_node::netlink::{NetnsPath, in_netns};
use udn_node::services::{Protocol, ServiceNetwork};
use udn_ovn_lab::{Lab, LabConfig};

fn lab() -> Lab {
    Lab::start(LabConfig::with_nodes(1)).unwrap()
}

#[test]
fn applied_table_is_exactly_the_desired_one_and_converges() {
    let lab = lab();
    let node = lab.node("node1").unwrap();
    let ofctl = ofctl(node);
    let default = add_internal_port(node, "gw-default");
    let blue = add_internal_port(node, "gw-blue");
    let red = add_internal_port(node, "gw-red");
    // A standalone bridge starts with NORMAL only.
    assert_eq!(dump(node), ["priority=0 actions=NORMAL"]);

    let both = inputs(
        node,
        default,
        vec![udn("blue_net", 1, Some(blue)), udn("red_net", 2, Some(red))],
    );
    let desired = desired_flows(&both).unwrap();
    let first = block_on(sync_flows(&ofctl, &both)).unwrap();
    assert!(!first.diff.add.is_empty());
    assert_eq!(first.diff.remove, Vec::<String>::new());
    // Exactly the desired flows: diff-flows finds nothing either way, and the counts agree
    // (the only flow without our cookie is NORMAL).
    assert!(
        block_on(plan_flows(&ofctl, "breth0", &desired))
            .unwrap()
            .is_empty()
    );
    let flows = dump(node);
    assert_eq!(flows.len(), desired.len(), "{flows:#?}");
    let cookie = format!("cookie={DEFAULT_OPENFLOW_COOKIE}");
    assert_eq!(
        flows.iter().filter(|flow| !flow.contains(&cookie)).count(),
        1
    );
    let ours = node
        .ofctl(&[
            "dump-flows",
            "breth0",
            &format!("cookie={DEFAULT_OPENFLOW_COOKIE}/-1"),
        ])
        .unwrap();
    assert_eq!(
        ours.lines().filter(|line| line.contains(&cookie)).count(),
        desired.len() - 1
    );
    // The UDN patch ports are no-flood, the default network's is not.
    assert_eq!(first.no_flood_set.len(), 2);
    let no_flood = block_on(ofctl.no_flood_ports("breth0")).unwrap();
    assert_eq!(no_flood, BTreeSet::from([blue, red]));

    // A second sync changes nothing and sends nothing.
    let second = block_on(sync_flows(&ofctl, &both)).unwrap();
    assert!(!second.changed(), "{second:?}");
    assert_eq!(dump(node), flows);

    // Removing red removes the flows naming its port or its marks, and rewrites only the two
    // flows that list every patch port.
    let blue_only = inputs(node, default, vec![udn("blue_net", 1, Some(blue))]);
    let third = block_on(sync_flows(&ofctl, &blue_only)).unwrap();
    let after = dump(node);
    let before: BTreeSet<&String> = flows.iter().collect();
    let now: BTreeSet<&String> = after.iter().collect();
    let red_port = format!("output:{red}");
    for gone in before.difference(&now) {
        assert!(
            gone.contains(&format!("in_port={red}"))
                || gone.contains(&red_port)
                || gone.contains("0x5")
                || gone.contains("0x1002")
                || gone.contains("169.254.0.14"),
            "removed a flow that is not red's: {gone}"
        );
    }
    let rewritten: Vec<&&String> = now.difference(&before).collect();
    assert_eq!(rewritten.len(), 2, "{rewritten:#?}");
    assert!(rewritten.iter().all(|flow| !flow.contains(&red_port)));
    assert_eq!(
        third.diff.add.len(),
        2,
        "only the two fan-out flows are added"
    );
    assert!(
        block_on(plan_flows(
            &ofctl,
            "breth0",
            &desired_flows(&blue_only).unwrap()
        ))
        .unwrap()
        .is_empty()
    );
    assert_eq!(after.len(), desired_flows(&blue_only).unwrap().len());
}

#[test]
fn foreign_changes_are_put_right() {
    let lab = lab();
    let node = lab.node("node1").unwrap();
    let ofctl = ofctl(node);
    let default = add_internal_port(node, "gw-default");
    let blue = add_internal_port(node, "gw-blue");
    let inputs = inputs(node, default, vec![udn("blue_net", 1, Some(blue))]);
    block_on(sync_flows(&ofctl, &inputs)).unwrap();
    let converged = dump(node);

    node.add_flows("breth0", &["cookie=0x1234,table=7,priority=9,actions=drop"])
        .unwrap();
    node.ofctl(&["--strict", "del-flows", "breth0", "table=1,priority=0"])
        .unwrap();
    let report = block_on(sync_flows(&ofctl, &inputs)).unwrap();
    assert_eq!(report.diff.remove.len(), 1, "{:?}", report.diff);
    assert!(report.diff.remove[0].contains("cookie=0x1234"));
    assert_eq!(report.diff.add.len(), 1, "{:?}", report.diff);
    assert!(report.diff.add[0].contains("table=1"));
    assert_eq!(dump(node), converged);
}

#[test]
fn resync_loop_applies_changes_and_repairs() {
    let lab = lab();
    let node = lab.node("node1").unwrap();
    let default = add_internal_port(node, "gw-default");
    let blue = add_internal_port(node, "gw-blue");
    let with_blue = inputs(node, default, vec![udn("blue_net", 1, Some(blue))]);
    let without = inputs(node, default, vec![]);
    let expected_with = desired_flows(&with_blue).unwrap().len();
    let expected_without = desired_flows(&without).unwrap().len();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (tx, rx) = tokio::sync::watch::channel(None);
    let sync = GatewaySync::new(ofctl(node), None);
    let task = runtime.spawn(sync.run(rx, Duration::from_millis(200)));
    let count = || dump(node).len();

    tx.send_replace(Some(with_blue));
    assert!(eventually(Duration::from_secs(10), || count() == expected_with));
    // Deleted behind its back: the periodic resync restores the table.
    node.ofctl(&["del-flows", "breth0", "cookie=0xdeff105/-1"])
        .unwrap();
    assert!(eventually(Duration::from_secs(10), || count() == expected_with));
    // A change of inputs is applied.
    tx.send_replace(Some(without));
    assert!(eventually(Duration::from_secs(10), || count() == expected_without));
    drop(tx);
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), task).await })
        .expect("the loop ends when its sender is dropped")
        .unwrap();
}

/// Every variant of the texts parses in OVS 3.1 as written, and diff-flows then finds the
/// bridge equal to them (the IPv6, VLAN and multi-network branches are not exercised by
/// traffic here).
#[test]
fn every_text_variant_is_accepted_by_ovs() {
    let lab = lab();
    let node = lab.node("node1").unwrap();
    let ofctl = ofctl(node);
    let default = add_internal_port(node, "gw-default");
    let blue = add_internal_port(node, "gw-blue");
    let red = add_internal_port(node, "gw-red");
    let mut dual = inputs(
        node,
        default,
        vec![udn("blue_net", 1, Some(blue)), udn("red_net", 7, Some(red))],
    );
    dual.cluster = GatewayCluster::from_cluster(&ClusterConfig::default());
    let v6: IpNetwork = "fc00:f853:ccd:e793::2/64".parse().unwrap();
    dual.bridge_ips.push(v6);
    dual.host_addresses.push(v6);
    dual.host_addresses.push("192.168.9.4/24".parse().unwrap());
    dual.bridge_ports = bridge_ports(node);
    dual.services = every_kind_of_service();
    let mut vlan = dual.clone();
    vlan.cluster.vlan_id = Some(100);
    let mut no_segmentation = dual.clone();
    no_segmentation.cluster.network_segmentation = false;
    let mut no_uplink = dual.clone();
    no_uplink.ofport_phys = None;
    for (name, variant) in [
        ("dual-stack", &dual),
        ("vlan", &vlan),
        ("without network segmentation", &no_segmentation),
        ("without uplink", &no_uplink),
    ] {
        let desired = desired_flows(variant).unwrap();
        block_on(sync_flows(&ofctl, variant)).unwrap_or_else(|error| panic!("{name}: {error:#}"));
        let left = block_on(plan_flows(&ofctl, "breth0", &desired)).unwrap();
        if variant.cluster.vlan_id.is_some() {
            // OpenFlow 1.3 stores mod_vlan_vid/strip_vlan as push_vlan+set_field/pop_vlan:
            // only those flows compare as different, the rest is converged.
            let tagging = |flow: &String| {
                flow.contains("vlan_vid")
                    || flow.contains("pop_vlan")
                    || flow.contains("strip_vlan")
            };
            assert!(!left.add.is_empty(), "{name}");
            assert!(
                left.add.iter().chain(&left.remove).all(tagging),
                "{name}: {left:#?}"
            );
            assert_eq!(left.add.len(), left.remove.len(), "{name}");
        } else {
            assert!(left.is_empty(), "{name}: {left:#?}");
        }
        assert_eq!(dump(node).len(), desired.len(), "{name}");
    }
}

/// Services of both networks with every protocol, both families of external and ingress
/// IPs, and an allowed default Service with both families of cluster IPs.
fn every_kind_of_service() -> Vec<udn_node::services::ServiceView> {
    let blue = ServiceNetwork::Udn("blue_net".to_owned());
    vec![
        service(
            "default",
            "web",
            ServiceNetwork::Default,
            &["10.96.0.20", "fd00:10:96::20"],
            &[
                (Protocol::Tcp, 80, Some(30080)),
                (Protocol::Udp, 53, Some(30053)),
                (Protocol::Sctp, 9, Some(30009)),
            ],
            &["192.168.9.200", "fd00:99::200"],
            &["192.168.9.201"],
        ),
        service(
            "blue",
            "api",
            blue,
            &["10.96.0.30"],
            &[(Protocol::Tcp, 8080, Some(30880))],
            &["192.168.9.202"],
            &["fd00:99::201"],
        ),
        service(
            "kube-system",
            "kube-dns",
            ServiceNetwork::Default,
            &["10.96.0.10", "fd00:10:96::a"],
            &[(Protocol::Udp, 53, None)],
            &[],
            &[],
        ),
    ]
}

/// Service flows on a real bridge: every text is accepted and converges, a second sync sends
/// nothing, and a deleted Service's flows (by its cookies) go while the others stay.
#[test]
fn service_flows_converge_and_go_with_their_service() {
    let lab = lab();
    let node = lab.node("node1").unwrap();
    let ofctl = ofctl(node);
    let default = add_internal_port(node, "gw-default");
    let blue = add_internal_port(node, "gw-blue");
    let mut with = inputs(node, default, vec![udn("blue_net", 1, Some(blue))]);
    with.bridge_ports = bridge_ports(node);
    with.services = every_kind_of_service();
    let desired = desired_flows(&with).unwrap();
    let first = block_on(sync_flows(&ofctl, &with)).unwrap();
    assert!(first.changed());
    assert!(
        block_on(plan_flows(&ofctl, "breth0", &desired))
            .unwrap()
            .is_empty()
    );
    let flows = dump(node);
    assert_eq!(flows.len(), desired.len(), "{flows:#?}");
    // IPv4 cluster: the web NodePorts as tcp/udp/sctp, their external IPs of both families,
    // blue's NodePort to blue's patch port, kube-dns's IPv4 and IPv6 table 2 flows.
    let web_tcp = service_cookie("default", "web", "tcp", 30080);
    let blue_np = service_cookie("blue", "api", "tcp", 30880);
    let web_v6 = service_cookie("default", "web", "fd00:99::200", 80);
    for (cookie, count) in [(&web_tcp, 2), (&blue_np, 2), (&web_v6, 4)] {
        let cookie = format!("cookie={cookie},");
        assert_eq!(
            flows.iter().filter(|flow| flow.contains(&cookie)).count(),
            count,
            "{cookie} {flows:#?}"
        );
    }
    assert!(
        flows
            .iter()
            .any(|flow| flow.contains(&format!("cookie={blue_np},"))
                && flow.contains(&format!("actions=output:{blue}"))),
        "{flows:#?}"
    );
    assert_eq!(
        flows
            .iter()
            .filter(|flow| flow.contains("priority=300") && flow.contains("table=2"))
            .count(),
        2,
        "{flows:#?}"
    );

    // Nothing to send the second time.
    let second = block_on(sync_flows(&ofctl, &with)).unwrap();
    assert!(!second.changed(), "{second:?}");

    // web is deleted: every flow with one of its cookies goes, nothing else changes.
    let mut without = with;
    without.services.retain(|service| service.name != "web");
    let third = block_on(sync_flows(&ofctl, &without)).unwrap();
    assert!(third.diff.add.is_empty(), "{:?}", third.diff);
    let after = dump(node);
    let gone: BTreeSet<&String> = flows.iter().filter(|f| !after.contains(f)).collect();
    assert_eq!(gone.len(), flows.len() - after.len());
    assert!(
        gone.iter().all(|flow| !flow.contains("cookie=0xdeff105")),
        "{gone:#?}"
    );
    assert!(
        !after
            .iter()
            .any(|flow| flow.contains(&format!("cookie={web_tcp},"))
                || flow.contains(&format!("cookie={web_v6},")))
    );
    assert_eq!(after.len(), desired_flows(&without).unwrap().len());
    assert!(
        after
            .iter()
            .any(|flow| flow.contains(&format!("cookie={blue_np},")))
    );
}

#[test]
fn masquerade_neighbours_converge() {
    let lab = lab();
    let node = lab.node("node1").unwrap();
    let default = add_internal_port(node, "gw-default");
    let netns = NetnsPath::named(node.netns());
    // A stale entry of a network gone while the agent was down, and the default network's
    // dummy next hop, which is someone else's.
    for (ip, mac) in [
        ("169.254.0.21", "0a:58:a9:fe:00:15"),
        ("169.254.0.4", "0a:58:a9:fe:00:04"),
    ] {
        let out = node
            .exec(&[
                "ip",
                "neigh",
                "replace",
                ip,
                "lladdr",
                mac,
                "dev",
                "breth0",
                "nud",
                "permanent",
            ])
            .unwrap();
        assert!(out.success(), "{}", out.stderr);
    }
    let both = inputs(
        node,
        default,
        vec![udn("blue_net", 1, None), udn("red_net", 2, None)],
    );
    let blue_only = inputs(node, default, vec![udn("blue_net", 1, None)]);
    let (first, second, third) = block_on(in_netns(&netns, move |netlink| async move {
        let first = sync_neighbors(&netlink, &both).await.unwrap();
        let second = sync_neighbors(&netlink, &both).await.unwrap();
        let third = sync_neighbors(&netlink, &blue_only).await.unwrap();
        Ok((first, second, third))
    }))
    .unwrap();
    assert_eq!(first.replace.len(), 2);
    assert_eq!(
        first.remove,
        ["169.254.0.21".parse::<std::net::IpAddr>().unwrap()]
    );
    assert!(second.is_empty(), "{second:?}");
    assert_eq!(
        third.remove,
        ["169.254.0.13".parse::<std::net::IpAddr>().unwrap()]
    );
    let shown = node
        .exec(&["ip", "neigh", "show", "dev", "breth0", "nud", "permanent"])
        .unwrap()
        .stdout;
    let entries: BTreeSet<&str> = shown.lines().map(str::trim).collect();
    assert_eq!(
        entries,
        BTreeSet::from([
            "169.254.0.11 lladdr 0a:58:a9:fe:00:0b PERMANENT",
            "169.254.0.4 lladdr 0a:58:a9:fe:00:04 PERMANENT",
        ]),
        "{shown}"
    );
}
