//! Client configuration.

use std::collections::BTreeMap;
use std::time::Duration;

use super::endpoint::Endpoint;
use crate::protocol::Condition;
use crate::schema::Requirements;

/// How to connect, what to monitor and what to require.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Server address.
    pub endpoint: Endpoint,
    /// Database name, e.g. `OVN_Northbound`.
    pub database: String,
    /// Tables and columns to keep in the replica; only those the server has are monitored. A
    /// table with an empty column set means all of its columns.
    pub monitor: Requirements,
    /// Per table, the rows to monitor: those matching all of these conditions (the
    /// `where` of `monitor_cond` and `monitor_cond_since`). A server offering only plain
    /// `monitor` sends every row, so readers still check what they rely on. Tables not
    /// named: every row.
    pub conditions: BTreeMap<String, Vec<Condition>>,
    /// Tables and columns the server must have; connecting fails naming the missing ones.
    pub required: Requirements,
    /// `external_ids` keys the replica indexes for [`Replica::find`](crate::replica::Replica::find).
    pub indexed_keys: Vec<String>,
    /// How long a request waits for its reply.
    pub request_timeout: Duration,
    /// After this long without receiving anything the client sends an `echo` and drops the
    /// connection if nothing arrives within the same time again. Zero disables probing.
    pub probe_interval: Duration,
    /// Delay before the first reconnection attempt, doubling up to the second value.
    pub reconnect_backoff: (Duration, Duration),
}

impl ClientConfig {
    /// A configuration with nothing monitored or required, a 30 s request timeout, a 5 s probe
    /// interval and a 100 ms .. 5 s reconnection backoff.
    pub fn new(endpoint: Endpoint, database: &str) -> Self {
        Self {
            endpoint,
            database: database.to_owned(),
            monitor: Requirements::default(),
            conditions: BTreeMap::new(),
            required: Requirements::default(),
            indexed_keys: Vec::new(),
            request_timeout: Duration::from_secs(30),
            probe_interval: Duration::from_secs(5),
            reconnect_backoff: (Duration::from_millis(100), Duration::from_secs(5)),
        }
    }
}
