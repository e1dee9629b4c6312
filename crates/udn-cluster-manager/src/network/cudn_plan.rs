//! CUDN: inputs snapshot -> plan (upstream `syncClusterUDN`). Pure.
//!
//! The namespaces holding a NAD controlled by the CUDN play the role of upstream's
//! namespace tracker. A CUDN being deleted removes every such NAD (pods permitting) and
//! then its finalizer; otherwise NADs of namespaces that stopped matching the selector (or
//! are terminating) are removed and every selected namespace gets its NAD.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use udn_api::cluster::ClusterConfig;
use udn_api::crd::ClusterUserDefinedNetwork;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::render::NetworkSource;
use udn_api::selector::{SelectorError, label_selector};

use super::nad_plan::{NadOp, NadState, NadTarget, ensure_nad, has_finalizer, remove_nad};
use super::pod_use::PodUse;
use super::sync_error::SyncError;

/// A namespace as the CUDN controller sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NamespaceInfo {
    /// Its labels.
    pub(crate) labels: BTreeMap<String, String>,
    /// It has a deletionTimestamp.
    pub(crate) terminating: bool,
}

/// What the CUDN controller knows about one CUDN.
#[derive(Clone, Debug)]
pub(crate) struct CudnInputs {
    /// The CUDN.
    pub(crate) cudn: Arc<ClusterUserDefinedNetwork>,
    /// Every namespace by name.
    pub(crate) namespaces: BTreeMap<String, NamespaceInfo>,
    /// NADs controlled by the CUDN, by namespace.
    pub(crate) owned: BTreeMap<String, Arc<NetworkAttachmentDefinition>>,
    /// Per selected namespace: the NAD with the CUDN's name and, for a primary network
    /// without one, every NAD there. Missing entries mean "nothing there".
    pub(crate) targets: BTreeMap<String, NadTarget>,
    /// Pods using the CUDN's NAD, per namespace whose NAD is to be removed.
    pub(crate) pods: BTreeMap<String, PodUse>,
}

/// One namespace's part of a CUDN plan.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Step {
    /// The NAD of a namespace that is no longer selected (or of every namespace while the
    /// CUDN is deleted) goes.
    Remove {
        /// The namespace.
        namespace: String,
        /// The write, or why it cannot go yet.
        result: Result<Option<NadOp>, SyncError>,
    },
    /// The NAD of a selected namespace is made as desired.
    Ensure {
        /// The namespace.
        namespace: String,
        /// The write and the state afterwards, or why it cannot be.
        result: Result<(Option<NadOp>, NadState), SyncError>,
    },
}

/// The writes for one CUDN.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CudnPlan {
    /// Add the finalizer first.
    pub(crate) add_finalizer: bool,
    /// Per-namespace steps: ensures (by namespace), then removals (by namespace).
    pub(crate) steps: Vec<Step>,
    /// Remove the finalizer last, if every step succeeded (the CUDN is being deleted).
    pub(crate) remove_finalizer: bool,
    /// A failure that stopped the sync before any namespace.
    pub(crate) fatal: Option<SyncError>,
    /// Whether anything is to be done or reported (false for a deleted CUDN that is not ours).
    pub(crate) active: bool,
}

/// Namespaces selected by the CUDN: matching its selector and not terminating.
pub(crate) fn selected_namespaces(
    cudn: &ClusterUserDefinedNetwork,
    namespaces: &BTreeMap<String, NamespaceInfo>,
) -> Result<BTreeSet<String>, SelectorError> {
    let selector = label_selector(&cudn.spec.namespace_selector)?;
    Ok(namespaces
        .iter()
        .filter(|(_, ns)| !ns.terminating && selector.matches(&ns.labels))
        .map(|(name, _)| name.clone())
        .collect())
}

/// The plan for one CUDN.
pub(crate) fn plan_cudn(inputs: &CudnInputs, cluster: &ClusterConfig) -> CudnPlan {
    let cudn = inputs.cudn.as_ref();
    let protected = has_finalizer(&cudn.metadata);
    let mut plan = CudnPlan {
        add_finalizer: false,
        steps: Vec::new(),
        remove_finalizer: false,
        fatal: None,
        active: true,
    };
    if cudn.metadata.deletion_timestamp.is_some() {
        plan.active = protected;
        if protected {
            plan.steps = inputs
                .owned
                .keys()
                .map(|namespace| remove_step(inputs, namespace))
                .collect();
            plan.remove_finalizer = true;
        }
        return plan;
    }
    plan.add_finalizer = !protected;
    let selected = match selected_namespaces(cudn, &inputs.namespaces) {
        Ok(selected) => selected,
        Err(reason) => {
            plan.fatal = Some(SyncError::Selector { reason });
            return plan;
        }
    };
    let empty = NadTarget::default();
    plan.steps.extend(selected.iter().map(|namespace| {
        let target = inputs.targets.get(namespace).unwrap_or(&empty);
        let source = NetworkSource::Cudn { cudn, namespace };
        Step::Ensure {
            namespace: namespace.clone(),
            result: ensure_nad(&source, target, cluster),
        }
    }));
    // Removals after ensures: a NAD created first registers the network's ID before the
    // last old NAD's deletion could release it, so moving a CUDN between namespaces keeps
    // its network ID.
    plan.steps.extend(
        inputs
            .owned
            .keys()
            .filter(|namespace| !selected.contains(*namespace))
            .map(|namespace| remove_step(inputs, namespace)),
    );
    plan
}

fn remove_step(inputs: &CudnInputs, namespace: &str) -> Step {
    let meta = &inputs.cudn.metadata;
    let free = PodUse::default();
    Step::Remove {
        namespace: namespace.to_owned(),
        result: remove_nad(
            meta.uid.as_deref().unwrap_or_default(),
            namespace,
            meta.name.as_deref().unwrap_or_default(),
            inputs.owned.get(namespace),
            inputs.pods.get(namespace).unwrap_or(&free),
        ),
    }
}

#[cfg(test)]
#[path = "cudn_plan_tests.rs"]
mod tests;
