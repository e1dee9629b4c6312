//! What can go wrong bringing the sandbox up, down, or using it.

use std::path::{Path, PathBuf};

/// A sandbox error; each names what it was doing.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A file or directory operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was done.
        action: &'static str,
        /// To what.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A program could not be started.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// A command failed.
    #[error("{command} failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// What it said.
        stderr: String,
    },
    /// A prerequisite is missing.
    #[error("{0}")]
    Prerequisite(String),
    /// The OVN lab failed.
    #[error("the OVN lab: {0}")]
    Lab(#[from] udn_ovn_lab::LabError),
    /// The API server refused or failed a request.
    #[error("{what}: {source}")]
    Api {
        /// The request.
        what: String,
        /// The answer.
        source: kube::Error,
    },
    /// A component did not become ready.
    #[error("{component} did not become ready within {seconds} s: {reason}")]
    NotReady {
        /// The component.
        component: String,
        /// How long we waited.
        seconds: u64,
        /// What was seen last (and where its log is).
        reason: String,
    },
    /// The sandbox's state file is unreadable.
    #[error("the sandbox state {}: {reason}", path.display())]
    State {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Something the user named does not exist.
    #[error("{kind} {name:?} not found{hint}")]
    NotFound {
        /// What kind of thing.
        kind: &'static str,
        /// Its name.
        name: String,
        /// What exists instead, or what to do.
        hint: String,
    },
}

impl SandboxError {
    /// An [`SandboxError::Io`].
    pub fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}
