//! Where the kubelet's cgroup is, as the `socket cgroupv2` rule must name it.
//!
//! nft resolves the rule's path under `/sys/fs/cgroup` (hard-coded), and `level` is the
//! cgroup's depth in the cgroup v2 tree. On a pure cgroup v2 host the tree is mounted at
//! `/sys/fs/cgroup`; on a hybrid host (v1 controllers plus v2) at `/sys/fs/cgroup/unified`,
//! so the path gets a `unified/` prefix that does not count in the level. A v1-only host has
//! no v2 tree at all.

use std::path::{Path, PathBuf};

use super::error::IsolationError;
use super::warning::ProbesNotSupported;

/// Where nft resolves `socket cgroupv2` paths.
pub const CGROUP_FS: &str = "/sys/fs/cgroup";
/// The v2 tree's directory on a hybrid host.
pub const HYBRID_V2_DIR: &str = "unified";
/// The directory the default discovery looks for.
pub const KUBELET_UNIT_DIR: &str = "kubelet.service";
/// The setting that overrides discovery (`[ovnkubenode]` in the config file, and the flag).
pub const SETTING: &str = "kubelet-cgroup-path";

/// `CGROUP2_SUPER_MAGIC` (`statfs` `f_type` of a cgroup2 file system).
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// How this host mounts cgroups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupLayout {
    /// cgroup v2 at `/sys/fs/cgroup`.
    Unified,
    /// cgroup v1 controllers, and cgroup v2 at `/sys/fs/cgroup/unified`.
    Hybrid,
    /// Only cgroup v1: nothing for `socket cgroupv2` to match.
    V1Only,
}

impl CgroupLayout {
    /// The v2 tree's directory relative to the cgroup file system root (`""`, `unified`).
    pub fn v2_dir(self) -> Option<&'static str> {
        match self {
            Self::Unified => Some(""),
            Self::Hybrid => Some(HYBRID_V2_DIR),
            Self::V1Only => None,
        }
    }

    /// The layout of the file system at `root` (normally `/sys/fs/cgroup`), asking
    /// `is_cgroup2` whether a directory is a cgroup2 mount.
    pub fn detect_with(root: &Path, is_cgroup2: impl Fn(&Path) -> bool) -> Self {
        if is_cgroup2(root) {
            Self::Unified
        } else if is_cgroup2(&root.join(HYBRID_V2_DIR)) {
            Self::Hybrid
        } else {
            Self::V1Only
        }
    }

    /// The layout at `root`, by `statfs` (what upstream checks, plus the hybrid directory).
    pub fn detect(root: &Path) -> Self {
        // `f_type`'s width differs between architectures: widen it wherever it is narrower.
        #[allow(clippy::useless_conversion)]
        let is_cgroup2 = |dir: &Path| {
            rustix::fs::statfs(dir).is_ok_and(|fs| i64::from(fs.f_type) == CGROUP2_SUPER_MAGIC)
        };
        Self::detect_with(root, is_cgroup2)
    }
}

/// A cgroup file system: its root (normally `/sys/fs/cgroup`) and layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupFs {
    /// The directory nft resolves paths under.
    pub root: PathBuf,
    /// Its layout.
    pub layout: CgroupLayout,
}

impl CgroupFs {
    /// This host's `/sys/fs/cgroup`.
    pub fn system() -> Self {
        let root = PathBuf::from(CGROUP_FS);
        let layout = CgroupLayout::detect(&root);
        Self { root, layout }
    }

    /// The v2 tree's root directory, `None` on a v1-only host.
    pub fn v2_root(&self) -> Option<PathBuf> {
        let dir = self.layout.v2_dir()?;
        Some(if dir.is_empty() {
            self.root.clone()
        } else {
            self.root.join(dir)
        })
    }
}

/// How the kubelet cgroup was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupSource {
    /// The first `kubelet.service` found under the v2 root.
    Discovered,
    /// `kubelet-cgroup-path`.
    Configured,
}

/// The kubelet's cgroup, as the rule names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletCgroup {
    /// The path nft resolves, relative to `/sys/fs/cgroup` (`kubelet.slice/kubelet.service`,
    /// or `unified/kubelet.slice/kubelet.service` on a hybrid host).
    pub nft_path: String,
    /// The cgroup's depth in the v2 tree (`level` of the match).
    pub level: u32,
    /// Its directory.
    pub dir: PathBuf,
    /// How it was chosen.
    pub source: CgroupSource,
}

impl KubeletCgroup {
    /// The last path component (`kubelet.service`): the systemd unit whose restarts recreate
    /// the cgroup, if it names one.
    pub fn last_component(&self) -> &str {
        self.nft_path.rsplit('/').next().unwrap_or(&self.nft_path)
    }

    /// The cgroup's id: its directory's inode, which is what nft stores in the rule.
    /// `None` when the directory is gone.
    pub fn current_id(&self) -> Option<u64> {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(&self.dir).ok().map(|meta| meta.ino())
    }
}

/// What discovery found: a cgroup to match, or why kubelet probes cannot be let through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KubeletCgroupOutcome {
    /// The rule can name this cgroup.
    Found(KubeletCgroup),
    /// It cannot (the `socket` expression check comes later).
    NotSupported(ProbesNotSupported),
}

/// Finds the kubelet's cgroup on `fs`: `configured` (`kubelet-cgroup-path`, relative to
/// the cgroup file system root) when set, else the first `kubelet.service` directory under
/// `search_dir` (default: the v2 root), walked depth first in name order. The cgroup root is
/// rejected: it would let every process on the host through.
pub fn find_kubelet_cgroup(
    fs: &CgroupFs,
    configured: Option<&str>,
    search_dir: Option<&Path>,
) -> Result<KubeletCgroupOutcome, IsolationError> {
    let configured = configured.map(str::trim).filter(|value| !value.is_empty());
    let Some(v2_root) = fs.v2_root() else {
        if let Some(value) = configured {
            check_components(value)?;
        }
        return Ok(KubeletCgroupOutcome::NotSupported(
            ProbesNotSupported::CgroupV1,
        ));
    };
    match configured {
        Some(value) => configured_cgroup(fs, &v2_root, value),
        None => discovered_cgroup(fs, &v2_root, search_dir),
    }
}

fn path_error(value: &str, reason: impl Into<String>) -> IsolationError {
    IsolationError::KubeletCgroupPath {
        value: value.to_owned(),
        reason: reason.into(),
    }
}

/// The path's components, after dropping a leading `/sys/fs/cgroup` or `/` (so the form
/// `/proc/<kubelet>/cgroup` shows, `0::/podruntime/kubelet`, works as is).
fn check_components(value: &str) -> Result<Vec<&str>, IsolationError> {
    if value.contains(|c: char| c == '"' || c.is_control()) {
        return Err(path_error(
            value,
            "has a double quote or a control character",
        ));
    }
    let relative = match value.strip_prefix(CGROUP_FS) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => value,
    };
    let components: Vec<&str> = relative.split('/').filter(|c| !c.is_empty()).collect();
    if components.iter().any(|c| *c == "." || *c == "..") {
        return Err(path_error(value, "has a . or .. component"));
    }
    Ok(components)
}

fn root_error(value: &str) -> IsolationError {
    path_error(
        value,
        "is the cgroup v2 root: every process on the host would be allowed to reach \
         primary UDN pods, not only kubelet; name the kubelet's own cgroup",
    )
}

fn configured_cgroup(
    fs: &CgroupFs,
    v2_root: &Path,
    value: &str,
) -> Result<KubeletCgroupOutcome, IsolationError> {
    let components = check_components(value)?;
    // On a hybrid host the path may be given with or without the `unified/` prefix.
    let v2_components: &[&str] = match (fs.layout, components.split_first()) {
        (CgroupLayout::Hybrid, Some((first, rest))) if *first == HYBRID_V2_DIR => rest,
        _ => &components,
    };
    if v2_components.is_empty() {
        return Err(root_error(value));
    }
    let dir = v2_components
        .iter()
        .fold(v2_root.to_path_buf(), |dir, c| dir.join(c));
    if !dir.is_dir() {
        return Ok(KubeletCgroupOutcome::NotSupported(
            ProbesNotSupported::ConfiguredNotFound {
                configured: value.to_owned(),
                dir,
            },
        ));
    }
    Ok(KubeletCgroupOutcome::Found(kubelet_cgroup(
        fs,
        v2_components,
        dir,
        CgroupSource::Configured,
    )))
}

fn kubelet_cgroup(
    fs: &CgroupFs,
    v2_components: &[&str],
    dir: PathBuf,
    source: CgroupSource,
) -> KubeletCgroup {
    let mut parts: Vec<&str> = Vec::new();
    if let Some(prefix) = fs.layout.v2_dir().filter(|p| !p.is_empty()) {
        parts.push(prefix);
    }
    parts.extend_from_slice(v2_components);
    KubeletCgroup {
        nft_path: parts.join("/"),
        level: u32::try_from(v2_components.len()).unwrap_or(u32::MAX),
        dir,
        source,
    }
}

fn discovered_cgroup(
    fs: &CgroupFs,
    v2_root: &Path,
    search_dir: Option<&Path>,
) -> Result<KubeletCgroupOutcome, IsolationError> {
    let search = search_dir.unwrap_or(v2_root);
    if !search.starts_with(v2_root) {
        return Err(IsolationError::SearchDir {
            dir: search.to_path_buf(),
            reason: format!("not inside the cgroup v2 root {}", v2_root.display()),
        });
    }
    let not_found = || {
        KubeletCgroupOutcome::NotSupported(ProbesNotSupported::NotFound {
            searched: search.to_path_buf(),
        })
    };
    let Some(found) = first_dir_named(search, KUBELET_UNIT_DIR) else {
        return Ok(not_found());
    };
    // A name that is not UTF-8, or that nft could not take, cannot go into the rule.
    let components: Option<Vec<&str>> = found
        .strip_prefix(v2_root)
        .ok()
        .and_then(|relative| {
            relative
                .components()
                .map(|c| c.as_os_str().to_str())
                .collect::<Option<Vec<&str>>>()
        })
        .filter(|components| {
            components
                .iter()
                .all(|c| !c.contains(|ch: char| ch == '"' || ch.is_control()))
        });
    let Some(components) = components else {
        return Ok(not_found());
    };
    Ok(KubeletCgroupOutcome::Found(kubelet_cgroup(
        fs,
        &components,
        found.clone(),
        CgroupSource::Discovered,
    )))
}

/// How deep the walk goes (cgroup trees are shallow; this only bounds a pathological tree).
const MAX_DEPTH: usize = 32;

/// The first directory named `name` below `dir`, depth first, entries in name order,
/// symlinks not followed, unreadable directories skipped.
pub(crate) fn first_dir_named(dir: &Path, name: &str) -> Option<PathBuf> {
    walk(dir, name, 0)
}

fn walk(dir: &Path, name: &str, depth: usize) -> Option<PathBuf> {
    if depth >= MAX_DEPTH {
        return None;
    }
    let mut children: Vec<(std::ffi::OsString, PathBuf)> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .map(|entry| (entry.file_name(), entry.path()))
        .collect();
    children.sort();
    children.into_iter().find_map(|(child_name, path)| {
        if child_name == name {
            Some(path)
        } else {
            walk(&path, name, depth + 1)
        }
    })
}
