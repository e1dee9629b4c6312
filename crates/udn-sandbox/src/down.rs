//! `udnctl sandbox down`: stops every process the sandbox started, kills the pods (their
//! cgroups), takes the OVN lab apart (its daemons, and every `<prefix>-*` network namespace:
//! nodes, pods, underlay, with every veth, OVS bridge and nft table in them) and removes
//! the sandbox directory. Works on a half-started or crashed sandbox too.

use std::path::Path;
use std::time::Duration;

use crate::error::SandboxError;
use crate::layout::Layout;
use crate::state::SandboxState;

/// What `down` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DownReport {
    /// Processes stopped.
    pub stopped: Vec<String>,
    /// Labs taken apart (their prefixes).
    pub labs: Vec<String>,
    /// Whether there was anything at all.
    pub found: bool,
}

/// Takes the sandbox in `dir` down (see the module docs).
pub fn down(dir: &Path) -> Result<DownReport, SandboxError> {
    let layout = Layout::new(dir);
    let mut report = DownReport::default();
    if !layout.root().exists() {
        return Ok(report);
    }
    report.found = true;
    let state = SandboxState::load(&layout.state_file())?.unwrap_or_default();
    // Reverse start order: the node components before what they talk to.
    for daemon in state.daemons.iter().rev().filter(|d| d.ours) {
        if daemon.running() {
            daemon.stop(Duration::from_secs(10));
            report.stopped.push(daemon.name.clone());
        }
    }
    if let Some(root) = &state.cgroup_root {
        crate::cgroup::remove(root)?;
    }
    // Every lab run dir under the sandbox: the recorded one, and one whose recording a
    // crash prevented.
    for entry in std::fs::read_dir(layout.lab_base())
        .into_iter()
        .flatten()
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            let prefix = udn_ovn_lab::tear_down(&path)?;
            report.labs.push(prefix);
        }
    }
    if !state.prefix.is_empty() {
        // Pods' netns carry the lab's prefix too; a lab dir lost in a crash leaves them.
        for netns in udn_ovn_lab::netns_with_prefix(&format!("{}-", state.prefix)) {
            crate::command::run("ip", &["netns", "delete", &netns])?;
        }
        if let Ok(mount) = crate::cgroup::v2_mount() {
            crate::cgroup::remove(&mount.join(format!("udn-sandbox-{}", state.prefix)))?;
        }
    }
    std::fs::remove_dir_all(layout.root())
        .map_err(|source| SandboxError::io("remove", layout.root(), source))?;
    Ok(report)
}
