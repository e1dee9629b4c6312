//! Binaries of other workspace packages for tests that run components as users do (their
//! own processes): built with the test's profile by a nested `cargo build`, once per
//! binary and test process, so a test never runs a stale binary.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, PoisonError};

static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());

/// The path of `binary` from workspace package `package`, built first (debug or release,
/// as the running test). Panics with cargo's exit status when the build fails.
pub fn workspace_binary(package: &str, binary: &str) -> PathBuf {
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(path) = built.get(binary) {
        return path.clone();
    }
    // The test executable is `<target>/<profile>/deps/<name>`.
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test runs from <target>/<profile>/deps")
        .to_owned();
    let release = profile_dir
        .file_name()
        .is_some_and(|name| name == "release");
    let target_dir = profile_dir.parent().expect("<target>/<profile>").to_owned();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command
        .args(["build", "--quiet", "-p", package, "--bin", binary])
        .env("CARGO_TARGET_DIR", &target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if release {
        command.arg("--release");
    }
    let status = command.status().expect("running cargo build");
    assert!(
        status.success(),
        "cargo build -p {package} --bin {binary}: {status}"
    );
    let path = profile_dir.join(binary);
    assert!(path.exists(), "{} missing after the build", path.display());
    built.insert(binary.to_owned(), path.clone());
    path
}
