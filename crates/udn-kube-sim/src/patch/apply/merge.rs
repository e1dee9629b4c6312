//! Merging an applied configuration into the live object (structured-merge-diff
//! `TypedValue.Merge`): objects merge field by field, sets and associative lists merge
//! item by item in structured-merge-diff's order, everything else (scalars, atomic
//! lists, atomic maps) takes the configuration's value. A `null` in the configuration removes the
//! field (the typed decoder, or CRD pruning, drops nulls in the real server).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::patch::fields::{PathElement, Walk, item_element};
use crate::patch::schema::{ListType, TypeSchema};

/// `live` with `config` merged in.
pub(super) fn merge(live: &Value, config: &Value, schema: &TypeSchema<'_>) -> Value {
    let mut walk = Walk::new(schema);
    let empty = Map::new();
    let live = live.as_object().unwrap_or(&empty);
    let config = config.as_object().unwrap_or(&empty);
    Value::Object(merge_fields(&mut walk, live, config))
}

fn merge_fields(
    walk: &mut Walk<'_>,
    live: &Map<String, Value>,
    config: &Map<String, Value>,
) -> Map<String, Value> {
    let mut out = live.clone();
    for (key, value) in config {
        if value.is_null() {
            out.shift_remove(key);
            continue;
        }
        let list = walk.list_type(key);
        let merged = walk.descend(key, |walk| merge_value(walk, live.get(key), value, list));
        out.insert(key.clone(), merged);
    }
    out
}

fn merge_value(
    walk: &mut Walk<'_>,
    live: Option<&Value>,
    config: &Value,
    list: ListType<'_>,
) -> Value {
    let empty_map = Map::new();
    match (live, config) {
        (_, Value::Object(_)) if walk.atomic_map() => config.clone(),
        (Some(Value::Object(live)), Value::Object(config)) => {
            Value::Object(merge_fields(walk, live, config))
        }
        (_, Value::Object(config)) => Value::Object(merge_fields(walk, &empty_map, config)),
        (live, Value::Array(config)) if list != ListType::Atomic => {
            let live = match live {
                Some(Value::Array(items)) => items.as_slice(),
                _ => &[],
            };
            Value::Array(merge_list(walk, live, config, list))
        }
        _ => config.clone(),
    }
}

/// The element of an item; items without one get a position element that matches
/// nothing in the configuration (the configuration was validated before).
fn elements(items: &[Value], list: ListType<'_>) -> Vec<PathElement> {
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            item_element(item, list)
                .unwrap_or_else(|_| PathElement::Index(u64::try_from(index).unwrap_or(u64::MAX)))
        })
        .collect()
}

/// Live items by element; a duplicated element maps to no value (it is not merged).
fn observe<'a>(
    elements: &'a [PathElement],
    items: &'a [Value],
) -> BTreeMap<&'a PathElement, Option<&'a Value>> {
    let mut observed = BTreeMap::new();
    for (element, item) in elements.iter().zip(items) {
        observed
            .entry(element)
            .and_modify(|v| *v = None)
            .or_insert(Some(item));
    }
    observed
}

/// structured-merge-diff's list merge: live items keep their place, configuration items
/// follow the configuration's order, items only in the configuration are inserted where
/// the configuration puts them.
fn merge_list(
    walk: &mut Walk<'_>,
    live: &[Value],
    config: &[Value],
    list: ListType<'_>,
) -> Vec<Value> {
    let live_pes = elements(live, list);
    let config_pes = elements(config, list);
    let observed_live = observe(&live_pes, live);
    let observed_config: BTreeMap<&PathElement, &Value> = config_pes.iter().zip(config).collect();
    let shared: Vec<&PathElement> = config_pes
        .iter()
        .filter(|pe| observed_live.contains_key(pe))
        .collect();
    let mut shared = shared.into_iter();
    let mut next_shared = shared.next();
    let mut merged_config: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(live.len().max(config.len()));
    let (mut li, mut ci) = (0usize, 0usize);
    let merge_item = |walk: &mut Walk<'_>, element: &PathElement| {
        let live_item = observed_live.get(element).copied().flatten();
        match observed_config.get(element) {
            Some(config_item) => walk
                .descend_item(|walk| merge_value(walk, live_item, config_item, ListType::Atomic)),
            None => live_item.cloned().unwrap_or(Value::Null),
        }
    };
    while li < live_pes.len() || ci < config_pes.len() {
        if let (Some(live_pe), Some(config_pe)) = (live_pes.get(li), config_pes.get(ci)) {
            if live_pe == config_pe {
                merged_config.insert(live_pe);
                out.push(merge_item(walk, live_pe));
                li += 1;
                ci += 1;
                next_shared = shared.next();
                continue;
            }
            if observed_config.contains_key(live_pe) && next_shared.is_some_and(|n| n != live_pe) {
                li += 1;
                continue;
            }
        }
        if let Some(live_pe) = live_pes.get(li) {
            if !observed_config.contains_key(live_pe) {
                if let Some(item) = live.get(li) {
                    out.push(item.clone());
                }
                li += 1;
                continue;
            } else if merged_config.contains(live_pe) {
                li += 1;
            }
        }
        if let Some(config_pe) = config_pes.get(ci) {
            merged_config.insert(config_pe);
            out.push(merge_item(walk, config_pe));
            ci += 1;
            if next_shared == Some(config_pe) {
                next_shared = shared.next();
            }
        }
    }
    out
}
