//! The programs a sandbox runs: udn's binaries from one directory (by default the one
//! `udnctl` itself is in, i.e. cargo's `target/<profile>`).

use std::path::{Path, PathBuf};

use crate::error::SandboxError;

/// The programs.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// `udn-kube-sim`.
    pub sim: PathBuf,
    /// `udn-cluster-manager`.
    pub cluster_manager: PathBuf,
    /// `udn-controller`.
    pub controller: PathBuf,
    /// `udn-node`.
    pub agent: PathBuf,
    /// `ovn-k8s-cni-overlay`.
    pub cni: PathBuf,
    /// `udnctl` (the sandbox's own daemons are its hidden subcommands).
    pub udnctl: PathBuf,
}

impl Binaries {
    /// Every binary from `dir`; an error naming the first missing one and how to build it.
    pub fn in_dir(dir: &Path) -> Result<Self, SandboxError> {
        let find = |name: &str| {
            let path = dir.join(name);
            if path.is_file() {
                Ok(path)
            } else {
                Err(SandboxError::Prerequisite(format!(
                    "{} is missing: build udn's binaries first (`cargo build --workspace --bins`, \
                     then run udnctl from the same target directory) or pass --bin-dir",
                    path.display()
                )))
            }
        };
        Ok(Self {
            sim: find("udn-kube-sim")?,
            cluster_manager: find("udn-cluster-manager")?,
            controller: find("udn-controller")?,
            agent: find("udn-node")?,
            cni: find("ovn-k8s-cni-overlay")?,
            udnctl: find("udnctl")?,
        })
    }
}
