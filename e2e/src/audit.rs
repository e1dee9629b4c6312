//! What no suite may leave in the sandbox's logs, whatever its scenarios checked: a
//! scenario can pass while a daemon aborted and came back, or while the kubelet restarted a
//! container its probes should have kept alive. Found after the scenarios, such a line
//! fails the suite.

use std::path::Path;

/// Log lines that mean something broke, and why each is fatal.
const FORBIDDEN: &[(&str, &str)] = &[
    ("|EMER|", "an OVS or OVN daemon aborted"),
    ("panicked at", "a udn component panicked"),
    (
        "liveness probe failed",
        "the kubelet restarted a container (no scenario makes a probe fail)",
    ),
];

/// Every forbidden line in the `*.log` files under `dir`, as `file: why: line`.
pub(crate) fn forbidden_lines(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "log") {
                found.extend(scan(&path));
            }
        }
    }
    found.sort();
    found
}

fn scan(path: &Path) -> Vec<String> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| {
            FORBIDDEN
                .iter()
                .find(|(pattern, _)| line.contains(pattern))
                .map(|(_, why)| format!("{}: {why}: {}", path.display(), line.trim()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_forbidden_lines_in_nested_logs_only() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("node1");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(
            nested.join("ovs-vswitchd.log"),
            "2026-12-03T10:00:00Z|00001|util|EMER|lib/conntrack.c:1: assertion failed\nfine\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("kubelet-node1.log"),
            "INFO liveness probe failed; restarting pod=blue/p\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "panicked at nothing\n").unwrap();
        std::fs::write(dir.path().join("clean.log"), "all good\n").unwrap();
        let found = forbidden_lines(dir.path());
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(
            found
                .iter()
                .any(|l| l.contains("an OVS or OVN daemon aborted"))
        );
        assert!(found.iter().any(|l| l.contains("restarted a container")));
    }
}
