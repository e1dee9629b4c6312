//! `udnctl sandbox status`: each component, up or not, with the reason.

use crate::daemon::Liveness;
use crate::error::SandboxError;
use crate::layout::Layout;
use crate::state::SandboxState;

/// One line of the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentStatus {
    /// The component.
    pub name: String,
    /// Its pid.
    pub pid: u32,
    /// `None` when it runs, else why not.
    pub down_reason: Option<String>,
}

/// The sandbox's status; `None` when there is no sandbox in `dir`.
pub fn status(
    dir: &std::path::Path,
) -> Result<Option<(SandboxState, Vec<ComponentStatus>)>, SandboxError> {
    let layout = Layout::new(dir);
    let Some(state) = SandboxState::load(&layout.state_file())? else {
        return Ok(None);
    };
    let lines = state
        .daemons
        .iter()
        .map(|daemon| ComponentStatus {
            name: daemon.name.clone(),
            pid: daemon.pid,
            down_reason: match daemon.liveness() {
                Liveness::Running => None,
                Liveness::Gone(reason) => Some(format!("{reason}; log: {}", daemon.log.display())),
            },
        })
        .collect();
    Ok(Some((state, lines)))
}

/// The components of `state` that do not run, each with why.
pub fn not_running(state: &SandboxState) -> Vec<String> {
    state
        .daemons
        .iter()
        .filter_map(|daemon| match daemon.liveness() {
            Liveness::Running => None,
            Liveness::Gone(reason) => Some(format!("{}: {reason}", daemon.name)),
        })
        .collect()
}

/// The status as text, one component per line.
pub fn render(state: &SandboxState, lines: &[ComponentStatus]) -> String {
    let mut out = String::new();
    let width = lines.iter().map(|l| l.name.len()).max().unwrap_or(0);
    for line in lines {
        let what = match &line.down_reason {
            None => "up".to_owned(),
            Some(reason) => format!("DOWN ({reason})"),
        };
        out.push_str(&format!(
            "{:width$}  pid {:>7}  {what}\n",
            line.name, line.pid
        ));
    }
    if !state.complete {
        out.push_str(
            "the bring-up did not finish: run `udnctl sandbox up` again (it cleans up first)\n",
        );
    }
    out
}
