//! `udnctl sandbox restart COMPONENT`: stops one of the sandbox's own processes and starts
//! it again with the command line `up` recorded, as a node's service manager would restart
//! a crashed or upgraded component. The OVN daemons are the lab's and are not restarted.

use std::path::Path;
use std::time::Duration;

use crate::daemon::{self, DaemonRecord};
use crate::error::SandboxError;
use crate::layout::Layout;
use crate::tools;

/// How long a component gets to exit on SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Restarts `component` of the sandbox in `dir`; the new process's record.
pub fn restart(dir: &Path, component: &str) -> Result<DaemonRecord, SandboxError> {
    let layout = Layout::new(dir);
    let mut state = tools::load(dir)?;
    let index = tools::daemon_index(&state, component)?;
    let old = state.daemons[index].clone();
    let line = match (&old.command, old.ours) {
        (Some(line), true) => line.clone(),
        _ => {
            return Err(SandboxError::NotFound {
                kind: "restartable component",
                name: old.name,
                hint: ": the OVN daemons belong to the lab and are restarted with the sandbox \
                       (`udnctl sandbox down`, then `up`)"
                    .to_owned(),
            });
        }
    };
    old.stop(STOP_GRACE);
    let record = daemon::spawn(&old.name, line.command(), &old.log)?;
    state.daemons[index] = record.clone();
    state.save(&layout.state_file())?;
    Ok(record)
}
