//! `udn-api` and `udn-ipam` are used by the CNI binary and every component: they must
//! never pull in an async runtime or an HTTP client. Checked on the real dependency graph.

// Test helpers outside #[test] fns may unwrap too.
#![allow(clippy::expect_used)]
use std::process::Command;

const FORBIDDEN: [&str; 6] = [
    "tokio",
    "hyper",
    "kube-client",
    "kube-runtime",
    "reqwest",
    "tower",
];

fn normal_dependencies(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            package,
            "-e",
            "normal",
            "--prefix",
            "none",
            "-f",
            "{p}",
        ])
        .current_dir(xtask::codegen::workspace_root())
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn api_and_ipam_stay_light() {
    for package in ["udn-api", "udn-ipam"] {
        let deps = normal_dependencies(package);
        assert!(
            deps.iter().any(|d| d == package),
            "cargo tree listed nothing for {package}"
        );
        let bad: Vec<&String> = deps
            .iter()
            .filter(|d| FORBIDDEN.contains(&d.as_str()))
            .collect();
        assert!(bad.is_empty(), "{package} depends on {bad:?}");
    }
}
