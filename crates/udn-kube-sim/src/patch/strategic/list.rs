//! Merging a patch list into a list (`mergeSlice`): scalars are unioned (or, from a
//! `$deleteFromPrimitiveList`, removed); objects merge by the merge key, with
//! `$patch: delete` and `$patch: replace` items.

use serde_json::{Map, Value};

use super::order::{find_by_key, normalize_element_order, partition};
use super::{DIRECTIVE_MARKER, Merger, SmpError, element_type, go_eq, no_merge_key};
use crate::patch::gofmt::GoType;

/// A merging list as the server's Go code edits it in place. Deletions shift items left
/// inside the caller's slice and later appends fill the freed slots, so the caller's view
/// of the live list (which `$setElementOrder` then orders by) changes with them.
#[derive(Debug)]
struct LiveList {
    /// The list being merged.
    items: Vec<Value>,
    /// The caller's view: the original length, edited in place.
    view: Vec<Value>,
}

impl LiveList {
    fn new(items: Vec<Value>) -> Self {
        Self {
            view: items.clone(),
            items,
        }
    }

    /// `append(s[:i], s[i+1:]...)`: shift left; the view keeps its stale last slot.
    fn delete(&mut self, index: usize) {
        let len = self.items.len();
        if index >= len {
            return;
        }
        self.items.remove(index);
        for i in index..len.saturating_sub(1) {
            if let Some(next) = self.view.get(i + 1).cloned()
                && let Some(slot) = self.view.get_mut(i)
            {
                *slot = next;
            }
        }
    }

    fn set(&mut self, index: usize, value: Value) {
        if let Some(slot) = self.view.get_mut(index) {
            slot.clone_from(&value);
        }
        if let Some(slot) = self.items.get_mut(index) {
            *slot = value;
        }
    }

    fn push(&mut self, value: Value) {
        if let Some(slot) = self.view.get_mut(self.items.len()) {
            slot.clone_from(&value);
        }
        self.items.push(value);
    }
}

impl Merger<'_> {
    /// `mergeSlice(original, patch, mergeKey, isDeleteList)`.
    pub(super) fn merge_slice(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
        merge_key: Option<&str>,
        delete_list: bool,
    ) -> Result<Vec<Value>, SmpError> {
        self.merge_slice_viewed(original, patch, merge_key, delete_list)
            .map(|(merged, _)| merged)
    }

    /// [`Self::merge_slice`], also returning the caller's view of `original` afterwards
    /// (see [`LiveList`]).
    pub(super) fn merge_slice_viewed(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
        merge_key: Option<&str>,
        delete_list: bool,
    ) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
        if original.is_empty() && patch.is_empty() {
            return Ok((Vec::new(), original));
        }
        let kind = element_type(&[&original, &patch])?;
        if kind != GoType::Map {
            if delete_list {
                return Ok((delete_scalars(original.clone(), &patch)?, original));
            }
            let mut merged = original.clone();
            merged.extend(patch.iter().cloned());
            let merged = dedup_scalars(merged)?;
            let (patch_items, server_only) = partition(merged, &patch, None)?;
            let ordered =
                normalize_element_order(patch_items, server_only, &patch, &original, None, kind)?;
            return Ok((ordered, original));
        }
        let key = merge_key.ok_or_else(|| SmpError::NoMergeKeyForList {
            field: self.field_name(),
        })?;
        let mut live = LiveList::new(original);
        let (patch, replacement) = special_elements(&mut live, patch, key)?;
        let (merged, server_order) = match replacement {
            Some(items) => (items.clone(), items),
            None => {
                let server_order = live.items.clone();
                self.merge_by_key(&mut live, &patch, key)?;
                (live.items, server_order)
            }
        };
        let (patch_items, server_only) = partition(merged, &patch, Some(key))?;
        let ordered = normalize_element_order(
            patch_items,
            server_only,
            &patch,
            &server_order,
            Some(key),
            kind,
        )?;
        Ok((ordered, live.view))
    }

    /// `mergeSliceWithoutSpecialElements`: merge each patch item into the live item with
    /// the same key, or append it.
    fn merge_by_key(
        &mut self,
        live: &mut LiveList,
        patch: &[Value],
        key: &str,
    ) -> Result<(), SmpError> {
        for item in patch {
            let Value::Object(fields) = item else {
                return Err(super::bad_arg(GoType::Map, item));
            };
            let value = fields.get(key).ok_or_else(|| no_merge_key(fields, key))?;
            match find_by_key(&live.items, key, value)? {
                Some(index) => {
                    let current = match live.items.get_mut(index).map(Value::take) {
                        Some(Value::Object(map)) => map,
                        _ => Map::new(),
                    };
                    let merged = self.merge_map(current, fields.clone())?;
                    live.set(index, Value::Object(merged));
                }
                None => live.push(item.clone()),
            }
        }
        Ok(())
    }
}

/// `mergeSliceWithSpecialElements`: apply `$patch: delete` items (by key) to the live
/// list; a `$patch: replace` item makes the other patch items the whole list (returned as
/// the replacement, with nothing left to merge).
fn special_elements(
    live: &mut LiveList,
    patch: Vec<Value>,
    key: &str,
) -> Result<(Vec<Value>, Option<Vec<Value>>), SmpError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Value::Object(fields) = &item else {
            return Err(super::bad_arg(GoType::Map, &item));
        };
        let Some(directive) = fields.get(DIRECTIVE_MARKER) else {
            plain.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let value = fields.get(key).ok_or_else(|| no_merge_key(fields, key))?;
                while let Some(index) = matching(&live.items, key, value)? {
                    live.delete(index);
                }
            }
            Some("replace") => replace = true,
            Some("merge") => return Err(SmpError::MergeInList),
            _ => {
                return Err(SmpError::BadPatchType {
                    directive: super::go_s(directive),
                    map: super::gofmt::value(&item),
                });
            }
        }
    }
    if replace {
        Ok((Vec::new(), Some(plain)))
    } else {
        Ok((plain, None))
    }
}

/// The first item whose merge key equals `value` (items without the key, or that are not
/// objects, never match).
fn matching(items: &[Value], key: &str, value: &Value) -> Result<Option<usize>, SmpError> {
    for (index, item) in items.iter().enumerate() {
        if let Some(v) = item.as_object().and_then(|m| m.get(key))
            && go_eq(v, value)?
        {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// `deleteFromSlice`: the original without the listed scalars.
fn delete_scalars(original: Vec<Value>, delete: &[Value]) -> Result<Vec<Value>, SmpError> {
    let mut kept = Vec::with_capacity(original.len());
    for item in original {
        let mut listed = false;
        for d in delete {
            if go_eq(d, &item)? {
                listed = true;
                break;
            }
        }
        if !listed {
            kept.push(item);
        }
    }
    Ok(kept)
}

/// Unique scalars, first occurrence first (the order is normalized afterwards).
fn dedup_scalars(items: Vec<Value>) -> Result<Vec<Value>, SmpError> {
    let mut out: Vec<Value> = Vec::with_capacity(items.len());
    for item in items {
        let mut seen = false;
        for kept in &out {
            if go_eq(kept, &item)? {
                seen = true;
                break;
            }
        }
        if !seen {
            out.push(item);
        }
    }
    Ok(out)
}
