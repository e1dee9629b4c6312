//! JSON merge patch (RFC 7386, `application/merge-patch+json`) as `evanphx/json-patch` v4
//! `MergePatch` does it for the server:
//!
//! - the body must be a JSON object, or an array: `null` and scalars are `400 Invalid JSON
//!   Patch`; an array replaces the whole document, which then fails to decode as an object
//!   (`422`, see [`super::identity`]);
//! - `null` deletes a key; objects merge recursively; anything else replaces;
//! - a value set where the document had nothing, `null` or a non-object has its `null`
//!   members pruned, also inside objects in arrays (RFC 7386 leaves those in arrays alone).
//!
//! The `json-patch` crate's `merge` follows the RFC to the letter, so it is not used here.

use serde_json::{Map, Value};

use super::errors;
use crate::error::ApiError;

/// Apply merge patch `body` to `current`.
pub(super) fn apply(current: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let patch: Value = serde_json::from_slice(body).map_err(|_| errors::invalid_json_body())?;
    match patch {
        Value::Object(patch) => {
            let mut doc = current.clone();
            match &mut doc {
                Value::Object(target) => merge_docs(target, patch),
                other => {
                    let mut fresh = Map::new();
                    merge_docs(&mut fresh, patch);
                    *other = Value::Object(fresh);
                }
            }
            Ok(doc)
        }
        Value::Array(mut items) => {
            prune_array_nulls(&mut items);
            Ok(Value::Array(items))
        }
        _ => Err(errors::bad_merge_patch()),
    }
}

fn merge_docs(doc: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (key, value) in patch {
        if value.is_null() {
            doc.shift_remove(&key);
            continue;
        }
        match doc.get_mut(&key) {
            Some(current) if !current.is_null() => merge_value(current, value),
            _ => {
                let mut value = value;
                prune_nulls(&mut value);
                doc.insert(key, value);
            }
        }
    }
}

fn merge_value(current: &mut Value, patch: Value) {
    match (current, patch) {
        (Value::Object(target), Value::Object(patch)) => merge_docs(target, patch),
        (current @ Value::Object(_), patch) => *current = patch,
        (current, mut patch) => {
            prune_nulls(&mut patch);
            *current = patch;
        }
    }
}

fn prune_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            for v in map.values_mut() {
                prune_nulls(v);
            }
        }
        Value::Array(items) => prune_array_nulls(items),
        _ => {}
    }
}

fn prune_array_nulls(items: &mut [Value]) {
    for item in items {
        prune_nulls(item);
    }
}
