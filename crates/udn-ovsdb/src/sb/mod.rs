//! The OVN Southbound database as vendored in `schema/ovn-sb.ovsschema` (OVN 23.03, schema
//! 20.27.0), and typed rows of each of its tables (generated from it by `cargo xtask
//! codegen`), named as in [`crate::nb`]: `Port_Binding` -> [`PortBinding`] in module
//! `port_binding`, with its [`Table`] impl.
//!
//! udn writes few Southbound rows: the remote `Chassis` (with its `Encap`) of each node of
//! another zone, and the `chassis` of a remote port's `Port_Binding`.

mod generated;

pub use crate::table::{RowError, Table};
pub use generated::*;

use crate::schema::{DbSchema, SchemaError};

/// The vendored `OVN_Southbound` schema, verbatim.
pub const SCHEMA_JSON: &str = include_str!("../../schema/ovn-sb.ovsschema");

/// The vendored schema's version.
pub const SCHEMA_VERSION: &str = "20.27.0";

/// The database name.
pub const DATABASE: &str = "OVN_Southbound";

/// The vendored schema, parsed.
pub fn schema() -> Result<DbSchema, SchemaError> {
    DbSchema::from_text(SCHEMA_JSON)
}
