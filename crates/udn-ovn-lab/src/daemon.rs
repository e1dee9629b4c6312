//! An OVS/OVN daemon started with `--detach --pidfile` (ovs-vswitchd, ovn-controller,
//! ovn-northd): the lab's ovsdb-servers use `udn_ovsdb::testing::OvsdbServer`, which handles
//! its daemon the same way.
//!
//! `--detach` returns once the daemon is initialised, and the daemon holds a POSIX lock on its
//! pidfile for its whole life. Killing sends SIGKILL to the recorded pid (only if that process
//! still is the expected program) and then takes the lock, which returns once the process has
//! exited. Nobody reaps the daemon here (PID 1 does not), so it stays a zombie: liveness looks
//! at the process state, never at `kill -0`.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, fcntl_lock};
use rustix::process::{Pid, Signal, kill_process};
use udn_ovsdb::testing::process_alive;

use crate::command::Cmd;
use crate::error::LabError;

/// A running detached daemon.
#[derive(Debug)]
pub(crate) struct Daemon {
    /// The program name (also its `/proc/PID/comm`).
    program: &'static str,
    pidfile: PathBuf,
    log: PathBuf,
    pid: Option<u32>,
}

impl Daemon {
    /// Runs `command` (which must pass `--pidfile=<pidfile> --detach`) and reads the pid.
    pub(crate) fn start(
        step: &str,
        program: &'static str,
        command: &Cmd,
        pidfile: PathBuf,
        log: PathBuf,
    ) -> Result<Self, LabError> {
        command.run(step)?;
        let pid = read_pid(step, &pidfile)?;
        tracing::debug!(program, pid, "daemon started");
        Ok(Self {
            program,
            pidfile,
            log,
            pid: Some(pid),
        })
    }

    /// The process id (0 once killed).
    pub(crate) fn pid(&self) -> u32 {
        self.pid.unwrap_or(0)
    }

    /// The daemon's log file.
    pub(crate) fn log(&self) -> &Path {
        &self.log
    }

    /// The resident set size in KiB.
    pub(crate) fn rss_kib(&self, step: &str) -> Result<u64, LabError> {
        rss_kib(step, self.pid())
    }

    /// SIGKILLs the daemon and returns once it has exited.
    pub(crate) fn kill(&mut self, step: &str) -> Result<(), LabError> {
        let Some(pid) = self.pid.take() else {
            return Ok(());
        };
        if !process_alive(pid) || !is_program(pid, self.program) {
            return Ok(());
        }
        kill_and_wait(step, pid, &self.pidfile)?;
        tracing::debug!(program = self.program, pid, "daemon killed");
        Ok(())
    }
}

/// SIGKILLs `pid` and waits until it has exited: its lock on `pidfile` goes with it.
pub(crate) fn kill_and_wait(step: &str, pid: u32, pidfile: &Path) -> Result<(), LabError> {
    let process = |action, source| LabError::Process {
        step: step.to_owned(),
        action,
        pid,
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(pidfile)
        .map_err(|source| LabError::File {
            step: step.to_owned(),
            action: "open",
            path: pidfile.to_owned(),
            source,
        })?;
    if let Some(target) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        match kill_process(target, Signal::KILL) {
            Ok(()) | Err(rustix::io::Errno::SRCH) => {}
            Err(errno) => return Err(process("signal", errno.into())),
        }
    }
    wait_for_lock(&file).map_err(|source| process("wait for the exit of", source))?;
    wait_exited(pid);
    Ok(())
}

/// The pidfile's lock goes when the process drops its files, a moment before it becomes a
/// zombie: until then it still shows as running (state R or D) to whoever looks right after
/// a tear-down. Waits for that moment too (bounded: the lock already says it is going).
fn wait_exited(pid: u32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while exiting_or_running(pid) && std::time::Instant::now() < deadline {
        std::thread::park_timeout(std::time::Duration::from_millis(5));
    }
}

/// Whether `/proc/PID/stat` shows a state other than zombie (Z) or dead (X).
fn exiting_or_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, after)| after.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Err(error) = self.kill("teardown") {
            tracing::warn!(program = self.program, %error, "cannot kill daemon");
        }
    }
}

/// Whether `/proc/PID/comm` is `program` (guards against a reused pid).
fn is_program(pid: u32, program: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| program.starts_with(comm.trim()))
}

pub(crate) fn read_pid(step: &str, pidfile: &Path) -> Result<u32, LabError> {
    let content = std::fs::read_to_string(pidfile).map_err(|source| LabError::File {
        step: step.to_owned(),
        action: "read",
        path: pidfile.to_owned(),
        source,
    })?;
    content.trim().parse().map_err(|_| LabError::Parse {
        step: step.to_owned(),
        what: "a process id",
        output: content,
    })
}

fn wait_for_lock(file: &File) -> std::io::Result<()> {
    loop {
        match fcntl_lock(file, FlockOperation::LockExclusive) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
}

/// `VmRSS` of process `pid` in KiB.
pub(crate) fn rss_kib(step: &str, pid: u32) -> Result<u64, LabError> {
    let path = PathBuf::from(format!("/proc/{pid}/status"));
    let status = std::fs::read_to_string(&path).map_err(|source| LabError::File {
        step: step.to_owned(),
        action: "read",
        path: path.clone(),
        source,
    })?;
    status
        .lines()
        .find_map(|line| {
            line.strip_prefix("VmRSS:")?
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .ok()
        })
        .ok_or(LabError::Parse {
            step: step.to_owned(),
            what: "VmRSS",
            output: status,
        })
}
