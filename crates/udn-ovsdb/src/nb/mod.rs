//! The OVN Northbound database as vendored in `schema/ovn-nb.ovsschema` (OVN 23.03, schema
//! 7.0.0), and typed rows of each of its tables (generated from it by `cargo xtask codegen`).
//!
//! Each table `T` has a struct named in UpperCamelCase (`NB_Global` -> [`NbGlobal`]) with
//! `uuid` and one field per column (Rust keywords get a trailing `_`: `type_`, `match_`), a
//! module of name constants (`logical_switch::TABLE`, `logical_switch::PORTS`) and a
//! [`Table`] impl converting to and from protocol rows.

mod generated;

/// The typed-table trait under its first name (it is [`crate::table::Table`], shared by
/// every vendored database).
pub use crate::table::Table as NbTable;
pub use crate::table::{RowError, Table};
pub use generated::*;

use crate::schema::{DbSchema, SchemaError};

/// The vendored `OVN_Northbound` schema, verbatim.
pub const SCHEMA_JSON: &str = include_str!("../../schema/ovn-nb.ovsschema");

/// The vendored schema's version.
pub const SCHEMA_VERSION: &str = "7.0.0";

/// The database name.
pub const DATABASE: &str = "OVN_Northbound";

/// The vendored schema, parsed.
pub fn schema() -> Result<DbSchema, SchemaError> {
    DbSchema::from_text(SCHEMA_JSON)
}
