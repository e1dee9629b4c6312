//! The UDN controller's reconcile: snapshot -> [`plan_udn`] -> writes -> status, events,
//! metrics.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Resource;
use kube::api::Api;
use kube::runtime::controller::Action;
use tracing::{debug, info, instrument};
use udn_api::crd::UserDefinedNetwork;
use udn_api::render::is_primary;

use super::apply::{NadChange, NadWriter, api_error, lock, patch_finalizer, write_network_created};
use super::condition::udn_condition;
use super::error::NetworkError;
use super::nad_plan::NadState;
use super::shared::{Shared, kind_labels};
use super::sync_error::{SyncClass, SyncError};
use super::triggers::udn_owner;
use super::udn_plan::{FinalizerOp, UdnOp, UdnPlan, plan_udn};
use crate::context::UDN_CONTROLLER;
use crate::events::{Note, publish};

/// Metric label of this controller.
pub(crate) const METRIC: &str = "udn";
/// Kind name in errors.
const KIND: &str = "UserDefinedNetwork";

/// Reconcile one UDN.
#[instrument(skip_all, fields(controller = METRIC, key))]
pub(crate) async fn reconcile_udn(
    udn: Arc<UserDefinedNetwork>,
    shared: Arc<Shared>,
) -> Result<Action, NetworkError> {
    let started = Instant::now();
    let key = udn_owner(&udn.metadata).to_string();
    tracing::Span::current().record("key", key.as_str());
    let result = sync_udn(&udn, &shared, &key).await;
    let outcome = match &result {
        Ok(()) => "ok",
        Err(NetworkError::InUse { .. }) => "requeue",
        Err(_) => "error",
    };
    shared
        .ctx
        .metrics
        .observe(METRIC, outcome, started.elapsed());
    result.map(|()| {
        shared.succeeded(&backoff_key(&key));
        Action::requeue(super::RESYNC)
    })
}

/// Backoff key of a UDN.
pub(crate) fn backoff_key(key: &str) -> String {
    format!("udn/{key}")
}

/// What applying a UDN plan did.
struct Applied {
    outcome: Result<Option<NadState>, SyncError>,
    notes: Vec<Note>,
    finalizer_removed: bool,
}

async fn sync_udn(
    udn: &Arc<UserDefinedNetwork>,
    shared: &Shared,
    key: &str,
) -> Result<(), NetworkError> {
    let namespace = udn.metadata.namespace.as_deref().unwrap_or_default();
    let _create = match is_primary(&udn.spec) {
        true => Some(shared.create_lock.namespace(namespace).await),
        false => None,
    };
    let inputs = shared.stores.udn_inputs(Arc::clone(udn));
    let plan = plan_udn(&inputs, &shared.ctx.config.cluster);
    debug!(ops = plan.ops.len(), "planned");
    let api: Api<UserDefinedNetwork> = Api::namespaced(shared.ctx.client.clone(), namespace);
    let mut applied = apply_plan(udn, &plan, shared, &api).await;
    let waiting = match applied.outcome {
        Err(SyncError::InUse { .. }) => BTreeSet::from([namespace.to_owned()]),
        _ => BTreeSet::new(),
    };
    lock(&shared.waiters).set(udn_owner(&udn.metadata), waiting);
    // A cache that was behind is not news for the condition: the next reconcile sees more.
    let stale = applied.outcome.as_ref().is_err_and(SyncError::is_stale);
    let report = plan.report_status || applied.outcome.is_err();
    let status = if !applied.finalizer_removed && !stale && report {
        write_status(udn, &api, &applied.outcome, &mut applied.notes).await
    } else {
        Ok(())
    };
    publish(&shared.recorder, &udn.object_ref(&()), applied.notes).await;
    match applied.outcome {
        Err(err) => Err(sync_failure(KIND, key, &err)),
        Ok(_) => status.map_err(|source| NetworkError::Status {
            kind: KIND,
            key: key.to_owned(),
            source,
        }),
    }
}

/// Apply the plan's writes in order, stopping at the first failure.
async fn apply_plan(
    udn: &UserDefinedNetwork,
    plan: &UdnPlan,
    shared: &Shared,
    api: &Api<UserDefinedNetwork>,
) -> Applied {
    let writer = NadWriter {
        client: &shared.ctx.client,
        manager: UDN_CONTROLLER,
        stores: &shared.stores,
        ids: &shared.ids,
        triggers: &shared.triggers,
    };
    let mut applied = Applied {
        outcome: plan.outcome.clone(),
        notes: Vec::new(),
        finalizer_removed: false,
    };
    for op in &plan.ops {
        let step = match op {
            UdnOp::Finalizer(finalizer) => {
                match patch_finalizer(api, &udn.metadata, *finalizer, UDN_CONTROLLER).await {
                    Ok(()) => {
                        let labels = (*finalizer == FinalizerOp::Add)
                            .then(|| kind_labels((&udn.spec).into()));
                        let owner = udn_owner(&udn.metadata);
                        lock(&shared.gauges).set(&shared.ctx.metrics, owner, labels);
                        applied.finalizer_removed = *finalizer == FinalizerOp::Remove;
                        info!(finalizer = ?finalizer, "updated finalizer");
                        Ok(())
                    }
                    Err(err) => Err(api_error(finalizer_context(*finalizer), &err)),
                }
            }
            UdnOp::Nad(nad_op) => writer.apply(nad_op).await.map(|change| {
                applied.notes.extend(change_note(change, &nad_op.nad_key()));
            }),
        };
        if let Err(err) = step {
            applied.outcome = Err(err);
            break;
        }
    }
    applied
}

async fn write_status(
    udn: &UserDefinedNetwork,
    api: &Api<UserDefinedNetwork>,
    outcome: &Result<Option<NadState>, SyncError>,
    notes: &mut Vec<Note>,
) -> Result<(), kube::Error> {
    let spec = udn_condition(outcome);
    let current = udn
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    write_network_created(api, udn, current, &spec, notes).await
}

/// Upstream wording of a failed finalizer write on a UDN.
fn finalizer_context(op: FinalizerOp) -> &'static str {
    match op {
        FinalizerOp::Add => "failed to add finalizer to UserDefinedNetwork",
        FinalizerOp::Remove => "failed to remove finalizer to UserDefinedNetwork",
    }
}

/// The Normal event for a NAD write.
pub(crate) fn change_note(change: NadChange, nad_key: &str) -> Option<Note> {
    let (reason, action, verb) = match change {
        NadChange::Created => ("NetworkAttachmentDefinitionCreated", "Create", "Created"),
        NadChange::Updated => ("NetworkAttachmentDefinitionUpdated", "Update", "Updated"),
        NadChange::Deleted => ("NetworkAttachmentDefinitionDeleted", "Delete", "Deleted"),
        NadChange::None => return None,
    };
    info!(
        nad = nad_key,
        change = verb,
        "wrote NetworkAttachmentDefinition"
    );
    Some(Note {
        warning: false,
        reason,
        action,
        text: format!("{verb} NetworkAttachmentDefinition [{nad_key}]"),
    })
}

/// The reconcile error for a sync failure.
pub(crate) fn sync_failure(kind: &'static str, key: &str, err: &SyncError) -> NetworkError {
    failure_of_class(kind, key, err.class(), err.to_string())
}

/// The reconcile error of `class` with `message`.
pub(crate) fn failure_of_class(
    kind: &'static str,
    key: &str,
    class: SyncClass,
    message: String,
) -> NetworkError {
    let key = key.to_owned();
    match class {
        SyncClass::Invalid => NetworkError::Invalid { kind, key, message },
        SyncClass::InUse => NetworkError::InUse { kind, key, message },
        SyncClass::Api => NetworkError::Api { kind, key, message },
        SyncClass::Allocation => NetworkError::Allocation { kind, key, message },
        SyncClass::Exhausted(pool) => NetworkError::Exhausted {
            kind,
            key,
            pool: pool.name(),
            message,
        },
    }
}

/// Now, to the second (condition times are RFC 3339 seconds).
pub(crate) fn now() -> Time {
    let now = k8s_openapi::jiff::Timestamp::now();
    Time(k8s_openapi::jiff::Timestamp::from_second(now.as_second()).unwrap_or(now))
}
