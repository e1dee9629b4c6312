//! PATCH bodies applied to a stored object, as the real server does it.
//!
//! CONTRACT (shared by the store and the patch work): [`apply_patch`] and
//! [`PatchContext`] are fixed; everything else in this module is the patch work's.

use serde_json::Value;

use crate::error::ApiError;
mod implementation;

use crate::options::{PatchKind, Subresource};

/// What the patch code needs to know about the target.
#[derive(Clone, Debug)]
pub(crate) struct PatchContext<'a> {
    /// `apiVersion` of the stored object (`v1`, `k8s.ovn.org/v1`).
    pub(crate) api_version: &'a str,
    /// Kind (`Pod`, `UserDefinedNetwork`).
    pub(crate) kind: &'a str,
    /// API group (`""` for core).
    pub(crate) group: &'a str,
    /// Resource plural.
    pub(crate) plural: &'a str,
    /// Object name from the URL.
    pub(crate) name: &'a str,
    /// Namespace from the URL.
    pub(crate) namespace: Option<&'a str>,
    /// `fieldManager` (required for apply patches).
    pub(crate) field_manager: Option<&'a str>,
    /// `force` (apply patches).
    pub(crate) force: bool,
    /// Main resource or status.
    pub(crate) subresource: Subresource,
    /// Now, RFC 3339 (for managedFields times).
    pub(crate) now: &'a str,
}

/// Apply `body` of `kind` to `current` (the stored object; `None` only for a server-side
/// apply that creates). Returns the full new object, not yet validated or stored: the
/// store then treats it like an update (immutable fields, resourceVersion, validation,
/// generation, status split). Errors are the server's (400 bad patch, 409 apply conflict,
/// 422 for an invalid JSON patch path, 404 when a non-apply patch has nothing to patch).
pub(crate) fn apply_patch(
    current: Option<&Value>,
    kind: PatchKind,
    body: &[u8],
    ctx: &PatchContext<'_>,
) -> Result<Value, ApiError> {
    implementation::apply(current, kind, body, ctx)
}
