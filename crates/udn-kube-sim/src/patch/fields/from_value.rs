//! The field set of an applied configuration (structured-merge-diff `ToFieldSet`), with
//! the validation the server does when it types the configuration (list items need their
//! key fields, no duplicate keys).
//!
//! Members: every scalar, `null` and empty object; every atomic list and atomic map (a
//! custom resource's `x-kubernetes-map-type: atomic`); every item of a set or associative
//! list (and the fields inside keyed items). A non-empty object is not a
//! member itself: objects are treated as structs (whose named fields are not members),
//! which is how the API types declare nearly all of them.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{FieldSet, Path, PathElement, Walk, item_element, path_display};
use crate::patch::schema::{ListType, TypeSchema};

/// One validation error, at a path (`.spec.containers: duplicate entries for key ...`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub(crate) struct TypedError {
    /// The list's path.
    pub(crate) path: String,
    /// What is wrong.
    pub(crate) message: String,
}

/// The members of `config`, or the first validation error.
pub(crate) fn field_set(config: &Value, schema: &TypeSchema<'_>) -> Result<FieldSet, TypedError> {
    let mut set = FieldSet::new();
    let mut walk = Walk::new(schema);
    let mut path = Path::new();
    if let Value::Object(map) = config {
        for (key, child) in map {
            visit_field(&mut walk, key, child, &mut path, &mut set)?;
        }
    }
    Ok(set)
}

fn visit_field(
    walk: &mut Walk<'_>,
    key: &str,
    child: &Value,
    path: &mut Path,
    set: &mut FieldSet,
) -> Result<(), TypedError> {
    let list = walk.list_type(key);
    path.push(PathElement::Field(key.to_owned()));
    let (result, atomic) = walk.descend(key, |walk| {
        if child.is_object() && walk.atomic_map() {
            (Ok(()), true)
        } else {
            (visit_value(walk, child, list, path, set), false)
        }
    });
    let leaf = match child {
        Value::Object(map) => atomic || map.is_empty(),
        Value::Array(_) => false,
        _ => true,
    };
    if leaf {
        set.insert(path.clone());
    }
    path.pop();
    result
}

fn visit_value(
    walk: &mut Walk<'_>,
    value: &Value,
    list: ListType<'_>,
    path: &mut Path,
    set: &mut FieldSet,
) -> Result<(), TypedError> {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                visit_field(walk, key, child, path, set)?;
            }
            Ok(())
        }
        Value::Array(items) => match list {
            ListType::Atomic => {
                set.insert(path.clone());
                Ok(())
            }
            granular => visit_items(walk, items, granular, path, set),
        },
        _ => Ok(()),
    }
}

fn visit_items(
    walk: &mut Walk<'_>,
    items: &[Value],
    list: ListType<'_>,
    path: &mut Path,
    set: &mut FieldSet,
) -> Result<(), TypedError> {
    let mut seen = BTreeSet::new();
    for (index, item) in items.iter().enumerate() {
        let element = item_element(item, list).map_err(|e| TypedError {
            path: path_display(path),
            message: format!("element {index}: {e}"),
        })?;
        if !seen.insert(element.clone()) {
            return Err(TypedError {
                path: path_display(path),
                message: format!("duplicate entries for key {}", element.display()),
            });
        }
        path.push(element);
        let result = walk.descend_item(|walk| match item {
            Value::Object(map) if !walk.atomic_map() => map
                .iter()
                .try_for_each(|(key, child)| visit_field(walk, key, child, path, set)),
            _ => Ok(()),
        });
        set.insert(path.clone());
        path.pop();
        result?;
    }
    Ok(())
}
