//! Running the host's tools (ip, ovn-nbctl, ...) with errors that name the command line.

use std::process::Command;

use crate::error::SandboxError;

/// Runs `program args...`; its stdout, or an error with the command line and stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String, SandboxError> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|source| SandboxError::Spawn {
            program: program.to_owned(),
            source,
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(SandboxError::Command {
            command: format!("{program} {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}
