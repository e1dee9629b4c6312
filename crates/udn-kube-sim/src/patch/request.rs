//! Checks the server makes on a PATCH request before it reads the object, in its order:
//! the content type against the resource (`415` for a strategic merge patch of a custom
//! resource), `PatchOptions` (`ValidatePatchOptions`), then the body's syntax.

use super::PatchContext;
use super::errors::{self, OptionError};
use super::gofmt;
use super::schema::TypeSchema;
use crate::error::ApiError;
use crate::options::PatchKind;

/// `metav1validation.FieldManagerMaxLength`.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// Everything that fails before the object is looked at.
pub(super) fn check(
    kind: PatchKind,
    body: &[u8],
    ctx: &PatchContext<'_>,
    schema: &TypeSchema<'_>,
) -> Result<(), ApiError> {
    if kind == PatchKind::StrategicMerge && !schema.builtin() {
        return Err(errors::strategic_merge_unsupported());
    }
    let problems = option_errors(kind, ctx);
    if !problems.is_empty() {
        return Err(errors::invalid_patch_options(&problems));
    }
    if kind != PatchKind::Apply && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() {
        return Err(errors::invalid_json_body());
    }
    Ok(())
}

fn option_errors(kind: PatchKind, ctx: &PatchContext<'_>) -> Vec<OptionError> {
    let manager = ctx.field_manager.unwrap_or("");
    let mut problems = Vec::new();
    match kind {
        PatchKind::Apply if manager.is_empty() => problems.push(OptionError {
            reason: "FieldValueRequired",
            field: "fieldManager",
            body: "Required value: is required for apply patch".to_owned(),
        }),
        PatchKind::Apply => {}
        _ if ctx.force => problems.push(OptionError {
            reason: "FieldValueForbidden",
            field: "force",
            body: "Forbidden: may not be specified for non-apply patch".to_owned(),
        }),
        _ => {}
    }
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        problems.push(OptionError {
            reason: "FieldValueTooLong",
            field: "fieldManager",
            body: format!("Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"),
        });
    }
    for (position, c) in manager.char_indices() {
        if !gofmt::is_print(c) {
            problems.push(OptionError {
                reason: "FieldValueInvalid",
                field: "fieldManager",
                body: format!(
                    "Invalid value: {}: invalid character U+{:04X} (at position {position})",
                    gofmt::quote(manager),
                    c as u32
                ),
            });
        }
    }
    problems
}
