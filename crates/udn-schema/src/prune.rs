//! What the apiserver does to a custom resource before validating it: drop unknown
//! fields, fill in defaults, and drop `null`s of fields that are neither nullable nor
//! defaulted.

use serde_json::{Map, Value};

use crate::schema::{Additional, Node};

/// Keys the apiserver keeps on the root object (and on embedded resources) whatever the
/// schema says; `metadata` is checked as ObjectMeta elsewhere.
const OBJECT_KEYS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Remove every field the schema does not declare, unless a node preserves unknown fields.
pub(crate) fn prune(value: &mut Value, node: &Node, is_root: bool) {
    match value {
        Value::Object(object) => prune_object(object, node, is_root || node.embedded_resource),
        Value::Array(items) => {
            if let Some(item_node) = &node.items {
                for item in items {
                    prune(item, item_node, false);
                }
            }
        }
        _ => {}
    }
}

fn prune_object(object: &mut Map<String, Value>, node: &Node, keep_object_keys: bool) {
    let keep_unknown = node.keeps_unknown_fields();
    object.retain(|key, _| {
        keep_unknown
            || node.properties.contains_key(key)
            || matches!(node.additional, Some(Additional::Schema(_)))
            || (keep_object_keys && OBJECT_KEYS.contains(&key.as_str()))
    });
    for (key, child) in object.iter_mut() {
        if keep_object_keys && key == "metadata" {
            continue;
        }
        if let Some(child_node) = node.properties.get(key) {
            prune(child, child_node, false);
        } else if let Some(Additional::Schema(child_node)) = &node.additional {
            prune(child, child_node, false);
        }
    }
}

/// Fill in `default`s of missing (or `null`, when not nullable) properties, then drop the
/// remaining `null`s of properties that are neither nullable nor defaulted.
pub(crate) fn apply_defaults(value: &mut Value, node: &Node) {
    match value {
        Value::Object(object) => {
            for (key, child_node) in &node.properties {
                let missing = match object.get(key) {
                    None => true,
                    Some(Value::Null) => !child_node.nullable,
                    Some(_) => false,
                };
                if missing && let Some(default) = &child_node.default {
                    object.insert(key.clone(), default.clone());
                }
            }
            object.retain(|key, child| {
                let child_node = match node.properties.get(key) {
                    Some(child_node) => Some(child_node),
                    None => match &node.additional {
                        Some(Additional::Schema(child_node)) => Some(child_node.as_ref()),
                        _ => None,
                    },
                };
                !(child.is_null() && child_node.is_some_and(|n| !n.nullable && n.default.is_none()))
            });
            for (key, child) in object.iter_mut() {
                if let Some(child_node) = node.properties.get(key) {
                    apply_defaults(child, child_node);
                } else if let Some(Additional::Schema(child_node)) = &node.additional {
                    apply_defaults(child, child_node);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = &node.items {
                for item in items {
                    if item.is_null()
                        && !item_node.nullable
                        && let Some(default) = &item_node.default
                    {
                        *item = default.clone();
                    }
                    apply_defaults(item, item_node);
                }
            }
        }
        _ => {}
    }
}
