//! Running an OVS command-line tool (`ovs-ofctl`, `ovs-appctl`) with a run directory, input
//! on stdin, a deadline, and its standard error in the error.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// An OVS tool invocation that failed.
#[derive(Debug, thiserror::Error)]
pub enum OfctlError {
    /// The tool could not be started.
    #[error("cannot run {command}")]
    Spawn {
        /// The command line.
        command: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Talking to the process failed (writing its input, waiting for it).
    #[error("{command}: cannot {action}")]
    Io {
        /// The command line.
        command: String,
        /// What was being done.
        action: &'static str,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// It did not finish in time (it was killed).
    #[error("{command} did not finish within {waited:?}")]
    Timeout {
        /// The command line.
        command: String,
        /// How long it was given.
        waited: Duration,
    },
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
        let command_line = {
            let mut words = vec![self.program.display().to_string()];
            words.extend(args.iter().cloned());
            words.join(" ")
        };
        let mut command = Command::new(self.program);
        command
            .args(args)
            .env("OVS_RUNDIR", &self.rundir)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| OfctlError::Spawn {
            command: command_line.clone(),
            source,
        })?;
        let pipe = child.stdin.take();
        // Writing runs next to waiting, so a child that talks before it has read everything
        // cannot deadlock against a full pipe.
        let write = async {
            if let (Some(text), Some(mut pipe)) = (stdin, pipe) {
                pipe.write_all(text.as_bytes()).await?;
                pipe.shutdown().await?;
            }
            Ok::<(), std::io::Error>(())
        };
        let (written, output) = tokio::time::timeout(self.timeout, async {
            tokio::join!(write, child.wait_with_output())
        })
        .await
        .map_err(|_| OfctlError::Timeout {
            command: command_line.clone(),
            waited: self.timeout,
        })?;
        let output = output.map_err(|source| OfctlError::Io {
            command: command_line.clone(),
            action: "wait for it",
            source,
        })?;
        if output
            .status
            .code()
            .is_some_and(|code| success.contains(&code))
        {
            written.map_err(|source| OfctlError::Io {
                command: command_line.clone(),
                action: "write its standard input",
                source,
            })?;
            return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
        }
        Err(OfctlError::Failed {
            command: command_line,
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }
}
