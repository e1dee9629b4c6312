//! The sandbox's tools: `nbctl`/`sbctl` on a node's zone databases and `logs`.

use std::process::Command;

use crate::error::SandboxError;
use crate::layout::Layout;
use crate::state::SandboxState;

/// The running sandbox's state, or an error saying there is none.
pub fn load(dir: &std::path::Path) -> Result<SandboxState, SandboxError> {
    let layout = Layout::new(dir);
    SandboxState::load(&layout.state_file())?.ok_or_else(|| SandboxError::NotFound {
        kind: "sandbox",
        name: dir.display().to_string(),
        hint: ": start one with `udnctl sandbox up`".to_owned(),
    })
}

/// Which zone database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Database {
    /// Northbound (`ovn-nbctl`).
    Northbound,
    /// Southbound (`ovn-sbctl`).
    Southbound,
}

/// `ovn-nbctl`/`ovn-sbctl` against `node`'s zone with `args`.
pub fn ctl_command(
    state: &SandboxState,
    node: &str,
    database: Database,
    args: &[String],
) -> Result<Command, SandboxError> {
    let node = state.node(node)?;
    let (program, remote) = match database {
        Database::Northbound => ("ovn-nbctl", &node.nb_remote),
        Database::Southbound => ("ovn-sbctl", &node.sb_remote),
    };
    let mut command = Command::new(program);
    command.arg(format!("--db={remote}")).args(args);
    Ok(command)
}

/// The log file of `component` (its name as `status` shows it, spaces or dashes).
pub fn log_path(state: &SandboxState, component: &str) -> Result<std::path::PathBuf, SandboxError> {
    daemon_index(state, component).map(|index| state.daemons[index].log.clone())
}

/// Where `component` (its name as `status` shows it, spaces or dashes) is in the state's
/// daemons.
pub fn daemon_index(state: &SandboxState, component: &str) -> Result<usize, SandboxError> {
    let wanted = component.replace('-', " ");
    state
        .daemons
        .iter()
        .position(|d| d.name == component || d.name.replace('-', " ") == wanted)
        .ok_or_else(|| SandboxError::NotFound {
            kind: "component",
            name: component.to_owned(),
            hint: format!(
                " (components: {})",
                state
                    .daemons
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
}
