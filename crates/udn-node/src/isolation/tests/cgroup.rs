//! Kubelet cgroup discovery and configuration on fake cgroup trees.

use std::path::Path;

use crate::isolation::*;

/// A fake `/sys/fs/cgroup` with `dirs` (relative) created.
pub(super) fn tree(dirs: &[&str]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for dir in dirs {
        std::fs::create_dir_all(root.path().join(dir)).unwrap();
    }
    root
}

pub(super) fn fs(root: &Path, layout: CgroupLayout) -> CgroupFs {
    CgroupFs {
        root: root.to_path_buf(),
        layout,
    }
}

fn found(outcome: KubeletCgroupOutcome) -> KubeletCgroup {
    match outcome {
        KubeletCgroupOutcome::Found(kubelet) => kubelet,
        KubeletCgroupOutcome::NotSupported(reason) => panic!("not found: {reason:?}"),
    }
}

fn not_supported(outcome: KubeletCgroupOutcome) -> ProbesNotSupported {
    match outcome {
        KubeletCgroupOutcome::NotSupported(reason) => reason,
        KubeletCgroupOutcome::Found(kubelet) => panic!("found {kubelet:?}"),
    }
}

#[test]
fn layout_detection() {
    let root = Path::new("/sys/fs/cgroup");
    let unified = |dir: &Path| dir == root;
    let hybrid = |dir: &Path| dir == root.join("unified");
    assert_eq!(
        CgroupLayout::detect_with(root, unified),
        CgroupLayout::Unified
    );
    assert_eq!(
        CgroupLayout::detect_with(root, hybrid),
        CgroupLayout::Hybrid
    );
    assert_eq!(
        CgroupLayout::detect_with(root, |_| false),
        CgroupLayout::V1Only
    );
}

#[test]
fn discovers_the_first_kubelet_service_on_v2() {
    let root = tree(&[
        "init.scope",
        "kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod1.slice",
        "kubelet.slice/kubelet.service",
        "system.slice/kubelet.service",
    ]);
    let kubelet =
        found(find_kubelet_cgroup(&fs(root.path(), CgroupLayout::Unified), None, None).unwrap());
    assert_eq!(kubelet.nft_path, "kubelet.slice/kubelet.service");
    assert_eq!(kubelet.level, 2);
    assert_eq!(
        kubelet.dir,
        root.path().join("kubelet.slice/kubelet.service")
    );
    assert_eq!(kubelet.source, CgroupSource::Discovered);
    assert_eq!(kubelet.last_component(), "kubelet.service");
    assert!(kubelet.current_id().is_some());
}

#[test]
fn discovers_under_unified_on_a_hybrid_host() {
    let root = tree(&[
        "memory/system.slice/kubelet.service",
        "systemd/system.slice/kubelet.service",
        "unified/system.slice/kubelet.service",
    ]);
    let kubelet =
        found(find_kubelet_cgroup(&fs(root.path(), CgroupLayout::Hybrid), None, None).unwrap());
    assert_eq!(kubelet.nft_path, "unified/system.slice/kubelet.service");
    assert_eq!(kubelet.level, 2, "the unified/ prefix is not a level");
}

#[test]
fn v1_only_and_not_found() {
    let root = tree(&["memory/system.slice/kubelet.service"]);
    assert_eq!(
        not_supported(
            find_kubelet_cgroup(&fs(root.path(), CgroupLayout::V1Only), None, None).unwrap()
        ),
        ProbesNotSupported::CgroupV1
    );
    assert_eq!(
        not_supported(
            find_kubelet_cgroup(
                &fs(root.path(), CgroupLayout::V1Only),
                Some("x/kubelet.service"),
                None
            )
            .unwrap()
        ),
        ProbesNotSupported::CgroupV1
    );
    let root = tree(&["unified/system.slice/containerd.service"]);
    assert_eq!(
        not_supported(
            find_kubelet_cgroup(&fs(root.path(), CgroupLayout::Hybrid), None, None).unwrap()
        ),
        ProbesNotSupported::NotFound {
            searched: root.path().join("unified")
        }
    );
}

#[test]
fn configured_path_relative_to_the_cgroup_root() {
    let root = tree(&["podruntime/kubelet", "kubelet.slice/kubelet.service"]);
    let v2 = fs(root.path(), CgroupLayout::Unified);
    for value in [
        "podruntime/kubelet",
        "/podruntime/kubelet",
        "/sys/fs/cgroup/podruntime/kubelet/",
    ] {
        let kubelet = found(find_kubelet_cgroup(&v2, Some(value), None).unwrap());
        assert_eq!(kubelet.nft_path, "podruntime/kubelet", "{value}");
        assert_eq!(kubelet.level, 2);
        assert_eq!(kubelet.source, CgroupSource::Configured);
    }
    let parent = found(find_kubelet_cgroup(&v2, Some("podruntime"), None).unwrap());
    assert_eq!((parent.nft_path.as_str(), parent.level), ("podruntime", 1));
    assert_eq!(
        not_supported(find_kubelet_cgroup(&v2, Some("podruntime/kubelet.service"), None).unwrap()),
        ProbesNotSupported::ConfiguredNotFound {
            configured: "podruntime/kubelet.service".to_owned(),
            dir: root.path().join("podruntime/kubelet.service"),
        }
    );
    // An empty setting means discovery.
    let discovered = found(find_kubelet_cgroup(&v2, Some("  "), None).unwrap());
    assert_eq!(discovered.source, CgroupSource::Discovered);
}

#[test]
fn configured_path_on_a_hybrid_host_takes_both_forms() {
    let root = tree(&["unified/podruntime/kubelet"]);
    let hybrid = fs(root.path(), CgroupLayout::Hybrid);
    for value in ["unified/podruntime/kubelet", "podruntime/kubelet"] {
        let kubelet = found(find_kubelet_cgroup(&hybrid, Some(value), None).unwrap());
        assert_eq!(kubelet.nft_path, "unified/podruntime/kubelet", "{value}");
        assert_eq!(kubelet.level, 2);
        assert_eq!(kubelet.dir, root.path().join("unified/podruntime/kubelet"));
    }
}

#[test]
fn the_cgroup_root_is_rejected_naming_the_setting() {
    let root = tree(&["unified/x"]);
    for (layout, value) in [
        (CgroupLayout::Unified, "/"),
        (CgroupLayout::Unified, "/sys/fs/cgroup"),
        (CgroupLayout::Unified, "//"),
        (CgroupLayout::Hybrid, "unified"),
        (CgroupLayout::Hybrid, "/unified/"),
        (CgroupLayout::Hybrid, "/sys/fs/cgroup/unified"),
    ] {
        let error = find_kubelet_cgroup(&fs(root.path(), layout), Some(value), None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            format!(
                "kubelet-cgroup-path {value:?} is the cgroup v2 root: every process on the host \
                 would be allowed to reach primary UDN pods, not only kubelet; name the \
                 kubelet's own cgroup"
            ),
            "{layout:?}"
        );
    }
    let error = find_kubelet_cgroup(
        &fs(root.path(), CgroupLayout::Unified),
        Some("a/../b"),
        None,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        error,
        "kubelet-cgroup-path \"a/../b\" has a . or .. component"
    );
    let error = find_kubelet_cgroup(&fs(root.path(), CgroupLayout::Unified), Some("a\"b"), None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "kubelet-cgroup-path \"a\\\"b\" has a double quote or a control character"
    );
}

#[test]
fn search_dir_narrows_discovery() {
    let root = tree(&[
        "unified/a/kubelet.service",
        "unified/test/kubelet.slice/kubelet.service",
    ]);
    let hybrid = fs(root.path(), CgroupLayout::Hybrid);
    let search = root.path().join("unified/test");
    let kubelet = found(find_kubelet_cgroup(&hybrid, None, Some(&search)).unwrap());
    assert_eq!(
        kubelet.nft_path,
        "unified/test/kubelet.slice/kubelet.service"
    );
    assert_eq!(kubelet.level, 3);
    let outside = root.path().join("memory");
    let error = find_kubelet_cgroup(&hybrid, None, Some(&outside))
        .unwrap_err()
        .to_string();
    assert!(error.contains("not inside the cgroup v2 root"), "{error}");
}
