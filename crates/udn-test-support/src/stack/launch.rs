//! The components' command lines, as users start them: every component gets the same
//! cluster flags, a kubeconfig and an ephemeral admin port; the node agent runs inside its
//! node's netns (`nsenter`), where its OVS, veths and routes are.

use std::path::Path;
use std::process::Command;

use super::StackConfig;

/// The cluster flags every component gets.
pub const CLUSTER_FLAGS: [&str; 6] = [
    "--cluster-subnets",
    "10.244.0.0/16/24",
    "--k8s-service-cidrs",
    "10.96.0.0/16",
    "--gateway-mode",
    "shared",
];

/// Flags of every component: UDNs on, no leader election, an ephemeral admin port.
const COMMON_FLAGS: [&str; 5] = [
    "--enable-multi-network",
    "--enable-network-segmentation",
    "--admin-bind-address",
    "127.0.0.1:0",
    "--leader-elect=false",
];

/// `udn-cluster-manager`.
pub(super) fn cluster_manager(config: &StackConfig, kubeconfig: &Path) -> Command {
    let mut command = Command::new(&config.binaries.cluster_manager);
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(CLUSTER_FLAGS)
        .args(COMMON_FLAGS);
    command
}

/// `udn-controller` for `node`'s zone.
pub(super) fn controller(
    config: &StackConfig,
    node: &udn_ovn_lab::Node,
    kubeconfig: &Path,
) -> Command {
    let mut command = Command::new(&config.binaries.controller);
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--nb-address")
        .arg(node.nb_remote())
        .arg("--sb-address")
        .arg(node.sb_remote())
        .args(["--zone", node.name()])
        .args(CLUSTER_FLAGS)
        .args(COMMON_FLAGS);
    command
}

/// Where one node's agent keeps its CNI server and config.
#[derive(Debug, Clone, Copy)]
pub(super) struct AgentPaths<'a> {
    pub(super) kubeconfig: &'a Path,
    pub(super) socket: &'a Path,
    pub(super) conf_dir: &'a Path,
}

/// `udn-node` for `node`, run inside the node's netns with `nsenter`.
pub(super) fn agent(
    config: &StackConfig,
    node: &udn_ovn_lab::Node,
    paths: AgentPaths<'_>,
) -> Command {
    let mut command = Command::new("nsenter");
    // ovs-ofctl and ovs-appctl find the node's bridges through its OVS run dir.
    command.env("OVS_RUNDIR", node.ovs_rundir());
    command
        .arg(format!("--net=/run/netns/{}", node.netns()))
        .arg("--")
        .arg(&config.binaries.agent)
        .arg("--kubeconfig")
        .arg(paths.kubeconfig)
        .args(["--node-name", node.name()])
        .args(CLUSTER_FLAGS)
        .args(COMMON_FLAGS)
        .arg("--ovs-address")
        .arg(node.ovs_remote())
        .arg("--sb-address")
        .arg(node.sb_remote())
        .args(["--ovs-datapath-type", "netdev"])
        .arg("--cni-server-socket")
        .arg(paths.socket)
        .arg("--cni-conf-dir")
        .arg(paths.conf_dir)
        .arg("--cni-request-timeout")
        .arg(config.cni_request_timeout_s.to_string())
        .args(["--log-filter", &config.log_filter]);
    command
}
