//! The simulated kubelet (placeholder of the sandbox branch: filled in by its own work).

use std::net::IpAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What one simulated kubelet runs with (written as JSON by `udnctl sandbox up`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfig {
    /// The Node's name.
    pub node_name: String,
    /// The node's InternalIP addresses.
    pub node_ips: Vec<IpAddr>,
    /// The API server.
    pub kubeconfig: PathBuf,
    /// Where CNI configs are read from (as kubelet's `--cni-conf-dir`).
    pub cni_conf_dir: PathBuf,
    /// Where CNI plugins are executed from (as kubelet's `--cni-bin-dir`).
    pub cni_bin_dir: PathBuf,
    /// Pods' state (sandboxes, container logs).
    pub state_dir: PathBuf,
    /// A cgroup v2 directory: the kubelet moves itself into
    /// `<cgroup_root>/kubelet.slice/kubelet.service`, pods go under `<cgroup_root>/kubepods.slice`.
    pub cgroup_root: PathBuf,
    /// Prefix of the pods' network namespace names.
    pub netns_prefix: String,
    /// The command that runs a built-in image: `<image_command...> <image> <args...>`.
    pub image_command: Vec<String>,
}

/// Why the kubelet stopped.
#[derive(Debug, thiserror::Error)]
pub enum KubeletError {
    /// Not built yet on this branch.
    #[error("the simulated kubelet is not built on this branch")]
    NotBuilt,
}

/// Runs the kubelet until SIGTERM or SIGINT.
pub async fn run(config: KubeletConfig) -> Result<(), KubeletError> {
    let _ = config;
    Err(KubeletError::NotBuilt)
}

/// The network namespace name of the sandbox the kubelet with `state_dir` made for pod
/// `namespace/name` (uid `uid`), if it has one.
pub fn sandbox_netns(
    state_dir: &std::path::Path,
    namespace: &str,
    name: &str,
    uid: &str,
) -> Option<String> {
    let _ = (state_dir, namespace, name, uid);
    None
}
