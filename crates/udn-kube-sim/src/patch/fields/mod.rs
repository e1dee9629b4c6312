//! Field sets: which fields of an object a manager owns, as structured-merge-diff models
//! them (`fieldpath.Set`) and `metadata.managedFields[].fieldsV1` stores them.
//!
//! A path is a list of elements: a field name (`f:spec`), the key of an associative list
//! item (`k:{"name":"nginx"}`), the value of a set item (`v:"a"`) or an index (`i:0`,
//! only read back, never produced here). A set holds *member* paths; `fieldsV1` marks a
//! member that also has members below it with `.`.

pub(crate) mod compare;
pub(crate) mod fieldsv1;
pub(crate) mod from_value;
pub(crate) mod remove;

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::gofmt;
use super::hints::{HintNode, SchemaHints};
use super::schema::{ListType, TypeSchema};

/// A JSON value inside a path element, held as its canonical JSON text (object keys
/// sorted) so that it orders and compares deterministically.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Scalar(String);

impl Scalar {
    /// The canonical form of `value`.
    pub(crate) fn of(value: &Value) -> Self {
        Self(serde_json::to_string(&canonical(value)).unwrap_or_default())
    }

    /// Parse canonical JSON text (as found in `fieldsV1`).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        serde_json::from_str::<Value>(text)
            .ok()
            .map(|v| Self::of(&v))
    }

    /// The value.
    pub(crate) fn value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// The canonical JSON text.
    pub(crate) fn json(&self) -> &str {
        &self.0
    }
}

fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(map.len());
            for key in keys {
                if let Some(v) = map.get(key) {
                    out.insert(key.clone(), canonical(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// One step of a field path. The variant order is structured-merge-diff's element order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum PathElement {
    /// A field of an object (`f:<name>`).
    Field(String),
    /// An associative list item, by its key fields sorted by name (`k:{...}`).
    Key(Vec<(String, Scalar)>),
    /// A set item, by value (`v:<json>`).
    Value(Scalar),
    /// A list item by position (`i:<n>`).
    Index(u64),
}

impl PathElement {
    /// structured-merge-diff's `PathElement.String()` (`.spec`, `[name="a"]`, `[="x"]`).
    pub(crate) fn display(&self) -> String {
        match self {
            Self::Field(name) => format!(".{name}"),
            Self::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| format!("{name}={}", gofmt::smd_value(&value.value())))
                    .collect();
                format!("[{}]", parts.join(","))
            }
            Self::Value(value) => format!("[={}]", gofmt::smd_value(&value.value())),
            Self::Index(index) => format!("[{index}]"),
        }
    }
}

/// A field path.
pub(crate) type Path = Vec<PathElement>;

/// `Path.String()`: the elements' strings concatenated (`.spec.containers[name="a"]`).
pub(crate) fn path_display(path: &[PathElement]) -> String {
    path.iter().map(PathElement::display).collect()
}

/// A set of member paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSet(BTreeSet<Path>);

impl FieldSet {
    /// The empty set.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Add a member.
    pub(crate) fn insert(&mut self, path: Path) {
        self.0.insert(path);
    }

    /// Whether `path` is a member.
    pub(crate) fn contains(&self, path: &[PathElement]) -> bool {
        self.0.contains(path)
    }

    /// Whether there are no members.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The members in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Path> {
        self.0.iter()
    }

    /// Members of both.
    pub(crate) fn union(&self, other: &Self) -> Self {
        Self(self.0.union(&other.0).cloned().collect())
    }

    /// Members of `self` not in `other`.
    pub(crate) fn difference(&self, other: &Self) -> Self {
        Self(self.0.difference(&other.0).cloned().collect())
    }

    /// Members in both.
    pub(crate) fn intersection(&self, other: &Self) -> Self {
        Self(self.0.intersection(&other.0).cloned().collect())
    }

    /// Keep the members `keep` accepts.
    pub(crate) fn retain(&mut self, keep: impl FnMut(&Path) -> bool) {
        self.0.retain(keep);
    }

    /// Whether some member starts with `prefix` (or is it).
    pub(crate) fn has_prefix(&self, prefix: &[PathElement]) -> bool {
        self.0
            .range(prefix.to_vec()..)
            .next()
            .is_some_and(|first| first.starts_with(prefix))
    }

    /// The members below `element`, with `element` taken off (`WithPrefix`).
    pub(crate) fn child(&self, element: &PathElement) -> Self {
        let start = vec![element.clone()];
        Self(
            self.0
                .range(start..)
                .take_while(|p| p.first() == Some(element))
                .filter(|p| p.len() > 1)
                .map(|p| p.get(1..).map(<[PathElement]>::to_vec).unwrap_or_default())
                .collect(),
        )
    }
}

impl FromIterator<Path> for FieldSet {
    fn from_iter<I: IntoIterator<Item = Path>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

/// Why a list item has no path element.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ItemError {
    /// An associative list item that is `null`.
    #[error("associative list with keys may not have a null element")]
    NullItem,
    /// An associative list item that is not an object.
    #[error("associative list with keys may not have non-map elements")]
    NotAnObject,
    /// An associative list item without any of the key fields.
    #[error(
        "associative list with keys has an element that omits all key fields {keys} (and doesn't have default values for any key fields)"
    )]
    NoKeyFields {
        /// The key field names, Go-formatted (`["name"]`).
        keys: String,
    },
    /// A set item that is not a scalar.
    #[error("sets may only contain primitive values")]
    NotPrimitive,
}

/// The path element of a granular (set or map) list item.
pub(crate) fn item_element(item: &Value, list: ListType<'_>) -> Result<PathElement, ItemError> {
    match list {
        ListType::Map(keys) => {
            let Value::Object(map) = item else {
                return Err(if item.is_null() {
                    ItemError::NullItem
                } else {
                    ItemError::NotAnObject
                });
            };
            let mut fields: Vec<(String, Scalar)> = keys
                .fields()
                .filter_map(|(key, default)| {
                    let value = map.get(key).cloned().or(default)?;
                    Some((key.to_owned(), Scalar::of(&value)))
                })
                .collect();
            if fields.is_empty() {
                let quoted: Vec<String> = keys.fields().map(|(k, _)| gofmt::quote(k)).collect();
                return Err(ItemError::NoKeyFields {
                    keys: format!("[{}]", quoted.join(" ")),
                });
            }
            fields.sort();
            Ok(PathElement::Key(fields))
        }
        ListType::Set | ListType::Atomic => match item {
            Value::Array(_) | Value::Object(_) => Err(ItemError::NotPrimitive),
            scalar => Ok(PathElement::Value(Scalar::of(scalar))),
        },
    }
}

/// Walks an object's fields with the schema's view of its lists and maps: the built-in
/// table by field names (list items are transparent), and a custom resource's CRD hints
/// by schema node.
#[derive(Debug)]
pub(crate) struct Walk<'a> {
    schema: TypeSchema<'a>,
    names: Vec<String>,
    /// The hint node at each level (`None`: no hints there or below).
    nodes: Vec<Option<&'a HintNode>>,
}

impl<'a> Walk<'a> {
    /// A walk from the object root.
    pub(crate) fn new(schema: &TypeSchema<'a>) -> Self {
        Self {
            schema: *schema,
            names: Vec::new(),
            nodes: vec![schema.hints().map(SchemaHints::root)],
        }
    }

    fn node(&self) -> Option<&'a HintNode> {
        self.nodes.last().copied().flatten()
    }

    /// The list type of field `name` below the current position.
    pub(crate) fn list_type(&self, name: &str) -> ListType<'a> {
        let mut path = self.names.clone();
        path.push(name.to_owned());
        if let Some(list) = self.schema.ssa_list(&path) {
            return list;
        }
        self.node()
            .and_then(|node| node.field(name))
            .map_or(ListType::Atomic, HintNode::list_type)
    }

    /// Whether the object at the current position is atomic (one field, replaced whole).
    pub(crate) fn atomic_map(&self) -> bool {
        self.node().is_some_and(HintNode::atomic_map)
    }

    /// Run `f` one field deeper.
    pub(crate) fn descend<T>(&mut self, name: &str, f: impl FnOnce(&mut Self) -> T) -> T {
        let node = self.node().and_then(|node| node.field(name));
        self.names.push(name.to_owned());
        self.nodes.push(node);
        let out = f(self);
        self.nodes.pop();
        self.names.pop();
        out
    }

    /// Run `f` on an item of the list at the current position.
    pub(crate) fn descend_item<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let node = self.node().and_then(HintNode::items);
        self.nodes.push(node);
        let out = f(self);
        self.nodes.pop();
        out
    }
}
