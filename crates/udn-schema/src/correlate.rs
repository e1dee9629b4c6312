//! Which old value a new value is compared with on update, as the apiserver correlates
//! them for ratcheting and for CEL transition rules: object properties and map entries by
//! key, items of `map` lists by their key fields, items of `set` lists by value, and
//! items of atomic lists not at all.

use serde_json::Value;

use crate::schema::{ListType, Node};

/// The old value of property (or map key) `key` of the old object, if any.
pub(crate) fn old_property<'a>(old: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    old?.as_object()?.get(key)
}

/// The old item correlated with `item` of the list described by `list`, if any.
pub(crate) fn old_item<'a>(old: Option<&'a Value>, list: &Node, item: &Value) -> Option<&'a Value> {
    let old_items = old?.as_array()?;
    match list.list_type.as_ref()? {
        ListType::Atomic => None,
        ListType::Set => old_items.iter().find(|candidate| *candidate == item),
        ListType::Map(keys) => {
            let key_of = |value: &Value| -> Option<Vec<Value>> {
                let object = value.as_object()?;
                Some(
                    keys.iter()
                        .map(|key| object.get(key).cloned().unwrap_or(Value::Null))
                        .collect(),
                )
            };
            let wanted = key_of(item)?;
            old_items
                .iter()
                .find(|candidate| key_of(candidate).as_ref() == Some(&wanted))
        }
    }
}
