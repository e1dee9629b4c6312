//! The manager against a recording executor and a fake cgroup tree.

use std::time::Duration;

use super::cgroup::{fs, tree};
use super::elements::pod;
use crate::isolation::*;
use crate::nft::{FailOn, ListTarget, RecordingNft};

fn config(dir: &std::path::Path) -> IsolationConfig {
    IsolationConfig {
        systemd_socket: dir.join("no-systemd/private"),
        rule_check_interval: Duration::from_secs(3600),
        ..IsolationConfig::new("node1")
    }
}

fn reasons(warnings: &[IsolationWarning]) -> Vec<WarningReason> {
    warnings.iter().map(|w| w.reason).collect()
}

#[tokio::test]
async fn start_installs_the_chain_for_the_discovered_cgroup() {
    let root = tree(&["kubelet.slice/kubelet.service"]);
    let nft = RecordingNft::new();
    let started = HostIsolation::start_with(
        &config(root.path()),
        nft.clone(),
        &fs(root.path(), CgroupLayout::Unified),
    )
    .await
    .unwrap();
    // The socket match was checked first, in a scratch table.
    assert_eq!(nft.checks().len(), 1);
    assert!(
        nft.checks()[0].contains("socket cgroupv2 level 2 kubelet.slice/kubelet.service accept")
    );
    assert_eq!(
        nft.runs(),
        [chain_transaction(&ChainSpec {
            ipv4: true,
            ipv6: true,
            kubelet: Some(KubeletRule {
                level: 2,
                path: "kubelet.slice/kubelet.service".to_owned()
            }),
        })
        .render()
        .unwrap()]
    );
    // No systemd here: said once.
    assert_eq!(
        reasons(&started.warnings),
        [WarningReason::KubeletRestartTrackingUnavailable]
    );
    assert!(started.warnings[0].message.contains("no-systemd/private"));
    assert!(!started.triggers.tracks_restarts());
    assert_eq!(
        started
            .isolation
            .kubelet_cgroup()
            .map(|k| k.nft_path.as_str()),
        Some("kubelet.slice/kubelet.service")
    );
}

#[tokio::test]
async fn probes_not_supported_cases_still_isolate() {
    let root = tree(&[
        "unified/system.slice/containerd.service",
        "podruntime/kubelet",
    ]);
    let cases = [
        (CgroupLayout::V1Only, None, "as it uses cgroup v1."),
        (
            CgroupLayout::Hybrid,
            None,
            "as no kubelet.service cgroup was found under",
        ),
        (
            CgroupLayout::Hybrid,
            Some("podruntime/kubelet"),
            "does not exist",
        ),
    ];
    for (layout, configured, says) in cases {
        let nft = RecordingNft::new();
        let config = IsolationConfig {
            kubelet_cgroup_path: configured.map(str::to_owned),
            ..config(root.path())
        };
        let started = HostIsolation::start_with(&config, nft.clone(), &fs(root.path(), layout))
            .await
            .unwrap();
        assert_eq!(
            reasons(&started.warnings),
            [WarningReason::KubeletProbesNotSupported],
            "{layout:?} {configured:?}"
        );
        assert!(
            started.warnings[0].message.contains(says),
            "{}",
            started.warnings[0].message
        );
        assert!(nft.checks().is_empty());
        let runs = nft.runs();
        assert_eq!(runs.len(), 1);
        assert!(!runs[0].contains("socket cgroupv2"), "{}", runs[0]);
        assert!(runs[0].contains("ip daddr @udn-pod-default-ips-v4 drop"));
        assert_eq!(started.isolation.kubelet_cgroup(), None);
    }
}

#[tokio::test]
async fn socket_expression_refused() {
    let root = tree(&["kubelet.slice/kubelet.service"]);
    let nft = RecordingNft::new();
    nft.fail_when(
        FailOn::Check,
        "socket cgroupv2",
        "Could not process rule: No such file or directory",
    );
    let started = HostIsolation::start_with(
        &config(root.path()),
        nft.clone(),
        &fs(root.path(), CgroupLayout::Unified),
    )
    .await
    .unwrap();
    assert_eq!(
        reasons(&started.warnings),
        [WarningReason::KubeletProbesNotSupported]
    );
    assert_eq!(
        started.warnings[0].message,
        "Kubelet probes for UDN are not supported on the node node1 as nft cannot load the \
         socket cgroupv2 match (no socket expression: is the kernel built without \
         CONFIG_NFT_SOCKET?): Could not process rule: No such file or directory."
    );
    assert!(!nft.runs()[0].contains("socket cgroupv2"));
}

#[tokio::test]
async fn root_rejected_and_no_unit() {
    let root = tree(&["podruntime/kubelet"]);
    let rejected = IsolationConfig {
        kubelet_cgroup_path: Some("/".to_owned()),
        ..config(root.path())
    };
    let error = HostIsolation::start_with(
        &rejected,
        RecordingNft::new(),
        &fs(root.path(), CgroupLayout::Unified),
    )
    .await
    .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("kubelet-cgroup-path \"/\" is the cgroup v2 root"),
        "{error}"
    );
    let no_unit = IsolationConfig {
        kubelet_cgroup_path: Some("podruntime/kubelet".to_owned()),
        ..config(root.path())
    };
    let started = HostIsolation::start_with(
        &no_unit,
        RecordingNft::new(),
        &fs(root.path(), CgroupLayout::Unified),
    )
    .await
    .unwrap();
    assert_eq!(
        reasons(&started.warnings),
        [WarningReason::KubeletRestartTrackingUnavailable]
    );
    assert!(
        started.warnings[0]
            .message
            .contains("does not name a systemd unit (kubelet is not")
    );
}

#[tokio::test]
async fn the_cache_follows_only_successful_transactions() {
    let root = tree(&["kubelet.slice/kubelet.service"]);
    let nft = RecordingNft::new();
    let mut isolation = HostIsolation::start_with(
        &config(root.path()),
        nft.clone(),
        &fs(root.path(), CgroupLayout::Unified),
    )
    .await
    .unwrap()
    .isolation;
    nft.take_runs();
    isolation
        .sync(&[pod("a", &["10.0.0.1"], &[]), pod("b", &["10.0.0.1"], &[])])
        .await
        .unwrap();
    assert_eq!(nft.take_runs().len(), 1);
    nft.fail_when(
        FailOn::Run,
        "10.0.0.2",
        "Could not process rule: No such file or directory",
    );
    let moved = pod("a", &["10.0.0.2"], &[]);
    let error = isolation.update_pod(&moved).await.unwrap_err();
    assert!(error.to_string().contains("update the pod sets"), "{error}");
    assert!(
        isolation
            .index()
            .pod(&PodKey::new("ns1", "a"))
            .unwrap()
            .iter()
            .any(|e| e.key == ElementKey::Address("10.0.0.1".parse().unwrap()))
    );
    nft.clear_failures();
    nft.take_runs();
    assert!(isolation.update_pod(&moved).await.unwrap());
    assert_eq!(
        nft.take_runs(),
        ["add element inet ovn-kubernetes udn-pod-default-ips-v4 { 10.0.0.2 }\n"]
    );
    assert!(!isolation.update_pod(&moved).await.unwrap(), "unchanged");
    let mut host = pod("h", &["192.168.0.1"], &[]);
    host.host_network = true;
    assert!(!isolation.update_pod(&host).await.unwrap());
    assert!(
        isolation
            .remove_pod(&PodKey::new("ns1", "b"))
            .await
            .unwrap()
    );
    assert_eq!(
        nft.take_runs(),
        [
            "add element inet ovn-kubernetes udn-pod-default-ips-v4 { 10.0.0.1 }\n\
          delete element inet ovn-kubernetes udn-pod-default-ips-v4 { 10.0.0.1 }\n"
        ]
    );
    assert!(nft.runs().is_empty());
}

fn listing(rules: &[String]) -> String {
    let mut text = String::from(
        "table inet ovn-kubernetes {\n\tchain udn-isolation {\n\t\tcomment \"Host isolation for user defined networks\"\n\t\ttype filter hook output priority filter; policy accept;\n",
    );
    for rule in rules {
        text.push_str(&format!("\t\t{rule}\n"));
    }
    text.push_str("\t}\n}\n");
    text
}

#[tokio::test]
async fn stale_rules_are_reloaded() {
    let root = tree(&["kubelet.slice/kubelet.service"]);
    let nft = RecordingNft::new();
    let mut isolation = HostIsolation::start_with(
        &config(root.path()),
        nft.clone(),
        &fs(root.path(), CgroupLayout::Unified),
    )
    .await
    .unwrap()
    .isolation;
    let chain = ListTarget::Chain(table_id(), CHAIN.to_owned());
    let loaded: Vec<String> = isolation
        .rules()
        .iter()
        .map(|rule| {
            rule.replace(
                "kubelet.slice/kubelet.service",
                "\"kubelet.slice/kubelet.service\"",
            )
        })
        .collect();
    nft.take_runs();

    assert_eq!(
        isolation.check_kubelet_rule().await.unwrap(),
        RuleCheck::Reloaded(ReloadReason::ChainMissing)
    );
    assert_eq!(nft.take_runs().len(), 1);

    nft.set_listing(&chain, Some(listing(&loaded)));
    assert_eq!(
        isolation.check_kubelet_rule().await.unwrap(),
        RuleCheck::Current
    );
    assert!(nft.take_runs().is_empty());

    nft.set_listing(&chain, Some(listing(&loaded[..3])));
    assert_eq!(
        isolation.check_kubelet_rule().await.unwrap(),
        RuleCheck::Reloaded(ReloadReason::RulesChanged {
            found: 3,
            expected: 8
        })
    );

    let unresolved: Vec<String> = loaded
        .iter()
        .map(|rule| rule.replace("\"kubelet.slice/kubelet.service\"", "669"))
        .collect();
    nft.set_listing(&chain, Some(listing(&unresolved)));
    assert_eq!(
        isolation.check_kubelet_rule().await.unwrap(),
        RuleCheck::Reloaded(ReloadReason::Unresolved { id: 669 })
    );

    // Recreated: a new inode. (Made before the old one goes, so the inode differs.)
    nft.set_listing(&chain, Some(listing(&loaded)));
    let dir = root.path().join("kubelet.slice/kubelet.service");
    let old = isolation.kubelet_cgroup().unwrap().current_id();
    std::fs::rename(&dir, root.path().join("old")).unwrap();
    std::fs::create_dir(&dir).unwrap();
    let new = isolation.kubelet_cgroup().unwrap().current_id();
    assert_ne!(old, new);
    nft.take_runs();
    assert_eq!(
        isolation.check_kubelet_rule().await.unwrap(),
        RuleCheck::Reloaded(ReloadReason::CgroupChanged {
            loaded: old,
            now: new
        })
    );
    assert_eq!(nft.take_runs().len(), 1);
    assert_eq!(
        isolation.check_kubelet_rule().await.unwrap(),
        RuleCheck::Current
    );
    assert_eq!(
        isolation
            .handle(ReloadTrigger::KubeletRestarted)
            .await
            .unwrap(),
        RuleCheck::Reloaded(ReloadReason::KubeletRestarted)
    );
}

#[tokio::test]
async fn cleanup_is_one_transaction() {
    let nft = RecordingNft::new();
    cleanup(&nft).await.unwrap();
    assert_eq!(nft.runs(), [cleanup_transaction().render().unwrap()]);
}
