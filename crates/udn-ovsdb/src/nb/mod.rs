//! The OVN Northbound database as vendored in `schema/ovn-nb.ovsschema` (OVN 23.03, schema
//! 7.0.0).

/// The vendored `OVN_Northbound` schema, verbatim.
pub const SCHEMA_JSON: &str = include_str!("../../schema/ovn-nb.ovsschema");

/// The vendored schema's version.
pub const SCHEMA_VERSION: &str = "7.0.0";

/// The database name.
pub const DATABASE: &str = "OVN_Northbound";
