//! What the planner reads: the server's schema and the rows of the database, with lookups by
//! `external_ids` and by reference. The client's replica implements it; tests use an
//! in-memory table set.

use crate::protocol::{Row, Uuid};
use crate::schema::DbSchema;

/// Read access to a copy of the database. Rows hold canonical values (see
/// [`crate::schema::ColumnType::normalize`]); a column missing from a row holds its default.
/// `Sync`: large plans read it from a few threads.
pub trait OwnedRowsView: Sync {
    /// The server's schema.
    fn schema(&self) -> &DbSchema;
    /// A row by table and UUID.
    fn row(&self, table: &str, uuid: &Uuid) -> Option<&Row>;
    /// The rows of `table` whose `external_ids` map `key` to `value`. The engine looks up
    /// the keys of [`super::INDEXED_KEYS`]; they should be indexed.
    fn find(&self, table: &str, key: &str, value: &str) -> Vec<Uuid>;
    /// Every row holding a reference to `target`: (table, row, column).
    fn referrers(&self, target: &Uuid) -> Vec<(String, Uuid, String)>;
}
