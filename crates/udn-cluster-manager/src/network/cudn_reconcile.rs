//! The CUDN controller's reconcile: snapshot -> [`plan_cudn`] -> writes -> status, events,
//! metrics.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use kube::Resource;
use kube::api::{Api, ListParams};
use kube::runtime::controller::Action;
use tracing::{debug, info, instrument};
use udn_api::crd::ClusterUserDefinedNetwork;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::LABEL_USER_DEFINED_NETWORK;
use udn_api::render::is_primary;

use super::apply::{NadWriter, api_error, lock, patch_finalizer, write_network_created};
use super::condition::cudn_condition;
use super::cudn_plan::{CudnPlan, Step, plan_cudn};
use super::error::NetworkError;
use super::nad_plan::{NadState, controlled_by, has_finalizer};
use super::shared::{Owner, Shared, kind_labels};
use super::sync_error::{SyncClass, SyncError};
use super::udn_plan::FinalizerOp;
use super::udn_reconcile::{change_note, failure_of_class};
use crate::context::CUDN_CONTROLLER;
use crate::events::{Note, publish};

/// Metric label of this controller.
pub(crate) const METRIC: &str = "cudn";
/// Kind name in errors.
const KIND: &str = "ClusterUserDefinedNetwork";

/// Reconcile one CUDN.
#[instrument(skip_all, fields(controller = METRIC, key = cudn.metadata.name.as_deref().unwrap_or_default()))]
pub(crate) async fn reconcile_cudn(
    cudn: Arc<ClusterUserDefinedNetwork>,
    shared: Arc<Shared>,
) -> Result<Action, NetworkError> {
    let started = Instant::now();
    let name = cudn.metadata.name.clone().unwrap_or_default();
    let result = sync_cudn(&cudn, &shared, &name).await;
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
        shared.succeeded(&backoff_key(&name));
        Action::requeue(super::RESYNC)
    })
}

/// Backoff key of a CUDN.
pub(crate) fn backoff_key(name: &str) -> String {
    format!("cudn/{name}")
}

/// What applying a CUDN plan did.
#[derive(Debug, Default)]
struct Applied {
    nads: Vec<NadState>,
    errors: Vec<SyncError>,
    waiting_on_pods: BTreeSet<String>,
    notes: Vec<Note>,
    finalizer_removed: bool,
}

async fn sync_cudn(
    cudn: &Arc<ClusterUserDefinedNetwork>,
    shared: &Shared,
    name: &str,
) -> Result<(), NetworkError> {
    let _create = match is_primary(&cudn.spec.network) {
        true => Some(shared.create_lock.cluster().await),
        false => None,
    };
    let uid = cudn.metadata.uid.clone().unwrap_or_default();
    let owned = if cudn.metadata.deletion_timestamp.is_some() && has_finalizer(&cudn.metadata) {
        owned_from_api(shared, &uid)
            .await
            .map_err(|source| NetworkError::ListOwned {
                name: name.to_owned(),
                source,
            })?
    } else {
        shared.stores.owned_nads(&uid)
    };
    let inputs = shared.stores.cudn_inputs(Arc::clone(cudn), owned);
    let plan = plan_cudn(&inputs, &shared.ctx.config.cluster);
    if !plan.active {
        return Ok(());
    }
    debug!(steps = plan.steps.len(), "planned");
    let api: Api<ClusterUserDefinedNetwork> = Api::all(shared.ctx.client.clone());
    let mut applied = apply_plan(cudn, &plan, shared, &api).await;
    let owner = Owner::Cudn {
        name: name.to_owned(),
    };
    lock(&shared.waiters).set(owner, std::mem::take(&mut applied.waiting_on_pods));
    // A cache that was behind is not news for the condition: the next reconcile sees more.
    let stale = applied.errors.iter().any(SyncError::is_stale);
    let status = if applied.finalizer_removed || stale {
        Ok(())
    } else {
        write_status(
            cudn,
            &api,
            &applied.nads,
            &applied.errors,
            &mut applied.notes,
        )
        .await
    };
    publish(&shared.recorder, &cudn.object_ref(&()), applied.notes).await;
    if let Some(class) = applied
        .errors
        .iter()
        .map(SyncError::class)
        .min_by_key(|c| priority(*c))
    {
        let messages: Vec<String> = applied.errors.iter().map(ToString::to_string).collect();
        return Err(failure_of_class(KIND, name, class, messages.join("\n")));
    }
    status.map_err(|source| NetworkError::Status {
        kind: KIND,
        key: name.to_owned(),
        source,
    })
}

/// Which class names a mix of failures: pods in use first (as upstream's `errors.As`),
/// then retryable ones, then invalid specs.
fn priority(class: SyncClass) -> u8 {
    match class {
        SyncClass::InUse => 0,
        SyncClass::Api => 1,
        SyncClass::Allocation | SyncClass::Exhausted(_) => 2,
        SyncClass::Invalid => 3,
    }
}

async fn apply_plan(
    cudn: &ClusterUserDefinedNetwork,
    plan: &CudnPlan,
    shared: &Shared,
    api: &Api<ClusterUserDefinedNetwork>,
) -> Applied {
    let mut applied = Applied::default();
    let name = cudn.metadata.name.clone().unwrap_or_default();
    let owner = Owner::Cudn { name: name.clone() };
    if plan.add_finalizer {
        if let Err(err) =
            patch_finalizer(api, &cudn.metadata, FinalizerOp::Add, CUDN_CONTROLLER).await
        {
            let context = format!("failed to add finalizer to ClusterUserDefinedNetwork {name:?}");
            applied.errors.push(api_error(&context, &err));
            return applied;
        }
        let labels = kind_labels((&cudn.spec.network).into());
        lock(&shared.gauges).set(&shared.ctx.metrics, owner.clone(), Some(labels));
        info!("added finalizer");
    }
    if let Some(fatal) = &plan.fatal {
        applied.errors.push(fatal.clone());
        return applied;
    }
    apply_steps(&plan.steps, shared, &mut applied).await;
    if plan.remove_finalizer && applied.errors.is_empty() {
        match patch_finalizer(api, &cudn.metadata, FinalizerOp::Remove, CUDN_CONTROLLER).await {
            Ok(()) => {
                applied.finalizer_removed = true;
                lock(&shared.gauges).set(&shared.ctx.metrics, owner, None);
                info!("removed finalizer");
            }
            Err(err) => {
                let context =
                    format!("failed to remove finalizer from ClusterUserDefinedNetwork {name:?}");
                applied.errors.push(api_error(&context, &err));
            }
        }
    }
    applied
}

/// Apply every namespace step; a failure is recorded and the next step still runs.
async fn apply_steps(steps: &[Step], shared: &Shared, applied: &mut Applied) {
    let writer = NadWriter {
        client: &shared.ctx.client,
        manager: CUDN_CONTROLLER,
        stores: &shared.stores,
        ids: &shared.ids,
        triggers: &shared.triggers,
    };
    for step in steps {
        let (op, state) = match step {
            Step::Remove { namespace, result } => match result {
                Ok(op) => (op.as_ref(), None),
                Err(err) => {
                    if matches!(err, SyncError::InUse { .. }) {
                        applied.waiting_on_pods.insert(namespace.clone());
                    }
                    applied.errors.push(err.clone());
                    continue;
                }
            },
            Step::Ensure { result, .. } => match result {
                Ok((op, state)) => (op.as_ref(), Some(state)),
                Err(err) => {
                    applied.errors.push(err.clone());
                    continue;
                }
            },
        };
        if let Some(op) = op {
            match writer.apply(op).await {
                Ok(change) => applied.notes.extend(change_note(change, &op.nad_key())),
                Err(err) => {
                    applied.errors.push(err);
                    continue;
                }
            }
        }
        applied.nads.extend(state.cloned());
    }
}

async fn write_status(
    cudn: &ClusterUserDefinedNetwork,
    api: &Api<ClusterUserDefinedNetwork>,
    nads: &[NadState],
    errors: &[SyncError],
    notes: &mut Vec<Note>,
) -> Result<(), kube::Error> {
    let spec = cudn_condition(nads, errors);
    let current = cudn
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    write_network_created(api, cudn, current, &spec, notes).await
}

/// The CUDN's NADs as the API server has them (a CUDN going away must not leave a NAD the
/// cache has not seen yet).
async fn owned_from_api(
    shared: &Shared,
    uid: &str,
) -> Result<BTreeMap<String, Arc<NetworkAttachmentDefinition>>, kube::Error> {
    let api: Api<NetworkAttachmentDefinition> = Api::all(shared.ctx.client.clone());
    let list = api
        .list(&ListParams::default().labels(LABEL_USER_DEFINED_NETWORK))
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter(|nad| controlled_by(&nad.metadata, uid))
        .map(|nad| {
            (
                nad.metadata.namespace.clone().unwrap_or_default(),
                Arc::new(nad),
            )
        })
        .collect())
}
