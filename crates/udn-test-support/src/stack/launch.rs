//! The components' command lines: the sandbox's ([`udn_sandbox::components`]), with the
//! stack's paths and settings.

use std::path::Path;
use std::process::Command;

use udn_sandbox::components::{self, AgentSettings, ZoneEndpoints};

use super::StackConfig;

/// The cluster flags every component gets.
pub use udn_sandbox::components::CLUSTER_FLAGS;

/// `udn-cluster-manager`.
pub(super) fn cluster_manager(config: &StackConfig, kubeconfig: &Path) -> Command {
    components::cluster_manager(&config.binaries.cluster_manager, kubeconfig)
}

/// What the components are told about `node`'s zone.
fn zone(node: &udn_ovn_lab::Node) -> ZoneEndpoints {
    ZoneEndpoints::of_lab_node(node)
}

/// `udn-controller` for `node`'s zone.
pub(super) fn controller(
    config: &StackConfig,
    node: &udn_ovn_lab::Node,
    kubeconfig: &Path,
) -> Command {
    components::controller(&config.binaries.controller, &zone(node), kubeconfig)
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
    let settings = AgentSettings {
        kubeconfig: paths.kubeconfig.to_path_buf(),
        socket: paths.socket.to_path_buf(),
        conf_dir: paths.conf_dir.to_path_buf(),
        cni_request_timeout_s: config.cni_request_timeout_s,
        log_filter: config.log_filter.clone(),
        kubelet_cgroup_path: None,
    };
    components::agent(&config.binaries.agent, &zone(node), &settings)
}
