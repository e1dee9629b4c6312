//! Running an OVS command-line tool (`ovs-ofctl`, `ovs-appctl`) with a run directory, input
//! on stdin, a deadline, and its standard error in the error.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::command::{self, CommandError, Program};

/// An OVS tool invocation that failed.
#[derive(Debug, thiserror::Error)]
pub enum OfctlError {
    /// The tool could not be run to its end (not started, killed at its deadline, ...).
    #[error(transparent)]
    Command(#[from] CommandError),
    /// It refused: a flow it cannot parse, a bridge that does not exist, ...
    #[error("{command} failed ({status}): {}", .stderr.trim())]
    Failed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// Its standard error.
        stderr: String,
    },
}

/// One tool to run.
pub(super) struct Tool<'a> {
    pub(super) program: &'a Path,
    /// Exported as `OVS_RUNDIR`.
    pub(super) rundir: PathBuf,
    pub(super) timeout: Duration,
}

impl Tool<'_> {
    /// Runs the tool with `args`, `stdin` on its standard input; an exit status in `success`
    /// gives its standard output.
    pub(super) async fn run(
        &self,
        args: &[String],
        stdin: Option<String>,
        success: &[i32],
    ) -> Result<String, OfctlError> {
        let mut argv = vec![self.program.display().to_string()];
        argv.extend(args.iter().cloned());
        let env = [("OVS_RUNDIR", self.rundir.as_os_str())];
        let done = command::run(Program {
            argv: &argv,
            env: &env,
            stdin: stdin.as_deref(),
            timeout: self.timeout,
        })
        .await?;
        if done.exited_with(success) {
            return Ok(done.stdout);
        }
        Err(OfctlError::Failed {
            command: done.command,
            status: done.status.to_string(),
            stderr: done.stderr,
        })
    }
}
