//! The nft executor against the real nft, in a throwaway network namespace: what the builder
//! renders loads, nft's refusals become typed errors naming the line, `-c` applies nothing,
//! listings, the `socket cgroupv2` probe, and host isolation's start and cleanup.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod support_isolation;

use support_isolation::{Netns, TestCgroups, unique};
use udn_node::isolation::{
    HostIsolation, IsolationConfig, ProbesNotSupported, SetId, WarningReason, cleanup,
};
use udn_node::nft::{
    BaseChain, Chain, ChainType, Element, Family, Hook, ListTarget, Map, NftCli, NftExecutor,
    Policy, Priority, Rule, Set, SetFlag, Table, TableId, Transaction, is_unresolved_cgroup_path,
    probe_socket_cgroupv2,
};

fn table() -> TableId {
    TableId::new(Family::Inet, "udn-test")
}

#[tokio::test]
async fn rendered_transactions_load_and_refusals_are_typed() {
    let netns = Netns::create(unique("udnnft"));
    let nft = NftCli::in_named_netns(&netns.name);
    let mut snat = BaseChain::new(ChainType::Nat, Hook::Postrouting, Priority::SRCNAT);
    snat.policy = Some(Policy::Accept);
    let mut tx = Transaction::new(table());
    tx.add(Table {
        comment: Some("test".to_owned()),
    })
    .add(
        Chain::base(
            "out",
            BaseChain::new(ChainType::Filter, Hook::Output, Priority::FILTER.offset(5)),
        )
        .with_comment("an output chain"),
    )
    .add(Chain::base("masq", snat))
    .add(Chain::named("jumped"))
    .add(Set::new("ports", "ipv4_addr . inet_proto . inet_service").with_comment("ports"))
    .add(Set::new("nets", "ipv4_addr").with_flags([SetFlag::Interval]))
    .add(Map::new("jumps", "ipv4_addr", "verdict"))
    .add(Rule::new(
        "out",
        "ip daddr . meta l4proto . th dport @ports accept",
    ))
    .add(Rule::new("out", "ip daddr vmap @jumps"))
    .insert(Rule::new("out", "ct state established accept").with_comment("first"))
    .add(Element::set(
        "ports",
        vec!["10.0.0.1".into(), "tcp".into(), "80".into()],
    ))
    .add(Element::set("nets", vec!["10.1.0.0/16".into()]))
    .add(Element::map(
        "jumps",
        vec!["10.0.0.9".into()],
        vec!["jump jumped".into()],
    ));
    nft.run(&tx).await.unwrap();
    let listed = nft
        .list(&ListTarget::Table(table()))
        .await
        .unwrap()
        .unwrap();
    for expected in [
        "comment \"test\"",
        "elements = { 10.0.0.1 . tcp . 80 }",
        "elements = { 10.1.0.0/16 }",
        "elements = { 10.0.0.9 : jump jumped }",
        "type filter hook output priority filter + 5; policy accept;",
        "type nat hook postrouting priority srcnat; policy accept;",
        "ct state established accept comment \"first\"",
    ] {
        assert!(listed.contains(expected), "{expected} not in\n{listed}");
    }

    // Refused: nothing applied, the line and nft's message named.
    let mut bad = Transaction::new(table());
    bad.add(Element::set("nets", vec!["10.2.0.0/16".into()]))
        .delete(Element::set(
            "ports",
            vec!["10.0.0.2".into(), "tcp".into(), "80".into()],
        ));
    let error = nft.run(&bad).await.unwrap_err();
    let line = error.failed_line().unwrap();
    assert_eq!(line.number, 2);
    assert_eq!(
        line.text,
        "delete element inet udn-test ports { 10.0.0.2 . tcp . 80 }"
    );
    assert_eq!(
        error.nft_message(),
        Some("Could not process rule: No such file or directory")
    );
    assert!(error.to_string().contains("at line 2"), "{error}");
    let listed = nft
        .list(&ListTarget::Table(table()))
        .await
        .unwrap()
        .unwrap();
    assert!(!listed.contains("10.2.0.0/16"), "atomic: {listed}");

    // -c checks without applying.
    let mut checked = Transaction::new(table());
    checked.add(Element::set("nets", vec!["10.3.0.0/16".into()]));
    nft.check(&checked).await.unwrap();
    let listed = nft
        .list(&ListTarget::Chain(table(), "out".to_owned()))
        .await
        .unwrap()
        .unwrap();
    assert!(listed.contains("chain out {"), "{listed}");
    assert!(
        !nft.list(&ListTarget::Table(table()))
            .await
            .unwrap()
            .unwrap()
            .contains("10.3.0.0/16")
    );

    // Listing what is not there.
    let missing = TableId::new(Family::Ip, "nothing-here");
    assert_eq!(nft.list(&ListTarget::Table(missing)).await.unwrap(), None);
}

#[tokio::test]
async fn socket_cgroupv2_probe() {
    let netns = Netns::create(unique("udnnft"));
    let nft = NftCli::in_named_netns(&netns.name);
    let cgroups = TestCgroups::create(&["kubelet"]);
    probe_socket_cgroupv2(&nft, 2, &cgroups.nft_path("kubelet"))
        .await
        .unwrap();
    let error = probe_socket_cgroupv2(&nft, 2, &cgroups.nft_path("gone"))
        .await
        .unwrap_err();
    assert!(is_unresolved_cgroup_path(&error), "{error}");
    // The probe table is never created.
    assert_eq!(netns.nft(&["list", "ruleset"]), "");
}

#[tokio::test]
async fn start_then_cleanup_leaves_the_table_empty() {
    let netns = Netns::create(unique("udnnft"));
    let nft = NftCli::in_named_netns(&netns.name);
    // Nothing there yet: cleanup still succeeds.
    cleanup(&nft).await.unwrap();
    let cgroups = TestCgroups::create(&["kubelet.slice/kubelet.service"]);
    let config = IsolationConfig {
        kubelet_cgroup_path: Some(cgroups.nft_path("kubelet.slice/kubelet.service")),
        systemd_socket: cgroups.base.join("none"),
        ipv6: false,
        ..IsolationConfig::new("node1")
    };
    let started = HostIsolation::start(&config, nft.clone()).await.unwrap();
    let listed = netns.nft(&["list", "table", "inet", "ovn-kubernetes"]);
    for set in SetId::ALL {
        assert!(
            listed.contains(&format!("set {} {{", set.name())),
            "{listed}"
        );
    }
    assert_eq!(
        listed.matches("socket cgroupv2").count(),
        1,
        "IPv4 only: {listed}"
    );
    assert!(!listed.contains("ip6 daddr"), "{listed}");
    drop(started);
    cleanup(&nft).await.unwrap();
    assert_eq!(
        netns.nft(&["list", "table", "inet", "ovn-kubernetes"]),
        "table inet ovn-kubernetes {\n}\n"
    );
}

#[tokio::test]
async fn configured_path_that_does_not_exist_still_isolates() {
    let netns = Netns::create(unique("udnnft"));
    let nft = NftCli::in_named_netns(&netns.name);
    let cgroups = TestCgroups::create(&["other"]);
    let config = IsolationConfig {
        kubelet_cgroup_path: Some(cgroups.nft_path("kubelet.service")),
        ..IsolationConfig::new("node1")
    };
    let started = HostIsolation::start(&config, nft).await.unwrap();
    assert_eq!(started.warnings.len(), 1);
    assert_eq!(
        started.warnings[0].reason,
        WarningReason::KubeletProbesNotSupported
    );
    let expected = ProbesNotSupported::ConfiguredNotFound {
        configured: cgroups.nft_path("kubelet.service"),
        dir: cgroups.dir("kubelet.service"),
    }
    .message("node1");
    assert_eq!(started.warnings[0].message, expected);
    let listed = netns.nft(&["list", "table", "inet", "ovn-kubernetes"]);
    assert!(!listed.contains("socket cgroupv2"), "{listed}");
    assert!(
        listed.contains("ip daddr @udn-pod-default-ips-v4 drop"),
        "{listed}"
    );
}
