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
    /// The change version of the rows whose `external_ids` map `key` to `value` (the engine
    /// asks for [`super::OWNER_KEY`]): it must change whenever such a row, in any table, is
    /// inserted, modified (any column) or deleted, or gains or loses the pair, and never
    /// come back to a value it had (also not after a reload, or with another schema: the
    /// engine does not check a skipped unit against the schema again). The engine skips
    /// comparing a unit whose desired rows and
    /// version are those of a comparison that found nothing to do. `None` (the default):
    /// not tracked, every unit is compared.
    fn version(&self, key: &str, value: &str) -> Option<u64> {
        let _ = (key, value);
        None
    }
    /// The distinct values `key` has in the `external_ids` of the rows of `table` (the
    /// engine asks for [`super::OWNER_KEY`], to find units no longer desired), when the view
    /// can list them without reading every row; `None` (the default): it cannot, and the
    /// engine reads the rows of the owner type instead.
    fn values(&self, table: &str, key: &str) -> Option<Vec<&str>> {
        let _ = (table, key);
        None
    }
    /// The rows of `table` whose `external_ids` map [`super::OWNER_CONTROLLER_KEY`] to
    /// `controller`, when the view indexes that key (the engine then finds the units no
    /// longer desired among this controller's own rows, in time proportional to them rather
    /// than to every owner in the database); `None` (the default): it does not.
    fn controller_rows(&self, table: &str, controller: &str) -> Option<Vec<Uuid>> {
        let _ = (table, controller);
        None
    }
}
