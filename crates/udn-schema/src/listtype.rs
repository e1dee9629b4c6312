//! Uniqueness of `x-kubernetes-list-type: set` items and `map` keys, checked after the
//! OpenAPI validation like the apiserver's `ValidateListSetsAndMaps`.

use serde_json::{Map, Value};

use crate::error::{FieldError, FieldErrorKind};
use crate::go_format;
use crate::schema::{Additional, ListType, Node};

/// Report duplicate set items and map keys anywhere under `value`.
pub(crate) fn validate(value: &Value, node: &Node, path: &str, out: &mut Vec<FieldError>) {
    match value {
        Value::Object(object) => validate_object(object, node, path, out),
        Value::Array(items) => validate_list(items, node, path, out),
        _ => {}
    }
}

fn validate_object(
    object: &Map<String, Value>,
    node: &Node,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    if let Some(Additional::Schema(value_node)) = &node.additional {
        let mut keys: Vec<&String> = object.keys().collect();
        keys.sort();
        for key in keys {
            if let Some(child) = object.get(key) {
                validate(child, value_node, &format!("{path}[{key}]"), out);
            }
        }
    }
    for (name, child_node) in &node.properties {
        if let Some(child) = object.get(name) {
            let child_path = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            validate(child, child_node, &child_path, out);
        }
    }
}

fn validate_list(items: &[Value], node: &Node, path: &str, out: &mut Vec<FieldError>) {
    match &node.list_type {
        Some(ListType::Set) => duplicates(items, path, out, |item| Some(item.clone())),
        Some(ListType::Map(keys)) => {
            if let Some((index, item)) = items
                .iter()
                .enumerate()
                .find(|(_, item)| !item.is_object() && !item.is_null())
            {
                out.push(FieldError::new(
                    format!("{path}[{index}]"),
                    FieldErrorKind::Invalid,
                    Some(go_format::bad_value(item)),
                    "must be an object for an array of list-type map",
                ));
            } else {
                let item_node = node.items.as_deref();
                duplicates(items, path, out, |item| {
                    let object = item.as_object()?;
                    let mut key = Map::new();
                    for field in keys {
                        let value = object
                            .get(field)
                            .cloned()
                            .or_else(|| key_default(item_node, field))
                            .unwrap_or(Value::Null);
                        key.insert(field.clone(), value);
                    }
                    Some(Value::Object(key))
                });
            }
        }
        Some(ListType::Atomic) | None => {}
    }
    if let Some(item_node) = &node.items {
        for (index, item) in items.iter().enumerate() {
            validate(item, item_node, &format!("{path}[{index}]"), out);
        }
    }
}

fn key_default(item_node: Option<&Node>, field: &str) -> Option<Value> {
    item_node?.properties.get(field)?.default.clone()
}

/// Report the second appearance of every identity `identity` gives.
fn duplicates(
    items: &[Value],
    path: &str,
    out: &mut Vec<FieldError>,
    identity: impl Fn(&Value) -> Option<Value>,
) {
    let mut seen: Vec<(Value, usize)> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let Some(id) = identity(item) else {
            continue;
        };
        match seen.iter_mut().find(|(known, _)| *known == id) {
            Some((_, times)) => {
                *times += 1;
                if *times == 2 {
                    out.push(FieldError::new(
                        format!("{path}[{index}]"),
                        FieldErrorKind::Duplicate,
                        Some(go_format::bad_value(&id)),
                        "",
                    ));
                }
            }
            None => seen.push((id, 1)),
        }
    }
}
