//! (Skeleton: being implemented.)
use serde_json::Value;

use super::PatchContext;
use crate::error::ApiError;
use crate::options::PatchKind;

pub(super) fn apply(
    current: Option<&Value>,
    kind: PatchKind,
    body: &[u8],
    ctx: &PatchContext<'_>,
) -> Result<Value, ApiError> {
    let _ = (current, kind, body, ctx);
    Err(ApiError::internal("not implemented yet"))
}
