//! The sandbox's cgroup v2 directory: the kubelets move themselves into
//! `<root>/kubelet.slice/kubelet.service` and put pods under `<root>/kubepods.slice`, so
//! the node agent's host isolation (nft `socket cgroupv2`) sees them as on a real node.
//! On a hybrid host (v1 controllers, cgroup2 at `/sys/fs/cgroup/unified`) the root is under
//! the cgroup2 mount; nft names cgroups relative to `/sys/fs/cgroup` either way.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::SandboxError;

/// Where nft resolves cgroup paths from.
const CGROUP_FS: &str = "/sys/fs/cgroup";

/// The cgroup2 mount: `/sys/fs/cgroup` on a unified host, `/sys/fs/cgroup/unified` on a
/// hybrid one.
pub fn v2_mount() -> Result<PathBuf, SandboxError> {
    for candidate in [CGROUP_FS, "/sys/fs/cgroup/unified"] {
        let path = Path::new(candidate);
        if path.join("cgroup.controllers").exists() {
            return Ok(path.to_path_buf());
        }
    }
    Err(SandboxError::Prerequisite(
        "no cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified: the kubelet's \
         cgroup (what udn's host isolation matches) needs one"
            .to_owned(),
    ))
}

/// The sandbox's cgroup for lab `prefix`, created.
pub fn create(prefix: &str) -> Result<PathBuf, SandboxError> {
    let root = v2_mount()?.join(format!("udn-sandbox-{prefix}"));
    std::fs::create_dir_all(&root).map_err(|source| SandboxError::io("create", &root, source))?;
    Ok(root)
}

/// The kubelet's cgroup under the sandbox's `root`.
pub fn kubelet_cgroup(root: &Path) -> PathBuf {
    root.join("kubelet.slice").join("kubelet.service")
}

/// `path` relative to `/sys/fs/cgroup`, as nft and `--kubelet-cgroup-path` take it.
pub fn nft_path(path: &Path) -> String {
    path.strip_prefix(CGROUP_FS)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Kills every process in the cgroup tree `root` (`cgroup.kill`) and removes the tree,
/// deepest first. Nothing to do when it does not exist.
pub fn remove(root: &Path) -> Result<(), SandboxError> {
    if !root.exists() {
        return Ok(());
    }
    let kill = root.join("cgroup.kill");
    if kill.exists() {
        std::fs::write(&kill, "1").map_err(|source| SandboxError::io("write", &kill, source))?;
    }
    let mut dirs = Vec::new();
    collect_dirs(root, &mut dirs);
    // Children before parents: a cgroup with children cannot be removed.
    dirs.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
    for dir in dirs {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match std::fs::remove_dir(&dir) {
                Ok(()) => break,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => break,
                // Busy until the killed processes have exited.
                Err(source) if Instant::now() >= deadline => {
                    return Err(SandboxError::io("remove the cgroup", &dir, source));
                }
                Err(_) => std::thread::park_timeout(Duration::from_millis(20)),
            }
        }
    }
    Ok(())
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            collect_dirs(&entry.path(), out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nft_paths_are_relative_to_sys_fs_cgroup() {
        assert_eq!(
            nft_path(Path::new(
                "/sys/fs/cgroup/unified/udn-sandbox-ol1/kubelet.slice/kubelet.service"
            )),
            "unified/udn-sandbox-ol1/kubelet.slice/kubelet.service"
        );
    }

    #[test]
    fn a_tree_with_a_process_is_killed_and_removed() {
        let root = create(&format!("test{}", std::process::id())).expect("a cgroup");
        let leaf = root.join("a").join("b");
        std::fs::create_dir_all(&leaf).expect("a leaf");
        let child = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > {}/cgroup.procs && exec sleep 60",
                leaf.display()
            ))
            .spawn()
            .expect("a process");
        let procs = leaf.join("cgroup.procs");
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::fs::read_to_string(&procs)
            .unwrap_or_default()
            .trim()
            .is_empty()
        {
            assert!(
                Instant::now() < deadline,
                "the process did not join its cgroup"
            );
            std::thread::park_timeout(Duration::from_millis(10));
        }
        remove(&root).expect("removing the tree");
        assert!(!root.exists());
        let mut child = child;
        let status = child.wait().expect("reaping");
        assert!(!status.success(), "killed: {status}");
    }
}
