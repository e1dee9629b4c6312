//! The resource types the server serves: the built-in ones udn needs, and every
//! CustomResourceDefinition created through the API.

use std::sync::Arc;

use udn_schema::CrdValidator;

/// Identifies a resource type: API group (empty for core) and plural.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKey {
    /// API group, `""` for core.
    pub group: String,
    /// Plural resource name (`pods`, `userdefinednetworks`).
    pub plural: String,
}

/// One served resource type.
#[derive(Clone, Debug)]
pub struct ResourceType {
    /// API group, `""` for core.
    pub group: String,
    /// Served versions; the first is the storage version. Objects are stored once and
    /// served under every version unchanged (udn's CRDs have one version).
    pub versions: Vec<String>,
    /// Kind.
    pub kind: String,
    /// List kind (`<Kind>List`).
    pub list_kind: String,
    /// Plural.
    pub plural: String,
    /// Singular (lowercase kind).
    pub singular: String,
    /// Short names (`udn`, `ns`, ...).
    pub short_names: Vec<String>,
    /// Categories (`all`, ...).
    pub categories: Vec<String>,
    /// Namespaced or cluster scoped.
    pub namespaced: bool,
    /// Has a `/status` subresource.
    pub status_subresource: bool,
    /// Schema + CEL validation (custom resources only), per version name.
    pub validators: Vec<(String, Arc<CrdValidator>)>,
    /// Additional printer columns as the CRD declares them (JSON), for `kubectl get`.
    pub printer_columns: Vec<serde_json::Value>,
}

impl ResourceType {
    /// Its key.
    pub fn key(&self) -> ResourceKey {
        ResourceKey {
            group: self.group.clone(),
            plural: self.plural.clone(),
        }
    }

    /// `group/version` (or `version` for core) of the storage version.
    pub fn api_version(&self) -> String {
        let version = self.versions.first().map(String::as_str).unwrap_or("v1");
        if self.group.is_empty() {
            version.to_owned()
        } else {
            format!("{}/{version}", self.group)
        }
    }
}
