//! The benchmarks' own processes: release builds of the binaries they run, children killed
//! when the bench stops (also on an error), free loopback ports, and a child's `/metrics`
//! and memory read from outside.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use anyhow::Context;

/// Kills the child when dropped, so a failed run leaves nothing behind.
#[derive(Debug)]
pub struct ChildGuard(pub Child);

impl ChildGuard {
    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Fails if the child has exited (naming `what` and its status).
    pub fn ensure_running(&mut self, what: &str) -> anyhow::Result<()> {
        match self.0.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => anyhow::bail!("{what} exited ({status})"),
            Err(error) => Err(error).with_context(|| format!("checking on {what}")),
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Builds `binary` of `package` with the release profile and returns its path.
pub fn release_binary(root: &Path, package: &str, binary: &str) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            package,
            "--bin",
            binary,
        ])
        .current_dir(root)
        .status()
        .with_context(|| format!("building {binary}"))?;
    anyhow::ensure!(status.success(), "building {binary} failed");
    Ok(root.join("target/release").join(binary))
}

/// A loopback port free right now (for a child's admin server).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// A `/proc/<pid>/status` field in MiB (`VmHWM`: peak RSS, `VmRSS`: current).
pub fn status_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| {
        l.strip_prefix(field)
            .is_some_and(|rest| rest.starts_with(':'))
    })?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Peak RSS of process `pid`, MiB.
pub fn peak_rss_mb(pid: u32) -> Option<f64> {
    status_mib(pid, "VmHWM")
}

/// The `/metrics` text of the admin server on `127.0.0.1:port` (HTTP/1.0, whole response).
pub async fn scrape(port: u16) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .context("connecting to the admin server")?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .context("requesting /metrics")?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .context("reading /metrics")?;
    Ok(response)
}

/// The sum of the samples of metric `name` (exact name, e.g. `x_total` or `x_sum`) whose
/// labels include every pair of `labels`, in the Prometheus text `metrics`; `None` when no
/// sample matches.
pub fn metric(metrics: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for line in metrics.lines().filter(|l| !l.starts_with('#')) {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let (label_text, value) = match rest.strip_prefix('{') {
            Some(inner) => match inner.split_once("} ") {
                Some((labels, value)) => (labels, value),
                None => continue,
            },
            None => match rest.strip_prefix(' ') {
                Some(value) => ("", value),
                None => continue,
            },
        };
        let matches = labels
            .iter()
            .all(|(key, value)| label_text.contains(&format!("{key}=\"{value}\"")));
        if let (true, Ok(value)) = (matches, value.trim().parse::<f64>()) {
            found = Some(found.unwrap_or(0.0) + value);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_read_by_exact_name_and_labels() {
        let text = "# HELP x_total X.\n# TYPE x_total counter\n\
            x_total{database=\"nb\"} 12\nx_total{database=\"sb\"} 3\n\
            x_total_other 99\ny_sum{database=\"nb\"} 1.5\ny_count{database=\"nb\"} 2\nz 7\n";
        assert_eq!(metric(text, "x_total", &[("database", "nb")]), Some(12.0));
        assert_eq!(metric(text, "x_total", &[]), Some(15.0));
        assert_eq!(metric(text, "y_sum", &[("database", "nb")]), Some(1.5));
        assert_eq!(metric(text, "y_sum", &[("database", "sb")]), None);
        assert_eq!(metric(text, "z", &[]), Some(7.0));
        assert_eq!(metric(text, "w", &[]), None);
    }

    #[test]
    fn status_fields_are_read_from_proc() {
        let me = std::process::id();
        // Current first: the peak read afterwards cannot be below it.
        let now = status_mib(me, "VmRSS").unwrap();
        let peak = peak_rss_mb(me).unwrap();
        assert!(peak >= now && now > 0.0, "{peak} {now}");
        assert_eq!(status_mib(me, "VmNoSuchField"), None);
    }
}
