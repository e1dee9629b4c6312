//! Errors of the OVSDB client.

use std::time::Duration;

use crate::jsonrpc::{FramingError, MessageError};
use crate::protocol::{TransactError, UpdateError};
use crate::replica::ReplicaError;
use crate::schema::{CompatibilityError, SchemaError};

/// Why a client call or connection failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server could not be reached.
    #[error("cannot connect to OVSDB server at {endpoint}")]
    Connect {
        /// The endpoint, as `unix:<path>` or `tcp:<host>:<port>`.
        endpoint: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// No reply within the request timeout.
    #[error("OVSDB {method} request got no reply within {timeout:?}")]
    Timeout {
        /// The request's method.
        method: String,
        /// The timeout that expired.
        timeout: Duration,
    },
    /// Not connected: the connection dropped (before the reply, for a pending request) or is
    /// being re-established. Callers retry after [`Client::wait_synced`](super::Client::wait_synced).
    #[error("not connected to the OVSDB server (connection lost or being re-established)")]
    Disconnected,
    /// The transaction was rejected: by an operation (with its index) or at commit, carrying the
    /// server's error and details.
    #[error("OVSDB transaction failed")]
    Transact(#[source] TransactError),
    /// The server's schema lacks tables or columns the client requires.
    #[error("OVSDB server schema is not compatible")]
    Schema(#[source] CompatibilityError),
    /// The server's schema cannot be read.
    #[error("OVSDB server schema for database {database} cannot be parsed")]
    SchemaParse {
        /// The database.
        database: String,
        /// The underlying error.
        #[source]
        source: SchemaError,
    },
    /// The server answered a request with a JSON-RPC error.
    #[error("OVSDB {method} request failed on the server: {error} ({})", details.as_deref().unwrap_or("no details"))]
    Rpc {
        /// The request's method.
        method: String,
        /// The server's error tag (e.g. `unknown method`, `unknown database`).
        error: String,
        /// The server's details, when given.
        details: Option<String>,
    },
    /// The server sent something that cannot be used; the connection is dropped.
    #[error("OVSDB protocol error in {context}")]
    Protocol {
        /// What was being read: a method name, `stream` or `message`.
        context: String,
        /// What was wrong.
        #[source]
        source: ProtocolError,
    },
}

impl ClientError {
    /// Whether the call may succeed if retried after the client reconnects.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Connect { .. } | Self::Timeout { .. } | Self::Disconnected
        )
    }
}

/// The detail of a [`ClientError::Protocol`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProtocolError {
    /// The byte stream cannot be split into messages.
    #[error("invalid message framing")]
    Framing(#[source] FramingError),
    /// A message is not JSON-RPC.
    #[error("invalid JSON-RPC message")]
    Message(#[source] MessageError),
    /// A monitor reply or notification cannot be decoded.
    #[error("invalid monitor update")]
    Update(#[source] UpdateError),
    /// A monitor reply or notification does not fit the replica.
    #[error("update does not fit the replica")]
    Replica(#[source] ReplicaError),
    /// A reply has an unexpected shape.
    #[error("unexpected reply {json}: {reason}")]
    Unexpected {
        /// The reply, rendered.
        json: String,
        /// What was expected.
        reason: &'static str,
    },
    /// The server did not answer our inactivity probe.
    #[error("no reply to the inactivity probe within {interval:?}")]
    ProbeUnanswered {
        /// The probe interval.
        interval: Duration,
    },
}
