//! udn's OVSDB library (RFC 7047), modelled on libovsdb's "operations as values": typed values
//! and rows, transaction operations and their results, JSON-RPC 1.0 framing and messages,
//! schemas with canonical values and compatibility checks, and the vendored OVN Northbound
//! schema.

pub mod client;
pub mod engine;
pub mod jsonrpc;
pub mod nb;
pub mod protocol;
pub mod replica;
pub mod schema;
pub mod testing;
