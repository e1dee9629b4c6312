//! Host isolation with real nft in a throwaway network namespace and real processes in real
//! cgroups: the table after start is upstream's (with our path), a process in the kubelet
//! cgroup reaches a primary-UDN pod's default-network IPs and one in another cgroup is
//! dropped, open ports and ICMP as the annotation says, IPv4 and IPv6.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod support_isolation;

use std::net::IpAddr;
use std::num::NonZeroU16;
use std::path::Path;

use support_isolation::{
    CLOSED_PORT, CONTROL_V4, CONTROL_V6, OPEN_PORT, POD_V4, POD_V6, PodNet, Probes, TestCgroups,
};
use udn_api::annotations::OpenPort;
use udn_node::isolation::{
    CgroupSource, HostIsolation, IsolationConfig, PodIsolationInput, PodKey, Started,
    WarningReason, cleanup,
};
use udn_node::nft::NftCli;

const KUBELET: &str = "kubelet.slice/kubelet.service";

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn web_pod(open_ports: Vec<OpenPort>) -> PodIsolationInput {
    PodIsolationInput {
        key: PodKey::new("blue", "web"),
        host_network: false,
        infrastructure_locked: true,
        default_network_ips: vec![ip(POD_V4), ip(POD_V6)],
        open_ports,
    }
}

fn tcp(port: u16) -> OpenPort {
    OpenPort::Tcp(NonZeroU16::new(port).unwrap())
}

fn config(net: &PodNet, cgroups: &TestCgroups) -> IsolationConfig {
    IsolationConfig {
        kubelet_cgroup_path: Some(cgroups.nft_path(KUBELET)),
        systemd_socket: cgroups.dir("no-systemd-here"),
        ..IsolationConfig::new(net.host.name.clone())
    }
}

/// What `nft list table inet ovn-kubernetes` prints after start and sync.
fn expected_table(kubelet_path: &str, level: u32) -> String {
    let kubelet = format!("socket cgroupv2 level {level} \"{kubelet_path}\"");
    format!(
        "table inet ovn-kubernetes {{
\tset udn-open-ports-v4 {{
\t\ttype ipv4_addr . inet_proto . inet_service
\t\tcomment \"default network open ports of pods in user defined networks (IPv4)\"
\t\telements = {{ {POD_V4} . tcp . {OPEN_PORT} }}
\t}}

\tset udn-open-ports-v6 {{
\t\ttype ipv6_addr . inet_proto . inet_service
\t\tcomment \"default network open ports of pods in user defined networks (IPv6)\"
\t\telements = {{ {POD_V6} . tcp . {OPEN_PORT} }}
\t}}

\tset udn-open-ports-icmp-v4 {{
\t\ttype ipv4_addr
\t\tcomment \"default network IPs of pods in user defined networks that allow ICMP (IPv4)\"
\t}}

\tset udn-open-ports-icmp-v6 {{
\t\ttype ipv6_addr
\t\tcomment \"default network IPs of pods in user defined networks that allow ICMP (IPv6)\"
\t}}

\tset udn-pod-default-ips-v4 {{
\t\ttype ipv4_addr
\t\tcomment \"default network IPs of pods in user defined networks (IPv4)\"
\t\telements = {{ {POD_V4} }}
\t}}

\tset udn-pod-default-ips-v6 {{
\t\ttype ipv6_addr
\t\tcomment \"default network IPs of pods in user defined networks (IPv6)\"
\t\telements = {{ {POD_V6} }}
\t}}

\tchain udn-isolation {{
\t\tcomment \"Host isolation for user defined networks\"
\t\ttype filter hook output priority filter; policy accept;
\t\tip daddr . meta l4proto . th dport @udn-open-ports-v4 accept
\t\tip daddr @udn-open-ports-icmp-v4 meta l4proto icmp accept
\t\t{kubelet} ip daddr @udn-pod-default-ips-v4 accept
\t\tip daddr @udn-pod-default-ips-v4 drop
\t\tip6 daddr . meta l4proto . th dport @udn-open-ports-v6 accept
\t\tip6 daddr @udn-open-ports-icmp-v6 meta l4proto ipv6-icmp accept
\t\t{kubelet} ip6 daddr @udn-pod-default-ips-v6 accept
\t\tip6 daddr @udn-pod-default-ips-v6 drop
\t}}
}}
"
    )
}

/// Asserts who reaches what, IPv4 and IPv6, with `OPEN_PORT` and ICMP open or not.
fn assert_reachability(
    net: &PodNet,
    kubelet: &Path,
    other: &Path,
    port_open: bool,
    icmp_open: bool,
) {
    let mut probes = Probes::default();
    for (pod, control) in [(POD_V4, CONTROL_V4), (POD_V6, CONTROL_V6)] {
        let (pod, control) = (ip(pod), ip(control));
        probes.tcp(net, Some(kubelet), pod, CLOSED_PORT, true);
        probes.tcp(net, Some(kubelet), pod, OPEN_PORT, true);
        probes.ping(net, Some(kubelet), pod, true);
        probes.tcp(net, Some(other), pod, CLOSED_PORT, false);
        probes.tcp(net, Some(other), pod, OPEN_PORT, port_open);
        probes.ping(net, Some(other), pod, icmp_open);
        // The control address is not isolated: the network itself works.
        probes.tcp(net, Some(other), control, CLOSED_PORT, true);
        probes.ping(net, Some(other), control, true);
    }
    probes.check();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_reaches_isolated_pods_and_others_are_dropped() {
    let net = PodNet::start();
    let cgroups = TestCgroups::create(&[KUBELET, "kubelet.slice/kubelet.service/probes", "other"]);
    let (kubelet, other) = (cgroups.dir(KUBELET), cgroups.dir("other"));
    let Started {
        mut isolation,
        warnings,
        ..
    } = HostIsolation::start(
        &config(&net, &cgroups),
        NftCli::in_named_netns(&net.host.name),
    )
    .await
    .unwrap();
    let reasons: Vec<WarningReason> = warnings.iter().map(|w| w.reason).collect();
    assert_eq!(
        reasons,
        [WarningReason::KubeletRestartTrackingUnavailable],
        "{warnings:?}"
    );
    let found = isolation.kubelet_cgroup().unwrap();
    assert_eq!(found.source, CgroupSource::Configured);
    // Depth in the v2 tree: <unique>/kubelet.slice/kubelet.service.
    assert_eq!(found.level, 3);

    // Before any pod: nothing is isolated.
    let mut probes = Probes::default();
    probes.tcp(&net, Some(&other), ip(POD_V4), CLOSED_PORT, true);
    probes.ping(&net, Some(&other), ip(POD_V6), true);
    probes.check();

    isolation
        .sync(&[web_pod(vec![tcp(OPEN_PORT)])])
        .await
        .unwrap();
    let listed = net.host.nft(&["list", "table", "inet", "ovn-kubernetes"]);
    assert_eq!(listed, expected_table(&cgroups.nft_path(KUBELET), 3));
    assert_reachability(&net, &kubelet, &other, true, false);
    // kubelet's children match too (level N matches the ancestor at depth N); a process
    // in this test's own cgroup (not kubelet's) or in kubelet's parent is dropped.
    let mut probes = Probes::default();
    let child = cgroups.dir("kubelet.slice/kubelet.service/probes");
    probes.tcp(&net, Some(&child), ip(POD_V4), CLOSED_PORT, true);
    probes.tcp(&net, None, ip(POD_V4), CLOSED_PORT, false);
    probes.tcp(
        &net,
        Some(&cgroups.dir("kubelet.slice")),
        ip(POD_V6),
        CLOSED_PORT,
        false,
    );
    probes.check();

    // ICMP opened, the TCP port closed.
    isolation
        .update_pod(&web_pod(vec![OpenPort::Icmp]))
        .await
        .unwrap();
    assert_reachability(&net, &kubelet, &other, false, true);

    // Deleted: the pod is not isolated any more.
    isolation
        .remove_pod(&PodKey::new("blue", "web"))
        .await
        .unwrap();
    assert!(net.tcp_from(Some(&other), ip(POD_V4), CLOSED_PORT));
    assert!(net.tcp_from(Some(&other), ip(POD_V6), CLOSED_PORT));

    cleanup(isolation.executor()).await.unwrap();
    assert_eq!(
        net.host.nft(&["list", "table", "inet", "ovn-kubernetes"]),
        "table inet ovn-kubernetes {\n}\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_finds_kubelet_service_and_a_restart_of_the_agent_keeps_pods_isolated() {
    let net = PodNet::start();
    let cgroups = TestCgroups::create(&["a.slice/other.service", KUBELET, "other"]);
    let (kubelet, other) = (cgroups.dir(KUBELET), cgroups.dir("other"));
    let config = IsolationConfig {
        kubelet_cgroup_path: None,
        kubelet_cgroup_search_dir: Some(cgroups.base.clone()),
        ..config(&net, &cgroups)
    };
    let exec = NftCli::in_named_netns(&net.host.name);
    let mut first = HostIsolation::start(&config, exec.clone())
        .await
        .unwrap()
        .isolation;
    let found = first.kubelet_cgroup().unwrap();
    assert_eq!(found.source, CgroupSource::Discovered);
    assert_eq!(found.nft_path, cgroups.nft_path(KUBELET));
    first.sync(&[web_pod(vec![tcp(OPEN_PORT)])]).await.unwrap();
    assert_reachability(&net, &kubelet, &other, true, false);

    // The agent restarts: start again (sets keep their elements, the chain is rebuilt),
    // then the initial sync replaces the elements in one transaction.
    drop(first);
    let mut second = HostIsolation::start(&config, exec).await.unwrap().isolation;
    // Still isolated before the sync.
    let mut probes = Probes::default();
    probes.tcp(&net, Some(&other), ip(POD_V4), CLOSED_PORT, false);
    probes.tcp(&net, Some(&kubelet), ip(POD_V4), CLOSED_PORT, true);
    probes.check();
    second.sync(&[web_pod(vec![OpenPort::Icmp])]).await.unwrap();
    assert_reachability(&net, &kubelet, &other, false, true);
    let listed = net.host.nft(&["list", "table", "inet", "ovn-kubernetes"]);
    assert_eq!(listed.matches("socket cgroupv2").count(), 2, "{listed}");
}
