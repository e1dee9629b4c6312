//! The stack's component processes: each its own child, stderr to a log file, killed and
//! reaped on drop so a failing test leaves nothing running.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A child process killed (and reaped) on drop; its stderr goes to a log file.
#[derive(Debug)]
pub struct Process {
    /// What it is, for messages (`udn-node node1`).
    pub name: String,
    /// Its stderr.
    pub log: PathBuf,
    child: Child,
}

impl Process {
    /// Starts `command` with stdout discarded and stderr written to `log`.
    pub fn spawn(name: &str, mut command: Command, log: PathBuf) -> Self {
        let file = std::fs::File::create(&log)
            .unwrap_or_else(|e| panic!("creating {}: {e}", log.display()));
        let child = command
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        Self::adopt(name, child, log)
    }

    /// Takes over a child started elsewhere (whose stderr already goes to `log`).
    pub fn adopt(name: &str, child: Child, log: PathBuf) -> Self {
        Self {
            name: name.to_owned(),
            log,
            child,
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Panics with its log when it has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "{} exited ({status}):\n{}",
                self.name,
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops it (SIGKILL) and waits.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: u32) -> bool {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn a_dropped_process_is_killed_and_reaped() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut command = Command::new("sleep");
        command.arg("600");
        let process = Process::spawn("sleep", command, dir.path().join("sleep.log"));
        let pid = process.pid();
        assert!(alive(pid));
        drop(process);
        assert!(!alive(pid), "pid {pid} still exists");
    }

    #[test]
    fn an_exited_process_fails_with_its_log() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut command = Command::new("sh");
        command.args(["-c", "echo boom >&2; exit 3"]);
        let mut process = Process::spawn("sh", command, dir.path().join("sh.log"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let message = loop {
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| process.assert_running()));
            if let Err(payload) = outcome {
                break payload
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_default();
            }
            assert!(std::time::Instant::now() < deadline, "sh still running");
            std::thread::park_timeout(std::time::Duration::from_millis(10));
        };
        assert!(message.starts_with("sh exited"), "{message}");
        assert!(message.contains("boom"), "{message}");
    }
}
