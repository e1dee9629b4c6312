//! One node reconcile (plan under the lock, then one patch of the node's annotation) and one
//! owner status reconcile (the `NetworkAllocationSucceeded` condition), plus the failure
//! events.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use tracing::{info, warn};
use udn_api::annotations::format_node_subnets;
use udn_api::names::ANNOTATION_NODE_SUBNETS;

use super::NodeSubnetsError;
use super::controller::{Shared, annotation_text, lock};
use super::networks::{NadIndex, OwnerKey, OwnerKind};
use super::state::ErrorChange;
use super::status::{
    allocation_condition, apply_condition, is_current, owner_reference, publish_failure,
};
use crate::node_patch::patch_node_annotations;

/// Patch attempts on resourceVersion conflicts before giving up for now.
const MAX_ATTEMPTS: usize = 4;

/// Writes the node's annotation (only this key, guarded by `resource_version`).
async fn patch_node(
    api: &Api<Node>,
    name: &str,
    resource_version: Option<&str>,
    value: Option<&str>,
) -> Result<Node, kube::Error> {
    patch_node_annotations(
        api,
        name,
        resource_version,
        [(ANNOTATION_NODE_SUBNETS, value)],
    )
    .await
}

/// Whether the node still has networks without a complete allocation.
pub(super) async fn reconcile_node(shared: &Shared, name: &str) -> Result<bool, NodeSubnetsError> {
    let api: Api<Node> = Api::all(shared.ctx.client.clone());
    let mut current = shared.nodes.get(&ObjectRef::new(name));
    for _ in 0..MAX_ATTEMPTS {
        let Some(node) = current.take() else {
            forget_node(shared, name).await;
            return Ok(false);
        };
        let (plan, reports) = {
            let mut inner = lock(&shared.inner);
            let Some(plan) = inner.state.plan_observed(name, annotation_text(&node)) else {
                return Ok(false);
            };
            let changes = inner.state.record_errors(name, &plan.errors);
            let reports = error_reports(&inner.index, changes);
            (plan, reports)
        };
        report(shared, name, reports).await;
        shared.update_gauges(&plan.touched);
        let failing = !plan.errors.is_empty();
        if !plan.write {
            return Ok(failing);
        }
        let value =
            format_node_subnets(&plan.desired).map_err(|source| NodeSubnetsError::Encode {
                node: name.to_owned(),
                source,
            })?;
        let resource_version = node.metadata.resource_version.as_deref();
        let allocated = plan.allocated.len();
        let writing = lock(&shared.inner).state.writing(name, plan, value.clone());
        match patch_node(&api, name, resource_version, value.as_deref()).await {
            Ok(_) => {
                let released = lock(&shared.inner).state.written(name, writing);
                shared.update_gauges(&released);
                info!(node = %name, allocated, "node-subnets annotation written");
                return Ok(failing);
            }
            Err(kube::Error::Api(status)) if status.is_conflict() => {
                lock(&shared.inner).state.unwritten(name, writing, false);
                current = api
                    .get_opt(name)
                    .await
                    .map_err(|source| NodeSubnetsError::Get {
                        node: name.to_owned(),
                        source,
                    })?
                    .map(Arc::new);
            }
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                lock(&shared.inner).state.unwritten(name, writing, false);
                forget_node(shared, name).await;
                return Ok(false);
            }
            Err(source) => {
                lock(&shared.inner).state.unwritten(name, writing, true);
                return Err(NodeSubnetsError::Patch {
                    node: name.to_owned(),
                    source,
                });
            }
        }
    }
    Err(NodeSubnetsError::Conflict {
        node: name.to_owned(),
        attempts: MAX_ATTEMPTS,
    })
}

async fn forget_node(shared: &Shared, name: &str) {
    let (touched, reports) = {
        let mut inner = lock(&shared.inner);
        let (touched, changes) = inner.state.forget_node(name);
        (touched, error_reports(&inner.index, changes))
    };
    shared.update_gauges(&touched);
    report(shared, name, reports).await;
}

/// An error change with the owners it concerns (collected under the lock).
struct ErrorReport {
    change: ErrorChange,
    owners: Vec<(OwnerKey, String)>,
}

fn error_reports(index: &NadIndex, changes: Vec<ErrorChange>) -> Vec<ErrorReport> {
    changes
        .into_iter()
        .map(|change| {
            let owners = index
                .owners_of_network(&change.network)
                .into_iter()
                .map(|owner| (owner.key, owner.uid))
                .collect();
            ErrorReport { change, owners }
        })
        .collect()
}

/// Publishes failure events and queues the owners whose condition changed.
async fn report(shared: &Shared, node: &str, reports: Vec<ErrorReport>) {
    for report in reports {
        if let Some(error) = &report.change.error {
            warn!(network = %report.change.network, node = %node, error = %error, "node subnet allocation failed");
        }
        for (owner, uid) in &report.owners {
            if let Some(error) = &report.change.error {
                let reference = owner_reference(owner, uid);
                if let Err(error) = publish_failure(&shared.recorder, &reference, node, error).await
                {
                    warn!(owner = ?owner, error = %error, "cannot publish event");
                }
            }
            if report.change.condition_changed {
                shared.status_queue.add(owner.clone());
            }
        }
    }
}

fn observed_conditions(shared: &Shared, owner: &OwnerKey) -> Option<Vec<Condition>> {
    match (owner.kind, owner.namespace.as_deref()) {
        (OwnerKind::Udn, Some(namespace)) => shared
            .udns
            .get(&ObjectRef::new(&owner.name).within(namespace))
            .map(|udn| {
                udn.status
                    .as_ref()
                    .map(|s| s.conditions.clone())
                    .unwrap_or_default()
            }),
        _ => shared.cudns.get(&ObjectRef::new(&owner.name)).map(|cudn| {
            cudn.status
                .as_ref()
                .map(|s| s.conditions.clone())
                .unwrap_or_default()
        }),
    }
}

pub(super) async fn reconcile_owner(
    shared: &Shared,
    owner: &OwnerKey,
) -> Result<(), NodeSubnetsError> {
    let desired = {
        let inner = lock(&shared.inner);
        let networks = inner.index.owner_networks(owner);
        if networks.is_empty() {
            return Ok(());
        }
        let error_node = networks
            .iter()
            .find_map(|network| inner.state.reported_error_node(network))
            .map(str::to_owned);
        allocation_condition(error_node.as_deref())
    };
    let Some(observed) = observed_conditions(shared, owner) else {
        return Ok(());
    };
    if is_current(&observed, &desired) {
        return Ok(());
    }
    apply_condition(&shared.ctx.client, owner, &observed, &desired)
        .await
        .map_err(|source| NodeSubnetsError::Status {
            owner: format!(
                "{} {}/{}",
                owner.kind.kind(),
                owner.namespace.as_deref().unwrap_or_default(),
                owner.name
            ),
            source,
        })
}
