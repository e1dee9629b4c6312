//! The Open vSwitch database as vendored in `schema/vswitch.ovsschema` (Open vSwitch 3.1,
//! schema 8.3.1), and typed rows of each of its tables (generated from it by `cargo xtask
//! codegen`), named as in [`crate::nb`]: `Open_vSwitch` -> [`OpenVswitch`] in module
//! `open_vswitch`, with its [`Table`] impl.
//!
//! The node agent writes the `Open_vSwitch` row's `external_ids` (the chassis identity and
//! encapsulation OVN reads) and bridges, ports and interfaces.

mod generated;

pub use crate::table::{RowError, Table};
pub use generated::*;

use crate::schema::{DbSchema, SchemaError};

/// The vendored `Open_vSwitch` schema, verbatim.
pub const SCHEMA_JSON: &str = include_str!("../../schema/vswitch.ovsschema");

/// The vendored schema's version.
pub const SCHEMA_VERSION: &str = "8.3.1";

/// The database name.
pub const DATABASE: &str = "Open_vSwitch";

/// The vendored schema, parsed.
pub fn schema() -> Result<DbSchema, SchemaError> {
    DbSchema::from_text(SCHEMA_JSON)
}
