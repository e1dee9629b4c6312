//! Clean-up of labs whose test process died without dropping them (SIGKILL, a cargo test
//! timeout, Ctrl-C): their daemons still run and their netns still exist.
//!
//! Every run dir holds an `owner` file (pid and start time of the process that made it) and,
//! per node, the directories of its ovsdb-servers. A lab whose owner is gone is taken apart:
//! each daemon named by a pidfile in it is killed, but only if that process's command line
//! names that pidfile (so a reused pid is never hit); then its netns (`<prefix>-*`) are deleted
//! and its directories removed.

use std::io::Write;
use std::path::{Path, PathBuf};

use udn_ovsdb::testing::process_alive;

use crate::command::Cmd;
use crate::daemon::{kill_and_wait, read_pid};
use crate::error::LabError;
use crate::netns::netns_with_prefix;
use crate::run_dir::RUN_DIR_PREFIX;

const OWNER_FILE: &str = "owner";
const OVSDB_DIRS_FILE: &str = "ovsdb-dirs";

/// Process start time (clock ticks since boot), field 22 of `/proc/PID/stat`.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces: count fields after its closing paren.
    let after_comm = stat.rsplit_once(')')?.1;
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

/// Writes the owner file: this process.
pub(crate) fn write_owner(step: &str, run_dir: &Path) -> Result<(), LabError> {
    let pid = std::process::id();
    let started = start_time(pid).unwrap_or(0);
    let path = run_dir.join(OWNER_FILE);
    std::fs::write(&path, format!("{pid} {started}\n")).map_err(|source| LabError::File {
        step: step.to_owned(),
        action: "write",
        path,
        source,
    })
}

/// Records an ovsdb-server's directory in its node's dir.
pub(crate) fn record_ovsdb_dir(step: &str, node_dir: &Path, dir: &Path) -> Result<(), LabError> {
    let path = node_dir.join(OVSDB_DIRS_FILE);
    let file_error = |source| LabError::File {
        step: step.to_owned(),
        action: "append to",
        path: path.clone(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(file_error)?;
    writeln!(file, "{}", dir.display()).map_err(file_error)
}

/// Whether the process that made `run_dir` still runs. A run dir without a readable owner
/// is being created right now (the owner is written just after the directory): alive.
fn owner_alive(run_dir: &Path) -> bool {
    let Ok(owner) = std::fs::read_to_string(run_dir.join(OWNER_FILE)) else {
        return true;
    };
    let mut fields = owner.split_whitespace().map(str::parse::<u64>);
    let (Some(Ok(pid)), Some(Ok(started))) = (fields.next(), fields.next()) else {
        return true;
    };
    let Ok(pid) = u32::try_from(pid) else {
        return false;
    };
    process_alive(pid) && start_time(pid) == Some(started)
}

/// Tears down every lab in the temp dir whose test process is gone; returns their prefixes.
/// [`crate::Lab::start`] calls this first, so a killed test run is cleaned up by the next.
pub fn clean_stale_labs() -> Vec<String> {
    let base = std::env::temp_dir();
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut cleaned = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(prefix) = name.strip_prefix(&format!("{RUN_DIR_PREFIX}-")) else {
            continue;
        };
        let run_dir = entry.path();
        if !run_dir.is_dir() || owner_alive(&run_dir) {
            continue;
        }
        tracing::warn!(prefix, "cleaning up a lab whose test process is gone");
        clean(prefix, &run_dir);
        cleaned.push(prefix.to_owned());
    }
    cleaned
}

/// Takes apart the lab whose run directory is `run_dir` (a [`crate::Lab::detach`]ed one, or
/// any lab whose process is gone): kills its daemons, deletes its `<prefix>-*` network
/// namespaces and removes the directory. Returns the lab's prefix; an error when `run_dir`
/// is no lab run directory (nothing is touched then).
pub fn tear_down(run_dir: &Path) -> Result<String, LabError> {
    let prefix = crate::run_dir::RunDir::prefix_of(run_dir).ok_or_else(|| LabError::Invalid {
        field: "run_dir".to_owned(),
        reason: format!("{} is no lab run directory", run_dir.display()),
    })?;
    clean(prefix, run_dir);
    Ok(prefix.to_owned())
}

fn clean(prefix: &str, run_dir: &Path) {
    let node_dirs: Vec<PathBuf> = std::fs::read_dir(run_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    for node_dir in &node_dirs {
        for pidfile in files_with_extension(node_dir, "pid") {
            kill_orphan(&pidfile);
        }
        let ovsdb_dirs =
            std::fs::read_to_string(node_dir.join(OVSDB_DIRS_FILE)).unwrap_or_default();
        for dir in ovsdb_dirs.lines().map(PathBuf::from) {
            kill_orphan(&dir.join("pid"));
            remove_dir(&dir);
        }
    }
    for netns in netns_with_prefix(&format!("{prefix}-")) {
        if let Err(error) = Cmd::new("ip")
            .args(["netns", "del", &netns])
            .run("clean a stale lab")
        {
            tracing::warn!(%netns, %error, "cannot delete a stale lab's netns");
        }
    }
    remove_dir(run_dir);
}

fn files_with_extension(dir: &Path, extension: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == extension))
        .collect()
}

/// Kills the process `pidfile` names if it is alive and was started with that pidfile.
fn kill_orphan(pidfile: &Path) {
    let step = "clean a stale lab";
    let Ok(pid) = read_pid(step, pidfile) else {
        return;
    };
    if !process_alive(pid) || !started_with(pid, pidfile) {
        return;
    }
    if let Err(error) = kill_and_wait(step, pid, pidfile) {
        tracing::warn!(pid, %error, "cannot kill a stale lab's daemon");
    }
}

/// Whether process `pid`'s command line names `pidfile` (`--pidfile=<pidfile>`).
fn started_with(pid: u32, pidfile: &Path) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let wanted = format!("--pidfile={}", pidfile.display());
    cmdline
        .split(|byte| *byte == 0)
        .any(|arg| arg == wanted.as_bytes())
}

fn remove_dir(dir: &Path) {
    if let Err(error) = std::fs::remove_dir_all(dir)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(dir = %dir.display(), %error, "cannot remove a stale lab's directory");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_owns_its_run_dir() {
        let dir = tempfile::tempdir().unwrap();
        write_owner("test", dir.path()).unwrap();
        assert!(owner_alive(dir.path()));
        std::fs::write(dir.path().join(OWNER_FILE), "4194304 1\n").unwrap();
        assert!(!owner_alive(dir.path()));
        let me = std::process::id();
        std::fs::write(dir.path().join(OWNER_FILE), format!("{me} 1\n")).unwrap();
        assert!(
            !owner_alive(dir.path()),
            "same pid, other start time: a reused pid"
        );
    }

    #[test]
    fn a_pid_is_ours_only_if_started_with_the_pidfile() {
        let me = std::process::id();
        assert!(!started_with(me, Path::new("/nonexistent/x.pid")));
    }
}
