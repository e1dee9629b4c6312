//! Reading and writing `metadata` of JSON objects, and the values the server generates
//! (uids, timestamps, generated names).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The finalizer the garbage collector keeps on an owner deleted in the foreground.
pub(super) const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// The finalizer the garbage collector keeps on an owner whose dependents are orphaned.
pub(super) const ORPHAN_FINALIZER: &str = "orphan";

/// `metadata`, if the object has one.
pub(super) fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `metadata`, created when missing (a non-object `metadata` is replaced). `None` only
/// when `obj` itself is not an object.
pub(super) fn meta_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
}

/// A string field of `metadata`, `""` when absent.
pub(super) fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    meta(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Set (or with `Value::Null`, remove) a field of `metadata`.
pub(super) fn set_meta(obj: &mut Value, field: &str, value: Value) {
    if let Some(meta) = meta_mut(obj) {
        if value.is_null() {
            meta.remove(field);
        } else {
            meta.insert(field.to_owned(), value);
        }
    }
}

/// A field of `metadata` as it is (cloned), `Null` when absent.
pub(super) fn meta_value(obj: &Value, field: &str) -> Value {
    meta(obj)
        .and_then(|m| m.get(field))
        .cloned()
        .unwrap_or(Value::Null)
}

/// `metadata.resourceVersion` as a number (0 when absent or not a number).
pub(super) fn resource_version(obj: &Value) -> u64 {
    meta_str(obj, "resourceVersion").parse().unwrap_or(0)
}

pub(super) fn set_resource_version(obj: &mut Value, rv: u64) {
    set_meta(obj, "resourceVersion", Value::String(rv.to_string()));
}

/// `metadata.finalizers`.
pub(super) fn finalizers(obj: &Value) -> Vec<String> {
    string_list(meta(obj).and_then(|m| m.get("finalizers")))
}

pub(super) fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    let value = if finalizers.is_empty() {
        Value::Null
    } else {
        Value::from(finalizers.to_vec())
    };
    set_meta(obj, "finalizers", value);
}

/// A JSON list of strings (other entries skipped).
pub(super) fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.labels` (non-string values skipped).
pub(super) fn labels(obj: &Value) -> BTreeMap<String, String> {
    meta(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.ownerReferences` entries.
pub(super) fn owner_refs(obj: &Value) -> Vec<Value> {
    meta(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The uids of `metadata.ownerReferences`.
pub(super) fn owner_uids(obj: &Value) -> Vec<String> {
    owner_refs(obj)
        .iter()
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// Whether `metadata.deletionTimestamp` is set.
pub(super) fn is_deleting(obj: &Value) -> bool {
    meta(obj).is_some_and(|m| m.get("deletionTimestamp").is_some_and(|v| !v.is_null()))
}

/// Now as the server writes timestamps: RFC 3339, seconds, UTC.
pub(super) fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A new object uid (UUID v4).
pub(super) fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The alphabet of generated name suffixes: no vowels, no confusable characters.
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Length of the random suffix of a generated name.
const NAME_SUFFIX_LEN: usize = 5;
/// Longest base kept from `generateName` (63 minus the suffix).
const MAX_GENERATED_BASE: usize = 58;

/// `generateName` + 5 random characters, as the server's name generator.
pub(super) fn generate_name(base: &str) -> String {
    let mut base = base.to_owned();
    if base.len() > MAX_GENERATED_BASE {
        let mut cut = MAX_GENERATED_BASE;
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        base.truncate(cut);
    }
    let random = uuid::Uuid::new_v4();
    for byte in random.as_bytes().iter().take(NAME_SUFFIX_LEN) {
        let index = usize::from(*byte) % NAME_ALPHABET.len();
        if let Some(ch) = NAME_ALPHABET.get(index) {
            base.push(char::from(*ch));
        }
    }
    base
}

/// The object without `metadata` (and without `status` when `skip_status`), to compare the
/// parts whose change bumps `metadata.generation`.
pub(super) fn spec_part(obj: &Value, skip_status: bool) -> Map<String, Value> {
    obj.as_object()
        .map(|map| {
            map.iter()
                .filter(|(k, _)| *k != "metadata" && !(skip_status && *k == "status"))
                .filter(|(k, _)| *k != "apiVersion" && *k != "kind")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_use_the_server_alphabet() {
        let name = generate_name("web-");
        assert_eq!(name.len(), 9);
        assert!(name.starts_with("web-"));
        assert!(name[4..].bytes().all(|b| NAME_ALPHABET.contains(&b)));
        assert_eq!(generate_name(&"a".repeat(80)).len(), 63);
    }

    #[test]
    fn timestamps_are_rfc3339_seconds() {
        let now = now();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z'));
    }
}
