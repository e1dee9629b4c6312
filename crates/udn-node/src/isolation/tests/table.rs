//! The chain, sets and rules against upstream's text (spec §7.16), and the cleanup.

use crate::isolation::*;

fn spec(kubelet: Option<&str>) -> ChainSpec {
    ChainSpec {
        ipv4: true,
        ipv6: true,
        kubelet: kubelet.map(|path| KubeletRule {
            level: 2,
            path: path.to_owned(),
        }),
    }
}

/// Upstream's expected dump (`udn_isolation_test.go`) line by line, without elements.
const UPSTREAM_LINES: &[&str] = &[
    "add table inet ovn-kubernetes",
    "add chain inet ovn-kubernetes udn-isolation { type filter hook output priority 0 ; comment \"Host isolation for user defined networks\" ; }",
    "add set inet ovn-kubernetes udn-open-ports-icmp-v4 { type ipv4_addr ; comment \"default network IPs of pods in user defined networks that allow ICMP (IPv4)\" ; }",
    "add set inet ovn-kubernetes udn-open-ports-icmp-v6 { type ipv6_addr ; comment \"default network IPs of pods in user defined networks that allow ICMP (IPv6)\" ; }",
    "add set inet ovn-kubernetes udn-open-ports-v4 { type ipv4_addr . inet_proto . inet_service ; comment \"default network open ports of pods in user defined networks (IPv4)\" ; }",
    "add set inet ovn-kubernetes udn-open-ports-v6 { type ipv6_addr . inet_proto . inet_service ; comment \"default network open ports of pods in user defined networks (IPv6)\" ; }",
    "add set inet ovn-kubernetes udn-pod-default-ips-v4 { type ipv4_addr ; comment \"default network IPs of pods in user defined networks (IPv4)\" ; }",
    "add set inet ovn-kubernetes udn-pod-default-ips-v6 { type ipv6_addr ; comment \"default network IPs of pods in user defined networks (IPv6)\" ; }",
    "add rule inet ovn-kubernetes udn-isolation ip daddr . meta l4proto . th dport @udn-open-ports-v4 accept",
    "add rule inet ovn-kubernetes udn-isolation ip daddr @udn-open-ports-icmp-v4 meta l4proto icmp accept",
    "add rule inet ovn-kubernetes udn-isolation socket cgroupv2 level 2 kubelet.slice/kubelet.service ip daddr @udn-pod-default-ips-v4 accept",
    "add rule inet ovn-kubernetes udn-isolation ip daddr @udn-pod-default-ips-v4 drop",
    "add rule inet ovn-kubernetes udn-isolation ip6 daddr . meta l4proto . th dport @udn-open-ports-v6 accept",
    "add rule inet ovn-kubernetes udn-isolation ip6 daddr @udn-open-ports-icmp-v6 meta l4proto icmpv6 accept",
    "add rule inet ovn-kubernetes udn-isolation socket cgroupv2 level 2 kubelet.slice/kubelet.service ip6 daddr @udn-pod-default-ips-v6 accept",
    "add rule inet ovn-kubernetes udn-isolation ip6 daddr @udn-pod-default-ips-v6 drop",
];

#[test]
fn chain_transaction_has_upstreams_objects_and_rule_order() {
    let text = chain_transaction(&spec(Some("kubelet.slice/kubelet.service")))
        .render()
        .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for expected in UPSTREAM_LINES {
        assert!(lines.contains(expected), "missing {expected}\nin\n{text}");
    }
    // The rules come in upstream's order, after the flush.
    let rules: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| line.starts_with("add rule "))
        .collect();
    let upstream_rules: Vec<&str> = UPSTREAM_LINES
        .iter()
        .copied()
        .filter(|line| line.starts_with("add rule "))
        .collect();
    assert_eq!(rules, upstream_rules);
    let flush = lines
        .iter()
        .position(|line| *line == "flush chain inet ovn-kubernetes udn-isolation")
        .unwrap();
    let first_rule = lines
        .iter()
        .position(|line| line.starts_with("add rule "))
        .unwrap();
    assert!(flush < first_rule);
    insta::assert_snapshot!(text);
}

#[test]
fn without_kubelet_rule_or_a_family() {
    let mut spec = spec(None);
    spec.ipv6 = false;
    insta::assert_snapshot!(spec.rules().join("\n"), @r"
    ip daddr . meta l4proto . th dport @udn-open-ports-v4 accept
    ip daddr @udn-open-ports-icmp-v4 meta l4proto icmp accept
    ip daddr @udn-pod-default-ips-v4 drop
    ");
    let rule = ChainSpec {
        ipv4: false,
        ipv6: true,
        kubelet: Some(KubeletRule {
            level: 3,
            path: "unified/udn/kubelet.slice/kubelet.service".to_owned(),
        }),
    }
    .rules();
    assert_eq!(
        rule[2],
        "socket cgroupv2 level 3 unified/udn/kubelet.slice/kubelet.service ip6 daddr @udn-pod-default-ips-v6 accept"
    );
}

#[test]
fn cleanup_deletes_chain_and_sets_whether_or_not_they_exist() {
    insta::assert_snapshot!(cleanup_transaction().render().unwrap());
}

#[test]
fn set_names_types_and_comments() {
    let described: Vec<String> = SetId::ALL
        .iter()
        .map(|set| format!("{} | {} | {}", set.name(), set.key_type(), set.comment()))
        .collect();
    insta::assert_snapshot!(described.join("\n"), @r"
    udn-open-ports-v4 | ipv4_addr . inet_proto . inet_service | default network open ports of pods in user defined networks (IPv4)
    udn-open-ports-v6 | ipv6_addr . inet_proto . inet_service | default network open ports of pods in user defined networks (IPv6)
    udn-open-ports-icmp-v4 | ipv4_addr | default network IPs of pods in user defined networks that allow ICMP (IPv4)
    udn-open-ports-icmp-v6 | ipv6_addr | default network IPs of pods in user defined networks that allow ICMP (IPv6)
    udn-pod-default-ips-v4 | ipv4_addr | default network IPs of pods in user defined networks (IPv4)
    udn-pod-default-ips-v6 | ipv6_addr | default network IPs of pods in user defined networks (IPv6)
    ");
}

#[test]
fn unit_paths_are_escaped_as_systemd_does() {
    assert_eq!(
        unit_object_path("kubelet.service"),
        "/org/freedesktop/systemd1/unit/kubelet_2eservice"
    );
    assert_eq!(
        unit_object_path("kubelet-1.service"),
        "/org/freedesktop/systemd1/unit/kubelet_2d1_2eservice"
    );
    assert_eq!(
        unit_object_path("0kubelet_x.scope"),
        "/org/freedesktop/systemd1/unit/_30kubelet_5fx_2escope"
    );
    assert_eq!(unit_object_path(""), "/org/freedesktop/systemd1/unit/_");
    assert_eq!(unit_of_cgroup("kubelet.service"), Some("kubelet.service"));
    assert_eq!(unit_of_cgroup("kubepods.slice"), Some("kubepods.slice"));
    assert_eq!(unit_of_cgroup("session-1.scope"), Some("session-1.scope"));
    assert_eq!(unit_of_cgroup("kubelet"), None);
    assert_eq!(unit_of_cgroup(".service"), None);
    assert_eq!(unit_of_cgroup("kubelet.socket"), None);
}

#[test]
fn warning_messages() {
    let node = "node1";
    let messages = [
        ProbesNotSupported::CgroupV1.warning(node),
        ProbesNotSupported::NotFound {
            searched: "/sys/fs/cgroup/unified".into(),
        }
        .warning(node),
        ProbesNotSupported::ConfiguredNotFound {
            configured: "podruntime/kubelet".to_owned(),
            dir: "/sys/fs/cgroup/podruntime/kubelet".into(),
        }
        .warning(node),
        ProbesNotSupported::Unresolvable {
            path: "kubelet.slice/kubelet.service".to_owned(),
            nft_message: "cgroupv2 path fails: No such file or directory".to_owned(),
        }
        .warning(node),
        ProbesNotSupported::SocketUnsupported {
            nft_message: "Could not process rule: No such file or directory".to_owned(),
        }
        .warning(node),
        RestartTrackingUnavailable::NoUnit {
            path: "podruntime/kubelet".to_owned(),
            component: "kubelet".to_owned(),
        }
        .warning(node),
        RestartTrackingUnavailable::NoSystemd {
            socket: "/run/systemd/private".into(),
            error: "No such file or directory (os error 2)".to_owned(),
        }
        .warning(node),
        RestartTrackingUnavailable::UnknownUnit {
            unit: "kubelet.service".to_owned(),
            error: "Unit kubelet.service not loaded.".to_owned(),
        }
        .warning(node),
    ];
    let text: Vec<String> = messages
        .iter()
        .map(|w| format!("{}: {}", w.reason, w.message))
        .collect();
    insta::assert_snapshot!(text.join("\n"));
    assert_eq!(
        messages[0].message,
        "Kubelet probes for UDN are not supported on the node node1 as it uses cgroup v1."
    );
}
