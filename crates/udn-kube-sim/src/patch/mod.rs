//! PATCH bodies applied to a stored object, as the real server does it.
//!
//! CONTRACT (shared by the store and the patch work): [`apply_patch`] and
//! [`PatchContext`] are fixed; everything else in this module is the patch work's.
//!
//! # What is exact
//!
//! Checked against `k8s.io/apiserver` `handlers/patch.go`, `k8s.io/apimachinery`
//! (`strategicpatch`, `managedfields`, `api/errors`), `structured-merge-diff` and
//! `evanphx/json-patch` v4:
//!
//! - Order of checks and the codes: `415` strategic merge patch of a custom resource,
//!   `422 PatchOptions.meta.k8s.io "" is invalid` (apply without `fieldManager`, `force`
//!   on a non-apply patch, a too long or unprintable manager), `400 invalid JSON patch`
//!   for a body that is not JSON, `404` for a non-apply patch of a missing object, then
//!   the patch's own errors, then the name/namespace checks (`400`).
//! - JSON patch ([`json`]): decode errors `400` with the `encoding/json` text, `413` above
//!   10000 operations, `422` with the server's generic text for an operation that does
//!   not apply (the server drops the reason too); evanphx's `test` (a missing member
//!   equals `null`), the 3 MiB copy limit.
//! - Merge patch ([`merge`]): `evanphx/json-patch` semantics, including its null pruning.
//! - A result that does not decode as an object of the kind: `422  "" is invalid: patch:
//!   Invalid value: ...` ([`identity`]).
//! - Strategic merge patch ([`strategic`]): the library's algorithm, directives, ordering
//!   (new items before live ones; `$setElementOrder` including the effect of the
//!   library's in-place list edits) and error texts, for the lists in [`schema`].
//! - Server-side apply ([`apply`]): the error texts, conflict messages and causes,
//!   `managedFields` entry shape, identity and sort order, `before-first-apply`,
//!   `ancient-changes` capping of `Update` managers.
//!
//! # What is approximated
//!
//! - Built-in kinds: only the lists in [`schema`] merge by key (metadata `ownerReferences` by `uid` and
//!   `finalizers` as a set for every kind; Pod containers, init and ephemeral containers
//!   by `name` with their `ports`, `env`, `volumeMounts`, `volumeDevices`; Pod `volumes`,
//!   `imagePullSecrets`, `hostAliases`, `topologySpreadConstraints`, `schedulingGates`,
//!   `resourceClaims`, `status.conditions`, `status.podIPs`; Node `spec.podCIDRs`,
//!   `status.conditions`, `status.addresses`; Service `spec.ports`, `status.conditions`;
//!   Namespace `status.conditions`; CRD `status.conditions` for apply). Every other list
//!   is replaced by a strategic merge patch and atomic for apply. Node `spec.taints` has
//!   no patch strategy upstream and is replaced, as there. Custom resources follow their
//!   CRD's `x-kubernetes-list-type`/`-list-map-keys`/`-map-type` for apply ([`hints`],
//!   [`PatchContext::schema_hints`]); without hints their lists are atomic.
//! - The typed decode that follows a patch upstream is reduced to: the object must be a
//!   JSON object with the kind's `apiVersion`/`kind` (filled in when missing for built-in
//!   kinds) and string `metadata.name`/`namespace`/`uid`; after a strategic merge patch,
//!   directive keys and `null` fields are dropped. Unknown fields are kept, defaults are
//!   not applied, `fieldValidation` is not supported.
//! - Field ownership: all objects of built-in kinds are granular (no
//!   `+structType=atomic`; custom resources honour `x-kubernetes-map-type`); the `.`
//!   member of a new object in an `Update` entry is recorded wherever the field did not
//!   exist before (upstream it depends on Go zero values); ownership is tracked at one
//!   apiVersion (no conversion between versions); the `last-applied-configuration`
//!   annotation is neither read nor written.
//! - Reset fields: `status` for the main resource of every kind except Event,
//!   EndpointSlice and Lease (custom resources are assumed to have a status
//!   subresource), `spec` for the status subresource; their contents are not owned.
//! - Non-apply writes record an `Update` manager only when a field manager is given (the
//!   server falls back to the user agent), and do so even when the object had no
//!   managers before (the server skips tracking then, but it tracks every create).
//! - Apply: `null` in the configuration removes the field; an object or list emptied by
//!   pruning is removed.
//! - JSON patch: negative array indices (an evanphx extension) are rejected; documents
//!   may not nest deeper than 128 levels (what `serde_json` reads back).

// The shared contract returns `ApiError` by value (it is the response body the server
// sends); boxing it only inside this module would buy nothing.
#![allow(clippy::result_large_err)]

mod apply;
mod errors;
mod fields;
mod gofmt;
mod hints;
mod identity;
mod json;
mod managed;
mod merge;
mod request;
mod schema;
mod strategic;
#[cfg(test)]
mod tests;

use serde_json::Value;

pub(crate) use hints::SchemaHints;

use crate::error::ApiError;
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
    /// A custom resource's server-side apply hints from its CRD's structural schema
    /// (`None`: built-in kinds, which use the table in [`schema`]).
    pub(crate) schema_hints: Option<&'a SchemaHints>,
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
    let schema = schema::TypeSchema::of(ctx.group, ctx.kind, ctx.schema_hints);
    request::check(kind, body, ctx, &schema)?;
    let Some(current) = current else {
        return match kind {
            PatchKind::Apply => apply::apply(None, body, ctx, &schema),
            _ => Err(ApiError::not_found(ctx.group, ctx.plural, ctx.name)),
        };
    };
    let mut patched = match kind {
        PatchKind::Apply => return apply::apply(Some(current), body, ctx, &schema),
        PatchKind::Json => identity::decode_patched(json::apply(current, body)?, ctx, &schema)?,
        PatchKind::Merge => identity::decode_patched(merge::apply(current, body)?, ctx, &schema)?,
        PatchKind::StrategicMerge => {
            let mut patched = strategic::apply(current, body, &schema)?;
            identity::set_type_meta(&mut patched, ctx);
            patched
        }
    };
    identity::check_name_and_namespace(&mut patched, ctx)?;
    managed::record_update(Some(current), &mut patched, ctx, &schema);
    Ok(patched)
}

/// Record a create (`current: None`) or update (PUT) of `updated` in its
/// `metadata.managedFields` as the server's field manager does for non-apply writes:
/// `ctx.field_manager` becomes (or stays) an `Update` manager owning the fields it added
/// or changed; other managers lose those and the removed fields. Nothing is recorded
/// without a field manager. For the store's create and update paths.
#[allow(dead_code)] // offered to the store; patches already record through apply_patch
pub(crate) fn record_update(current: Option<&Value>, updated: &mut Value, ctx: &PatchContext<'_>) {
    let schema = schema::TypeSchema::of(ctx.group, ctx.kind, ctx.schema_hints);
    managed::record_update(current, updated, ctx, &schema);
}
