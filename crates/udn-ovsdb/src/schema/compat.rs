//! What a client needs from a server schema, and whether a server schema has it.
//!
//! Real clusters run newer OVN than the schema we vendor: unknown tables and columns are
//! fine (we do not monitor or write them); a table or column we need that the server lacks
//! is an error that names it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::types::DbSchema;

/// Tables and the columns of each that a client uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requirements {
    /// Table name to column names.
    pub tables: BTreeMap<String, BTreeSet<String>>,
}

impl Requirements {
    /// Adds a table with columns.
    pub fn with<'a>(mut self, table: &str, columns: impl IntoIterator<Item = &'a str>) -> Self {
        self.tables
            .entry(table.to_owned())
            .or_default()
            .extend(columns.into_iter().map(str::to_owned));
        self
    }

    /// Every table and column of `schema`.
    pub fn everything_in(schema: &DbSchema) -> Self {
        Self {
            tables: schema
                .tables
                .iter()
                .map(|(name, table)| (name.clone(), table.columns.keys().cloned().collect()))
                .collect(),
        }
    }

    /// Merges `other` into this.
    pub fn merge(&mut self, other: &Requirements) {
        for (table, columns) in &other.tables {
            self.tables
                .entry(table.clone())
                .or_default()
                .extend(columns.iter().cloned());
        }
    }
}

/// Something a client needs that the server schema lacks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Missing {
    /// A whole table.
    Table(String),
    /// One column of a table the server has.
    Column {
        /// The table.
        table: String,
        /// The column.
        column: String,
    },
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Table(table) => write!(f, "table {table}"),
            Self::Column { table, column } => write!(f, "column {table}.{column}"),
        }
    }
}

/// The server schema lacks tables or columns this client needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "server database {database} (schema version {version}) lacks {}: this OVN is too old or differs from what udn supports",
    missing.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
)]
pub struct CompatibilityError {
    /// Database name.
    pub database: String,
    /// The server's schema version.
    pub version: String,
    /// Everything missing, sorted.
    pub missing: Vec<Missing>,
}

impl DbSchema {
    /// Checks that every table and column in `needs` exists here.
    pub fn check(&self, needs: &Requirements) -> Result<(), CompatibilityError> {
        let mut missing = Vec::new();
        for (table, columns) in &needs.tables {
            let Some(schema) = self.tables.get(table) else {
                missing.push(Missing::Table(table.clone()));
                continue;
            };
            missing.extend(
                columns
                    .iter()
                    .filter(|c| !schema.columns.contains_key(*c) && !is_implicit(c))
                    .map(|column| Missing::Column {
                        table: table.clone(),
                        column: column.clone(),
                    }),
            );
        }
        if missing.is_empty() {
            return Ok(());
        }
        missing.sort();
        Err(CompatibilityError {
            database: self.name.clone(),
            version: self.version.clone(),
            missing,
        })
    }

    /// The part of `wanted` this schema has: tables and columns that exist here.
    pub fn monitorable(&self, wanted: &Requirements) -> BTreeMap<String, Vec<String>> {
        wanted
            .tables
            .iter()
            .filter_map(|(table, columns)| {
                let schema = self.tables.get(table)?;
                let present = columns
                    .iter()
                    .filter(|c| schema.columns.contains_key(*c))
                    .cloned()
                    .collect();
                Some((table.clone(), present))
            })
            .collect()
    }

    /// This schema restricted to `wanted` (what a replica of the monitored part holds).
    pub fn restricted_to(&self, wanted: &Requirements) -> DbSchema {
        let tables = self
            .monitorable(wanted)
            .into_iter()
            .filter_map(|(name, columns)| {
                let mut table = self.tables.get(&name)?.clone();
                table.columns.retain(|c, _| columns.contains(c));
                Some((name, table))
            })
            .collect();
        DbSchema {
            name: self.name.clone(),
            version: self.version.clone(),
            tables,
        }
    }
}

fn is_implicit(column: &str) -> bool {
    column == "_uuid" || column == "_version"
}
