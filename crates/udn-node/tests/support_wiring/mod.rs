//! What the wiring tests share: throwaway network namespaces with unique names (deleted on
//! drop, also when a test fails), and commands run inside them.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use udn_node::netlink::NetnsPath;

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A named netns `udnw<pid>-<n>-<tag>`, deleted on drop.
#[derive(Debug)]
pub(crate) struct TestNetns {
    pub(crate) name: String,
}

impl TestNetns {
    pub(crate) fn new(tag: &str) -> Self {
        let name = format!(
            "udnw{}-{}-{tag}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let status = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .unwrap();
        assert!(status.success(), "ip netns add {name}");
        let netns = Self { name };
        netns.ok(&["ip", "link", "set", "lo", "up"]);
        netns
    }

    pub(crate) fn path(&self) -> NetnsPath {
        NetnsPath::named(&self.name)
    }

    /// Runs `argv` in the netns (`nsenter --net`, which keeps the host's /sys).
    pub(crate) fn run(&self, argv: &[&str]) -> Output {
        Command::new("nsenter")
            .arg(format!("--net=/var/run/netns/{}", self.name))
            .args(argv)
            .output()
            .unwrap()
    }

    /// Runs `argv` and returns its stdout; panics on failure.
    pub(crate) fn ok(&self, argv: &[&str]) -> String {
        let output = self.run(argv);
        assert!(
            output.status.success(),
            "{argv:?} in {}: {}",
            self.name,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// `ip -j <args>` as JSON.
    pub(crate) fn ip_json(&self, args: &[&str]) -> serde_json::Value {
        let mut argv = vec!["ip", "-j"];
        argv.extend_from_slice(args);
        let text = self.ok(&argv);
        if text.trim().is_empty() {
            return serde_json::Value::Array(Vec::new());
        }
        serde_json::from_str(&text).unwrap()
    }

    /// Whether one ping to `ip` is answered within 5 s.
    pub(crate) fn ping(&self, ip: &str) -> bool {
        self.run(&["ping", "-c", "1", "-W", "5", ip])
            .status
            .success()
    }
}

impl Drop for TestNetns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// A container id unique to this test run (64 hex digits, as the runtime makes them).
pub(crate) fn container_id(seed: u32) -> String {
    let pid = std::process::id();
    format!("{pid:08x}{seed:08x}{}", "a1b2c3d4".repeat(6))
}
