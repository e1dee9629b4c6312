//! Removing the members of a field set from an object (structured-merge-diff
//! `RemoveItems`): a member field is deleted, a member list item dropped. An object or
//! list that the removal empties is deleted too (structured-merge-diff leaves `null`
//! there, which the typed decoder then drops).

use serde_json::{Map, Value};

use super::{FieldSet, PathElement, Walk, item_element};
use crate::patch::schema::{ListType, TypeSchema};

/// Remove `set`'s members from `object`.
pub(crate) fn remove(object: &mut Value, set: &FieldSet, schema: &TypeSchema<'_>) {
    if set.is_empty() {
        return;
    }
    let mut walk = Walk::new(schema);
    if let Value::Object(map) = object {
        remove_fields(&mut walk, map, set);
    }
}

fn remove_fields(walk: &mut Walk<'_>, map: &mut Map<String, Value>, set: &FieldSet) {
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        let element = PathElement::Field(key.clone());
        if set.contains(std::slice::from_ref(&element)) {
            map.shift_remove(&key);
            continue;
        }
        let below = set.child(&element);
        if below.is_empty() {
            continue;
        }
        let list = walk.list_type(&key);
        let emptied = walk.descend(&key, |walk| {
            map.get_mut(&key)
                .is_some_and(|child| remove_below(walk, child, list, &below))
        });
        if emptied {
            map.shift_remove(&key);
        }
    }
}

/// Remove `set` below `value`; true when that emptied a non-empty object or list.
fn remove_below(
    walk: &mut Walk<'_>,
    value: &mut Value,
    list: ListType<'_>,
    set: &FieldSet,
) -> bool {
    match value {
        Value::Object(map) => {
            let had_fields = !map.is_empty();
            remove_fields(walk, map, set);
            had_fields && map.is_empty()
        }
        Value::Array(items) if list != ListType::Atomic => {
            let had_items = !items.is_empty();
            items.retain_mut(|item| {
                let Ok(element) = item_element(item, list) else {
                    return true;
                };
                if set.contains(std::slice::from_ref(&element)) {
                    return false;
                }
                let below = set.child(&element);
                if let (false, Value::Object(fields)) = (below.is_empty(), item) {
                    walk.descend_item(|walk| remove_fields(walk, fields, &below));
                }
                true
            });
            had_items && items.is_empty()
        }
        _ => false,
    }
}
