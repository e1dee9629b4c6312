//! The sandbox's long-running processes: started detached (own process group, stdin from
//! /dev/null, output appended to a log), recorded by pid and start time so a later `udnctl`
//! process can tell whether each still runs (a reused pid is not mistaken for it), and
//! stopped with SIGTERM, then SIGKILL.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::SandboxError;

/// One recorded process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DaemonRecord {
    /// The component (`kube-sim`, `udn-node node1`, `ovn-northd node1`, ...).
    pub name: String,
    /// Its pid.
    pub pid: u32,
    /// Its start time (clock ticks since boot, `/proc/<pid>/stat` field 22).
    pub start_time: u64,
    /// Its log file.
    pub log: PathBuf,
    /// Whether `up` started it (OVN daemons are the lab's: `down` stops them with the lab).
    pub ours: bool,
    /// How it was started, so `restart` can start it again (`None` for the lab's daemons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandLine>,
}

/// A command line as it was spawned: program, arguments, the environment it set, and the
/// working directory it set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandLine {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The variables it set on top of the inherited environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
    /// Its working directory, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
}

impl CommandLine {
    /// What `command` will run (variables it removes are not recorded: none of the
    /// sandbox's commands removes any).
    pub fn of(command: &Command) -> Self {
        Self {
            program: PathBuf::from(command.get_program()),
            args: command
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            env: command
                .get_envs()
                .filter_map(|(key, value)| {
                    Some((
                        key.to_string_lossy().into_owned(),
                        value?.to_string_lossy().into_owned(),
                    ))
                })
                .collect(),
            dir: command.get_current_dir().map(Path::to_path_buf),
        }
    }

    /// A [`Command`] that runs it again.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        command
    }
}

/// Whether a recorded process runs, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    /// It runs.
    Running,
    /// It is gone (exited or killed) or a zombie.
    Gone(String),
}

impl DaemonRecord {
    /// Records the running process `pid`.
    pub fn of(name: &str, pid: u32, log: PathBuf, ours: bool) -> Self {
        Self {
            name: name.to_owned(),
            pid,
            start_time: start_time(pid).unwrap_or(0),
            log,
            ours,
            command: None,
        }
    }

    /// Whether it still runs.
    pub fn liveness(&self) -> Liveness {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return Liveness::Gone(format!("pid {} has exited", self.pid));
        };
        let Some((_, after_comm)) = stat.rsplit_once(')') else {
            return Liveness::Gone(format!("pid {}: unreadable stat", self.pid));
        };
        let mut fields = after_comm.split_whitespace();
        let state = fields.next().unwrap_or("?");
        let started: Option<u64> = fields.nth(18).and_then(|f| f.parse().ok());
        if started != Some(self.start_time) {
            return Liveness::Gone(format!("pid {} has exited", self.pid));
        }
        if state == "Z" || state == "X" {
            return Liveness::Gone(format!("pid {} has exited (zombie)", self.pid));
        }
        Liveness::Running
    }

    /// Whether it runs.
    pub fn running(&self) -> bool {
        self.liveness() == Liveness::Running
    }

    /// SIGTERM, then SIGKILL after `grace`; returns once it is gone.
    pub fn stop(&self, grace: Duration) {
        if !self.running() {
            return;
        }
        let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(self.pid).unwrap_or(-1))
        else {
            return;
        };
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let deadline = Instant::now() + grace;
        while self.running() && Instant::now() < deadline {
            std::thread::park_timeout(Duration::from_millis(20));
        }
        if self.running() {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            let deadline = Instant::now() + Duration::from_secs(5);
            while self.running() && Instant::now() < deadline {
                std::thread::park_timeout(Duration::from_millis(20));
            }
        }
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log, lines)
    }
}

/// The last `lines` lines of `path` (empty when unreadable).
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(lines).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// Starts `command` detached with output appended to `log`; records it as `name`.
pub fn spawn(name: &str, mut command: Command, log: &Path) -> Result<DaemonRecord, SandboxError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|source| SandboxError::io("open", log, source))?;
    let err = file
        .try_clone()
        .map_err(|source| SandboxError::io("open", log, source))?;
    use std::os::unix::process::CommandExt as _;
    command
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        // Its own process group: a Ctrl-C in the terminal that ran `up` does not reach it.
        .process_group(0);
    let line = CommandLine::of(&command);
    let program = line.program.to_string_lossy().into_owned();
    let child = command
        .spawn()
        .map_err(|source| SandboxError::Spawn { program, source })?;
    let mut record = DaemonRecord::of(name, child.id(), log.to_path_buf(), true);
    record.command = Some(line);
    Ok(record)
}

/// Start time of `pid` (clock ticks since boot).
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = stat.rsplit_once(')')?.1;
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spawned_process_runs_until_stopped_and_a_reused_record_is_gone() {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("sleep.log");
        let mut command = Command::new("sh");
        command.args(["-c", "echo started; exec sleep 30"]);
        let record = spawn("sleeper", command, &log).expect("spawn");
        assert_eq!(record.liveness(), Liveness::Running);
        let mut other = record.clone();
        other.start_time += 1;
        assert!(matches!(other.liveness(), Liveness::Gone(_)));
        let deadline = Instant::now() + Duration::from_secs(5);
        while !record.log_tail(5).contains("started") {
            assert!(Instant::now() < deadline, "no output in the log");
            std::thread::park_timeout(Duration::from_millis(10));
        }
        record.stop(Duration::from_secs(5));
        assert!(matches!(record.liveness(), Liveness::Gone(_)));
    }

    #[test]
    fn a_recorded_command_line_runs_the_same_command_again() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut command = Command::new("sh");
        command
            .args(["-c", "echo \"$GREETING from $(pwd)\""])
            .env("GREETING", "hello")
            .current_dir(dir.path());
        let line = CommandLine::of(&command);
        let json = serde_json::to_string(&line).expect("serializes");
        let back: CommandLine = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, line);
        let out = back.command().output().expect("runs");
        let expected = format!("hello from {}\n", dir.path().display());
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
    }
}
