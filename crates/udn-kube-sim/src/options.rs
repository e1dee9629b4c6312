//! Request options, decoded from query parameters by the HTTP layer and passed to the
//! store as plain data.

use std::time::Duration;

/// List options (`labelSelector`, `fieldSelector`, `resourceVersion`, `limit`, `continue`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Label selector in the string form (`a=b,c in (d),!e`).
    pub label_selector: Option<String>,
    /// Field selector (`metadata.name=x`, `metadata.namespace!=y`, `spec.nodeName=n`).
    pub field_selector: Option<String>,
    /// `limit` for paging; `None` or 0 means all.
    pub limit: Option<u64>,
    /// `continue` token from a previous page.
    pub continue_token: Option<String>,
}

/// Watch options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchOptions {
    /// Selectors, as for list.
    pub list: ListOptions,
    /// Start after this resourceVersion; `None` or `"0"` = send the current state as ADDED
    /// events first, then changes.
    pub resource_version: Option<String>,
    /// Send BOOKMARK events (`allowWatchBookmarks=true`).
    pub allow_bookmarks: bool,
    /// `sendInitialEvents=true` (with `resourceVersionMatch=NotOlderThan`): initial state,
    /// then a BOOKMARK annotated `k8s.io/initial-events-end: "true"`.
    pub send_initial_events: bool,
    /// End the watch after this long (`timeoutSeconds`).
    pub timeout: Option<Duration>,
}

/// `propagationPolicy` of a delete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Propagation {
    /// Delete now, collect dependents in the background (the default for most resources).
    #[default]
    Background,
    /// Delete dependents first (`foregroundDeletion` finalizer).
    Foreground,
    /// Leave dependents (their ownerReferences to the deleted owner are removed).
    Orphan,
}

/// Delete options (`DeleteOptions` body and query).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Propagation policy.
    pub propagation: Propagation,
    /// Precondition: the object's uid must be this.
    pub precondition_uid: Option<String>,
    /// Precondition: the object's resourceVersion must be this.
    pub precondition_resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `gracePeriodSeconds`: how long a bound Pod may take to stop (`None`: its
    /// `spec.terminationGracePeriodSeconds`; 0: remove it at once). Other types ignore it.
    pub grace_period_seconds: Option<i64>,
}

/// Options of create / update / patch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and return the result without storing it.
    pub dry_run: bool,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `force` (server-side apply conflicts).
    pub force: bool,
}

/// The kind of a PATCH request, from its `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json` (core types; see the patch module docs).
    StrategicMerge,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchKind {
    /// The patch kind of a `Content-Type` header value (parameters ignored).
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        match content_type.split(';').next().map(str::trim) {
            Some("application/json-patch+json") => Some(Self::Json),
            Some("application/merge-patch+json") => Some(Self::Merge),
            Some("application/strategic-merge-patch+json") => Some(Self::StrategicMerge),
            Some("application/apply-patch+yaml" | "application/apply-patch+json") => {
                Some(Self::Apply)
            }
            _ => None,
        }
    }
}

/// Which part of an object a write targets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Subresource {
    /// The main resource: spec and metadata change, status is kept from the stored object
    /// (when the resource has a status subresource).
    #[default]
    Main,
    /// `/status`: only status changes (plus nothing else).
    Status,
}
