//! Which fields an update added, modified or removed (structured-merge-diff `Compare`).
//!
//! Scalars and atomic lists are leaves; objects and granular lists are walked, and an
//! object or list item that appears (or disappears) is itself added (or removed), which
//! is where the `.` entries of `Update` managers come from. An object and a list that are
//! both empty or `null` on both sides are compared as leaves.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{FieldSet, Path, PathElement, Walk, item_element};
use crate::patch::schema::{ListType, TypeSchema};

/// The difference between two versions of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Comparison {
    /// Fields present only in the new version.
    pub(crate) added: FieldSet,
    /// Leaf fields whose value changed.
    pub(crate) modified: FieldSet,
    /// Fields present only in the old version.
    pub(crate) removed: FieldSet,
}

impl Comparison {
    /// Added and modified fields: what the writer now owns.
    pub(crate) fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }

    /// Drop the fields `keep` rejects from all three sets.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Path) -> bool) {
        self.added.retain(&mut keep);
        self.modified.retain(&mut keep);
        self.removed.retain(&mut keep);
    }
}

/// Compare two objects.
pub(crate) fn compare(old: &Value, new: &Value, schema: &TypeSchema<'_>) -> Comparison {
    let mut out = Comparison::default();
    let mut walk = Walk::new(schema);
    let mut path = Path::new();
    let empty = Map::new();
    let old = old.as_object().unwrap_or(&empty);
    let new = new.as_object().unwrap_or(&empty);
    compare_fields(&mut walk, old, new, &mut path, &mut out);
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Object,
    List,
    Leaf,
}

fn shape(value: &Value) -> Shape {
    match value {
        Value::Object(_) => Shape::Object,
        Value::Array(_) => Shape::List,
        _ => Shape::Leaf,
    }
}

fn compare_fields(
    walk: &mut Walk<'_>,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &mut Path,
    out: &mut Comparison,
) {
    let keys = old
        .keys()
        .chain(new.keys().filter(|k| !old.contains_key(*k)));
    for key in keys {
        let list = walk.list_type(key);
        path.push(PathElement::Field(key.clone()));
        walk.descend(key, |walk| {
            compare_value(walk, old.get(key), new.get(key), list, path, out);
        });
        path.pop();
    }
}

fn compare_value(
    walk: &mut Walk<'_>,
    old: Option<&Value>,
    new: Option<&Value>,
    list: ListType<'_>,
    path: &mut Path,
    out: &mut Comparison,
) {
    let old_shape = old.filter(|v| !v.is_null()).map(shape);
    let new_shape = new.filter(|v| !v.is_null()).map(shape);
    let atomic_map = walk.atomic_map();
    let node = match (old_shape, new_shape) {
        (Some(a), Some(b)) if a != b => {
            if let Some(old) = old.filter(|v| !(atomic_map && v.is_object())) {
                compare_children(walk, Some(old), None, list, path, out);
            }
            if let Some(new) = new.filter(|v| !(atomic_map && v.is_object())) {
                compare_children(walk, None, Some(new), list, path, out);
            }
            out.modified.insert(path.clone());
            return;
        }
        (Some(s), _) | (None, Some(s)) => s,
        (None, None) => Shape::Leaf,
    };
    let granular = match node {
        Shape::Object => !atomic_map,
        Shape::List => list != ListType::Atomic,
        Shape::Leaf => false,
    };
    if !granular || (is_empty(old) && is_empty(new)) {
        leaf(old, new, path, out);
        return;
    }
    compare_children(walk, old, new, list, path, out);
    if old.is_none() {
        out.added.insert(path.clone());
    } else if new.is_none() {
        out.removed.insert(path.clone());
    }
}

fn compare_children(
    walk: &mut Walk<'_>,
    old: Option<&Value>,
    new: Option<&Value>,
    list: ListType<'_>,
    path: &mut Path,
    out: &mut Comparison,
) {
    let empty_map = Map::new();
    match (old, new) {
        (Some(Value::Object(_)), _) | (_, Some(Value::Object(_))) => {
            let old = old.and_then(Value::as_object).unwrap_or(&empty_map);
            let new = new.and_then(Value::as_object).unwrap_or(&empty_map);
            compare_fields(walk, old, new, path, out);
        }
        (Some(Value::Array(_)), _) | (_, Some(Value::Array(_))) if list != ListType::Atomic => {
            let old = index_items(old, list);
            let new = index_items(new, list);
            let mut elements: Vec<&PathElement> = old.keys().collect();
            elements.extend(new.keys().filter(|e| !old.contains_key(*e)));
            for element in elements {
                path.push(element.clone());
                walk.descend_item(|walk| {
                    compare_value(
                        walk,
                        old.get(element).copied(),
                        new.get(element).copied(),
                        ListType::Atomic,
                        path,
                        out,
                    );
                });
                path.pop();
            }
        }
        _ => leaf(old, new, path, out),
    }
}

/// The items of a granular list by path element (first occurrence of a duplicate wins;
/// items without an element are skipped, as the live object may hold anything).
fn index_items<'v>(
    list: Option<&'v Value>,
    kind: ListType<'_>,
) -> BTreeMap<PathElement, &'v Value> {
    let mut out = BTreeMap::new();
    if let Some(Value::Array(items)) = list {
        for item in items {
            if let Ok(element) = item_element(item, kind) {
                out.entry(element).or_insert(item);
            }
        }
    }
    out
}

fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Object(map)) => map.is_empty(),
        Some(Value::Array(items)) => items.is_empty(),
        Some(_) => false,
    }
}

fn leaf(old: Option<&Value>, new: Option<&Value>, path: &Path, out: &mut Comparison) {
    match (old, new) {
        (None, Some(_)) => out.added.insert(path.clone()),
        (Some(_), None) => out.removed.insert(path.clone()),
        (Some(a), Some(b)) if a != b => out.modified.insert(path.clone()),
        _ => {}
    }
}
