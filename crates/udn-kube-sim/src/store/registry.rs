//! The served resource types: the built-in ones and those of established CRDs, with the
//! per-type behaviour the real server's registry strategies give them.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::ApiError;
use crate::patch::SchemaHints;
use crate::resource::{ResourceKey, ResourceType};

/// A built-in resource type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Builtin {
    Namespace,
    Node,
    Pod,
    Service,
    Event,
    EventsV1,
    EndpointSlice,
    Lease,
    ConfigMap,
    Crd,
}

/// Where a type comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Flavor {
    Builtin(Builtin),
    /// Served because the CRD `crd_name` is established.
    Custom {
        crd_name: String,
    },
}

/// One served type and its behaviour.
#[derive(Clone, Debug)]
pub(super) struct TypeEntry {
    pub(super) rt: ResourceType,
    pub(super) flavor: Flavor,
    /// CRD `selectableFields`: (field label, JSON path without the leading dot).
    pub(super) selectable: Vec<(String, String)>,
    /// Server-side apply hints from the storage version's schema (custom resources).
    pub(super) apply_hints: Option<SchemaHints>,
}

impl TypeEntry {
    pub(super) fn builtin(&self) -> Option<Builtin> {
        match self.flavor {
            Flavor::Builtin(builtin) => Some(builtin),
            Flavor::Custom { .. } => None,
        }
    }

    pub(super) fn is(&self, builtin: Builtin) -> bool {
        self.builtin() == Some(builtin)
    }

    pub(super) fn is_custom(&self) -> bool {
        matches!(self.flavor, Flavor::Custom { .. })
    }

    /// `metadata.generation` is set to 1 on create and bumped on spec changes.
    pub(super) fn has_generation(&self) -> bool {
        matches!(
            self.flavor,
            Flavor::Custom { .. } | Flavor::Builtin(Builtin::Crd | Builtin::EndpointSlice)
        )
    }

    /// An update without `metadata.resourceVersion` is accepted (unconditional).
    pub(super) fn allow_unconditional_update(&self) -> bool {
        !matches!(
            self.flavor,
            Flavor::Custom { .. } | Flavor::Builtin(Builtin::Crd)
        )
    }

    /// A PUT to a missing object creates it.
    pub(super) fn allow_create_on_update(&self) -> bool {
        matches!(
            self.flavor,
            Flavor::Builtin(Builtin::Event | Builtin::EventsV1 | Builtin::Lease)
        )
    }

    /// The `apiVersion` objects are stored and served with.
    pub(super) fn api_version(&self) -> String {
        self.rt.api_version()
    }
}

#[allow(clippy::too_many_arguments)] // a table row
fn builtin_type(
    builtin: Builtin,
    group: &str,
    kind: &str,
    plural: &str,
    short_names: &[&str],
    categories: &[&str],
    namespaced: bool,
    status_subresource: bool,
) -> TypeEntry {
    let owned = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
    TypeEntry {
        rt: ResourceType {
            group: group.to_owned(),
            versions: vec!["v1".to_owned()],
            kind: kind.to_owned(),
            list_kind: format!("{kind}List"),
            plural: plural.to_owned(),
            singular: kind.to_lowercase(),
            short_names: owned(short_names),
            categories: owned(categories),
            namespaced,
            status_subresource,
            validators: Vec::new(),
            printer_columns: Vec::new(),
        },
        flavor: Flavor::Builtin(builtin),
        selectable: Vec::new(),
        apply_hints: None,
    }
}

/// Every served type, by key.
#[derive(Debug)]
pub(super) struct Registry {
    types: BTreeMap<ResourceKey, Arc<TypeEntry>>,
}

impl Registry {
    /// The built-in types udn needs.
    pub(super) fn new() -> Self {
        let entries = [
            builtin_type(
                Builtin::Namespace,
                "",
                "Namespace",
                "namespaces",
                &["ns"],
                &[],
                false,
                true,
            ),
            builtin_type(
                Builtin::Node,
                "",
                "Node",
                "nodes",
                &["no"],
                &[],
                false,
                true,
            ),
            builtin_type(
                Builtin::Pod,
                "",
                "Pod",
                "pods",
                &["po"],
                &["all"],
                true,
                true,
            ),
            builtin_type(
                Builtin::Service,
                "",
                "Service",
                "services",
                &["svc"],
                &["all"],
                true,
                true,
            ),
            builtin_type(
                Builtin::Event,
                "",
                "Event",
                "events",
                &["ev"],
                &[],
                true,
                false,
            ),
            builtin_type(
                Builtin::EventsV1,
                "events.k8s.io",
                "Event",
                "events",
                &["ev"],
                &[],
                true,
                false,
            ),
            builtin_type(
                Builtin::EndpointSlice,
                "discovery.k8s.io",
                "EndpointSlice",
                "endpointslices",
                &[],
                &[],
                true,
                false,
            ),
            builtin_type(
                Builtin::Lease,
                "coordination.k8s.io",
                "Lease",
                "leases",
                &[],
                &[],
                true,
                false,
            ),
            builtin_type(
                Builtin::ConfigMap,
                "",
                "ConfigMap",
                "configmaps",
                &["cm"],
                &[],
                true,
                false,
            ),
            builtin_type(
                Builtin::Crd,
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "customresourcedefinitions",
                &["crd", "crds"],
                &["api-extensions"],
                false,
                true,
            ),
        ];
        Self {
            types: entries
                .into_iter()
                .map(|entry| (entry.rt.key(), Arc::new(entry)))
                .collect(),
        }
    }

    pub(super) fn get(&self, key: &ResourceKey) -> Option<&TypeEntry> {
        self.types.get(key).map(Arc::as_ref)
    }

    /// The type, or the 404 the server answers for a resource it does not serve.
    pub(super) fn entry(&self, key: &ResourceKey) -> Result<Arc<TypeEntry>, ApiError> {
        self.types
            .get(key)
            .cloned()
            .ok_or_else(ApiError::resource_not_served)
    }

    /// The type of objects with this `apiVersion` and `kind`.
    pub(super) fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<TypeEntry>> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.types
            .values()
            .find(|entry| {
                entry.rt.group == group
                    && entry.rt.kind == kind
                    && entry.rt.versions.iter().any(|v| v == version)
            })
            .cloned()
    }

    pub(super) fn all(&self) -> impl Iterator<Item = &TypeEntry> {
        self.types.values().map(Arc::as_ref)
    }

    /// Start (or keep) serving a CRD's type.
    pub(super) fn register(&mut self, entry: TypeEntry) {
        self.types.insert(entry.rt.key(), Arc::new(entry));
    }

    /// Stop serving a custom type.
    pub(super) fn unregister(&mut self, key: &ResourceKey) {
        if self.types.get(key).is_some_and(|entry| entry.is_custom()) {
            self.types.remove(key);
        }
    }
}
