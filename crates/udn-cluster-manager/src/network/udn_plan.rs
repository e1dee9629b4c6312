//! UDN: inputs snapshot -> plan (upstream `syncUserDefinedNetwork`). Pure.
//!
//! Order as upstream: a UDN being deleted first loses its NAD (unless pods still use it),
//! then its finalizer; any other UDN first gets the finalizer, then its NAD is made as
//! desired. The plan also says what the `NetworkCreated` condition becomes if every write
//! succeeds.

use std::sync::Arc;

use udn_api::cluster::ClusterConfig;
use udn_api::crd::UserDefinedNetwork;
use udn_api::render::NetworkSource;

use super::nad_plan::{NadOp, NadState, NadTarget, ensure_nad, has_finalizer, remove_nad};
use super::pod_use::PodUse;
use super::sync_error::SyncError;

/// What the UDN controller knows about one UDN.
#[derive(Clone, Debug)]
pub(crate) struct UdnInputs {
    /// The UDN.
    pub(crate) udn: Arc<UserDefinedNetwork>,
    /// Its namespace and the NADs there.
    pub(crate) target: NadTarget,
    /// Pods using its NAD (only looked at while the UDN is being deleted).
    pub(crate) pods: PodUse,
}

/// A write on the owner object's finalizers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FinalizerOp {
    /// Add `k8s.ovn.org/user-defined-network-protection`.
    Add,
    /// Remove it.
    Remove,
}

/// One write of a UDN plan.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum UdnOp {
    /// On the UDN's finalizers.
    Finalizer(FinalizerOp),
    /// On its NAD.
    Nad(NadOp),
}

/// The writes for one UDN, in order, and the outcome if they all succeed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct UdnPlan {
    /// Writes, applied in order; the first failure stops the rest.
    pub(crate) ops: Vec<UdnOp>,
    /// The NAD state afterwards, or why the UDN cannot converge.
    pub(crate) outcome: Result<Option<NadState>, SyncError>,
    /// Whether the status condition is written (not for a UDN about to disappear).
    pub(crate) report_status: bool,
}

/// The plan for one UDN.
pub(crate) fn plan_udn(inputs: &UdnInputs, cluster: &ClusterConfig) -> UdnPlan {
    let udn = inputs.udn.as_ref();
    let meta = &udn.metadata;
    let protected = has_finalizer(meta);
    if meta.deletion_timestamp.is_some() {
        if !protected {
            return UdnPlan {
                ops: Vec::new(),
                outcome: Ok(None),
                report_status: false,
            };
        }
        let removal = remove_nad(
            meta.uid.as_deref().unwrap_or_default(),
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
            inputs.target.existing.as_ref(),
            &inputs.pods,
        );
        return match removal {
            Err(err) => UdnPlan {
                ops: Vec::new(),
                outcome: Err(err),
                report_status: true,
            },
            Ok(op) => UdnPlan {
                ops: op
                    .map(UdnOp::Nad)
                    .into_iter()
                    .chain([UdnOp::Finalizer(FinalizerOp::Remove)])
                    .collect(),
                outcome: Ok(None),
                report_status: false,
            },
        };
    }
    let mut ops = Vec::new();
    if !protected {
        ops.push(UdnOp::Finalizer(FinalizerOp::Add));
    }
    let outcome = match ensure_nad(&NetworkSource::Udn(udn), &inputs.target, cluster) {
        Ok((op, state)) => {
            ops.extend(op.map(UdnOp::Nad));
            Ok(Some(state))
        }
        Err(err) => Err(err),
    };
    UdnPlan {
        ops,
        outcome,
        report_status: true,
    }
}

#[cfg(test)]
#[path = "udn_plan_tests.rs"]
mod tests;
