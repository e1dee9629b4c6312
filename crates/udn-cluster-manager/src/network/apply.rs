//! The API writes of UDN/CUDN plans. Each write maps a failure to the upstream condition
//! text; no domain decisions are taken here.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::info;
use udn_api::annotations::NadNetworkAnnotations;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::FINALIZER_UDN_PROTECTION;

use super::condition::{ConditionSpec, set_condition};
use super::ids::{NadIdentity, NetworkIds};
use super::nad_plan::{NadOp, controlled_by, has_finalizer};
use super::shared::wake_pool_waiters;
use super::stores::Stores;
use super::sync_error::{SyncError, api_detail};
use super::triggers::Triggers;
use super::udn_plan::FinalizerOp;
use super::udn_reconcile::now;
use crate::context::UDN_CONTROLLER;
use crate::events::Note;

/// What a NAD write did (for events and logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NadChange {
    /// The NAD was created.
    Created,
    /// The NAD was updated.
    Updated,
    /// The NAD was deleted.
    Deleted,
    /// Nothing was written.
    None,
}

/// Writes NADs for one owner.
pub(crate) struct NadWriter<'a> {
    /// API client.
    pub(crate) client: &'a Client,
    /// Field manager of the writes.
    pub(crate) manager: &'static str,
    /// The caches (to tell whether a failed create left anything behind).
    pub(crate) stores: &'a Stores,
    /// The network IDs stamped on created NADs.
    pub(crate) ids: &'a Mutex<NetworkIds>,
    /// Queues, to retry networks waiting for a pool when a failed create releases an ID.
    pub(crate) triggers: &'a Triggers,
}

impl NadWriter<'_> {
    /// Apply one NAD op.
    pub(crate) async fn apply(&self, op: &NadOp) -> Result<NadChange, SyncError> {
        match op {
            NadOp::Create {
                nad,
                network,
                tunnel_keys,
            } => self.create(nad, network, *tunnel_keys).await,
            NadOp::Update { nad } => {
                let api = self.api(nad.metadata.namespace.as_deref());
                let params = PostParams {
                    field_manager: Some(self.manager.to_owned()),
                    ..PostParams::default()
                };
                api.replace(nad_name(&nad.metadata), &params, nad)
                    .await
                    .map_err(|err| {
                        api_error("failed to update NetworkAttachmentDefinition", &err)
                    })?;
                Ok(NadChange::Updated)
            }
            NadOp::Delete { nad } => self.delete(nad).await,
            NadOp::ConfirmAbsent {
                namespace,
                name,
                owner_uid,
            } => self.confirm_absent(namespace, name, owner_uid).await,
        }
    }

    fn api(&self, namespace: Option<&str>) -> Api<NetworkAttachmentDefinition> {
        Api::namespaced(self.client.clone(), namespace.unwrap_or_default())
    }

    async fn create(
        &self,
        nad: &NetworkAttachmentDefinition,
        network: &str,
        tunnel_keys: usize,
    ) -> Result<NadChange, SyncError> {
        let key = udn_api::names::nad_key(
            nad.metadata.namespace.as_deref().unwrap_or_default(),
            nad_name(&nad.metadata),
        );
        let identity = NadIdentity {
            key: key.clone(),
            network: network.to_owned(),
            tunnel_keys,
            annotated: NadNetworkAnnotations::default(),
        };
        let assigned =
            lock(self.ids)
                .assign(&identity)
                .map_err(|err| match err.exhausted_pool() {
                    Some(pool) => SyncError::Exhausted {
                        network: network.to_owned(),
                        pool,
                        detail: err.pool_error().to_string(),
                    },
                    None => SyncError::Allocation {
                        network: network.to_owned(),
                        detail: error_chain(&err),
                    },
                })?;
        let mut stamped = nad.clone();
        stamped
            .metadata
            .annotations
            .get_or_insert_default()
            .extend(assigned.to_annotations());
        let params = PostParams {
            field_manager: Some(self.manager.to_owned()),
            ..PostParams::default()
        };
        match self
            .api(nad.metadata.namespace.as_deref())
            .create(&params, &stamped)
            .await
        {
            Ok(_) => Ok(NadChange::Created),
            Err(err) => {
                let failure = api_error("failed to create NetworkAttachmentDefinition", &err);
                // Nothing was created (unless it already existed): the NAD holds no ID.
                let reference =
                    ObjectRef::<NetworkAttachmentDefinition>::new(nad_name(&nad.metadata))
                        .within(nad.metadata.namespace.as_deref().unwrap_or_default());
                if !failure.is_stale() && self.stores.nads.get(&reference).is_none() {
                    let released = lock(self.ids).forget(&key);
                    if released.is_some() {
                        wake_pool_waiters(self.ids, self.stores, self.triggers);
                    }
                }
                Err(failure)
            }
        }
    }

    async fn delete(&self, nad: &NetworkAttachmentDefinition) -> Result<NadChange, SyncError> {
        let namespace = nad.metadata.namespace.as_deref().unwrap_or_default();
        let name = nad_name(&nad.metadata);
        let context = format!("failed to delete NetworkAttachmentDefinition [{namespace}/{name}]");
        let api = self.api(Some(namespace));
        let patch = finalizers_patch(&nad.metadata, FinalizerOp::Remove);
        let params = PatchParams {
            field_manager: Some(self.manager.to_owned()),
            ..PatchParams::default()
        };
        api.patch(name, &params, &Patch::Merge(&patch))
            .await
            .map_err(|err| {
                let inner = api_error(
                    "failed to remove NetworkAttachmentDefinition finalizer",
                    &err,
                );
                api_error_text(&context, inner.to_string(), inner.is_stale())
            })?;
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(NadChange::Deleted),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(NadChange::Deleted),
            Err(err) => Err(api_error(&context, &err)),
        }
    }

    async fn confirm_absent(
        &self,
        namespace: &str,
        name: &str,
        owner_uid: &str,
    ) -> Result<NadChange, SyncError> {
        let context = format!("failed to delete NetworkAttachmentDefinition [{namespace}/{name}]");
        match self.api(Some(namespace)).get_opt(name).await {
            Ok(None) => Ok(NadChange::None),
            Ok(Some(found))
                if !controlled_by(&found.metadata, owner_uid)
                    || !has_finalizer(&found.metadata) =>
            {
                Ok(NadChange::None)
            }
            Ok(Some(_)) => Err(SyncError::Stale {
                context,
                detail: "the NetworkAttachmentDefinition exists but is not cached yet".to_owned(),
            }),
            Err(err) => Err(api_error(&context, &err)),
        }
    }
}

/// A merge patch adding or removing our finalizer, guarded by the cached resourceVersion
/// (a stale cache gets 409 Conflict, as an Update would).
pub(crate) fn finalizers_patch(meta: &ObjectMeta, op: FinalizerOp) -> serde_json::Value {
    let mut finalizers: Vec<String> = meta
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != FINALIZER_UDN_PROTECTION)
        .cloned()
        .collect();
    if op == FinalizerOp::Add {
        finalizers.push(FINALIZER_UDN_PROTECTION.to_owned());
    }
    json!({"metadata": {
        "resourceVersion": meta.resource_version,
        "finalizers": finalizers,
    }})
}

/// Add or remove our finalizer on a UDN/CUDN.
pub(crate) async fn patch_finalizer<K>(
    api: &Api<K>,
    meta: &ObjectMeta,
    op: FinalizerOp,
    manager: &'static str,
) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let params = PatchParams {
        field_manager: Some(manager.to_owned()),
        ..PatchParams::default()
    };
    let patch = finalizers_patch(meta, op);
    api.patch(nad_name(meta), &params, &Patch::Merge(&patch))
        .await
        .map(|_| ())
}

/// Sets `NetworkCreated` to `spec` on `object` (whose conditions are `current`) and writes it
/// when it changed; an error condition is also noted as a Warning event.
pub(crate) async fn write_network_created<K>(
    api: &Api<K>,
    object: &K,
    current: &[Condition],
    spec: &ConditionSpec,
    notes: &mut Vec<Note>,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let Some(conditions) = set_condition(current, spec, &now()) else {
        return Ok(());
    };
    if spec.is_error() {
        notes.push(Note {
            warning: true,
            reason: spec.reason,
            action: "Sync",
            text: spec.message.clone(),
        });
    }
    apply_conditions(api, object, &conditions, UDN_CONTROLLER).await?;
    info!(
        status = spec.status,
        reason = spec.reason,
        "updated NetworkCreated condition"
    );
    Ok(())
}

/// Server-side apply of the conditions this controller owns (`NetworkCreated`) out of
/// `conditions` (the object's conditions with the owned ones set), with field manager
/// `manager`. Conditions of other controllers (`NetworkAllocationSucceeded` of the network
/// cluster controller) are left out: `status.conditions` is a list map keyed by `type`, so
/// each manager owns and writes only its own entries and the others stay. Not forced, as
/// upstream's `ApplyStatus` of the UDN/CUDN controller: a 409 means another manager owns
/// the condition (or the cache was behind) and is retried.
pub(crate) async fn apply_conditions<K>(
    api: &Api<K>,
    object: &K,
    conditions: &[Condition],
    manager: &'static str,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    const OWNED: &[&str] = &[super::condition::CONDITION_NETWORK_CREATED];
    let owned: Vec<&Condition> = conditions
        .iter()
        .filter(|c| OWNED.contains(&c.type_.as_str()))
        .collect();
    let meta = object.meta();
    let mut metadata = json!({"name": meta.name});
    if let Some(namespace) = &meta.namespace {
        metadata["namespace"] = json!(namespace);
    }
    let body = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": metadata,
        "status": {"conditions": owned},
    });
    let params = PatchParams::apply(manager);
    match api
        .patch_status(nad_name(meta), &params, &Patch::Apply(&body))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(err) => Err(err),
    }
}

/// `<context>: <server message>`; a 409 (conflict, already exists) means the cache was
/// behind.
pub(crate) fn api_error(context: &str, err: &kube::Error) -> SyncError {
    let stale = matches!(err, kube::Error::Api(status) if status.code == 409);
    api_error_text(context, api_detail(err), stale)
}

fn api_error_text(context: &str, detail: String, stale: bool) -> SyncError {
    let context = context.to_owned();
    if stale {
        SyncError::Stale { context, detail }
    } else {
        SyncError::Api { context, detail }
    }
}

/// An error and its sources, `: `-joined.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// The keys of `nads`.
pub(crate) fn nad_keys<'a>(
    nads: impl IntoIterator<Item = &'a NetworkAttachmentDefinition>,
) -> BTreeSet<String> {
    nads.into_iter()
        .map(|nad| {
            udn_api::names::nad_key(
                nad.metadata.namespace.as_deref().unwrap_or_default(),
                nad_name(&nad.metadata),
            )
        })
        .collect()
}

fn nad_name(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

/// Lock a std mutex, ignoring poisoning (the data is plain state, never left half-written
/// by a panic in this crate).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::*;

    fn status(code: u16, message: &str) -> kube::Error {
        let mut status = Status::failure(message, "Conflict");
        status.code = code;
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn conflicts_mean_a_stale_cache() {
        let stale = api_error(
            "failed to update NetworkAttachmentDefinition",
            &status(409, "the object has been modified"),
        );
        assert!(stale.is_stale());
        assert_eq!(
            stale.to_string(),
            "failed to update NetworkAttachmentDefinition: the object has been modified"
        );
        let denied = api_error(
            "failed to create NetworkAttachmentDefinition",
            &status(403, "no"),
        );
        assert!(!denied.is_stale());
        assert_eq!(
            denied.to_string(),
            "failed to create NetworkAttachmentDefinition: no"
        );
    }

    #[test]
    fn finalizer_patches_keep_other_finalizers_and_the_resource_version() {
        let meta = ObjectMeta {
            resource_version: Some("12".into()),
            finalizers: Some(vec!["other".into(), FINALIZER_UDN_PROTECTION.into()]),
            ..ObjectMeta::default()
        };
        assert_eq!(
            finalizers_patch(&meta, FinalizerOp::Remove),
            json!({"metadata": {"resourceVersion": "12", "finalizers": ["other"]}})
        );
        assert_eq!(
            finalizers_patch(&ObjectMeta::default(), FinalizerOp::Add),
            json!({"metadata": {"resourceVersion": null, "finalizers": [FINALIZER_UDN_PROTECTION]}})
        );
    }
}
