//! Kubelet restarts: its cgroup removed and created again (a new cgroup id: the loaded rule
//! silently stops matching), announced by a stand-in systemd on the configured socket; the
//! rule is reloaded and a process in the kubelet cgroup reaches the pod again. Without
//! systemd, one warning, and the periodic check finds the stale rule.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod support_isolation;

use std::net::IpAddr;
use std::time::Duration;

use support_isolation::systemd::FakeSystemd;
use support_isolation::{CLOSED_PORT, POD_V4, POD_V6, PodNet, Probes, TestCgroups};
use udn_node::isolation::{
    HostIsolation, IsolationConfig, PodIsolationInput, PodKey, ReloadReason, ReloadTrigger,
    ReloadTriggers, RuleCheck, Started, WarningReason, unit_object_path,
};
use udn_node::nft::NftCli;
use udn_node::nft::listing::{CgroupTarget, cgroupv2_matches};

const KUBELET: &str = "kubelet.slice/kubelet.service";

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn web_pod() -> PodIsolationInput {
    PodIsolationInput {
        key: PodKey::new("blue", "web"),
        host_network: false,
        infrastructure_locked: true,
        default_network_ips: vec![ip(POD_V4), ip(POD_V6)],
        open_ports: Vec::new(),
    }
}

fn assert_kubelet_only(net: &PodNet, cgroups: &TestCgroups, kubelet_through: bool) {
    let mut probes = Probes::default();
    for pod in [ip(POD_V4), ip(POD_V6)] {
        probes.tcp(
            net,
            Some(&cgroups.dir(KUBELET)),
            pod,
            CLOSED_PORT,
            kubelet_through,
        );
        probes.tcp(net, Some(&cgroups.dir("other")), pod, CLOSED_PORT, false);
    }
    probes.check();
}

/// The loaded rules' cgroup as nft prints it now.
fn listed_targets(net: &PodNet) -> Vec<CgroupTarget> {
    let listed = net
        .host
        .nft(&["list", "chain", "inet", "ovn-kubernetes", "udn-isolation"]);
    cgroupv2_matches(&listed)
        .into_iter()
        .map(|found| found.target)
        .collect()
}

async fn next_trigger(triggers: &mut ReloadTriggers) -> ReloadTrigger {
    tokio::time::timeout(Duration::from_secs(30), triggers.next())
        .await
        .expect("no trigger in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn systemd_announced_restart_reloads_the_rule() {
    let net = PodNet::start();
    let cgroups = TestCgroups::create(&[KUBELET, "other"]);
    let mut systemd = FakeSystemd::start(&["kubelet.service", "containerd.service"]);
    let config = IsolationConfig {
        kubelet_cgroup_path: Some(cgroups.nft_path(KUBELET)),
        systemd_socket: systemd.socket.clone(),
        rule_check_interval: Duration::from_secs(3600),
        ..IsolationConfig::new("node1")
    };
    let Started {
        mut isolation,
        warnings,
        mut triggers,
    } = HostIsolation::start(&config, NftCli::in_named_netns(&net.host.name))
        .await
        .unwrap();
    assert_eq!(warnings, []);
    assert!(triggers.tracks_restarts());
    systemd.wait_subscribed(1).await;
    let asked = systemd.recorded();
    assert_eq!(asked.get_unit, ["kubelet.service"]);
    assert_eq!(
        asked.add_match,
        ["type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"]
    );
    isolation.sync(&[web_pod()]).await.unwrap();
    assert_kubelet_only(&net, &cgroups, true);

    // kubelet restarts: its cgroup is recreated. The loaded rule now matches nothing.
    cgroups.recreate(KUBELET);
    assert_kubelet_only(&net, &cgroups, false);
    let nft_path = cgroups.nft_path(KUBELET);
    assert!(
        listed_targets(&net)
            .iter()
            .all(|target| *target != CgroupTarget::Path(nft_path.clone())),
        "nft resolves the old id to a number or some other cgroup, not to kubelet's: {:?}",
        listed_targets(&net)
    );
    assert!(isolation.stale_reason().await.unwrap().is_some());

    // Signals that are not "kubelet became active" trigger nothing; the one that is does.
    systemd.announce("containerd.service", "active").await;
    systemd.announce("kubelet.service", "activating").await;
    systemd.announce("kubelet.service", "active").await;
    let trigger = next_trigger(&mut triggers).await;
    assert_eq!(trigger, ReloadTrigger::KubeletRestarted);
    assert_eq!(
        isolation.handle(trigger).await.unwrap(),
        RuleCheck::Reloaded(ReloadReason::KubeletRestarted)
    );
    assert_kubelet_only(&net, &cgroups, true);
    assert_eq!(
        listed_targets(&net),
        [
            CgroupTarget::Path(nft_path.clone()),
            CgroupTarget::Path(nft_path.clone())
        ]
    );
    assert_eq!(
        isolation.check_kubelet_rule().await.unwrap(),
        RuleCheck::Current
    );

    // Exactly one trigger came of the three signals: after a second announcement and its
    // trigger, nothing else is queued (the signals are handled in order).
    systemd.announce("kubelet.service", "active").await;
    assert_eq!(
        next_trigger(&mut triggers).await,
        ReloadTrigger::KubeletRestarted
    );
    assert!(
        futures::FutureExt::now_or_never(triggers.next()).is_none(),
        "a signal that is not kubelet's activation triggered a reload"
    );

    // systemd re-executes (connections dropped): tracking resumes and reloads.
    systemd.disconnect_all().await;
    assert_eq!(
        next_trigger(&mut triggers).await,
        ReloadTrigger::TrackingResumed
    );
    systemd.wait_subscribed(2).await;
    cgroups.recreate(KUBELET);
    systemd.announce("kubelet.service", "active").await;
    let trigger = next_trigger(&mut triggers).await;
    assert_eq!(trigger, ReloadTrigger::KubeletRestarted);
    isolation.handle(trigger).await.unwrap();
    assert_kubelet_only(&net, &cgroups, true);
    assert_eq!(
        unit_object_path("kubelet.service"),
        "/org/freedesktop/systemd1/unit/kubelet_2eservice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_systemd_one_warning_and_the_periodic_check_reloads() {
    let net = PodNet::start();
    let cgroups = TestCgroups::create(&[KUBELET, "other"]);
    let config = IsolationConfig {
        kubelet_cgroup_path: Some(cgroups.nft_path(KUBELET)),
        systemd_socket: cgroups.base.join("no-such-socket"),
        rule_check_interval: Duration::from_millis(200),
        ..IsolationConfig::new("node1")
    };
    let Started {
        mut isolation,
        warnings,
        mut triggers,
    } = HostIsolation::start(&config, NftCli::in_named_netns(&net.host.name))
        .await
        .unwrap();
    let reasons: Vec<WarningReason> = warnings.iter().map(|w| w.reason).collect();
    assert_eq!(reasons, [WarningReason::KubeletRestartTrackingUnavailable]);
    assert!(
        warnings[0].message.starts_with(
            "Kubelet restarts are not tracked on the node node1 as systemd's private socket"
        ),
        "{}",
        warnings[0].message
    );
    assert!(!triggers.tracks_restarts());
    isolation.sync(&[web_pod()]).await.unwrap();
    assert_kubelet_only(&net, &cgroups, true);

    // A check with nothing changed reloads nothing.
    assert_eq!(
        next_trigger(&mut triggers).await,
        ReloadTrigger::PeriodicCheck
    );
    assert_eq!(
        isolation
            .handle(ReloadTrigger::PeriodicCheck)
            .await
            .unwrap(),
        RuleCheck::Current
    );

    cgroups.recreate(KUBELET);
    assert_kubelet_only(&net, &cgroups, false);
    assert_eq!(
        next_trigger(&mut triggers).await,
        ReloadTrigger::PeriodicCheck
    );
    let check = isolation
        .handle(ReloadTrigger::PeriodicCheck)
        .await
        .unwrap();
    assert!(
        matches!(
            check,
            RuleCheck::Reloaded(
                ReloadReason::Unresolved { .. } | ReloadReason::CgroupChanged { .. }
            )
        ),
        "{check:?}"
    );
    assert_kubelet_only(&net, &cgroups, true);

    // Starting again (the agent restarted) warns again, once per start.
    let again = HostIsolation::start(&config, NftCli::in_named_netns(&net.host.name))
        .await
        .unwrap();
    assert_eq!(again.warnings.len(), 1);
}
