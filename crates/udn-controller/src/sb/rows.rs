//! Read access to the rows of a table, for the SB plans (the client's replica, or a map in
//! tests).

use std::collections::BTreeMap;

use udn_ovsdb::protocol::{Atom, Row, Uuid, Value};
use udn_ovsdb::replica::Replica;

/// The rows of one table.
pub trait TableRows {
    /// Every row of `table`.
    fn table_rows(&self, table: &str) -> Vec<(Uuid, &Row)>;
}

impl TableRows for Replica {
    fn table_rows(&self, table: &str) -> Vec<(Uuid, &Row)> {
        self.rows(table).map(|(uuid, row)| (*uuid, row)).collect()
    }
}

impl TableRows for BTreeMap<String, Vec<(Uuid, Row)>> {
    fn table_rows(&self, table: &str) -> Vec<(Uuid, &Row)> {
        self.get(table)
            .map(|rows| rows.iter().map(|(uuid, row)| (*uuid, row)).collect())
            .unwrap_or_default()
    }
}

/// A string column's value.
pub(crate) fn string<'r>(row: &'r Row, column: &str) -> Option<&'r str> {
    match row.get(column) {
        Some(Value::Atom(Atom::String(text))) => Some(text),
        Some(Value::Set(atoms)) => match atoms.as_slice() {
            [Atom::String(text)] => Some(text),
            _ => None,
        },
        _ => None,
    }
}

/// A map column's value for `key`.
pub(crate) fn map_get<'r>(row: &'r Row, column: &str, key: &str) -> Option<&'r str> {
    let Some(Value::Map(pairs)) = row.get(column) else {
        return None;
    };
    pairs.iter().find_map(|(k, v)| match (k, v) {
        (Atom::String(k), Atom::String(v)) if k == key => Some(v.as_str()),
        _ => None,
    })
}

/// A string-to-string map column.
pub(crate) fn string_map(row: &Row, column: &str) -> BTreeMap<String, String> {
    let Some(Value::Map(pairs)) = row.get(column) else {
        return BTreeMap::new();
    };
    pairs
        .iter()
        .filter_map(|(k, v)| match (k, v) {
            (Atom::String(k), Atom::String(v)) => Some((k.clone(), v.clone())),
            _ => None,
        })
        .collect()
}

/// The UUIDs of a reference column (scalar or set).
pub(crate) fn uuids(row: &Row, column: &str) -> Vec<Uuid> {
    match row.get(column) {
        Some(Value::Atom(Atom::Uuid(uuid))) => vec![*uuid],
        Some(Value::Set(atoms)) => atoms
            .iter()
            .filter_map(|atom| match atom {
                Atom::Uuid(uuid) => Some(*uuid),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `_uuid == uuid`.
pub(crate) fn by_uuid(uuid: Uuid) -> udn_ovsdb::protocol::Condition {
    udn_ovsdb::protocol::Condition {
        column: "_uuid".to_owned(),
        function: udn_ovsdb::protocol::ConditionFunction::Equal,
        value: Value::Atom(Atom::Uuid(uuid)),
    }
}

/// A string-to-string map value.
pub(crate) fn map_value(pairs: &BTreeMap<String, String>) -> Value {
    Value::Map(
        pairs
            .iter()
            .map(|(k, v)| (Atom::String(k.clone()), Atom::String(v.clone())))
            .collect(),
    )
}
