//! The NAD network-ID controller (upstream networkmanager's NAD controller in
//! cluster-manager mode): every OVN-Kubernetes NAD of a user-defined network carries its
//! network's `k8s.ovn.org/network-id`, `network-name` and `tunnel-keys`.

use std::sync::Arc;
use std::time::Instant;

use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use tracing::{info, instrument, warn};
use udn_api::nad::NetworkAttachmentDefinition;

use super::apply::{error_chain, lock};
use super::condition::REASON_POOL_EXHAUSTED;
use super::error::NetworkError;
use super::ids::{IdsError, Released};
use super::nad_identity::{NadKind, nad_kind};
use super::shared::Shared;
use crate::events::{Note, publish};

/// Metric label of this controller.
pub(crate) const METRIC: &str = "network-ids";
/// Field manager of the identity annotations (upstream's NAD controller name).
pub(crate) const NAD_CONTROLLER: &str = "clustermanager-nad-controller";

/// Reconcile one NAD.
#[instrument(skip_all, fields(controller = METRIC, key))]
pub(crate) async fn reconcile_nad(
    nad: Arc<NetworkAttachmentDefinition>,
    shared: Arc<Shared>,
) -> Result<Action, NetworkError> {
    let started = Instant::now();
    let key = udn_api::names::nad_key(
        nad.metadata.namespace.as_deref().unwrap_or_default(),
        nad.metadata.name.as_deref().unwrap_or_default(),
    );
    tracing::Span::current().record("key", key.as_str());
    let result = sync_nad(&nad, &shared, &key).await;
    let outcome = if result.is_ok() { "ok" } else { "error" };
    shared
        .ctx
        .metrics
        .observe(METRIC, outcome, started.elapsed());
    if result.is_ok() {
        shared.succeeded(&backoff_key(&key));
    }
    result
}

/// Backoff key of a NAD.
pub(crate) fn backoff_key(key: &str) -> String {
    format!("nad/{key}")
}

async fn sync_nad(
    nad: &NetworkAttachmentDefinition,
    shared: &Shared,
    key: &str,
) -> Result<Action, NetworkError> {
    let identity = match nad_kind(nad, &shared.ctx.config.cluster) {
        NadKind::NotOvn | NadKind::Default => {
            let released = lock(&shared.ids).forget(key);
            if released.is_some() {
                shared.wake_pool_waiters();
            }
            log_released(released);
            return Ok(Action::await_change());
        }
        NadKind::Invalid(message) => {
            warn!(error = %message, "invalid network config");
            let note = Note {
                warning: true,
                reason: "InvalidConfig",
                action: "Parse",
                text: format!("Failed to parse network config: {message}"),
            };
            publish(&shared.recorder, &nad.object_ref(&()), vec![note]).await;
            return Ok(Action::await_change());
        }
        NadKind::Network(identity) => identity,
    };
    let assigned = {
        let mut ids = lock(&shared.ids);
        // Decide under the lock that the NAD still exists: a deletion applied to the cache
        // before this point is seen here; one applied after releases what we register.
        let cached = shared.stores.nads.get(&ObjectRef::from_obj(nad));
        if cached.is_none_or(|c| c.metadata.uid != nad.metadata.uid) {
            return Ok(Action::await_change());
        }
        ids.assign(&identity)
    };
    let assigned = match assigned {
        Ok(assigned) => assigned,
        Err(err) => return Err(allocation_failed(nad, shared, key, &err).await),
    };
    let current = nad.metadata.annotations.clone().unwrap_or_default();
    let patch = assigned.patch_against(&current);
    if patch.is_empty() {
        return Ok(Action::await_change());
    }
    let api: Api<NetworkAttachmentDefinition> = Api::namespaced(
        shared.ctx.client.clone(),
        nad.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let params = PatchParams {
        field_manager: Some(NAD_CONTROLLER.to_owned()),
        ..PatchParams::default()
    };
    let body = json!({"metadata": {"annotations": patch}});
    api.patch(
        nad.metadata.name.as_deref().unwrap_or_default(),
        &params,
        &Patch::Merge(&body),
    )
    .await
    .map_err(|source| NetworkError::Annotate {
        key: key.to_owned(),
        source,
    })?;
    info!(
        network = %identity.network,
        id = ?assigned.network_id,
        tunnel_keys = ?assigned.tunnel_keys,
        "annotated network identity"
    );
    Ok(Action::await_change())
}

/// The reconcile error for a NAD whose network got no ID or keys. An exhausted pool is also
/// a Warning event on the NAD naming the pool (the NAD is retried when a network is
/// released, not on a backoff).
async fn allocation_failed(
    nad: &NetworkAttachmentDefinition,
    shared: &Shared,
    key: &str,
    err: &IdsError,
) -> NetworkError {
    let kind = "NetworkAttachmentDefinition";
    let Some(pool) = err.exhausted_pool() else {
        return NetworkError::Allocation {
            kind,
            key: key.to_owned(),
            message: error_chain(err),
        };
    };
    let message = err.pool_error().to_string();
    warn!(pool = pool.name(), error = %message, "network pool exhausted");
    let note = Note {
        warning: true,
        reason: REASON_POOL_EXHAUSTED,
        action: "AllocateNetworkID",
        text: message.clone(),
    };
    publish(&shared.recorder, &nad.object_ref(&()), vec![note]).await;
    NetworkError::Exhausted {
        kind,
        key: key.to_owned(),
        pool: pool.name(),
        message,
    }
}

/// Log what a NAD deletion released.
pub(crate) fn log_released(released: Option<Released>) {
    if let Some(released) = released {
        info!(
            network = %released.network,
            id = ?released.id,
            tunnel_keys = ?released.tunnel_keys,
            "released network ID"
        );
    }
}
