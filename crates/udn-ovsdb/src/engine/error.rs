//! Errors of planning (desired rows that cannot be written) and of applying (transactions
//! the server rejected or could not take), each naming the unit.

use std::fmt;
use std::sync::Arc;

use super::desired::UnitKey;
use crate::protocol::TransactError;
use crate::schema::SchemaError;

/// Where in the desired state a planning error is: unit, table and row id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowAt {
    /// The unit.
    pub unit: UnitKey,
    /// The table.
    pub table: String,
    /// The row id.
    pub id: String,
}

impl RowAt {
    pub(crate) fn boxed(unit: UnitKey, table: String, id: String) -> Box<Self> {
        Box::new(Self { unit, table, id })
    }
}

impl fmt::Display for RowAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unit {}: row {} id={:?}", self.unit, self.table, self.id)
    }
}

/// A desired state that cannot be planned; names the unit, table, row id and column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The same unit is given twice.
    #[error("unit {unit} is given twice")]
    DuplicateUnit {
        /// The unit.
        unit: UnitKey,
    },
    /// A unit's owner type is not one the scope covers.
    #[error("unit {unit} is outside the plan's scope (owner type {scope:?})")]
    OutOfScope {
        /// The unit.
        unit: UnitKey,
        /// The owner types the scope covers, separated by `", "`.
        scope: String,
    },
    /// A unit's or a scope's owner type is declared as a row owner type
    /// ([`Engine::with_row_owner_type`](super::Engine::with_row_owner_type)): rows stamped
    /// with it belong to units of another type.
    #[error(
        "owner type {owner_type:?} is a row owner type of {unit_type:?} units, not a unit owner type (given as {given})"
    )]
    RowOwnerTypeAsUnitType {
        /// The owner type.
        owner_type: String,
        /// The unit owner type it is declared for.
        unit_type: String,
        /// Where it was given: `unit <key>` or `scope`.
        given: String,
    },
    /// A desired row of a root table carries a row owner type: a gone unit's root rows are
    /// found by the unit's own owner type.
    #[error("{at}: row owner type {owner_type:?} on a row of root table {:?}: only rows of non-root tables may carry one", at.table)]
    RowOwnerTypeOnRoot {
        /// The row.
        at: Box<RowAt>,
        /// The row owner type.
        owner_type: String,
    },
    /// A desired row carries a row owner type not declared for its unit's owner type.
    #[error(
        "{at}: row owner type {owner_type:?} is not declared for units of owner type {:?} (Engine::with_row_owner_type)",
        at.unit.owner_type
    )]
    UndeclaredRowOwnerType {
        /// The row.
        at: Box<RowAt>,
        /// The row owner type.
        owner_type: String,
    },
    /// The server schema has no such table.
    #[error("{at}: the server schema (as monitored) has no table {:?}", at.table)]
    UnknownTable {
        /// The row.
        at: Box<RowAt>,
    },
    /// The table has no string-to-string `external_ids` column to carry ownership stamps.
    #[error("{at}: table {:?} has no external_ids string map, its rows cannot be owned", at.table)]
    NotOwnable {
        /// The row.
        at: Box<RowAt>,
    },
    /// The server schema has no such column.
    #[error("{at}: the server schema (as monitored) has no column {column:?}")]
    UnknownColumn {
        /// The row.
        at: Box<RowAt>,
        /// The column.
        column: String,
    },
    /// A reference column is given as a plain value; references go in `refs`.
    #[error("{at}: column {column:?} holds references, give it in refs")]
    ReferenceInColumns {
        /// The row.
        at: Box<RowAt>,
        /// The column.
        column: String,
    },
    /// `refs` names a column that holds no references, or maps of references (unsupported).
    #[error("{at}: column {column:?} is not a set of references")]
    NotAReferenceSet {
        /// The row.
        at: Box<RowAt>,
        /// The column.
        column: String,
    },
    /// A value does not fit its column type.
    #[error("{at}: column {column:?}")]
    BadValue {
        /// The row.
        at: Box<RowAt>,
        /// The column.
        column: String,
        /// Why.
        #[source]
        source: SchemaError,
    },
    /// The caller's `external_ids` sets an ownership stamp key.
    #[error("{at}: external_ids key {key:?} is reserved for the engine's ownership stamps")]
    ReservedKey {
        /// The row.
        at: Box<RowAt>,
        /// The key.
        key: String,
    },
    /// Two desired rows of the same table share a row id.
    #[error("{at}: the row is desired twice, also by unit {first}")]
    DuplicateRow {
        /// The second row.
        at: Box<RowAt>,
        /// The unit of the first row.
        first: UnitKey,
    },
    /// A reference targets a table other than the one the column refers to.
    #[error("{at}: column {column:?} refers to {expected:?} rows, not {target_table:?}")]
    WrongTarget {
        /// The row.
        at: Box<RowAt>,
        /// The column.
        column: String,
        /// The referenced table given.
        target_table: String,
        /// The table the column refers to.
        expected: String,
    },
    /// A reference to a row that is neither desired in this plan nor in the database (or is
    /// about to be deleted).
    #[error(
        "{at}: column {column:?} refers to {target}, which is neither desired nor in the database"
    )]
    DanglingRef {
        /// The row.
        at: Box<RowAt>,
        /// The column.
        column: String,
        /// The missing row: `Table id=..` or a UUID.
        target: String,
    },
    /// A new row of a non-root table has no strong reference from a desired row, so the
    /// server would garbage collect it at once.
    #[error("{at}: new row of non-root table {:?} is not strongly referenced by any desired row", at.table)]
    Unreferenced {
        /// The row.
        at: Box<RowAt>,
    },
    /// A differing column is immutable in the schema.
    #[error("{at}: column {column:?} is immutable and differs")]
    ImmutableColumn {
        /// The row.
        at: Box<RowAt>,
        /// The column.
        column: String,
    },
    /// New rows reference each other in a cycle, so no insert order exists.
    #[error("{at}: new row is part of a reference cycle among new rows")]
    Cycle {
        /// The row.
        at: Box<RowAt>,
    },
}

/// Why a unit was not applied.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UnitError {
    /// The server rejected the unit's transaction (sent on its own).
    #[error("unit {unit}: transaction rejected{}", describe_op(*op_index, op.as_deref()))]
    Rejected {
        /// The unit.
        unit: UnitKey,
        /// Index of the failing operation in the transaction, when the server names one
        /// (commit-time errors such as index collisions do not).
        op_index: Option<usize>,
        /// The failing operation, described as in the plan.
        op: Option<String>,
        /// The server's error and details.
        #[source]
        error: TransactError,
    },
    /// The unit shares its transaction with a unit the server rejected (new rows of one are
    /// held by the other).
    #[error("unit {unit}: not applied, it is written together with failed unit {failed}")]
    BundledWithFailed {
        /// The unit.
        unit: UnitKey,
        /// The rejected unit.
        failed: UnitKey,
    },
    /// The unit references new rows of a unit that failed.
    #[error("unit {unit}: not applied, it references new rows of failed unit {dependency}")]
    DependencyFailed {
        /// The unit.
        unit: UnitKey,
        /// The failed unit.
        dependency: UnitKey,
    },
    /// The server could not be reached or did not answer; the transaction may or may not
    /// have committed (the next plan, made after resync, tells).
    #[error("unit {unit}: transaction outcome unknown")]
    Unavailable {
        /// The unit.
        unit: UnitKey,
        /// The transport error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
}

fn describe_op(index: Option<usize>, op: Option<&str>) -> String {
    match (index, op) {
        (Some(index), Some(op)) => format!(" at operation {index} ({op})"),
        (Some(index), None) => format!(" at operation {index}"),
        _ => " at commit".to_owned(),
    }
}

impl UnitError {
    /// The unit this error is about.
    pub fn unit(&self) -> &UnitKey {
        match self {
            Self::Rejected { unit, .. }
            | Self::BundledWithFailed { unit, .. }
            | Self::DependencyFailed { unit, .. }
            | Self::Unavailable { unit, .. } => unit,
        }
    }

    /// A short, bounded label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Rejected { .. } => "rejected",
            Self::BundledWithFailed { .. } => "bundled_with_failed",
            Self::DependencyFailed { .. } => "dependency_failed",
            Self::Unavailable { .. } => "unavailable",
        }
    }

    /// Whether trying again later may succeed without a change of desired state.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, Self::Rejected { .. })
    }
}
