//! The components' command lines, as users start them: every component gets the same
//! cluster flags and an ephemeral admin port; the node agent runs inside its node's netns
//! (`nsenter`), where its OVS, veths and routes are. The test stack
//! (`udn_test_support::stack`) starts the same command lines.

use std::path::{Path, PathBuf};
use std::process::Command;

use udn_api::dynamic_udn::DynamicUdn;

/// The cluster flags every component gets (upstream's kind defaults).
pub const CLUSTER_FLAGS: [&str; 6] = [
    "--cluster-subnets",
    "10.244.0.0/16/24",
    "--k8s-service-cidrs",
    "10.96.0.0/16",
    "--gateway-mode",
    "shared",
];

/// Flags of every udn component: UDNs on, no leader election (one replica each), an
/// ephemeral admin port (several components share this host's loopback).
pub const COMMON_FLAGS: [&str; 5] = [
    "--enable-multi-network",
    "--enable-network-segmentation",
    "--admin-bind-address",
    "127.0.0.1:0",
    "--leader-elect=false",
];

/// The Dynamic UDN flags (upstream's names) for `settings`; none when it is off.
pub fn dynamic_udn_flags(settings: &DynamicUdn) -> Vec<String> {
    if !settings.enabled {
        return Vec::new();
    }
    vec![
        "--enable-dynamic-udn-allocation".to_owned(),
        "--udn-deletion-grace-period".to_owned(),
        format!("{}ms", settings.grace_period.as_millis()),
    ]
}

/// What one zone's components are told about it.
#[derive(Debug, Clone)]
pub struct ZoneEndpoints {
    /// The node (and zone) name.
    pub node: String,
    /// The node's host network namespace.
    pub netns: String,
    /// The zone's NB (`unix:...`).
    pub nb_remote: String,
    /// The zone's SB (`unix:...`).
    pub sb_remote: String,
    /// The node's OVS database (`unix:...`).
    pub ovs_remote: String,
    /// OVS's run dir.
    pub ovs_rundir: PathBuf,
}

impl ZoneEndpoints {
    /// What the components are told about a lab node's zone.
    pub fn of_lab_node(node: &udn_ovn_lab::Node) -> Self {
        Self {
            node: node.name().to_owned(),
            netns: node.netns().to_owned(),
            nb_remote: node.nb_remote(),
            sb_remote: node.sb_remote(),
            ovs_remote: node.ovs_remote(),
            ovs_rundir: node.ovs_rundir().to_path_buf(),
        }
    }
}

/// Where one node's agent keeps its CNI server and config, and what else it is told.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    /// Its kubeconfig (reachable from inside the node's netns).
    pub kubeconfig: PathBuf,
    /// The CNI server socket.
    pub socket: PathBuf,
    /// Where it writes its CNI config.
    pub conf_dir: PathBuf,
    /// `--cni-request-timeout`, seconds.
    pub cni_request_timeout_s: u64,
    /// `--log-filter`.
    pub log_filter: String,
    /// `--kubelet-cgroup-path`, when the kubelet's cgroup is known.
    pub kubelet_cgroup_path: Option<String>,
}

/// `udn-cluster-manager`.
pub fn cluster_manager(binary: &Path, kubeconfig: &Path) -> Command {
    let mut command = Command::new(binary);
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(CLUSTER_FLAGS)
        .args(COMMON_FLAGS);
    command
}

/// `udn-controller` for `zone`.
pub fn controller(binary: &Path, zone: &ZoneEndpoints, kubeconfig: &Path) -> Command {
    let mut command = Command::new(binary);
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--nb-address")
        .arg(&zone.nb_remote)
        .arg("--sb-address")
        .arg(&zone.sb_remote)
        .args(["--zone", &zone.node])
        .args(CLUSTER_FLAGS)
        .args(COMMON_FLAGS);
    command
}

/// `udn-node` for `zone`'s node, run inside the node's netns with `nsenter`.
pub fn agent(binary: &Path, zone: &ZoneEndpoints, settings: &AgentSettings) -> Command {
    let mut command = in_netns(&zone.netns);
    // ovs-ofctl and ovs-appctl find the node's bridges through its OVS run dir.
    command.env("OVS_RUNDIR", &zone.ovs_rundir);
    command
        .arg(binary)
        .arg("--kubeconfig")
        .arg(&settings.kubeconfig)
        .args(["--node-name", &zone.node])
        .args(CLUSTER_FLAGS)
        .args(COMMON_FLAGS)
        .arg("--ovs-address")
        .arg(&zone.ovs_remote)
        .arg("--sb-address")
        .arg(&zone.sb_remote)
        .args(["--ovs-datapath-type", "netdev"])
        .arg("--cni-server-socket")
        .arg(&settings.socket)
        .arg("--cni-conf-dir")
        .arg(&settings.conf_dir)
        .arg("--cni-request-timeout")
        .arg(settings.cni_request_timeout_s.to_string())
        .args(["--log-filter", &settings.log_filter]);
    if let Some(path) = &settings.kubelet_cgroup_path {
        command.arg("--kubelet-cgroup-path").arg(path);
    }
    command
}

/// `nsenter --net=/run/netns/<netns> --`, to which the program and its arguments are added.
pub fn in_netns(netns: &str) -> Command {
    let mut command = Command::new("nsenter");
    command.arg(format!("--net=/run/netns/{netns}")).arg("--");
    command
}
