//! The desired state as plain data: units of ownership, each a list of rows we want, with
//! references to other desired rows or to existing rows.

use std::collections::BTreeMap;
use std::fmt;

use crate::protocol::{Atom, Row, Uuid, Value};

/// A unit of ownership (e.g. one network): applied atomically, stamped on every row as
/// `k8s.ovn.org/owner-type` and `k8s.ovn.org/owner`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnitKey {
    /// Owner type, e.g. `Network`.
    pub owner_type: String,
    /// Unit name, e.g. the network name.
    pub name: String,
}

impl UnitKey {
    /// A unit key.
    pub fn new(owner_type: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            owner_type: owner_type.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for UnitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner_type, self.name)
    }
}

/// Where a reference column points.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum RowRef {
    /// A row of this controller by table and row id: desired in the same plan, or already
    /// owned in the database.
    Desired {
        /// Table of the referenced row.
        table: String,
        /// Row id (`k8s.ovn.org/id`) of the referenced row.
        id: String,
    },
    /// Any existing row, e.g. one of another owner.
    Existing(Uuid),
    /// A row of another owner that an earlier transaction on the same connection inserts
    /// with this UUID ([`DesiredRow::insert_uuid`], [`Operation::Insert`]'s `uuid`), so it
    /// may not be in the view yet: not checked against it (the server checks it on commit,
    /// and a transaction naming a row that does not exist is rejected as a whole). Once
    /// the row exists it is planned, compared and fingerprinted as [`RowRef::Existing`].
    ///
    /// [`Operation::Insert`]: crate::protocol::Operation::Insert
    Ahead(Uuid),
}

impl RowRef {
    /// A reference to a desired (or owned) row of this controller.
    pub fn desired(table: impl Into<String>, id: impl Into<String>) -> Self {
        Self::Desired {
            table: table.into(),
            id: id.into(),
        }
    }
}

/// One row we want. `columns` holds non-reference columns (canonical or not: the engine
/// normalizes them with the server schema); `refs` holds reference columns. Columns not
/// named in either are not managed. `external_ids`, when given, is kept and the ownership
/// stamps are added to it. A multi-valued reference column of an existing row is changed by
/// `mutate insert`/`delete`, removing only elements this controller owns: elements of other
/// owners (e.g. their ports on our switch) stay, also a foreign row we once referred to.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredRow {
    /// Table name.
    pub table: String,
    /// Row id, unique per controller and table; stamped as `k8s.ovn.org/id`.
    pub id: String,
    /// The owner type stamped on this row instead of its unit's (`k8s.ovn.org/owner-type`),
    /// e.g. upstream's `NetpolNode` on a node's management-port ACL in a `Node` unit. Only
    /// for rows of non-root tables, and only a type declared for the unit's owner type with
    /// [`Engine::with_row_owner_type`](super::Engine::with_row_owner_type). The row still
    /// belongs to its unit (`k8s.ovn.org/owner` is the unit name). `None`: the unit's type.
    pub owner_type: Option<String>,
    /// Non-reference columns.
    pub columns: Row,
    /// Reference columns: the rows each one holds.
    pub refs: BTreeMap<String, Vec<RowRef>>,
    /// The UUID to give the row if it is inserted (see [`DesiredRow::insert_uuid`]); not
    /// compared: an existing row keeps its own.
    pub insert_uuid: Option<Uuid>,
}

impl DesiredRow {
    /// An empty row of `table` with row id `id`.
    pub fn new(table: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            table: table.into(),
            id: id.into(),
            owner_type: None,
            columns: Row::new(),
            refs: BTreeMap::new(),
            insert_uuid: None,
        }
    }

    /// Inserts the row, when it does not exist yet, with `uuid` rather than one the server
    /// picks, so that rows of other controllers (other transactions) can refer to it with
    /// [`RowRef::Ahead`] before it is committed.
    #[must_use]
    pub fn insert_uuid(mut self, uuid: Uuid) -> Self {
        self.insert_uuid = Some(uuid);
        self
    }

    /// Stamps `owner_type` on this row instead of the unit's owner type (see the field of
    /// that name for where it is allowed).
    #[must_use]
    pub fn owner_type(mut self, owner_type: impl Into<String>) -> Self {
        self.owner_type = Some(owner_type.into());
        self
    }

    /// The owner type stamped on this row in a unit of `unit`.
    pub(crate) fn stamped_owner_type<'a>(&'a self, unit: &'a UnitKey) -> &'a str {
        self.owner_type.as_deref().unwrap_or(&unit.owner_type)
    }

    /// Sets a column to `value`.
    #[must_use]
    pub fn value(mut self, column: &str, value: Value) -> Self {
        self.columns.insert(column.to_owned(), value);
        self
    }

    /// Sets a string column.
    #[must_use]
    pub fn string(self, column: &str, value: &str) -> Self {
        self.value(column, Value::Atom(Atom::String(value.to_owned())))
    }

    /// Sets an integer column.
    #[must_use]
    pub fn integer(self, column: &str, value: i64) -> Self {
        self.value(column, Value::Atom(Atom::Integer(value)))
    }

    /// Sets a boolean column.
    #[must_use]
    pub fn boolean(self, column: &str, value: bool) -> Self {
        self.value(column, Value::Atom(Atom::Boolean(value)))
    }

    /// Sets a set-of-strings column.
    #[must_use]
    pub fn strings<'a>(self, column: &str, values: impl IntoIterator<Item = &'a str>) -> Self {
        let atoms = values
            .into_iter()
            .map(|s| Atom::String(s.to_owned()))
            .collect();
        self.value(column, Value::Set(atoms))
    }

    /// Sets a string-to-string map column.
    #[must_use]
    pub fn map<'a>(
        self,
        column: &str,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let pairs = pairs
            .into_iter()
            .map(|(k, v)| (Atom::String(k.to_owned()), Atom::String(v.to_owned())))
            .collect();
        self.value(column, Value::Map(pairs))
    }

    /// Sets a reference column to exactly `targets`.
    #[must_use]
    pub fn refs(mut self, column: &str, targets: impl IntoIterator<Item = RowRef>) -> Self {
        self.refs
            .insert(column.to_owned(), targets.into_iter().collect());
        self
    }
}

/// All the rows one unit wants. A unit with no rows wants all its rows gone.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredUnit {
    /// The unit.
    pub key: UnitKey,
    /// Its rows.
    pub rows: Vec<DesiredRow>,
}

impl DesiredUnit {
    /// A unit with no rows yet.
    pub fn new(key: UnitKey) -> Self {
        Self {
            key,
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    #[must_use]
    pub fn row(mut self, row: DesiredRow) -> Self {
        self.rows.push(row);
        self
    }
}

/// Which owned rows a plan may delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Only rows of the given units: other units of this controller are left alone.
    Units,
    /// Every unit of this owner type: units present in the database but not given are
    /// deleted entirely. Every given unit must have this owner type.
    OwnerType(String),
    /// Every unit of each of these owner types (e.g. `Cluster`, `Node`, `RemoteNode` and
    /// `Pod` of one network's controller): units of these types present in the database but
    /// not given are deleted entirely, type by type as with [`Scope::OwnerType`]. Every given
    /// unit must have one of these owner types. A unit is its owner type and name: `Node/a`
    /// given does not keep `RemoteNode/a`.
    OwnerTypes(Vec<String>),
}

impl Scope {
    /// The owner types whose units not given are deleted (sorted, each once), or `None` for
    /// [`Scope::Units`].
    pub(crate) fn covered(&self) -> Option<Vec<&str>> {
        let mut types: Vec<&str> = match self {
            Self::Units => return None,
            Self::OwnerType(owner_type) => vec![owner_type.as_str()],
            Self::OwnerTypes(owner_types) => owner_types.iter().map(String::as_str).collect(),
        };
        types.sort_unstable();
        types.dedup();
        Some(types)
    }
}
