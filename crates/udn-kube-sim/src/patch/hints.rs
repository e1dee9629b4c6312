//! Server-side apply's view of a CRD version's structural schema (what
//! structured-merge-diff reads from the OpenAPI model the server builds for a custom
//! resource): which lists are sets or associative lists and which maps are atomic.
//!
//! - `x-kubernetes-list-type: map` with `x-kubernetes-list-map-keys` makes a list
//!   associative: items merge by their key fields and are owned item by item. The key
//!   fields' schema `default`s stand in for absent key fields, as upstream.
//! - `x-kubernetes-list-type: set` makes a list of scalars a set.
//! - `x-kubernetes-list-type: atomic`, or no marker, leaves a list atomic. So does `map`
//!   without keys (the real server refuses such a CRD).
//! - `x-kubernetes-map-type: atomic` makes an object (a struct or a map) one field,
//!   replaced and owned as a whole; `granular`, the default, merges it field by field.
//!
//! The hints are a tree that mirrors the schema (`properties`, `additionalProperties`,
//! `items`), keeping only the branches that lead to something other than the defaults, and
//! are built once when a CRD is established.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::schema::{ListType, MapKeys};

const LIST_TYPE: &str = "x-kubernetes-list-type";
const LIST_MAP_KEYS: &str = "x-kubernetes-list-map-keys";
const MAP_TYPE: &str = "x-kubernetes-map-type";

/// The server-side apply hints of one CRD version (from its `openAPIV3Schema`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SchemaHints {
    root: HintNode,
}

impl SchemaHints {
    /// The hints of `schema`, a CRD version's `schema.openAPIV3Schema`. Anything that is
    /// not a schema object contributes no hints.
    pub(crate) fn from_open_api_v3(schema: &Value) -> Self {
        Self {
            root: HintNode::of(schema),
        }
    }

    /// The root of the tree (the object itself).
    pub(crate) fn root(&self) -> &HintNode {
        &self.root
    }
}

/// One key field of an associative list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MapKey {
    name: String,
    default: Option<Value>,
}

impl MapKey {
    /// The key field's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The key field's schema default, if it has one.
    pub(crate) fn default(&self) -> Option<&Value> {
        self.default.as_ref()
    }
}

/// How server-side apply treats the list at a schema node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum ListHint {
    /// Replaced and owned as a whole (the default).
    #[default]
    Atomic,
    /// A set of scalars.
    Set,
    /// An associative list with these key fields (never empty).
    Map(Vec<MapKey>),
}

/// The hints at one schema node and below it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HintNode {
    list: ListHint,
    atomic_map: bool,
    properties: BTreeMap<String, HintNode>,
    additional: Option<Box<HintNode>>,
    items: Option<Box<HintNode>>,
}

impl HintNode {
    fn of(schema: &Value) -> Self {
        let Some(schema) = schema.as_object() else {
            return Self::default();
        };
        let child = |value: Option<&Value>| {
            value
                .map(Self::of)
                .filter(|node| !node.is_default())
                .map(Box::new)
        };
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .map(|(name, property)| (name.clone(), Self::of(property)))
                    .filter(|(_, node)| !node.is_default())
                    .collect()
            })
            .unwrap_or_default();
        Self {
            list: list_hint(schema),
            atomic_map: schema.get(MAP_TYPE).and_then(Value::as_str) == Some("atomic"),
            properties,
            additional: child(schema.get("additionalProperties")),
            items: child(schema.get("items")),
        }
    }

    fn is_default(&self) -> bool {
        self.list == ListHint::Atomic
            && !self.atomic_map
            && self.properties.is_empty()
            && self.additional.is_none()
            && self.items.is_none()
    }

    /// The node of field `name` of the object at this node (a property, or else the
    /// schema of every value of a map).
    pub(crate) fn field(&self, name: &str) -> Option<&Self> {
        self.properties.get(name).or(self.additional.as_deref())
    }

    /// The node of the items of the list at this node.
    pub(crate) fn items(&self) -> Option<&Self> {
        self.items.as_deref()
    }

    /// How server-side apply treats the list at this node.
    pub(crate) fn list_type(&self) -> ListType<'_> {
        match &self.list {
            ListHint::Atomic => ListType::Atomic,
            ListHint::Set => ListType::Set,
            ListHint::Map(keys) => ListType::Map(MapKeys::Schema(keys)),
        }
    }

    /// Whether the object at this node is atomic (`x-kubernetes-map-type: atomic`).
    pub(crate) fn atomic_map(&self) -> bool {
        self.atomic_map
    }
}

fn list_hint(schema: &Map<String, Value>) -> ListHint {
    match schema.get(LIST_TYPE).and_then(Value::as_str) {
        Some("set") => ListHint::Set,
        Some("map") => {
            let item_properties = schema
                .get("items")
                .and_then(|items| items.get("properties"));
            let keys: Vec<MapKey> = schema
                .get(LIST_MAP_KEYS)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|name| MapKey {
                    name: name.to_owned(),
                    default: item_properties
                        .and_then(|p| p.get(name))
                        .and_then(|p| p.get("default"))
                        .cloned(),
                })
                .collect();
            if keys.is_empty() {
                ListHint::Atomic
            } else {
                ListHint::Map(keys)
            }
        }
        _ => ListHint::Atomic,
    }
}
