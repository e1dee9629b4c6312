//! Rows read back with `ovn-nbctl --format=json`, and the external_ids the engine adds.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use udn_ovsdb::testing::OvsdbServer;

/// One row as `ovn-nbctl --format=json` prints it, by column.
#[derive(Debug)]
pub(crate) struct Record {
    table: String,
    columns: BTreeMap<String, Value>,
}

fn atom(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(pair) if pair.len() == 2 && pair[0] == "uuid" => atom(&pair[1]),
        other => other.to_string(),
    }
}

impl Record {
    fn cell(&self, column: &str) -> &Value {
        self.columns
            .get(column)
            .unwrap_or_else(|| panic!("{} has no column {column}: {self:?}", self.table))
    }

    /// The row's UUID.
    pub(crate) fn uuid(&self) -> String {
        self.text("_uuid")
    }

    /// A scalar column (an optional one: its value, or "" when empty).
    pub(crate) fn text(&self, column: &str) -> String {
        let set = self.set(column);
        assert!(set.len() <= 1, "{} {column} is {set:?}", self.table);
        set.into_iter().next().unwrap_or_default()
    }

    /// A set column (a scalar one as a set of one).
    pub(crate) fn set(&self, column: &str) -> BTreeSet<String> {
        match self.cell(column) {
            Value::Array(pair) if pair.len() == 2 && pair[0] == "set" => {
                pair[1].as_array().unwrap().iter().map(atom).collect()
            }
            Value::Array(pair) if pair.len() == 2 && pair[0] == "map" => {
                panic!("{} {column} is a map", self.table)
            }
            value => BTreeSet::from([atom(value)]),
        }
    }

    /// A map column.
    pub(crate) fn map(&self, column: &str) -> BTreeMap<String, String> {
        match self.cell(column) {
            Value::Array(pair) if pair.len() == 2 && pair[0] == "map" => pair[1]
                .as_array()
                .unwrap()
                .iter()
                .map(|kv| (atom(&kv[0]), atom(&kv[1])))
                .collect(),
            other => panic!("{} {column} is no map: {other}", self.table),
        }
    }

    /// The row as one line: columns in order, set and map elements sorted.
    pub(crate) fn canonical(&self) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .map(|(column, value)| match value {
                Value::Array(pair) if pair.len() == 2 && pair[0] == "map" => {
                    format!("{column}={:?}", self.map(column))
                }
                _ => format!("{column}={:?}", self.set(column)),
            })
            .collect();
        columns.join(" ")
    }

    /// Whether the server's table has `column`.
    pub(crate) fn has(&self, column: &str) -> bool {
        self.columns.contains_key(column)
    }
}

fn records(table: &str, json: &str) -> Vec<Record> {
    let doc: Value = serde_json::from_str(json).unwrap();
    let headings: Vec<String> = doc["headings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_owned())
        .collect();
    doc["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| Record {
            table: table.to_owned(),
            columns: headings
                .iter()
                .cloned()
                .zip(row.as_array().unwrap().iter().cloned())
                .collect(),
        })
        .collect()
}

/// `ovn-nbctl list <table>`: every row.
pub(crate) fn list(server: &OvsdbServer, table: &str) -> Vec<Record> {
    records(
        table,
        &server.nbctl(&["--format=json", "list", table]).unwrap(),
    )
}

/// `ovn-nbctl list <table> <record>`: one row by name or UUID.
pub(crate) fn get(server: &OvsdbServer, table: &str, record: &str) -> Record {
    let out = server
        .nbctl(&["--format=json", "list", table, record])
        .unwrap_or_else(|e| panic!("{table} {record}: {e}"));
    let mut rows = records(table, &out);
    assert_eq!(rows.len(), 1, "{table} {record}");
    rows.remove(0)
}

/// `ovn-nbctl find <table> <conditions>`.
pub(crate) fn find(server: &OvsdbServer, table: &str, conditions: &[&str]) -> Vec<Record> {
    let mut args = vec!["--format=json", "find", table];
    args.extend_from_slice(conditions);
    records(table, &server.nbctl(&args).unwrap())
}

/// The rows of `table` that `record`'s reference column holds.
pub(crate) fn targets(
    server: &OvsdbServer,
    record: &Record,
    column: &str,
    table: &str,
) -> Vec<Record> {
    record
        .set(column)
        .iter()
        .map(|uuid| get(server, table, uuid))
        .collect()
}

/// The `name`s of the rows of `table` that `record`'s reference column holds.
pub(crate) fn target_names(
    server: &OvsdbServer,
    record: &Record,
    column: &str,
    table: &str,
) -> BTreeSet<String> {
    targets(server, record, column, table)
        .iter()
        .map(|r| r.text("name"))
        .collect()
}

/// The non-empty lines of an ovn-nbctl listing with runs of blanks as one space.
pub(crate) fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

/// `ovn-nbctl lr-nat-list <router>` without its heading, sorted (ovn-nbctl orders NATs of
/// the same type and external IP arbitrarily).
pub(crate) fn nat_lines(server: &OvsdbServer, router: &str) -> Vec<String> {
    let mut nats = lines(&server.nbctl(&["lr-nat-list", router]).unwrap());
    assert!(nats.remove(0).starts_with("TYPE "), "{nats:?}");
    nats.sort();
    nats
}

/// A set of names.
pub(crate) fn names(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// `[(k, v)...]` as a map.
pub(crate) fn pairs(items: &[(&str, &str)]) -> BTreeMap<String, String> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The unit a row belongs to in the engine's stamps (`k8s.ovn.org/owner-type`, `owner`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Owner<'a> {
    pub(crate) controller: &'a str,
    pub(crate) owner_type: &'a str,
    pub(crate) name: &'a str,
}

/// Upstream's external_ids plus the stamps the engine adds to every row it writes
/// (`k8s.ovn.org/owner-controller`, `owner-type`, `owner`, `id`). Where upstream already
/// writes one of those keys (dbIDs rows: ACLs, port groups), its value must be ours.
pub(crate) fn stamped(
    upstream: &[(&str, &str)],
    owner: Owner<'_>,
    id: &str,
) -> BTreeMap<String, String> {
    let mut ids = pairs(upstream);
    for (k, v) in [
        ("k8s.ovn.org/owner-controller", owner.controller),
        ("k8s.ovn.org/owner-type", owner.owner_type),
        ("k8s.ovn.org/owner", owner.name),
        ("k8s.ovn.org/id", id),
    ] {
        let old = ids.insert(k.to_owned(), v.to_owned());
        assert!(
            old.is_none() || old.as_deref() == Some(v),
            "upstream's {k}={old:?} is not the engine's {v}"
        );
    }
    ids
}
