//! The sandbox's state file: what `up` started, so `status`, `down` and the tools find it
//! again from another process. Written after every step of `up`, so a crash half-way leaves
//! enough for `down` (or the next `up`) to clean up.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::daemon::DaemonRecord;
use crate::error::SandboxError;

/// Everything a running sandbox is made of.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxState {
    /// The OVN lab's run directory, once it is up.
    pub lab_run_dir: Option<PathBuf>,
    /// The lab's prefix: every network namespace of the sandbox starts with `<prefix>-`.
    pub prefix: String,
    /// The sandbox's cgroup v2 directory (the kubelets' and the pods' cgroups are in it).
    pub cgroup_root: Option<PathBuf>,
    /// The API server's URL on this host.
    pub api_url: Option<String>,
    /// The nodes, in order.
    pub nodes: Vec<NodeState>,
    /// Every process the sandbox started (OVN daemons included), in start order.
    pub daemons: Vec<DaemonRecord>,
    /// Set once `up` finished.
    pub complete: bool,
}

/// One node.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeState {
    /// The Node's name.
    pub name: String,
    /// Its host network namespace.
    pub netns: String,
    /// Its IP on the underlay.
    pub ip: std::net::Ipv4Addr,
    /// The zone's NB (`unix:...`).
    pub nb_remote: String,
    /// The zone's SB (`unix:...`).
    pub sb_remote: String,
    /// The node's OVS database (`unix:...`).
    pub ovs_remote: String,
    /// OVS's run dir (`OVS_RUNDIR` for ovs-ofctl and ovs-appctl).
    pub ovs_rundir: PathBuf,
}

impl SandboxState {
    /// Reads the state file; `None` when there is none.
    pub fn load(path: &Path) -> Result<Option<Self>, SandboxError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(SandboxError::io("read", path, source)),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|error| SandboxError::State {
                path: path.to_path_buf(),
                reason: error.to_string(),
            })
    }

    /// Writes the state file (whole, through a temporary file, so a reader never sees half).
    pub fn save(&self, path: &Path) -> Result<(), SandboxError> {
        let text = serde_json::to_string_pretty(self).map_err(|error| SandboxError::State {
            path: path.to_path_buf(),
            reason: error.to_string(),
        })?;
        let temporary = path.with_extension("json.tmp");
        std::fs::write(&temporary, text)
            .map_err(|source| SandboxError::io("write", &temporary, source))?;
        std::fs::rename(&temporary, path).map_err(|source| SandboxError::io("rename", path, source))
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Result<&NodeState, SandboxError> {
        self.nodes
            .iter()
            .find(|node| node.name == name)
            .ok_or_else(|| SandboxError::NotFound {
                kind: "node",
                name: name.to_owned(),
                hint: format!(
                    " (nodes: {})",
                    self.nodes
                        .iter()
                        .map(|n| n.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    }
}
