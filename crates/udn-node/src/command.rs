//! Running a helper program (`nft`, `ovs-ofctl`, `iptables`): its input on stdin, a deadline
//! (it is killed past it), its output captured. What counts as success, and how a refusal
//! reads, is the caller's: [`run`] only fails when the program could not be run to its end.

use std::ffi::OsStr;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// A program that could not be run to its end.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// It could not be started.
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
}

/// How a program ended.
#[derive(Debug)]
pub struct Finished {
    /// The command line (for messages).
    pub command: String,
    /// Its exit status.
    pub status: ExitStatus,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Finished {
    /// Whether it exited with one of `codes`.
    pub fn exited_with(&self, codes: &[i32]) -> bool {
        self.status.code().is_some_and(|code| codes.contains(&code))
    }
}

/// One program to run.
#[derive(Debug, Clone, Copy)]
pub struct Program<'a> {
    /// The program and its arguments (the first word is the program).
    pub argv: &'a [String],
    /// Extra environment variables.
    pub env: &'a [(&'a str, &'a OsStr)],
    /// Its standard input (`None`: `/dev/null`).
    pub stdin: Option<&'a str>,
    /// How long it may take.
    pub timeout: Duration,
}

/// Runs `program` to its end: its status and output, or why it could not be run.
pub async fn run(program: Program<'_>) -> Result<Finished, CommandError> {
    let command_line = program.argv.join(" ");
    let Some((first, args)) = program.argv.split_first() else {
        return Err(CommandError::Spawn {
            command: command_line,
            source: std::io::Error::other("empty command"),
        });
    };
    let mut command = Command::new(first);
    command
        .args(args)
        .envs(program.env.iter().copied())
        .stdin(if program.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|source| CommandError::Spawn {
        command: command_line.clone(),
        source,
    })?;
    let pipe = child.stdin.take();
    // Writing runs next to waiting, so a child that talks before it has read everything
    // cannot deadlock against a full pipe.
    let write = async {
        if let (Some(text), Some(mut pipe)) = (program.stdin, pipe) {
            pipe.write_all(text.as_bytes()).await?;
            pipe.shutdown().await?;
        }
        Ok::<(), std::io::Error>(())
    };
    let (written, output) = tokio::time::timeout(program.timeout, async {
        tokio::join!(write, child.wait_with_output())
    })
    .await
    .map_err(|_| CommandError::Timeout {
        command: command_line.clone(),
        waited: program.timeout,
    })?;
    let output = output.map_err(|source| CommandError::Io {
        command: command_line.clone(),
        action: "wait for it",
        source,
    })?;
    // A program that exits without reading all its input breaks the pipe: that is its
    // refusal (its status says so), not ours.
    if output.status.success() {
        written.map_err(|source| CommandError::Io {
            command: command_line.clone(),
            action: "write its standard input",
            source,
        })?;
    }
    Ok(Finished {
        command: command_line,
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn program<'a>(argv: &'a [String], stdin: Option<&'a str>) -> Program<'a> {
        Program {
            argv,
            env: &[],
            stdin,
            timeout: Duration::from_secs(5),
        }
    }

    #[tokio::test]
    async fn output_status_and_input() {
        let words = argv(&["sh", "-c", "cat; echo oops >&2; exit 3"]);
        let done = run(program(&words, Some("hello"))).await.unwrap();
        assert_eq!(done.stdout, "hello");
        assert_eq!(done.stderr, "oops\n");
        assert!(done.exited_with(&[3]));
        assert!(!done.status.success());
        assert_eq!(done.command, "sh -c cat; echo oops >&2; exit 3");
    }

    #[tokio::test]
    async fn environment_is_passed() {
        let words = argv(&["sh", "-c", "printf %s \"$UDN_TEST_VALUE\""]);
        let value = OsStr::new("x y");
        let mut run_it = program(&words, None);
        let env = [("UDN_TEST_VALUE", value)];
        run_it.env = &env;
        assert_eq!(run(run_it).await.unwrap().stdout, "x y");
    }

    #[tokio::test]
    async fn failures_to_run_are_named() {
        let missing = argv(&["/nonexistent/udn-tool", "x"]);
        let error = run(program(&missing, None)).await.unwrap_err();
        assert!(matches!(error, CommandError::Spawn { .. }), "{error:?}");
        assert_eq!(error.to_string(), "cannot run /nonexistent/udn-tool x");
        let slow = argv(&["sleep", "5"]);
        let mut slow_run = program(&slow, None);
        slow_run.timeout = Duration::from_millis(100);
        let error = run(slow_run).await.unwrap_err();
        assert!(matches!(error, CommandError::Timeout { .. }), "{error:?}");
        assert!(run(program(&[], None)).await.is_err());
    }
}
