//! Storage and semantics behind [`crate::Sim`].
//!
//! One [`std::sync::Mutex`] guards the whole [`State`]; every operation takes it once,
//! runs to completion (including the follow-up work of the emulated garbage collector,
//! namespace controller and CRD finalizer) and releases it before returning. Nothing
//! awaits while holding it. Watchers get changes as `Arc`s through a broadcast channel
//! fed under the lock, so their order is the resourceVersion order.
//!
//! Deliberate differences from kube-apiserver:
//! - the controllers run synchronously inside the request that triggers them: a delete
//!   returns the marked object, but dependents, namespace content and the namespace
//!   itself may already be gone when it returns (their events are in the log in order);
//! - only Pods are deleted gracefully (as only their strategy is graceful upstream); a
//!   Pod's grace is the time its kubelet has, nothing here waits for it to run out;
//! - a `/status` write keeps all metadata (only `managedFields` and `status` change);
//! - a watch from a resourceVersion newer than the newest starts there instead of waiting;
//! - list pages after the first are served from the current state (continue tokens carry
//!   the first page's resourceVersion, which every page reports);
//! - managedFields are only maintained by server-side apply (in the patch module);
//! - Service node ports are allocated lowest-free (above the static band first), not at
//!   random, so tests can predict them.

// `ApiError` is the crate's contract error type (the `Sim` API returns it by value).
#![allow(clippy::result_large_err)]

mod binding;
mod collect;
mod crd;
mod create;
mod defaults;
mod delete;
mod events;
mod field_selector;
mod filter;
mod label_selector;
mod list;
mod meta;
mod node_ports;
mod registry;
mod service_alloc;
mod service_validation;
mod snapshot;
mod state;
mod update;
mod validate;
mod watch;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use crate::error::ApiError;
use crate::options::{
    DeleteOptions, ListOptions, PatchKind, Subresource, WatchOptions, WriteOptions,
};
use crate::resource::{ResourceKey, ResourceType};
use crate::sim::{SimConfig, WatchStream};
use state::State;

/// Capacity of the channel that wakes watchers; a watcher further behind replays the
/// change log.
const CHANNEL_CAPACITY: usize = 1 << 14;

/// Take the state lock (a panic elsewhere does not poison the server).
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The shared server state.
pub(crate) struct Shared {
    config: SimConfig,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .field("resource_version", &self.resource_version())
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub(crate) fn new(config: SimConfig) -> Self {
        let state = State::new(config.watch_history, CHANNEL_CAPACITY);
        Self {
            config,
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// Run `op` on the storage behind `key`: for the events.k8s.io view, on the core
    /// Events with the body converted in and the result (a list when `list`) out.
    fn through_view(
        key: &ResourceKey,
        body: Option<Value>,
        list: bool,
        op: impl FnOnce(&ResourceKey, Option<Value>) -> Result<Value, ApiError>,
    ) -> Result<Value, ApiError> {
        if !events::is_view(key) {
            return op(key, body);
        }
        let body = body.map(|body| events::to_core(&body));
        op(&events::core_key(), body)
            .map(|out| {
                if list {
                    events::list_to_view(out)
                } else {
                    events::to_view(&out)
                }
            })
            .map_err(events::error_to_view)
    }

    /// Run a write and the controller work it queued, under one lock.
    fn write<T>(&self, op: impl FnOnce(&mut State) -> Result<T, ApiError>) -> Result<T, ApiError> {
        let mut state = lock(&self.state);
        let result = op(&mut state);
        state.drain();
        result
    }

    pub(crate) fn resource_types(&self) -> Vec<ResourceType> {
        lock(&self.state)
            .registry
            .all()
            .map(|entry| entry.rt.clone())
            .collect()
    }

    pub(crate) fn resource_type(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<ResourceType> {
        let key = ResourceKey {
            group: group.to_owned(),
            plural: plural.to_owned(),
        };
        lock(&self.state)
            .registry
            .get(&key)
            .filter(|entry| entry.rt.versions.iter().any(|v| v == version))
            .map(|entry| entry.rt.clone())
    }

    pub(crate) fn resource_version(&self) -> u64 {
        lock(&self.state).rv
    }

    pub(crate) fn get(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        Self::through_view(key, None, false, |key, _| {
            lock(&self.state).get_one(key, namespace, name)
        })
    }

    pub(crate) fn list(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Value, ApiError> {
        Self::through_view(key, None, true, |key, _| {
            lock(&self.state).list(key, namespace, opts)
        })
    }

    pub(crate) fn create(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        object: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        Self::through_view(key, Some(object), false, |key, object| {
            let object = object.unwrap_or_default();
            self.write(|state| state.create(key, namespace, object, opts))
        })
    }

    pub(crate) fn update(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        object: Value,
        subresource: Subresource,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        Self::through_view(key, Some(object), false, |key, object| {
            let object = object.unwrap_or_default();
            self.write(|state| state.update(key, namespace, name, object, subresource, opts))
        })
    }

    #[allow(clippy::too_many_arguments)] // mirrors the REST call's parts one to one
    pub(crate) fn patch(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        kind: PatchKind,
        body: &[u8],
        subresource: Subresource,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.write(|state| state.patch(key, namespace, name, kind, body, subresource, opts))
    }

    pub(crate) fn bind(
        &self,
        namespace: &str,
        name: &str,
        binding: &Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.write(|state| state.bind(namespace, name, binding, opts))
    }

    pub(crate) fn delete(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        Self::through_view(key, None, false, |key, _| {
            self.write(|state| state.delete(key, namespace, name, opts))
        })
    }

    pub(crate) fn delete_collection(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        Self::through_view(key, None, true, |key, _| {
            self.write(|state| state.delete_collection(key, namespace, list, opts))
        })
    }

    pub(crate) fn watch(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        opts: &WatchOptions,
    ) -> Result<WatchStream, ApiError> {
        if events::is_view(key) {
            return watch::start(
                &self.state,
                self.config.bookmark_interval,
                &events::core_key(),
                namespace,
                opts,
            )
            .map(events::stream_to_view)
            .map_err(events::error_to_view);
        }
        watch::start(
            &self.state,
            self.config.bookmark_interval,
            key,
            namespace,
            opts,
        )
    }

    pub(crate) fn compact(&self) {
        lock(&self.state).compact();
    }

    pub(crate) fn export(&self) -> Vec<Value> {
        lock(&self.state).export()
    }

    pub(crate) fn import(&self, objects: Vec<Value>) -> Result<(), ApiError> {
        lock(&self.state).import(objects)
    }
}

impl State {
    /// GET.
    fn get_one(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        let entry = self.registry.entry(key)?;
        let namespace = if entry.rt.namespaced {
            namespace.unwrap_or_default()
        } else {
            ""
        };
        self.get(&state::ObjRef::new(key, namespace, name))
            .map(|obj| (**obj).clone())
            .ok_or_else(|| ApiError::not_found(&entry.rt.group, &entry.rt.plural, name))
    }
}
