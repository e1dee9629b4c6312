//! udn's OVSDB library (RFC 7047), modelled on libovsdb's "operations as values". Layers,
//! from the wire up (see `docs/ovsdb.md`):
//!
//! - [`protocol`]: atoms, sets, maps, rows, the transaction operations and their results,
//!   monitor notifications; [`jsonrpc`]: JSON-RPC 1.0 framing and messages. Pure.
//! - [`schema`]: `.ovsschema` parsing, canonical values per column type, compatibility of a
//!   server's schema with what a client needs; [`nb`], [`sb`], [`vswitch`]: the vendored
//!   OVN Northbound, OVN Southbound and Open vSwitch schemas and typed tables generated from
//!   them, all implementing [`table::Table`]. Pure.
//! - [`replica`]: the in-memory copy of the monitored tables. Pure.
//! - [`client`]: the connection (unix or TCP): requests, monitor, echo, timeouts,
//!   reconnect and resync of the replica.
//! - [`engine`]: desired rows, the diff against the rows a controller owns, batched apply.
//! - [`testing`]: a private `ovsdb-server` per test.

pub mod client;
pub mod engine;
pub mod jsonrpc;
pub mod nb;
pub mod protocol;
pub mod replica;
pub mod sb;
pub mod schema;
pub mod table;
pub mod testing;
pub mod vswitch;
