//! [`Sim`]: the in-memory API server's storage and semantics, as a plain Rust API. The
//! HTTP layer (and tests that want no HTTP) call it; it knows nothing about HTTP.
//!
//! CONTRACT (shared by the store, HTTP and patch work): method signatures below are fixed;
//! bodies are implemented in the `store` module.

use std::sync::Arc;

use futures::stream::BoxStream;
use serde_json::Value;

use crate::error::ApiError;
use crate::options::{
    DeleteOptions, ListOptions, PatchKind, Subresource, WatchOptions, WriteOptions,
};
use crate::resource::{ResourceKey, ResourceType};

/// Type of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchEventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
    /// `BOOKMARK`: only `metadata.resourceVersion` (and annotations) are meaningful.
    Bookmark,
}

impl WatchEventType {
    /// The wire name (`ADDED`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
            Self::Bookmark => "BOOKMARK",
        }
    }
}

/// One watch event.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchEvent {
    /// Event type.
    pub event_type: WatchEventType,
    /// The object (for DELETED: its last state, with the deletion's resourceVersion).
    pub object: Arc<Value>,
}

/// A running watch. Ends when `timeoutSeconds` passes or the server shuts down.
pub type WatchStream = BoxStream<'static, WatchEvent>;

/// Settings of a [`Sim`].
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// How many past events are kept for watches that resume from a resourceVersion;
    /// older ones get `410 Gone`.
    pub watch_history: usize,
    /// Interval of BOOKMARK events on watches that allow them.
    pub bookmark_interval: std::time::Duration,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            watch_history: 100_000,
            bookmark_interval: std::time::Duration::from_secs(1),
        }
    }
}

/// The in-memory API server. Cheap to clone; all clones share one state.
#[derive(Clone, Debug)]
pub struct Sim {
    pub(crate) inner: Arc<crate::store::Shared>,
}

impl Sim {
    /// A server with the built-in resource types (Namespace, Node, Pod, Service, Event,
    /// events.k8s.io Event, EndpointSlice, Lease, CustomResourceDefinition) and no objects.
    pub fn new(config: SimConfig) -> Self {
        Self {
            inner: Arc::new(crate::store::Shared::new(config)),
        }
    }

    /// Every served resource type (built-in and from established CRDs), for discovery.
    pub fn resource_types(&self) -> Vec<ResourceType> {
        self.inner.resource_types()
    }

    /// The resource type served at `group/version/plural`, if any.
    pub fn resource_type(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        self.inner.resource_type(group, version, plural)
    }

    /// The newest resourceVersion handed out.
    pub fn resource_version(&self) -> u64 {
        self.inner.resource_version()
    }

    /// GET one object. `namespace` is `Some` exactly for namespaced types.
    pub fn get(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        self.inner.get(key, namespace, name)
    }

    /// LIST: the `<Kind>List` object (apiVersion, kind, metadata.resourceVersion and
    /// continue, items). `namespace: None` on a namespaced type lists all namespaces.
    pub fn list(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Value, ApiError> {
        self.inner.list(key, namespace, opts)
    }

    /// POST `pods/<name>/binding` in `namespace`: assigns the Pod to the Binding's target
    /// Node (see the store's binding module for the rules); answers a success Status.
    pub fn bind(
        &self,
        namespace: &str,
        name: &str,
        binding: &Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.inner.bind(namespace, name, binding, opts)
    }

    /// CREATE (POST). Honors `generateName`; sets uid, creationTimestamp,
    /// resourceVersion, generation; validates; refuses a missing or terminating namespace.
    pub fn create(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        object: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.inner.create(key, namespace, object, opts)
    }

    /// UPDATE (PUT) of the main resource or the status subresource, with optimistic
    /// concurrency when the body carries a resourceVersion.
    pub fn update(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        object: Value,
        subresource: Subresource,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.inner
            .update(key, namespace, name, object, subresource, opts)
    }

    /// PATCH with any [`PatchKind`]; server-side apply may create the object.
    #[allow(clippy::too_many_arguments)] // mirrors the REST call's parts one to one
    pub fn patch(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        kind: PatchKind,
        body: &[u8],
        subresource: Subresource,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.inner
            .patch(key, namespace, name, kind, body, subresource, opts)
    }

    /// DELETE: with finalizers the object is only marked (deletionTimestamp) and returned;
    /// otherwise it is removed and its last state returned. Dependents are handled per the
    /// propagation policy.
    pub fn delete(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        self.inner.delete(key, namespace, name, opts)
    }

    /// DELETE collection: deletes every object the selectors match; returns the List of
    /// deleted (or marked) objects.
    pub fn delete_collection(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        self.inner.delete_collection(key, namespace, list, opts)
    }

    /// WATCH from a resourceVersion (410 Gone when it is older than the kept history).
    pub fn watch(
        &self,
        key: &ResourceKey,
        namespace: Option<&str>,
        opts: &WatchOptions,
    ) -> Result<WatchStream, ApiError> {
        self.inner.watch(key, namespace, opts)
    }

    /// Forget the watch history (as etcd compaction does): watches resuming from any
    /// resourceVersion before now get 410 Gone.
    pub fn compact(&self) {
        self.inner.compact();
    }

    /// Every stored object (all types), for snapshots. CRDs come first so that restoring
    /// re-creates the types before their objects.
    pub fn export(&self) -> Vec<Value> {
        self.inner.export()
    }

    /// Load objects exported by [`Sim::export`] into an empty server, keeping their uids,
    /// resourceVersions and timestamps.
    pub fn import(&self, objects: Vec<Value>) -> Result<(), ApiError> {
        self.inner.import(objects)
    }
}
