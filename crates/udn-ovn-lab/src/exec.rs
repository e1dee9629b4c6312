//! Running a test's command inside one of the lab's network namespaces.

use crate::command::{Cmd, ExecOutput};
use crate::error::LabError;

/// Runs `argv` in network namespace `netns` through `nsenter --net` (only the network
/// namespace changes: unlike `ip netns exec`, `/sys` and the cgroup file system stay the
/// host's). A non-zero exit is not an error: look at [`ExecOutput::status`].
pub(crate) fn exec(netns: &str, argv: &[&str]) -> Result<ExecOutput, LabError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(LabError::Invalid {
            field: "argv".to_owned(),
            reason: "no program given".to_owned(),
        });
    };
    Cmd::new(program)
        .netns(netns)
        .args(args.iter().copied())
        .output(&format!("exec in {netns}"))
}
