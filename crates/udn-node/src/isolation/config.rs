//! What host isolation needs from the agent's configuration.

use std::path::PathBuf;
use std::time::Duration;

/// systemd's private D-Bus socket.
pub const DEFAULT_SYSTEMD_SOCKET: &str = "/run/systemd/private";
/// How often the loaded kubelet rule is checked.
pub const DEFAULT_RULE_CHECK_INTERVAL: Duration = Duration::from_secs(30);

/// Host isolation's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IsolationConfig {
    /// This node (named in warnings).
    pub node_name: String,
    /// IPv4 rules.
    pub ipv4: bool,
    /// IPv6 rules.
    pub ipv6: bool,
    /// `kubelet-cgroup-path` (`[ovnkubenode]`, `--kubelet-cgroup-path`): the kubelet's
    /// cgroup relative to `/sys/fs/cgroup`; on a hybrid host with or without the `unified/`
    /// prefix. `None`: the first `kubelet.service` under the cgroup v2 root.
    pub kubelet_cgroup_path: Option<String>,
    /// systemd's private socket, for kubelet restart tracking.
    pub systemd_socket: PathBuf,
    /// Where the default discovery walks instead of the whole v2 tree (tests and sandboxes:
    /// a subtree of the v2 root). `None` in production.
    pub kubelet_cgroup_search_dir: Option<PathBuf>,
    /// How often the loaded kubelet rule is checked (and reloaded when stale).
    pub rule_check_interval: Duration,
}

impl IsolationConfig {
    /// Defaults for `node_name`: both families, discovery, `/run/systemd/private`.
    pub fn new(node_name: impl Into<String>) -> Self {
        Self {
            node_name: node_name.into(),
            ipv4: true,
            ipv6: true,
            kubelet_cgroup_path: None,
            systemd_socket: PathBuf::from(DEFAULT_SYSTEMD_SOCKET),
            kubelet_cgroup_search_dir: None,
            rule_check_interval: DEFAULT_RULE_CHECK_INTERVAL,
        }
    }
}
