//! The errors the real server's patch handler returns, built as [`ApiError`]s. Messages are
//! those of `k8s.io/apiserver` `handlers/patch.go`, `k8s.io/apimachinery` (`api/errors`,
//! `managedfields`, `strategicpatch`) and `evanphx/json-patch`.

use crate::error::{ApiError, StatusCause};

use super::gofmt;

/// The media types a custom resource accepts in a PATCH (no strategic merge patch).
const CUSTOM_RESOURCE_PATCH_TYPES: &str =
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

fn status(code: u16, reason: &'static str, message: String) -> ApiError {
    ApiError {
        code,
        reason,
        message,
        name: None,
        group: None,
        kind: None,
        causes: Vec::new(),
    }
}

/// 400 for a body that is not JSON (JSON, merge and strategic merge patches).
pub(crate) fn invalid_json_body() -> ApiError {
    ApiError::bad_request("invalid JSON patch")
}

/// 400 `Invalid JSON Patch`: a merge patch that is `null` or a scalar.
pub(crate) fn bad_merge_patch() -> ApiError {
    ApiError::bad_request("Invalid JSON Patch")
}

/// 400 from decoding a body into a Go type (`json: cannot unmarshal <kind> into Go value
/// of type <type>`).
pub(crate) fn cannot_unmarshal(kind: &str, go_type: &str) -> ApiError {
    ApiError::bad_request(unmarshal_message(kind, go_type))
}

/// The `encoding/json` type error text.
pub(crate) fn unmarshal_message(kind: &str, go_type: &str) -> String {
    format!("json: cannot unmarshal {kind} into Go value of type {go_type}")
}

/// 422 with the generic text: what the server answers when a JSON patch does not apply
/// (failed `test`, missing path, bad index, unknown op) or a strategic merge patch nests
/// lists. The server builds it with `NewGenericServerResponse(422, ...)`, which drops the
/// underlying error text.
pub(crate) fn rejected() -> ApiError {
    status(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request".to_owned(),
    )
}

/// 413 for a JSON patch with more than 10000 operations.
pub(crate) fn too_many_operations(max: usize, got: usize) -> ApiError {
    status(
        413,
        "RequestEntityTooLarge",
        format!(
            "Request entity too large: The allowed maximum operations in a JSON patch is {max}, got {got}"
        ),
    )
}

/// 422 when the patched document does not decode as an object of the kind:
/// ` "" is invalid: patch: Invalid value: "<json>": <detail>`.
pub(crate) fn invalid_patched_object(patched_json: &str, detail: &str) -> ApiError {
    let body = format!("Invalid value: {}: {detail}", gofmt::quote(patched_json));
    ApiError::invalid(
        "",
        "",
        "",
        format!(" \"\" is invalid: patch: {body}"),
        vec![StatusCause {
            reason: "FieldValueInvalid".to_owned(),
            message: body,
            field: "patch".to_owned(),
        }],
    )
}

/// 415 for a strategic merge patch of a custom resource.
pub(crate) fn strategic_merge_unsupported() -> ApiError {
    status(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {CUSTOM_RESOURCE_PATCH_TYPES}"
        ),
    )
}

/// An error that is not a `metav1.Status` inside the server: 500 with reason Unknown
/// (the server sends no reason) and the error text.
pub(crate) fn unknown(message: impl Into<String>) -> ApiError {
    status(500, "", message.into())
}

/// One field of a server-side apply conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// The other manager, as the server prints it (`"kubectl" using v1`).
    pub(crate) manager: String,
    /// Sort key of the manager (its JSON identifier).
    pub(crate) manager_id: String,
    /// The field path (`.spec.replicas`).
    pub(crate) path: String,
}

/// 409 for server-side apply conflicts, with one `FieldManagerConflict` cause each.
/// `conflicts` must be sorted by manager identifier, then path.
pub(crate) fn apply_conflict(conflicts: &[Conflict]) -> ApiError {
    let message = match conflicts {
        [only] => format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager, only.path
        ),
        _ => {
            let mut lines: Vec<String> = Vec::new();
            let mut previous: Option<&str> = None;
            for conflict in conflicts {
                if previous != Some(conflict.manager_id.as_str()) {
                    lines.push(format!("conflicts with {}:", conflict.manager));
                    previous = Some(conflict.manager_id.as_str());
                }
                lines.push(format!("- {}", conflict.path));
            }
            format!(
                "Apply failed with {} conflicts: {}",
                conflicts.len(),
                lines.join("\n")
            )
        }
    };
    let mut error = status(409, "Conflict", message);
    error.causes = conflicts
        .iter()
        .map(|c| StatusCause {
            reason: "FieldManagerConflict".to_owned(),
            message: format!("conflict with {}", c.manager),
            field: c.path.clone(),
        })
        .collect();
    error
}

/// One invalid `PatchOptions` field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OptionError {
    /// `FieldValueRequired`, ...
    pub(crate) reason: &'static str,
    /// `fieldManager` or `force`.
    pub(crate) field: &'static str,
    /// The error body (`Required value: is required for apply patch`).
    pub(crate) body: String,
}

/// 422 `PatchOptions.meta.k8s.io "" is invalid: ...`.
pub(crate) fn invalid_patch_options(errors: &[OptionError]) -> ApiError {
    let rendered: Vec<String> = errors
        .iter()
        .map(|e| format!("{}: {}", e.field, e.body))
        .collect();
    let aggregate = match rendered.as_slice() {
        [only] => only.clone(),
        _ => format!("[{}]", rendered.join(", ")),
    };
    ApiError::invalid(
        "meta.k8s.io",
        "PatchOptions",
        "",
        format!("PatchOptions.meta.k8s.io \"\" is invalid: {aggregate}"),
        errors
            .iter()
            .map(|e| StatusCause {
                reason: e.reason.to_owned(),
                message: e.body.clone(),
                field: e.field.to_owned(),
            })
            .collect(),
    )
}
