//! Building the operations this module sends: conditions on `_uuid`, string maps and sets,
//! and the map merge libovsdb does for `ovs-vsctl set ... key=value` (delete the keys, then
//! insert the pairs: an OVSDB `insert` never overwrites an existing key).

use std::collections::{BTreeMap, BTreeSet};

use udn_ovsdb::protocol::{
    Atom, Condition, ConditionFunction, Mutation, Mutator, Operation, Row, Uuid, Value,
};

/// `_uuid == uuid`.
pub(crate) fn where_uuid(uuid: Uuid) -> Vec<Condition> {
    vec![Condition {
        column: "_uuid".to_owned(),
        function: ConditionFunction::Equal,
        value: Value::Atom(Atom::Uuid(uuid)),
    }]
}

/// A string.
pub(crate) fn string(text: &str) -> Value {
    Value::Atom(Atom::String(text.to_owned()))
}

/// A string-to-string map.
pub(crate) fn string_map(map: &BTreeMap<String, String>) -> Value {
    Value::Map(
        map.iter()
            .map(|(k, v)| (Atom::String(k.clone()), Atom::String(v.clone())))
            .collect(),
    )
}

/// A set of strings (map keys for a `delete` mutation).
pub(crate) fn string_set<'a>(items: impl IntoIterator<Item = &'a String>) -> Value {
    let sorted: BTreeSet<&String> = items.into_iter().collect();
    Value::Set(
        sorted
            .into_iter()
            .map(|s| Atom::String(s.clone()))
            .collect(),
    )
}

/// A set of references: existing rows or rows named earlier in the transaction.
pub(crate) fn refs(targets: &[RowRef]) -> Value {
    Value::Set(targets.iter().map(RowRef::atom).collect())
}

/// A row of the transaction: one that exists, or one inserted under a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RowRef {
    /// An existing row.
    Existing(Uuid),
    /// A row inserted earlier in the same transaction.
    Named(String),
}

impl RowRef {
    fn atom(&self) -> Atom {
        match self {
            Self::Existing(uuid) => Atom::Uuid(*uuid),
            Self::Named(name) => Atom::NamedUuid(name.clone()),
        }
    }
}

/// A row of the given columns.
pub(crate) fn row(columns: impl IntoIterator<Item = (&'static str, Value)>) -> Row {
    columns
        .into_iter()
        .map(|(column, value)| (column.to_owned(), value))
        .collect()
}

/// `insert` into `table` as `name`.
pub(crate) fn insert(table: &str, name: &str, row: Row) -> Operation {
    Operation::Insert {
        table: table.to_owned(),
        row,
        uuid_name: Some(name.to_owned()),
        uuid: None,
    }
}

/// `update` of row `uuid`.
pub(crate) fn update(table: &str, uuid: Uuid, row: Row) -> Operation {
    Operation::Update {
        table: table.to_owned(),
        where_: where_uuid(uuid),
        row,
    }
}

/// `mutate` of row `uuid`.
pub(crate) fn mutate(table: &str, uuid: Uuid, mutations: Vec<Mutation>) -> Operation {
    Operation::Mutate {
        table: table.to_owned(),
        where_: where_uuid(uuid),
        mutations,
    }
}

/// Inserts `targets` into the reference set `column`.
pub(crate) fn set_insert(column: &str, targets: &[RowRef]) -> Mutation {
    Mutation {
        column: column.to_owned(),
        mutator: Mutator::Insert,
        value: refs(targets),
    }
}

/// Deletes `targets` from the reference set `column`.
pub(crate) fn set_delete(column: &str, targets: &[RowRef]) -> Mutation {
    Mutation {
        column: column.to_owned(),
        mutator: Mutator::Delete,
        value: refs(targets),
    }
}

/// The mutations that set `pairs` in map `column` and drop `remove`, keeping other keys:
/// delete every key named (set or removed), then insert the pairs. Empty when both are.
pub(crate) fn map_merge(
    column: &str,
    pairs: &BTreeMap<String, String>,
    remove: &BTreeSet<String>,
) -> Vec<Mutation> {
    let mut mutations = Vec::new();
    let deleted: BTreeSet<&String> = pairs.keys().chain(remove).collect();
    if !deleted.is_empty() {
        mutations.push(Mutation {
            column: column.to_owned(),
            mutator: Mutator::Delete,
            value: string_set(deleted),
        });
    }
    if !pairs.is_empty() {
        mutations.push(Mutation {
            column: column.to_owned(),
            mutator: Mutator::Insert,
            value: string_map(pairs),
        });
    }
    mutations
}

/// Of `desired`, the pairs `current` lacks or has with another value; and of `remove`, the
/// keys `current` has: what a merge must change (both empty: converged).
pub(crate) fn map_changes(
    current: &BTreeMap<String, String>,
    desired: &BTreeMap<String, String>,
    remove: &[&str],
) -> (BTreeMap<String, String>, BTreeSet<String>) {
    let set = desired
        .iter()
        .filter(|(k, v)| current.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let removed = remove
        .iter()
        .filter(|key| current.contains_key(**key) && !desired.contains_key(**key))
        .map(|key| (*key).to_owned())
        .collect();
    (set, removed)
}

/// Owned string pairs.
#[cfg(test)]
pub(crate) fn pairs(items: &[(&str, &str)]) -> BTreeMap<String, String> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
