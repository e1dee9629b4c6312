//! JSON patch (RFC 6902, `application/json-patch+json`), applied with the `json-patch`
//! crate one operation at a time, with the server's limits:
//!
//! - the body must decode as `jsonpatch.Patch`: a JSON array of objects (or `null`, which
//!   patches nothing); otherwise `400` with the `encoding/json` message;
//! - at most 10000 operations (`413`);
//! - an operation that does not apply (failed `test`, missing path, bad index, unknown
//!   `op`, missing `value`) is `422 Invalid` with the generic text the server sends (the
//!   underlying reason is only logged at debug level);
//! - `copy` operations may add at most 3 MiB in total (the server's
//!   `JSONPatchMaxCopyBytes`), and the document may not nest deeper than
//!   [`MAX_DEPTH`] (`serde_json`'s own parse limit, so every stored object can be read
//!   back by clients).
//!
//! `test` is evanphx's: a missing (or `null`) member passes a test for `null` or for no
//! value at all (which is how kube-runtime's finalizer helper tests for "no finalizers"),
//! and numbers compare by value (`1` equals `1.0`). Negative array indices, an extension
//! the server enables, are rejected here.

use json_patch::PatchOperation;
use serde_json::Value;

use super::errors;
use crate::error::ApiError;

/// The server's `maxJSONPatchOperations`.
const MAX_OPERATIONS: usize = 10_000;
/// The server's default `JSONPatchMaxCopyBytes`.
const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;
/// Deepest nesting a patched document may reach.
pub(super) const MAX_DEPTH: usize = 128;

/// Apply JSON patch `body` to `current`.
pub(super) fn apply(current: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let operations = decode(body)?;
    if operations.len() > MAX_OPERATIONS {
        return Err(errors::too_many_operations(
            MAX_OPERATIONS,
            operations.len(),
        ));
    }
    let mut doc = current.clone();
    let mut copied = 0usize;
    for (index, raw) in operations.into_iter().enumerate() {
        if raw.get("op").and_then(Value::as_str) == Some("test") {
            if !test(&doc, &raw) {
                tracing::debug!(index, "json patch test operation failed");
                return Err(errors::rejected());
            }
            continue;
        }
        let operation: PatchOperation = serde_json::from_value(raw).map_err(|error| {
            tracing::debug!(index, %error, "json patch operation does not decode");
            errors::rejected()
        })?;
        let added_depth = depth_added(&doc, &operation, &mut copied)?;
        if added_depth > MAX_DEPTH {
            tracing::debug!(index, added_depth, "json patch nests too deep");
            return Err(errors::rejected());
        }
        json_patch::patch(&mut doc, std::slice::from_ref(&operation)).map_err(|error| {
            tracing::debug!(index, %error, "json patch operation does not apply");
            errors::rejected()
        })?;
    }
    Ok(doc)
}

/// The body as a list of raw operations.
fn decode(body: &[u8]) -> Result<Vec<Value>, ApiError> {
    let patch: Value = serde_json::from_slice(body).map_err(|_| errors::invalid_json_body())?;
    let items = match patch {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(errors::cannot_unmarshal(
                super::gofmt::json_kind(&other),
                "jsonpatch.Patch",
            ));
        }
    };
    if let Some(bad) = items.iter().find(|i| !(i.is_object() || i.is_null())) {
        return Err(errors::cannot_unmarshal(
            super::gofmt::json_kind(bad),
            "jsonpatch.Operation",
        ));
    }
    Ok(items)
}

/// How deep the document nests where `operation` writes, once it is applied; counts
/// the bytes a `copy` duplicates against the copy limit.
fn depth_added(
    doc: &Value,
    operation: &PatchOperation,
    copied: &mut usize,
) -> Result<usize, ApiError> {
    let target = operation.path().as_str().matches('/').count();
    let written = match operation {
        PatchOperation::Add(op) => depth(&op.value),
        PatchOperation::Replace(op) => depth(&op.value),
        PatchOperation::Copy(op) => {
            let source = doc.pointer(op.from.as_str());
            let size = source
                .and_then(|v| serde_json::to_vec(v).ok())
                .map_or(0, |bytes| bytes.len());
            *copied = copied.saturating_add(size);
            if *copied > MAX_COPY_BYTES {
                tracing::debug!(copied = *copied, "json patch copies too much");
                return Err(errors::rejected());
            }
            source.map_or(0, depth)
        }
        PatchOperation::Move(op) => doc.pointer(op.from.as_str()).map_or(0, depth),
        PatchOperation::Remove(_) | PatchOperation::Test(_) => 0,
    };
    Ok(target.saturating_add(written))
}

/// Nesting depth of a value (a scalar is 0), without recursion.
pub(super) fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        deepest = deepest.max(level);
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, level + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, level + 1))),
            _ => {}
        }
    }
    deepest
}

/// evanphx's `test`: the value at `path` equals `value`, where a missing or `null` member
/// equals a `null` or absent `value`; the parent must exist.
fn test(doc: &Value, op: &Value) -> bool {
    let Some(path) = op.get("path").and_then(Value::as_str) else {
        return false;
    };
    let expected = op.get("value").filter(|v| !v.is_null());
    if path.is_empty() {
        return expected.is_some_and(|e| json_equal(doc, e));
    }
    let Some((parent, key)) = path.rsplit_once('/') else {
        return false;
    };
    let key = key.replace("~1", "/").replace("~0", "~");
    let found = match doc.pointer(parent) {
        Some(Value::Object(map)) => map.get(&key).filter(|v| !v.is_null()),
        Some(Value::Array(items)) => match key.parse::<usize>() {
            Ok(position) if position < items.len() => items.get(position),
            _ => return false,
        },
        _ => return false,
    };
    match (found, expected) {
        (None, None) => true,
        (Some(found), Some(expected)) => json_equal(found, expected),
        _ => false,
    }
}

/// Deep equality with numbers compared by value, as Go compares decoded `float64`s.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}
