//! Merging a patch object into an object (`mergeMap`), with the object-level directives
//! (`$patch`, `$retainKeys`) and parallel deletion lists.

use serde_json::{Map, Value};

use super::{
    DELETE_FROM_PRIMITIVE_LIST_PREFIX, DIRECTIVE_MARKER, Merger, RETAIN_KEYS_DIRECTIVE,
    SET_ELEMENT_ORDER_PREFIX, SmpError, discard_nulls, extract_key, merge_key, remove_directives,
};
use crate::patch::gofmt::{self, GoType};
use crate::patch::schema::SmpList;

impl Merger<'_> {
    /// `mergeMap(original, patch)`.
    pub(super) fn merge_map(
        &mut self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
    ) -> Result<Map<String, Value>, SmpError> {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
            return directive_in_map(directive.clone(), patch);
        }
        apply_retain_keys(&mut original, &mut patch)?;
        self.merge_set_element_order(&mut original, &mut patch)?;
        for (key, patch_value) in patch {
            let (key, delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
                (extract_key(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?, true)
            } else {
                (key, false)
            };
            if patch_value.is_null() {
                original.shift_remove(&key);
                continue;
            }
            let same_type = original
                .get(&key)
                .map(|current| GoType::of(current) == GoType::of(&patch_value));
            if same_type != Some(true) {
                if !delete_list {
                    set_new(&mut original, key, patch_value);
                }
                continue;
            }
            let current = original
                .get_mut(&key)
                .map(Value::take)
                .unwrap_or(Value::Null);
            let merged = match (current, patch_value) {
                (Value::Object(current), Value::Object(patch)) => {
                    Value::Object(self.descend(&key, |m| m.merge_map(current, patch))?)
                }
                (Value::Array(current), Value::Array(patch)) => {
                    let strategy = self.list_strategy(&key);
                    if delete_list || strategy != SmpList::Replace {
                        let list_key = merge_key(strategy);
                        Value::Array(self.descend(&key, |m| {
                            m.merge_slice(current, patch, list_key, delete_list)
                        })?)
                    } else {
                        Value::Array(patch)
                    }
                }
                (_, scalar) => match remove_directives(scalar) {
                    Some(value) => value,
                    None => {
                        original.shift_remove(&key);
                        continue;
                    }
                },
            };
            original.insert(key, merged);
        }
        Ok(original)
    }
}

/// A value for a key the original lacks (or holds with another type): the patch value
/// without nulls and directives.
fn set_new(original: &mut Map<String, Value>, key: String, mut value: Value) {
    discard_nulls(&mut value);
    match remove_directives(value) {
        Some(value) => {
            original.insert(key, value);
        }
        None => {
            original.shift_remove(&key);
        }
    }
}

/// `$patch` in an object: `replace` keeps only the patch, `delete` empties it.
fn directive_in_map(
    directive: Value,
    mut patch: Map<String, Value>,
) -> Result<Map<String, Value>, SmpError> {
    match directive.as_str() {
        Some("replace") => {
            patch.shift_remove(DIRECTIVE_MARKER);
            Ok(patch)
        }
        Some("delete") => Ok(Map::new()),
        _ => Err(SmpError::BadPatchType {
            directive: super::go_s(&directive),
            map: gofmt::value(&Value::Object(patch)),
        }),
    }
}

/// `$retainKeys`: every patch field must be listed; original fields not listed go.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), SmpError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(SmpError::BadRetainKeys);
    };
    if let Some(bad) = retain.iter().find(|v| v.is_object() || v.is_array()) {
        return Err(SmpError::Uncomparable {
            go_type: GoType::of(bad).name(),
        });
    }
    let listed = |key: &str| retain.iter().any(|v| v.as_str() == Some(key));
    for (key, value) in patch.iter() {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || key.starts_with(SET_ELEMENT_ORDER_PREFIX)
        {
            continue;
        }
        if !listed(key) {
            return Err(SmpError::BadRetainKeys);
        }
    }
    original.retain(|key, _| listed(key));
    Ok(())
}
