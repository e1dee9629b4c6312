//! Strategic merge patch (`application/strategic-merge-patch+json`) of built-in kinds, a
//! port of `k8s.io/apimachinery/pkg/util/strategicpatch` `StrategicMergeMapPatch` (the
//! apply side, with the server's options: parallel lists merged, unmatched nulls
//! ignored), driven by the list table in [`super::schema`]:
//!
//! - objects merge recursively, `null` deletes a field;
//! - lists without a patch strategy are replaced; lists of scalars with `merge` are
//!   unioned; lists of objects with a merge key merge item by item by that key;
//! - directives: `$patch: replace` / `$patch: delete` in an object, `$patch: delete`
//!   (by merge key) and `$patch: replace` items in a merging list, `$retainKeys`,
//!   `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` (the order is honoured);
//! - the result's order follows the server's: patch items in patch order, interleaved
//!   with the live items (which keep their relative order), new items first; under
//!   `$setElementOrder` the live order is the list as the library's in-place deletions
//!   and appends left it (see `list::LiveList`), as upstream's test cases show.
//!
//! Errors carry the server's codes: malformed directive lists are `400`, nested lists
//! `422` (generic text), everything else the library reports (a missing merge key, an
//! unknown `$patch` value, mixed item types) `500` with its message.
//!
//! Afterwards the result is cleaned as decoding into the typed object cleans it: directive
//! keys and `null` fields left inside new values are dropped. Unknown fields are not
//! pruned (the real server drops them, with a warning).

mod list;
mod map;
mod order;

use serde_json::{Map, Value};

use super::errors;
use super::gofmt::{self, GoType};
use super::schema::{SmpList, TypeSchema};
use crate::error::ApiError;

const DIRECTIVE_MARKER: &str = "$patch";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

/// Why a strategic merge patch does not apply, with the library's messages.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SmpError {
    /// Bad `$deleteFromPrimitiveList/` key.
    #[error("invalid patch format of primitive list")]
    BadPrimitiveList,
    /// Bad `$retainKeys`.
    #[error("invalid patch format of retainKeys")]
    BadRetainKeys,
    /// Bad `$setElementOrder/` key.
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrder,
    /// A list of lists.
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// An item without the merge key.
    #[error("map: {map} does not contain declared merge key: {key}")]
    NoMergeKey {
        /// The item, Go-formatted.
        map: String,
        /// The merge key.
        key: String,
    },
    /// A value of the wrong type.
    #[error("expected a {expected}, but received a {actual}")]
    BadArgType {
        /// Expected Go type.
        expected: &'static str,
        /// Actual Go type.
        actual: &'static str,
    },
    /// `$patch` with an unknown value.
    #[error("unknown patch type: {directive} in map: {map}")]
    BadPatchType {
        /// The directive, as `%s` prints it.
        directive: String,
        /// The object, Go-formatted.
        map: String,
    },
    /// Items of different types in one list.
    #[error("list element types are not identical: {lists}")]
    MixedElements {
        /// The lists, Go-formatted.
        lists: String,
    },
    /// `$setElementOrder` with nothing to order.
    #[error("no elements in any of the given slices")]
    NoElements,
    /// A merging list of objects without a merge key.
    #[error("cannot merge lists without merge key for {field}")]
    NoMergeKeyForList {
        /// The field.
        field: String,
    },
    /// `$patch: merge` inside a list.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeInList,
    /// `$setElementOrder` that contradicts the patch list.
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    OrderMismatch {
        /// The patch list, Go-formatted.
        patch: String,
        /// The order list, Go-formatted.
        order: String,
    },
    /// Comparing two objects or lists by value (a Go runtime panic in the server).
    #[error("runtime error: comparing uncomparable type {go_type}")]
    Uncomparable {
        /// The Go type.
        go_type: &'static str,
    },
    /// A `null` item in a merging list (a nil dereference in the server).
    #[error("runtime error: invalid memory address or nil pointer dereference")]
    NullItem,
}

impl SmpError {
    /// The response the server sends for this error.
    pub(crate) fn to_api(&self) -> ApiError {
        match self {
            Self::BadPrimitiveList | Self::BadRetainKeys | Self::BadSetElementOrder => {
                ApiError::bad_request(self.to_string())
            }
            Self::ListOfLists => errors::rejected(),
            _ => errors::unknown(self.to_string()),
        }
    }
}

/// Apply strategic merge patch `body` to `current`.
pub(super) fn apply(
    current: &Value,
    body: &[u8],
    schema: &TypeSchema<'_>,
) -> Result<Value, ApiError> {
    let patch: Value = serde_json::from_slice(body).map_err(|_| errors::invalid_json_body())?;
    let patch = match patch {
        Value::Null => return Ok(current.clone()),
        Value::Object(map) => map,
        other => {
            return Err(errors::cannot_unmarshal(
                gofmt::json_kind(&other),
                "map[string]interface {}",
            ));
        }
    };
    let rendered_patch = gofmt::value(&Value::Object(patch.clone()));
    let original = current.as_object().cloned().unwrap_or_default();
    let mut merger = Merger::new(schema);
    let merged = merger.merge_map(original, patch).map_err(|e| e.to_api())?;
    if let Err(bad) = super::identity::metadata_shape(&merged) {
        let detail = format!(
            "json: cannot unmarshal {} into Go struct field .{} of type {}",
            gofmt::json_kind(bad.value),
            bad.field,
            bad.go_type
        );
        return Err(errors::invalid_patched_object(&rendered_patch, &detail));
    }
    let mut merged = Value::Object(merged);
    clean(&mut merged);
    Ok(merged)
}

/// Drop directive keys and `null` fields, as decoding into the typed object does.
fn clean(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|key, v| !(v.is_null() || is_directive_key(key)));
            for v in map.values_mut() {
                clean(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean),
        _ => {}
    }
}

fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS_DIRECTIVE
        || key.starts_with("$setElementOrder/")
        || key.starts_with("$deleteFromPrimitiveList/")
}

/// The merge state: the schema and the field names down to the current position.
#[derive(Debug)]
struct Merger<'a> {
    schema: &'a TypeSchema<'a>,
    names: Vec<String>,
}

impl<'a> Merger<'a> {
    fn new(schema: &'a TypeSchema<'a>) -> Self {
        Self {
            schema,
            names: Vec::new(),
        }
    }

    /// The patch strategy of list field `name` here.
    fn list_strategy(&self, name: &str) -> SmpList {
        let mut path = self.names.clone();
        path.push(name.to_owned());
        self.schema.smp_list(&path)
    }

    fn descend<T>(&mut self, name: &str, f: impl FnOnce(&mut Self) -> T) -> T {
        self.names.push(name.to_owned());
        let out = f(self);
        self.names.pop();
        out
    }

    fn field_name(&self) -> String {
        self.names.join(".")
    }
}

fn merge_key(strategy: SmpList) -> Option<&'static str> {
    match strategy {
        SmpList::MergeByKey(key) => Some(key),
        SmpList::Replace | SmpList::MergeScalars => None,
    }
}

/// Go `==` on two decoded values: different dynamic types are unequal, equal types
/// compare by value, objects and lists cannot be compared.
fn go_eq(a: &Value, b: &Value) -> Result<bool, SmpError> {
    let (ta, tb) = (GoType::of(a), GoType::of(b));
    if ta != tb {
        return Ok(false);
    }
    match ta {
        GoType::Map | GoType::Slice => Err(SmpError::Uncomparable { go_type: ta.name() }),
        _ => Ok(a == b),
    }
}

/// `removeDirectives`: drop objects carrying `$patch` (and such list items) from a new
/// value; `None` when the value itself is one.
fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE_MARKER) {
                return None;
            }
            let cleaned: Map<String, Value> = map
                .into_iter()
                .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                .collect();
            Some(Value::Object(cleaned))
        }
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// `discardNullValuesFromPatch`: drop `null` fields from objects, at any depth.
fn discard_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// `extractKey`: the field name after `<prefix>/`.
fn extract_key(key: &str, prefix: &str) -> Result<String, SmpError> {
    match key.split_once('/') {
        Some((head, rest)) if head == prefix => Ok(rest.to_owned()),
        _ if prefix == SET_ELEMENT_ORDER_PREFIX => Err(SmpError::BadSetElementOrder),
        _ => Err(SmpError::BadPrimitiveList),
    }
}

/// `sliceElementType`: the one Go type of all items of `lists`.
fn element_type(lists: &[&[Value]]) -> Result<GoType, SmpError> {
    let mut found: Option<GoType> = None;
    for item in lists.iter().flat_map(|l| l.iter()) {
        let current = GoType::of(item);
        match found {
            None => {
                match current {
                    GoType::Nil => return Err(SmpError::NullItem),
                    GoType::Slice => return Err(SmpError::ListOfLists),
                    _ => {}
                }
                found = Some(current);
            }
            Some(previous) if previous != current => {
                let rendered: Vec<String> = lists
                    .iter()
                    .map(|l| gofmt::value(&Value::Array(l.to_vec())))
                    .collect();
                return Err(SmpError::MixedElements {
                    lists: format!("[{}]", rendered.join(" ")),
                });
            }
            Some(_) => {}
        }
    }
    found.ok_or(SmpError::NoElements)
}

/// `%s` of a decoded value (`%!s(int64=1)` for non-strings).
fn go_s(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".to_owned(),
        Value::Object(_) | Value::Array(_) => gofmt::value(value),
        other => format!("%!s({}={})", GoType::of(other).name(), gofmt::value(other)),
    }
}

/// `ErrBadArgType` for a value that should have been of `expected` type.
fn bad_arg(expected: GoType, actual: &Value) -> SmpError {
    SmpError::BadArgType {
        expected: expected.name(),
        actual: GoType::of(actual).name(),
    }
}

/// `ErrNoMergeKey`.
fn no_merge_key(map: &Map<String, Value>, key: &str) -> SmpError {
    SmpError::NoMergeKey {
        map: gofmt::value(&Value::Object(map.clone())),
        key: key.to_owned(),
    }
}
