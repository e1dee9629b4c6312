//! Secondary indexes of the replica: rows by `external_ids` key=value, and rows by the UUIDs
//! they reference (reverse references).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::engine::hasher::FastMap;
use crate::protocol::{Atom, Uuid, Value};
use crate::schema::DbSchema;

/// The column holding the ownership markers and other free-form ids.
pub(crate) const EXTERNAL_IDS: &str = "external_ids";

/// Rows by `external_ids` value, for a configured set of keys.
#[derive(Debug, Default)]
pub(crate) struct ExternalIdsIndex {
    keys: BTreeSet<String>,
    /// table -> key -> value -> rows.
    rows: FastMap<String, FastMap<String, FastMap<String, BTreeSet<Uuid>>>>,
}

impl ExternalIdsIndex {
    pub(crate) fn new(keys: &[&str]) -> Self {
        Self {
            keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            rows: FastMap::default(),
        }
    }

    pub(crate) fn is_indexed(&self, key: &str) -> bool {
        self.keys.contains(key)
    }

    pub(crate) fn clear(&mut self) {
        self.rows.clear();
    }

    /// The indexed rows of `table` with `key` = `value` (`None` when `key` is not indexed).
    pub(crate) fn get(&self, table: &str, key: &str, value: &str) -> Option<Vec<Uuid>> {
        if !self.is_indexed(key) {
            return None;
        }
        Some(
            self.rows
                .get(table)
                .and_then(|keys| keys.get(key))
                .and_then(|values| values.get(value))
                .map(|rows| rows.iter().copied().collect())
                .unwrap_or_default(),
        )
    }

    /// The distinct values of `key` in the rows of `table` (`None` when `key` is not
    /// indexed).
    pub(crate) fn values(&self, table: &str, key: &str) -> Option<impl Iterator<Item = &str>> {
        if !self.is_indexed(key) {
            return None;
        }
        let values = self.rows.get(table).and_then(|keys| keys.get(key));
        Some(
            values
                .into_iter()
                .flat_map(|v| v.keys().map(String::as_str)),
        )
    }

    /// Adds `row` of `table` under the indexed keys of its `external_ids` value.
    pub(crate) fn add(&mut self, table: &str, row: Uuid, external_ids: &Value) {
        for (key, value) in string_pairs(external_ids) {
            if !self.keys.contains(key) {
                continue;
            }
            // Looked up by &str: an owned key only for a new entry (this runs for every
            // row of every update).
            let Some(keys) = entry(&mut self.rows, table) else {
                continue;
            };
            let Some(values) = entry(keys, key) else {
                continue;
            };
            if let Some(rows) = entry(values, value) {
                rows.insert(row);
            }
        }
    }

    /// Removes `row` of `table` from under the indexed keys of its `external_ids` value.
    pub(crate) fn remove(&mut self, table: &str, row: Uuid, external_ids: &Value) {
        for (key, value) in string_pairs(external_ids) {
            let Some(values) = self.rows.get_mut(table).and_then(|keys| keys.get_mut(key)) else {
                continue;
            };
            if let Some(rows) = values.get_mut(value) {
                rows.remove(&row);
                if rows.is_empty() {
                    values.remove(value);
                }
            }
        }
    }
}

/// `map`'s value for `key`, made (with an owned copy of `key`) when missing (always
/// `Some`).
fn entry<'m, V: Default>(map: &'m mut FastMap<String, V>, key: &str) -> Option<&'m mut V> {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), V::default());
    }
    map.get_mut(key)
}

/// The string key/value pairs of a map value (other shapes have none).
pub(crate) fn string_pairs(value: &Value) -> impl Iterator<Item = (&str, &str)> {
    let pairs = match value {
        Value::Map(pairs) => pairs.as_slice(),
        Value::Atom(_) | Value::Set(_) => &[],
    };
    pairs.iter().filter_map(|(k, v)| match (k, v) {
        (Atom::String(k), Atom::String(v)) => Some((k.as_str(), v.as_str())),
        _ => None,
    })
}

/// Where the references of one column sit.
#[derive(Debug, Clone, Copy)]
struct RefColumn {
    keys: bool,
    values: bool,
}

/// Interned table and column names of a reference column, and where its references sit.
type RefColumnInfo = (Arc<str>, Arc<str>, RefColumn);

/// A row that refers to another: (table, row, column).
pub(crate) type Referrer = (Arc<str>, Uuid, Arc<str>);

/// Reverse references: referenced UUID -> the (table, row, column) that refer to it.
#[derive(Debug, Default)]
pub(crate) struct ReferenceIndex {
    /// table -> column -> where its references sit (only reference columns).
    columns: BTreeMap<String, BTreeMap<String, RefColumnInfo>>,
    by_target: FastMap<Uuid, BTreeSet<Referrer>>,
}

impl ReferenceIndex {
    pub(crate) fn new(schema: &DbSchema) -> Self {
        let mut columns: BTreeMap<String, BTreeMap<String, _>> = BTreeMap::new();
        for (table, table_schema) in &schema.tables {
            let table_name: Arc<str> = Arc::from(table.as_str());
            for (column, column_schema) in &table_schema.columns {
                let ty = &column_schema.ty;
                let spots = RefColumn {
                    keys: ty.key.ref_table.is_some(),
                    values: ty.value.as_ref().is_some_and(|v| v.ref_table.is_some()),
                };
                if spots.keys || spots.values {
                    columns.entry(table.clone()).or_default().insert(
                        column.clone(),
                        (table_name.clone(), Arc::from(column.as_str()), spots),
                    );
                }
            }
        }
        Self {
            columns,
            by_target: FastMap::default(),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.by_target.clear();
    }

    /// Whether `column` of `table` holds references.
    pub(crate) fn is_reference(&self, table: &str, column: &str) -> bool {
        self.columns
            .get(table)
            .is_some_and(|columns| columns.contains_key(column))
    }

    /// Records (`add`) or forgets (`!add`) the references `value` in `table`.`column` of `row`
    /// holds.
    pub(crate) fn update(
        &mut self,
        table: &str,
        row: Uuid,
        column: &str,
        value: &Value,
        add: bool,
    ) {
        let Some((table_name, column_name, spots)) = self
            .columns
            .get(table)
            .and_then(|columns| columns.get(column))
        else {
            return;
        };
        let referrer: Referrer = (table_name.clone(), row, column_name.clone());
        for target in targets(value, *spots) {
            if add {
                self.by_target
                    .entry(target)
                    .or_default()
                    .insert(referrer.clone());
            } else if let Some(set) = self.by_target.get_mut(&target) {
                set.remove(&referrer);
                if set.is_empty() {
                    self.by_target.remove(&target);
                }
            }
        }
    }

    pub(crate) fn referrers(&self, target: &Uuid) -> Vec<(String, Uuid, String)> {
        self.by_target
            .get(target)
            .map(|set| {
                set.iter()
                    .map(|(table, row, column)| (table.to_string(), *row, column.to_string()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn uuid_of(atom: &Atom) -> Option<Uuid> {
    match atom {
        Atom::Uuid(u) => Some(*u),
        _ => None,
    }
}

fn targets(value: &Value, spots: RefColumn) -> Vec<Uuid> {
    match value {
        Value::Atom(a) if spots.keys => uuid_of(a).into_iter().collect(),
        Value::Set(atoms) if spots.keys => atoms.iter().filter_map(uuid_of).collect(),
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| {
                let key = if spots.keys { uuid_of(k) } else { None };
                let value = if spots.values { uuid_of(v) } else { None };
                key.into_iter().chain(value)
            })
            .collect(),
        Value::Atom(_) | Value::Set(_) => Vec::new(),
    }
}
