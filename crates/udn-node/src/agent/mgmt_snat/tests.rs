//! The chain and sets against upstream's text, per family, with elements; what the
//! transaction touches in the shared table.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::nft::{Object, RecordingNft, Verb};

const MP0_V4: &str = "10.244.1.2";
const MP0_V6: &str = "fd00:10:244:1::2";

fn inputs(ipv4: bool, ipv6: bool) -> MgmtSnatInputs {
    MgmtSnatInputs {
        interface: "ovn-k8s-mp0".to_owned(),
        ipv4: ipv4.then(|| MP0_V4.parse().unwrap()),
        ipv6: ipv6.then(|| MP0_V6.parse().unwrap()),
        no_snat: NoSnatElements::default(),
    }
}

fn text(inputs: &MgmtSnatInputs) -> String {
    transaction(&desired(inputs)).render().unwrap()
}

/// Upstream's set declarations (`gateway_init_linux_test.go` `nftablesRulesBase`, which is
/// what `SetupManagementPortNFTSets` and `setupManagementPortNFTChain` write).
const UPSTREAM_OBJECTS: &[&str] = &[
    "add table inet ovn-kubernetes",
    "add set inet ovn-kubernetes mgmtport-no-snat-nodeports { type inet_proto . inet_service ; comment \"NodePorts not subject to management port SNAT\" ; }",
    "add set inet ovn-kubernetes mgmtport-no-snat-services-v4 { type ipv4_addr . inet_proto . inet_service ; comment \"eTP:Local short-circuit not subject to management port SNAT (IPv4)\" ; }",
    "add set inet ovn-kubernetes mgmtport-no-snat-services-v6 { type ipv6_addr . inet_proto . inet_service ; comment \"eTP:Local short-circuit not subject to management port SNAT (IPv6)\" ; }",
    "add set inet ovn-kubernetes mgmtport-no-snat-subnets-v4 { type ipv4_addr ; flags interval ; comment \"subnets not subject to management port SNAT (IPv4)\" ; }",
    "add set inet ovn-kubernetes mgmtport-no-snat-subnets-v6 { type ipv6_addr ; flags interval ; comment \"subnets not subject to management port SNAT (IPv6)\" ; }",
    "add chain inet ovn-kubernetes mgmtport-snat { type nat hook postrouting priority 100 ; comment \"OVN SNAT to Management Port\" ; }",
];

#[test]
fn ipv4_only_is_upstreams_chain() {
    let text = text(&inputs(true, false));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(&lines[..UPSTREAM_OBJECTS.len()], UPSTREAM_OBJECTS);
    let rules: Vec<&str> = lines
        .iter()
        .filter_map(|line| line.strip_prefix("add rule inet ovn-kubernetes mgmtport-snat "))
        .collect();
    // setupManagementPortNFTChain's order, without its debug counters.
    assert_eq!(
        rules,
        [
            "oifname != ovn-k8s-mp0 return",
            "meta l4proto . th dport @mgmtport-no-snat-nodeports return",
            "meta nfproto ipv4 ip saddr 10.244.1.2 return",
            "ip daddr . meta l4proto . th dport @mgmtport-no-snat-services-v4 return",
            "ip saddr @mgmtport-no-snat-subnets-v4 return",
            "snat ip to 10.244.1.2",
        ]
    );
    insta::assert_snapshot!(text);
}

#[test]
fn dual_stack_adds_the_ipv6_twins_after_ipv4() {
    let text = text(&inputs(true, true));
    let rules: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("add rule inet ovn-kubernetes mgmtport-snat "))
        .collect();
    assert_eq!(rules.len(), 10);
    assert_eq!(
        &rules[6..],
        [
            "meta nfproto ipv6 ip6 saddr fd00:10:244:1::2 return",
            "ip6 daddr . meta l4proto . th dport @mgmtport-no-snat-services-v6 return",
            "ip6 saddr @mgmtport-no-snat-subnets-v6 return",
            "snat ip6 to fd00:10:244:1::2",
        ]
    );
    insta::assert_snapshot!(text);
}

#[test]
fn ipv6_only_has_no_ipv4_rules_but_all_five_sets() {
    let text = text(&inputs(false, true));
    assert!(!text.contains(" ip saddr"), "{text}");
    assert!(!text.contains("snat ip to"), "{text}");
    for set in NoSnatSet::ALL {
        assert!(
            text.contains(&format!("add set inet ovn-kubernetes {} {{", set.name())),
            "{text}"
        );
    }
    insta::assert_snapshot!(text);
}

#[test]
fn set_elements_by_family_without_nested_subnets() {
    let mut inputs = inputs(true, true);
    inputs.no_snat = NoSnatElements {
        nodeports: [
            NodePort {
                protocol: Protocol::Udp,
                port: 30053,
            },
            NodePort {
                protocol: Protocol::Tcp,
                port: 30080,
            },
            NodePort {
                protocol: Protocol::Sctp,
                port: 30132,
            },
        ]
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
            // Host bits are cleared; /16 inside /8 goes (the union is the same).
            "10.1.2.3/8",
            "10.9.0.0/16",
            "192.168.10.0/24",
            "fd00:99::/64",
        ]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect(),
    };
    let text = text(&inputs);
    let elements: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("add element "))
        .collect();
    assert_eq!(
        elements,
        [
            "add element inet ovn-kubernetes mgmtport-no-snat-nodeports { tcp . 30080 }",
            "add element inet ovn-kubernetes mgmtport-no-snat-nodeports { udp . 30053 }",
            "add element inet ovn-kubernetes mgmtport-no-snat-nodeports { sctp . 30132 }",
            "add element inet ovn-kubernetes mgmtport-no-snat-services-v4 { 172.18.0.100 . tcp . 80 }",
            "add element inet ovn-kubernetes mgmtport-no-snat-services-v6 { fd00:172:18::100 . udp . 53 }",
            "add element inet ovn-kubernetes mgmtport-no-snat-subnets-v4 { 10.0.0.0/8 }",
            "add element inet ovn-kubernetes mgmtport-no-snat-subnets-v4 { 192.168.10.0/24 }",
            "add element inet ovn-kubernetes mgmtport-no-snat-subnets-v6 { fd00:99::/64 }",
        ]
    );
    // The elements follow the sets' flushes, so the sets hold exactly these.
    let lines: Vec<&str> = text.lines().collect();
    let last_flush = lines
        .iter()
        .rposition(|line| line.starts_with("flush set "))
        .unwrap();
    let first_element = lines
        .iter()
        .position(|line| line.starts_with("add element "))
        .unwrap();
    assert!(last_flush < first_element, "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn only_its_own_chain_and_sets_are_flushed_and_nothing_is_deleted() {
    let mut inputs = inputs(true, true);
    inputs.no_snat.subnets.insert("10.0.0.0/8".parse().unwrap());
    let tx = transaction(&desired(&inputs));
    let own: Vec<&str> = NoSnatSet::ALL
        .iter()
        .map(|set| set.name())
        .chain([CHAIN])
        .collect();
    for operation in tx.operations() {
        match (&operation.verb, &operation.object) {
            (Verb::Add, _) => {}
            (Verb::Flush, Object::Chain(chain)) => assert_eq!(chain.name, CHAIN),
            (Verb::Flush, Object::Set(set)) => assert!(own.contains(&set.name.as_str())),
            other => panic!("unexpected operation {other:?}"),
        }
        if let Object::Rule(rule) = &operation.object {
            assert_eq!(rule.chain, CHAIN);
        }
        if let Object::Element(element) = &operation.object {
            assert!(own.contains(&element.container.as_str()));
        }
    }
}

#[test]
fn interface_names_nft_cannot_read_bare_are_quoted() {
    assert_eq!(interface_token("ovn-k8s-mp0"), "ovn-k8s-mp0");
    assert_eq!(interface_token("ovn-k8s-mp12"), "ovn-k8s-mp12");
    assert_eq!(interface_token("0weird"), "\"0weird\"");
    assert_eq!(interface_token("a:b"), "\"a:b\"");
}

#[tokio::test]
async fn apply_runs_one_transaction_and_names_the_chain_when_refused() {
    let nft = RecordingNft::new();
    let desired = desired(&inputs(true, false));
    apply(&nft, &desired).await.unwrap();
    assert_eq!(nft.take_runs(), [transaction(&desired).render().unwrap()]);
    nft.fail_when(
        crate::nft::FailOn::Run,
        "snat ip to",
        "Error: Could not process rule: No such file or directory",
    );
    let error = apply(&nft, &desired).await.unwrap_err();
    assert!(error.to_string().contains("mgmtport-snat"), "{error}");
    assert!(std::error::Error::source(&error).is_some());
}

#[tokio::test]
async fn ensure_writes_only_what_changed_or_drifted() {
    let nft = RecordingNft::new();
    let target = ListTarget::Chain(table_id(), CHAIN.to_owned());
    nft.set_listing(&target, Some("chain as written".to_owned()));
    let mut memory = SnatMemory::default();
    let desired = desired(&inputs(true, false));
    assert!(ensure(&nft, &desired, &mut memory).await.unwrap());
    assert_eq!(nft.take_runs().len(), 1);
    // Nothing changed: nothing sent.
    assert!(!ensure(&nft, &desired, &mut memory).await.unwrap());
    assert!(nft.take_runs().is_empty());
    // Someone flushed the chain: written again.
    nft.set_listing(&target, Some("flushed".to_owned()));
    assert!(ensure(&nft, &desired, &mut memory).await.unwrap());
    assert_eq!(nft.take_runs().len(), 1);
    assert!(!ensure(&nft, &desired, &mut memory).await.unwrap());
    // Other desired elements: written again.
    let mut more = inputs(true, false);
    more.no_snat
        .subnets
        .insert("192.168.0.0/16".parse().unwrap());
    assert!(
        ensure(&nft, &super::desired(&more), &mut memory)
            .await
            .unwrap()
    );
    assert_eq!(nft.take_runs().len(), 1);
}

/// upstream `getGatewayNFTRules`: an ETP=Local Service's NodePorts (every port, once),
/// nothing for ETP=Cluster or for ports without a NodePort.
#[test]
fn etp_local_nodeports_are_not_snated() {
    use crate::services::{ServiceNetwork, ServicePortView, ServiceView};
    let view = |name: &str, local: bool| ServiceView {
        namespace: "ns".into(),
        name: name.into(),
        network: ServiceNetwork::Default,
        cluster_ips: vec!["10.96.0.5".parse().unwrap(), "fd00::5".parse().unwrap()],
        ports: vec![
            ServicePortView {
                protocol: Protocol::Tcp,
                port: 80,
                node_port: Some(31111),
            },
            ServicePortView {
                protocol: Protocol::Udp,
                port: 53,
                node_port: Some(31112),
            },
            ServicePortView {
                protocol: Protocol::Sctp,
                port: 9,
                node_port: None,
            },
        ],
        external_ips: vec![],
        ingress_ips: vec![],
        external_traffic_local: local,
    };
    let local = view("local", true);
    let cluster = view("cluster", false);
    assert_eq!(
        no_snat_nodeports([&local, &cluster]),
        BTreeSet::from([
            NodePort {
                protocol: Protocol::Tcp,
                port: 31111
            },
            NodePort {
                protocol: Protocol::Udp,
                port: 31112
            },
        ])
    );
    let mut inputs = inputs(true, false);
    inputs.no_snat.nodeports = no_snat_nodeports([&local]);
    let text = text(&inputs);
    // upstream: `add element inet ovn-kubernetes mgmtport-no-snat-nodeports { tcp . 31111 }`
    assert!(
        text.lines().any(|line| line
            == "add element inet ovn-kubernetes mgmtport-no-snat-nodeports { tcp . 31111 }"),
        "{text}"
    );
}
