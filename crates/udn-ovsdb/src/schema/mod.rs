//! OVSDB schemas (RFC 7047 §3.2): parsing, canonical values per column type, and checking a
//! server's schema against what a client needs.

mod compat;
mod error;
mod normalize;
mod parse;
mod types;

pub use compat::{CompatibilityError, Missing, Requirements};
pub use error::SchemaError;
pub use normalize::atom_cmp;
pub use parse::enum_strings;
pub use types::{AtomicType, BaseType, ColumnSchema, ColumnType, DbSchema, RefType, TableSchema};
