//! Log lines on stderr, and also in the config's `logFile` when it names one (upstream:
//! klog to stderr, or to `logFile` and stderr). Never on stdout, which carries only the
//! CNI answer. The file is appended to; upstream's size-based rotation (`logfile-maxsize`
//! and friends, through lumberjack) is not done here: the node agent's log rotation or
//! logrotate owns that file.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where log lines go.
pub(crate) struct Logger<'a> {
    stderr: &'a mut dyn Write,
    file: Option<File>,
}

impl<'a> Logger<'a> {
    /// Logs to `stderr` only.
    pub(crate) fn new(stderr: &'a mut dyn Write) -> Logger<'a> {
        Logger { stderr, file: None }
    }

    /// Also appends to `path` (its directory is created). A file that cannot be opened is
    /// reported on stderr and otherwise ignored: logging must not fail the command.
    pub(crate) fn open_file(&mut self, path: &str) {
        let opened = Path::new(path)
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| OpenOptions::new().create(true).append(true).open(path));
        match opened {
            Ok(file) => self.file = Some(file),
            Err(err) => self.warn(&format!("cannot open log file {path}: {err}")),
        }
    }

    /// An error line.
    pub(crate) fn error(&mut self, message: &str) {
        self.line('E', message);
    }

    /// A warning line.
    pub(crate) fn warn(&mut self, message: &str) {
        self.line('W', message);
    }

    /// Raw text on stderr only (the usage blurb).
    pub(crate) fn stderr_text(&mut self, text: &str) {
        let _ = self.stderr.write_all(text.as_bytes());
    }

    fn line(&mut self, level: char, message: &str) {
        let line = format!(
            "{} {level} ovn-k8s-cni-overlay[{}]: {message}\n",
            timestamp(SystemTime::now()),
            std::process::id()
        );
        // Nowhere to report a failed log write; the command's answer is on stdout.
        let _ = self.stderr.write_all(line.as_bytes());
        if let Some(file) = &mut self.file {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// RFC 3339 UTC with microseconds: `2026-12-01T23:29:01.123456Z`.
fn timestamp(now: SystemTime) -> String {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_micros()
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_rfc3339() {
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
        // 2024-02-29T12:34:56.789012Z (a leap day).
        let t = UNIX_EPOCH + Duration::new(1_709_210_096, 789_012_000);
        assert_eq!(timestamp(t), "2024-02-29T12:34:56.789012Z");
        let t = UNIX_EPOCH + Duration::from_secs(4_102_444_799);
        assert_eq!(timestamp(t), "2099-12-31T23:59:59.000000Z");
    }

    #[test]
    fn lines_go_to_stderr_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/plugin.log");
        let mut stderr = Vec::new();
        {
            let mut log = Logger::new(&mut stderr);
            log.open_file(path.to_str().unwrap());
            log.error("boom happened");
        }
        let stderr = String::from_utf8(stderr).unwrap();
        assert!(stderr.contains(" E ovn-k8s-cni-overlay["), "{stderr}");
        assert!(stderr.ends_with("]: boom happened\n"), "{stderr}");
        assert_eq!(fs::read_to_string(&path).unwrap(), stderr);
    }

    #[test]
    fn an_unopenable_file_is_only_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let mut stderr = Vec::new();
        let mut log = Logger::new(&mut stderr);
        // A directory cannot be opened for appending.
        log.open_file(dir.path().to_str().unwrap());
        log.error("still logged");
        let text = String::from_utf8(stderr).unwrap();
        assert!(
            text.contains(" W ovn-k8s-cni-overlay[") && text.contains("cannot open log file"),
            "{text}"
        );
        assert!(text.contains("still logged"));
    }
}
