//! The order of a merged list (`normalizeElementOrder`, `mergeSortedSlice`) and the
//! `$setElementOrder/<field>` directive (`mergePatchIntoOriginal`).

use serde_json::{Map, Value};

use super::{
    DIRECTIVE_MARKER, Merger, SET_ELEMENT_ORDER_PREFIX, SmpError, bad_arg, element_type,
    extract_key, go_eq, merge_key, no_merge_key, remove_directives,
};
use crate::patch::gofmt::{self, GoType};
use crate::patch::schema::SmpList;

/// The value an item is found by: its merge key's value, or itself for scalars.
fn lookup_value<'v>(item: &'v Value, key: Option<&str>) -> Option<&'v Value> {
    match key {
        Some(key) => item.as_object().and_then(|m| m.get(key)),
        None => Some(item),
    }
}

/// `index`: position of `item` in `list` by merge key (or value); a missing key matches
/// a missing key, as Go's `nil == nil`.
fn index_of(list: &[Value], item: &Value, key: Option<&str>) -> Result<Option<usize>, SmpError> {
    let wanted = lookup_value(item, key);
    for (position, candidate) in list.iter().enumerate() {
        let equal = match (wanted, lookup_value(candidate, key)) {
            (None, None) => true,
            (Some(a), Some(b)) => go_eq(a, b)?,
            _ => false,
        };
        if equal {
            return Ok(Some(position));
        }
    }
    Ok(None)
}

/// `findMapInSliceBasedOnKeyValue`: the item whose `key` equals `value`.
pub(super) fn find_by_key(
    list: &[Value],
    key: &str,
    value: &Value,
) -> Result<Option<usize>, SmpError> {
    for (position, item) in list.iter().enumerate() {
        let Value::Object(fields) = item else {
            return Err(bad_arg(GoType::Map, item));
        };
        if let Some(candidate) = fields.get(key)
            && go_eq(candidate, value)?
        {
            return Ok(Some(position));
        }
    }
    Ok(None)
}

/// Split `merged` into the items present in `by` and the others (`partition*ByPresentInList`).
pub(super) fn partition(
    merged: Vec<Value>,
    by: &[Value],
    key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut present = Vec::new();
    let mut others = Vec::new();
    for item in merged {
        let found = match key {
            Some(key) => {
                let Value::Object(fields) = &item else {
                    return Err(bad_arg(GoType::Map, &item));
                };
                let value = fields.get(key).ok_or_else(|| no_merge_key(fields, key))?;
                find_by_key(by, key, value)?.is_some()
            }
            None => {
                if matches!(item, Value::Object(_) | Value::Array(_)) {
                    return Err(SmpError::Uncomparable {
                        go_type: GoType::of(&item).name(),
                    });
                }
                index_of(by, &item, None)?.is_some()
            }
        };
        if found {
            present.push(item);
        } else {
            others.push(item);
        }
    }
    Ok((present, others))
}

/// Sort `items` stably by their position in `order` (items not in it go last).
fn sort_by_order(
    items: Vec<Value>,
    order: &[Value],
    key: Option<&str>,
) -> Result<Vec<Value>, SmpError> {
    let mut keyed = Vec::with_capacity(items.len());
    for item in items {
        let position = index_of(order, &item, key)?.unwrap_or(usize::MAX);
        keyed.push((position, item));
    }
    keyed.sort_by_key(|(position, _)| *position);
    Ok(keyed.into_iter().map(|(_, item)| item).collect())
}

/// `normalizeSliceOrder` for objects: every item and order entry needs the merge key;
/// `$patch: delete` items go last.
fn normalize_objects(
    items: Vec<Value>,
    order: &[Value],
    key: &str,
) -> Result<Vec<Value>, SmpError> {
    for item in items.iter().chain(order) {
        let Value::Object(fields) = item else {
            return Err(bad_arg(GoType::Map, item));
        };
        if !fields.contains_key(key) {
            return Err(no_merge_key(fields, key));
        }
    }
    let (deletes, keep): (Vec<Value>, Vec<Value>) = items
        .into_iter()
        .partition(|item| item.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some("delete"));
    let mut sorted = sort_by_order(keep, order, Some(key))?;
    sorted.extend(deletes);
    Ok(sorted)
}

/// `normalizeElementOrder`: patch items in `patch_order`, server-only items in
/// `server_order`, then interleaved by their live positions (`mergeSortedSlice`).
pub(super) fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
    kind: GoType,
) -> Result<Vec<Value>, SmpError> {
    let (patch_items, server_only) = match (kind, key) {
        (GoType::Map, Some(key)) => (
            normalize_objects(patch_items, patch_order, key)?,
            normalize_objects(server_only, server_order, key)?,
        ),
        _ => (
            sort_by_order(patch_items, patch_order, key)?,
            sort_by_order(server_only, server_order, key)?,
        ),
    };
    let lookup_key = if kind == GoType::Map { key } else { None };
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                let li = index_of(server_order, l, lookup_key)?;
                let ri = index_of(server_order, r, lookup_key)?;
                matches!((li, ri), (Some(li), Some(ri)) if li < ri)
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    Ok(out)
}

impl Merger<'_> {
    /// `mergePatchIntoOriginal`: merge each list named by a `$setElementOrder/<field>`
    /// and order it as the directive says.
    pub(super) fn merge_set_element_order(
        &mut self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
    ) -> Result<(), SmpError> {
        let directives: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX))
            .cloned()
            .collect();
        for directive in directives {
            let order = patch.shift_remove(&directive).unwrap_or(Value::Null);
            let Value::Array(order) = order else {
                return Err(bad_arg(GoType::Slice, &order));
            };
            let field = extract_key(&directive, SET_ELEMENT_ORDER_PREFIX)?;
            let original_list = list_at(original, &field)?;
            let patch_list = list_at(patch, &field)?;
            let strategy = self.list_strategy(&field);
            let key = merge_key(strategy);
            validate_order(patch_list.as_deref().unwrap_or_default(), &order, key)?;
            // The live list as the merge leaves it in the server's memory: deletions and
            // appends alias it (see `LiveList`), and it is what the order falls back on.
            let (merged, live_view) = match (original_list, &patch_list) {
                (Some(current), None) => (current.clone(), current),
                (None, Some(new)) => match remove_directives(Value::Array(new.clone())) {
                    Some(Value::Array(items)) => (items, Vec::new()),
                    _ => (Vec::new(), Vec::new()),
                },
                (Some(current), Some(new)) => {
                    if strategy == SmpList::Replace {
                        (new.clone(), current)
                    } else {
                        self.descend(&field, |m| {
                            m.merge_slice_viewed(current, new.clone(), key, false)
                        })?
                    }
                }
                (None, None) => continue,
            };
            let (in_order, server_only) = partition(merged, &order, key)?;
            let kind = element_type(&[&live_view, patch_list.as_deref().unwrap_or_default()])?;
            let ordered =
                normalize_element_order(in_order, server_only, &order, &live_view, key, kind)?;
            original.insert(field.clone(), Value::Array(ordered));
            patch.shift_remove(&field);
        }
        Ok(())
    }
}

/// The list at `field` (absent: `None`; not a list: the server's type error).
fn list_at(map: &Map<String, Value>, field: &str) -> Result<Option<Vec<Value>>, SmpError> {
    match map.get(field) {
        None => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items.clone())),
        Some(other) => Err(bad_arg(GoType::Slice, other)),
    }
}

/// `validatePatchWithSetOrderList`: the patch items must appear in the order list, in
/// its order (deletions aside).
fn validate_order(patch: &[Value], order: &[Value], key: Option<&str>) -> Result<(), SmpError> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let mut kept: Vec<&Value> = Vec::with_capacity(patch.len());
    for item in patch {
        if key.is_some() {
            let Value::Object(fields) = item else {
                return Err(bad_arg(GoType::Map, item));
            };
            if fields.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some("delete") {
                continue;
            }
        }
        kept.push(item);
    }
    let (mut pi, mut oi) = (0usize, 0usize);
    while let (Some(item), Some(entry)) = (kept.get(pi), order.get(oi)) {
        if item
            .as_object()
            .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
        {
            pi += 1;
            continue;
        }
        if key_values_equal(item, entry, key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < kept.len() && oi >= order.len() {
        return Err(SmpError::OrderMismatch {
            patch: gofmt::value(&Value::Array(patch.to_vec())),
            order: gofmt::value(&Value::Array(order.to_vec())),
        });
    }
    Ok(())
}

/// `mergeKeyValueEqual`.
fn key_values_equal(left: &Value, right: &Value, key: Option<&str>) -> Result<bool, SmpError> {
    let Some(key) = key else {
        return go_eq(left, right);
    };
    let Value::Object(left) = left else {
        return Err(bad_arg(GoType::Map, left));
    };
    let Value::Object(right) = right else {
        return Err(bad_arg(GoType::Map, right));
    };
    let l = left.get(key).ok_or_else(|| no_merge_key(left, key))?;
    let r = right.get(key).ok_or_else(|| no_merge_key(right, key))?;
    go_eq(l, r)
}
