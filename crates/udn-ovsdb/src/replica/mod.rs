//! The in-memory copy of the monitored tables, kept in canonical form (see
//! [`ColumnType::normalize`](crate::schema::ColumnType::normalize)), with lookups by
//! `external_ids` keys and by reference.
//!
//! The replica's schema says which tables and columns it holds (the client gives it the
//! server's schema restricted to what it monitors). Updates for other tables or columns are
//! ignored, and inserted rows get the default value for every column the update omits (update2
//! leaves out columns holding their default), so every row has every column of its table.

mod index;
mod modify;
mod versions;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::protocol::{Row, RowUpdate, TableUpdates, Uuid, Value};
use crate::schema::{DbSchema, SchemaError, TableSchema};

use index::{EXTERNAL_IDS, ExternalIdsIndex, ReferenceIndex, string_pairs};
use versions::{Stamp, Versions};

/// An update that does not fit the replica.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplicaError {
    /// A value does not fit its column's type.
    #[error("table {table} row {uuid} column {column}: value does not fit the column type")]
    Value {
        /// Table name.
        table: String,
        /// Row UUID.
        uuid: Uuid,
        /// Column name.
        column: String,
        /// The underlying error.
        #[source]
        source: Box<SchemaError>,
    },
    /// A modify or delete names a row the replica does not have.
    #[error("table {table}: {kind} of row {uuid}, which the replica does not have")]
    MissingRow {
        /// Table name.
        table: String,
        /// Row UUID.
        uuid: Uuid,
        /// `modify`, `update` or `delete`.
        kind: &'static str,
    },
}

/// The in-memory copy of the monitored tables.
#[derive(Debug)]
pub struct Replica {
    schema: Arc<DbSchema>,
    tables: BTreeMap<String, BTreeMap<Uuid, Row>>,
    external_ids: ExternalIdsIndex,
    references: ReferenceIndex,
    versions: Versions,
}

impl Replica {
    /// An empty replica of the tables and columns of `schema`, indexing rows by the
    /// `external_ids` keys `indexed_keys`. When they include the engine's owner key
    /// ([`crate::engine::OWNER_KEY`]), its values are versioned (see [`Replica::version`]).
    pub fn new(schema: Arc<DbSchema>, indexed_keys: &[&str]) -> Self {
        let references = ReferenceIndex::new(&schema);
        let versioned = indexed_keys
            .contains(&crate::engine::OWNER_KEY)
            .then_some(crate::engine::OWNER_KEY);
        Self {
            schema,
            tables: BTreeMap::new(),
            external_ids: ExternalIdsIndex::new(indexed_keys),
            references,
            versions: Versions::new(versioned),
        }
    }

    /// This replica with the values of `external_ids` key `key` versioned instead (`None`:
    /// none). Call before loading rows: values already present are not versioned anew.
    #[must_use]
    pub fn with_versioned_key(mut self, key: Option<&str>) -> Self {
        self.versions = Versions::new(key);
        self
    }

    /// Removes every row. Every value of the versioned key gets a new version.
    pub fn clear(&mut self) {
        self.tables.clear();
        self.external_ids.clear();
        self.references.clear();
        self.versions.clear();
    }

    /// The change version of the rows whose `external_ids` map `key` to `value`, when `key`
    /// is the versioned key (else `None`). It changes whenever such a row, in any table, is
    /// inserted, modified (any column) or deleted, or gains or loses the pair, at most once
    /// per [`Replica::apply`] call, and never takes a value it had before, in this replica
    /// or any other of the process (also not after [`Replica::clear`]): an unchanged
    /// version means that none of these rows changed.
    pub fn version(&self, key: &str, value: &str) -> Option<u64> {
        self.versions.get(key, value)
    }

    /// The versioned `external_ids` key, if any.
    pub fn versioned_key(&self) -> Option<&str> {
        self.versions.key()
    }

    /// The distinct values the indexed `external_ids` key `key` has in the rows of `table`,
    /// in no particular order, without reading the rows (`None` when `key` is not indexed).
    pub fn indexed_values(&self, table: &str, key: &str) -> Option<impl Iterator<Item = &str>> {
        self.external_ids.values(table, key)
    }

    /// The schema of what the replica holds.
    pub fn schema(&self) -> &DbSchema {
        &self.schema
    }

    /// Applies a monitor reply or notification. Values are normalized with their column types.
    /// On error the rows before the failing one are applied: the caller should resynchronize.
    pub fn apply(&mut self, updates: &TableUpdates) -> Result<(), ReplicaError> {
        self.apply_owned(updates.clone())
    }

    /// [`Replica::apply`] taking the updates by value (no copy of the values: the client's
    /// path, where initial contents can be large).
    pub fn apply_owned(&mut self, updates: TableUpdates) -> Result<(), ReplicaError> {
        let schema = Arc::clone(&self.schema);
        let mut stamp = Stamp::default();
        for (table, rows) in updates.tables {
            let Some(table_schema) = schema.table(&table) else {
                continue;
            };
            for (uuid, update) in rows {
                self.apply_row(&table, table_schema, uuid, update, &mut stamp)?;
            }
        }
        Ok(())
    }

    fn apply_row(
        &mut self,
        table: &str,
        table_schema: &TableSchema,
        uuid: Uuid,
        update: RowUpdate,
        stamp: &mut Stamp,
    ) -> Result<(), ReplicaError> {
        let missing = |kind| ReplicaError::MissingRow {
            table: table.to_owned(),
            uuid,
            kind,
        };
        let is_diff = matches!(update, RowUpdate::Modify(_));
        match update {
            RowUpdate::Insert(mut given) => {
                let mut row = Row::new();
                for (column, column_schema) in &table_schema.columns {
                    let value = match given.remove(column) {
                        Some(v) => normalize(table, uuid, column, &column_schema.ty, v)?,
                        None => column_schema.ty.default_value(),
                    };
                    row.insert(column.clone(), value);
                }
                if let Some(old) = self.tables.get_mut(table).and_then(|t| t.remove(&uuid)) {
                    self.versions.touch(old.get(EXTERNAL_IDS), stamp);
                    self.unindex_row(table, uuid, &old);
                }
                self.versions.touch(row.get(EXTERNAL_IDS), stamp);
                self.index_row(table, uuid, &row);
                self.tables
                    .entry(table.to_owned())
                    .or_default()
                    .insert(uuid, row);
            }
            RowUpdate::Modify(changes) | RowUpdate::Replace(changes) => {
                let mut row = self
                    .tables
                    .get_mut(table)
                    .and_then(|t| t.remove(&uuid))
                    .ok_or_else(|| missing(if is_diff { "modify" } else { "update" }))?;
                self.versions.touch(row.get(EXTERNAL_IDS), stamp);
                let result = self.change_row(table, table_schema, uuid, &mut row, changes, is_diff);
                self.versions.touch(row.get(EXTERNAL_IDS), stamp);
                self.tables
                    .entry(table.to_owned())
                    .or_default()
                    .insert(uuid, row);
                result?;
            }
            RowUpdate::Delete => {
                let old = self
                    .tables
                    .get_mut(table)
                    .and_then(|t| t.remove(&uuid))
                    .ok_or_else(|| missing("delete"))?;
                self.versions.touch(old.get(EXTERNAL_IDS), stamp);
                self.unindex_row(table, uuid, &old);
            }
        }
        Ok(())
    }

    fn change_row(
        &mut self,
        table: &str,
        table_schema: &TableSchema,
        uuid: Uuid,
        row: &mut Row,
        changes: Row,
        is_diff: bool,
    ) -> Result<(), ReplicaError> {
        for (column, change) in changes {
            let Some(column_schema) = table_schema.columns.get(&column) else {
                continue;
            };
            let ty = &column_schema.ty;
            let indexed = column == EXTERNAL_IDS || self.references.is_reference(table, &column);
            let old = row.remove(&column).unwrap_or_else(|| ty.default_value());
            let indexed_old = indexed.then(|| old.clone());
            let new = if is_diff {
                modify::apply_diff(ty, old, change)
                    .map_err(|source| value_error(table, uuid, &column, source))
            } else {
                normalize(table, uuid, &column, ty, change)
            };
            let new = match new {
                Ok(new) => new,
                Err(error) => {
                    // The caller resynchronizes; keep the row's shape meanwhile.
                    if let Some(old) = indexed_old {
                        self.index_column(table, uuid, &column, &old, false);
                    }
                    row.insert(column, ty.default_value());
                    return Err(error);
                }
            };
            if let Some(old) = indexed_old {
                self.index_column(table, uuid, &column, &old, false);
                self.index_column(table, uuid, &column, &new, true);
            }
            row.insert(column, new);
        }
        Ok(())
    }

    fn index_column(&mut self, table: &str, uuid: Uuid, column: &str, value: &Value, add: bool) {
        if column == EXTERNAL_IDS {
            if add {
                self.external_ids.add(table, uuid, value);
            } else {
                self.external_ids.remove(table, uuid, value);
            }
        }
        if self.references.is_reference(table, column) {
            self.references.update(table, uuid, column, value, add);
        }
    }

    fn index_row(&mut self, table: &str, uuid: Uuid, row: &Row) {
        for (column, value) in row {
            self.index_column(table, uuid, column, value, true);
        }
    }

    fn unindex_row(&mut self, table: &str, uuid: Uuid, row: &Row) {
        for (column, value) in row {
            self.index_column(table, uuid, column, value, false);
        }
    }

    /// A row by table and UUID.
    pub fn get(&self, table: &str, uuid: &Uuid) -> Option<&Row> {
        self.tables.get(table)?.get(uuid)
    }

    /// The rows of `table`, by UUID (none for a table the replica does not hold).
    pub fn rows(&self, table: &str) -> impl Iterator<Item = (&Uuid, &Row)> {
        self.tables.get(table).into_iter().flatten()
    }

    /// The rows of `table` whose `external_ids` has `key` = `value`, sorted. Indexed keys are
    /// looked up; other keys scan the table.
    /// The rows of `table` whose `external_ids` map `key` to `value`, when `key` is indexed;
    /// `None` when it is not (no scan).
    pub fn find_indexed(&self, table: &str, key: &str, value: &str) -> Option<Vec<Uuid>> {
        self.external_ids.get(table, key, value)
    }

    pub fn find(&self, table: &str, key: &str, value: &str) -> Vec<Uuid> {
        if let Some(found) = self.external_ids.get(table, key, value) {
            return found;
        }
        self.rows(table)
            .filter(|(_, row)| {
                row.get(EXTERNAL_IDS)
                    .is_some_and(|ids| string_pairs(ids).any(|(k, v)| k == key && v == value))
            })
            .map(|(uuid, _)| *uuid)
            .collect()
    }

    /// The rows referring to `target` (strongly or weakly) as (table, row, column), sorted.
    pub fn referrers(&self, target: &Uuid) -> Vec<(String, Uuid, String)> {
        self.references.referrers(target)
    }

    /// Total number of rows.
    pub fn len(&self) -> usize {
        self.tables.values().map(BTreeMap::len).sum()
    }

    /// Whether the replica holds no rows.
    pub fn is_empty(&self) -> bool {
        self.tables.values().all(BTreeMap::is_empty)
    }
}

impl PartialEq for Replica {
    /// Two replicas are equal when they hold the same rows (schemas and indexes aside).
    fn eq(&self, other: &Self) -> bool {
        fn non_empty(
            tables: &BTreeMap<String, BTreeMap<Uuid, Row>>,
        ) -> Vec<(&String, &BTreeMap<Uuid, Row>)> {
            tables.iter().filter(|(_, rows)| !rows.is_empty()).collect()
        }
        non_empty(&self.tables) == non_empty(&other.tables)
    }
}

fn value_error(table: &str, uuid: Uuid, column: &str, source: SchemaError) -> ReplicaError {
    ReplicaError::Value {
        table: table.to_owned(),
        uuid,
        column: column.to_owned(),
        source: Box::new(source),
    }
}

fn normalize(
    table: &str,
    uuid: Uuid,
    column: &str,
    ty: &crate::schema::ColumnType,
    value: Value,
) -> Result<Value, ReplicaError> {
    ty.normalize(value)
        .map_err(|source| value_error(table, uuid, column, source))
}
