//! The KubeVirt live-migration exception. During a live migration both virt-launcher pods of
//! a VM (source and target) can be reported not ready while the VM stays reachable on its
//! persistent IP; the mirror keeps the VM's endpoints `ready`, `serving`, not `terminating`
//! then, so the load balancer does not drop the VM. What is read (all set by KubeVirt on
//! virt-launcher pods; no KubeVirt object is watched):
//!
//! - a pod belongs to VM instance `U` when an owner reference has kind
//!   `VirtualMachineInstance` (API group `kubevirt.io`) and uid `U`, and the pod has label
//!   `kubevirt.io: virt-launcher`;
//! - the migration target pod carries label `kubevirt.io/migrationJobUID` (the
//!   VirtualMachineInstanceMigration's UID);
//! - a migration of `U` is in progress and not failed while a target pod of `U` and another
//!   (source) pod of `U` both exist, neither is being deleted, and neither is in phase
//!   `Failed` or `Succeeded`. A failed migration leaves the target `Failed` (or deleted);
//!   a finished one the source `Succeeded` (or deleted): either way the exception ends and
//!   the default slice's conditions are copied unchanged.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;

/// `kubevirt.io` label value of virt-launcher pods.
const LAUNCHER: &str = "virt-launcher";
/// KubeVirt's app label.
const APP_LABEL: &str = "kubevirt.io";
/// On the migration target pod.
const MIGRATION_JOB_LABEL: &str = "kubevirt.io/migrationJobUID";

/// The VM instance UID of a virt-launcher pod.
pub(crate) fn vm_of(pod: &Pod) -> Option<&str> {
    let labels = pod.metadata.labels.as_ref()?;
    if labels.get(APP_LABEL).map(String::as_str) != Some(LAUNCHER) {
        return None;
    }
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| {
            o.kind == "VirtualMachineInstance"
                && o.api_version.split('/').next() == Some("kubevirt.io")
        })
        .map(|o| o.uid.as_str())
}

fn alive(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && !matches!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Failed" | "Succeeded")
        )
}

fn is_target(pod: &Pod) -> bool {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(MIGRATION_JOB_LABEL))
        .is_some_and(|uid| !uid.is_empty())
}

/// The VM instances (UIDs) among `pods` (one namespace) with a live migration in progress.
pub(crate) fn migrating<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> BTreeSet<String> {
    // Per VM: (a live target, a live non-target).
    let mut vms: BTreeMap<&str, (bool, bool)> = BTreeMap::new();
    for pod in pods {
        let Some(vm) = vm_of(pod) else { continue };
        if !alive(pod) {
            continue;
        }
        let entry = vms.entry(vm).or_default();
        if is_target(pod) {
            entry.0 = true;
        } else {
            entry.1 = true;
        }
    }
    vms.into_iter()
        .filter(|(_, (target, source))| *target && *source)
        .map(|(vm, _)| vm.to_owned())
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use k8s_openapi::api::core::v1::PodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    /// A virt-launcher pod of VM `vm`, the migration target when `target`.
    pub(crate) fn launcher(name: &str, vm: &str, target: bool, phase: &str) -> Pod {
        let mut labels = BTreeMap::from([(APP_LABEL.to_owned(), LAUNCHER.to_owned())]);
        if target {
            labels.insert(MIGRATION_JOB_LABEL.to_owned(), "m-1".to_owned());
        }
        let mut pod = Pod::default();
        pod.metadata.name = Some(name.to_owned());
        pod.metadata.namespace = Some("blue".to_owned());
        pod.metadata.labels = Some(labels);
        pod.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "kubevirt.io/v1".to_owned(),
            kind: "VirtualMachineInstance".to_owned(),
            name: "vm".to_owned(),
            uid: vm.to_owned(),
            ..OwnerReference::default()
        }]);
        pod.status = Some(PodStatus {
            phase: Some(phase.to_owned()),
            ..PodStatus::default()
        });
        pod
    }

    #[test]
    fn a_migration_runs_while_source_and_target_live() {
        let source = launcher("src", "vm-1", false, "Running");
        let target = launcher("dst", "vm-1", true, "Running");
        let other = launcher("solo", "vm-2", false, "Running");
        assert_eq!(
            migrating([&source, &target, &other]),
            BTreeSet::from(["vm-1".to_owned()])
        );
        // A failed migration: the target failed.
        let failed = launcher("dst", "vm-1", true, "Failed");
        assert!(migrating([&source, &failed]).is_empty());
        // A finished one: the source is done.
        let done = launcher("src", "vm-1", false, "Succeeded");
        assert!(migrating([&done, &target]).is_empty());
        // Not a virt-launcher: no VM.
        let mut plain = launcher("p", "vm-3", true, "Running");
        plain.metadata.labels = None;
        assert_eq!(vm_of(&plain), None);
    }
}
