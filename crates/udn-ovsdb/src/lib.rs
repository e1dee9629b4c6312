//! OVSDB protocol building blocks (RFC 7047), modelled on libovsdb's "operations as values":
//! typed values and rows, transaction operations and their results, and JSON-RPC 1.0 framing
//! and messages. Pure: no I/O.

pub mod jsonrpc;
pub mod protocol;
