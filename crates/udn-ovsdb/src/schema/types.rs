//! The parsed form of an `.ovsschema` (RFC 7047 §3.2): tables, columns and their types.

use std::collections::BTreeMap;

use crate::protocol::Atom;

/// A database schema as the server (or a vendored file) describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct DbSchema {
    /// Database name, e.g. `OVN_Northbound`.
    pub name: String,
    /// Schema version, e.g. `7.0.0`.
    pub version: String,
    /// Tables by name.
    pub tables: BTreeMap<String, TableSchema>,
}

/// One table of a schema.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSchema {
    /// Columns by name (without the implicit `_uuid` and `_version`).
    pub columns: BTreeMap<String, ColumnSchema>,
    /// Root tables keep rows nobody references; rows of other tables are garbage collected
    /// when no strong reference points at them.
    pub is_root: bool,
    /// Column sets whose values must be unique across rows.
    pub indexes: Vec<Vec<String>>,
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSchema {
    /// The column's type.
    pub ty: ColumnType,
    /// Not persisted by the server.
    pub ephemeral: bool,
    /// Whether the column may change after insertion.
    pub mutable: bool,
}

/// A column type (RFC 7047 `<type>`): a key type, an optional value type (maps) and bounds on
/// the number of elements.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnType {
    /// Type of scalars, set elements or map keys.
    pub key: BaseType,
    /// Type of map values; `None` for scalars and sets.
    pub value: Option<BaseType>,
    /// Minimum number of elements (0 or 1).
    pub min: u64,
    /// Maximum number of elements; `None` means `"unlimited"`.
    pub max: Option<u64>,
}

/// An atomic type with its constraints (RFC 7047 `<base-type>`).
#[derive(Debug, Clone, PartialEq)]
pub struct BaseType {
    /// The atomic type.
    pub atomic: AtomicType,
    /// Referenced table for `uuid` types that are references.
    pub ref_table: Option<String>,
    /// Strength of the reference (strong when the schema does not say).
    pub ref_type: RefType,
    /// Allowed values, when the schema restricts them.
    pub enum_values: Option<Vec<Atom>>,
}

/// RFC 7047 `<atomic-type>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicType {
    /// 64-bit signed integer.
    Integer,
    /// IEEE 754 double.
    Real,
    /// Boolean.
    Boolean,
    /// UTF-8 string.
    String,
    /// UUID.
    Uuid,
}

impl AtomicType {
    /// The schema spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Integer => "integer",
            Self::Real => "real",
            Self::Boolean => "boolean",
            Self::String => "string",
            Self::Uuid => "uuid",
        }
    }
}

/// Reference strength.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefType {
    /// The referenced row cannot be deleted while referenced; unreferenced non-root rows go.
    Strong,
    /// The server drops the reference when the referenced row goes.
    Weak,
}

impl DbSchema {
    /// A table by name.
    pub fn table(&self, name: &str) -> Option<&TableSchema> {
        self.tables.get(name)
    }

    /// A column by table and column name.
    pub fn column(&self, table: &str, column: &str) -> Option<&ColumnSchema> {
        self.tables.get(table)?.columns.get(column)
    }
}

impl ColumnType {
    /// A map column.
    pub fn is_map(&self) -> bool {
        self.value.is_some()
    }

    /// Exactly one element: a plain value.
    pub fn is_scalar(&self) -> bool {
        self.value.is_none() && self.min == 1 && self.max == Some(1)
    }

    /// A set (including optional values, which are sets of 0 or 1 element).
    pub fn is_set(&self) -> bool {
        !self.is_map() && !self.is_scalar()
    }

    /// The table this column refers to (through its keys, or its map values) and how.
    pub fn reference(&self) -> Option<(&str, RefType)> {
        fn reference(base: &BaseType) -> Option<(&str, RefType)> {
            base.ref_table.as_deref().map(|t| (t, base.ref_type))
        }
        reference(&self.key).or_else(|| self.value.as_ref().and_then(reference))
    }
}
