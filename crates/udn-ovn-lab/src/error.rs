//! The lab's one error type: every variant names the step that failed.

use std::path::PathBuf;
use std::time::Duration;

use udn_ovsdb::testing::HarnessError;

/// A lab step that failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A program the lab needs is not on `PATH`.
    #[error("{step}: program {program} is not installed (Debian package: {package})")]
    MissingProgram {
        /// What the lab was doing.
        step: String,
        /// The program.
        program: String,
        /// The Debian package that provides it.
        package: &'static str,
    },
    /// A file an installed package provides (a schema) is missing.
    #[error("{step}: {path} is missing (Debian package: {package})")]
    MissingFile {
        /// What the lab was doing.
        step: String,
        /// The file.
        path: PathBuf,
        /// The Debian package that provides it.
        package: &'static str,
    },
    /// A program could not be started.
    #[error("{step}: cannot run {command}")]
    Spawn {
        /// What the lab was doing.
        step: String,
        /// The command line.
        command: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A program exited unsuccessfully.
    #[error("{step}: {command} failed ({status}): {stderr}")]
    Command {
        /// What the lab was doing.
        step: String,
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// Its standard error.
        stderr: String,
    },
    /// A program's output did not have the expected shape.
    #[error("{step}: cannot read {what} from {output:?}")]
    Parse {
        /// What the lab was doing.
        step: String,
        /// What was expected.
        what: &'static str,
        /// The output.
        output: String,
    },
    /// Something did not happen before its deadline.
    #[error("{step}: {what} did not happen within {waited:?}")]
    Timeout {
        /// What the lab was doing.
        step: String,
        /// What was awaited.
        what: String,
        /// How long the lab waited.
        waited: Duration,
    },
    /// A file or directory of the lab could not be used.
    #[error("{step}: cannot {action} {path}")]
    File {
        /// What the lab was doing.
        step: String,
        /// What was being done to the file.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The `ovsdb-server` harness failed.
    #[error("{step}: ovsdb-server harness")]
    Ovsdb {
        /// What the lab was doing.
        step: String,
        /// The harness error.
        #[source]
        source: HarnessError,
    },
    /// A daemon process could not be signalled or its status read.
    #[error("{step}: cannot {action} process {pid}")]
    Process {
        /// What the lab was doing.
        step: String,
        /// What was being done to the process.
        action: &'static str,
        /// The process id.
        pid: u32,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The configuration or a request is not usable.
    #[error("{field}: {reason}")]
    Invalid {
        /// The field or argument.
        field: String,
        /// Why it is not usable.
        reason: String,
    },
    /// No node, pod or interface of that name in this lab.
    #[error("no {kind} named {name:?} in this lab")]
    NotFound {
        /// `node`, `pod`, ...
        kind: &'static str,
        /// The name asked for.
        name: String,
    },
}
