//! An RFC 7047 client on tokio: one connection at a time over a unix socket or TCP, a monitor
//! feeding an in-memory [`Replica`], keepalive probes both ways, request timeouts and automatic
//! reconnection with a resync of the replica.
//!
//! Lifecycle: [`Client::connect`] connects, reads the server's schema, checks
//! [`ClientConfig::required`], monitors the wanted tables and columns the server has (with
//! `monitor_cond_since`, else `monitor_cond`, else `monitor`) and returns once the replica holds
//! the initial contents. When the connection drops, calls fail fast with
//! [`ClientError::Disconnected`] while a background task reconnects with backoff, re-reads the
//! schema and re-monitors; the replica is replaced by the server's current contents (or
//! updated incrementally when the server can resume from our last transaction) and
//! [`Client::generation`] increases.

mod config;
mod endpoint;
mod error;
mod link;
mod monitor;
mod reader;
mod state;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard};

use serde_json::{Value as Json, json};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};
use tracing::{debug, info, warn};

pub use config::ClientConfig;
pub use endpoint::{Endpoint, EndpointError};
pub use error::{ClientError, ProtocolError};
pub use monitor::MonitorMethod;
pub use state::SyncKind;

use crate::protocol::{Operation, OperationResult};
use crate::replica::Replica;
use crate::schema::{DbSchema, Requirements};
use link::Link;
use reader::read_loop;
use state::SyncState;

/// State shared by the client handle and its background tasks.
#[derive(Debug)]
struct Shared {
    config: ClientConfig,
    state: Arc<SyncState>,
    /// The server's full schema, as read at the last (re)connection.
    schema: RwLock<Arc<DbSchema>>,
    /// The live connection, when synced.
    link: Mutex<Option<Arc<Link>>>,
    /// The monitor method the server accepted at the last (re)connection.
    method: Mutex<Option<MonitorMethod>>,
    /// The generation of the replica while connected and synced; `None` while disconnected.
    synced: watch::Sender<Option<u64>>,
    /// The current connection's reader task.
    reader: Mutex<Option<AbortHandle>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A connection to one OVSDB database with a replica of the monitored tables.
#[derive(Debug)]
pub struct Client {
    shared: Arc<Shared>,
    supervisor: AbortHandle,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.supervisor.abort();
        if let Some(reader) = lock(&self.shared.reader).take() {
            reader.abort();
        }
        if let Some(link) = lock(&self.shared.link).take() {
            link.close();
        }
    }
}

impl Client {
    /// Connects, checks the server's schema against `config.required`, monitors and waits for
    /// the initial contents. Must run inside a tokio runtime.
    pub async fn connect(config: ClientConfig) -> Result<Self, ClientError> {
        let empty = Arc::new(DbSchema {
            name: config.database.clone(),
            version: String::new(),
            tables: BTreeMap::new(),
        });
        let shared = Arc::new(Shared {
            state: Arc::new(SyncState::new(Replica::new(Arc::clone(&empty), &[]))),
            schema: RwLock::new(empty),
            link: Mutex::new(None),
            method: Mutex::new(None),
            synced: watch::Sender::new(None),
            reader: Mutex::new(None),
            config,
        });
        let reader = establish(&shared).await?;
        let supervisor = tokio::spawn(supervise(Arc::clone(&shared), reader)).abort_handle();
        Ok(Self { shared, supervisor })
    }

    fn link(&self) -> Result<Arc<Link>, ClientError> {
        lock(&self.shared.link)
            .as_ref()
            .filter(|link| link.is_open())
            .cloned()
            .ok_or(ClientError::Disconnected)
    }

    /// The server's schema (as read at the last connection).
    pub fn schema(&self) -> Arc<DbSchema> {
        Arc::clone(
            &self
                .shared
                .schema
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Runs a transaction. When this returns, the replica already reflects the committed
    /// transaction. Fails with [`ClientError::Transact`] carrying the failing operation's index
    /// (or the commit error) and the server's error and details. After a
    /// [`ClientError::Timeout`] or [`ClientError::Disconnected`] the transaction may or may not
    /// have committed.
    pub async fn transact(&self, ops: Vec<Operation>) -> Result<Vec<OperationResult>, ClientError> {
        let link = self.link()?;
        debug!(operations = ops.len(), "ovsdb transact");
        let (id, reply) = link.send_transact(&self.shared.config.database, &ops)?;
        // Encoded and sent: free the operations while the server works.
        drop(ops);
        link.wait_transact(id, reply).await
    }

    /// [`Client::transact`] with borrowed operations: for callers that keep them (e.g. to
    /// retry), which spares copying them.
    pub async fn transact_slice(
        &self,
        ops: &[Operation],
    ) -> Result<Vec<OperationResult>, ClientError> {
        let link = self.link()?;
        debug!(operations = ops.len(), "ovsdb transact");
        let (id, reply) = link.send_transact(&self.shared.config.database, ops)?;
        link.wait_transact(id, reply).await
    }

    /// Read access to the replica. Do not hold it across an `.await` (clippy's
    /// `await_holding_lock` catches that): the connection's reader waits for it to apply updates.
    pub fn replica(&self) -> RwLockReadGuard<'_, Replica> {
        self.shared.state.read()
    }

    /// Waits until the client is connected and its replica synced. Waits as long as that
    /// takes (e.g. while the server is down): callers bound it with a timeout.
    pub async fn wait_synced(&self) -> Result<(), ClientError> {
        self.wait_generation(0).await.map(|_| ())
    }

    /// Waits until the client is connected with a replica synced after generation `after`
    /// (e.g. the generation seen before a disconnect), and returns the new generation. Waits as
    /// long as that takes: callers bound it with a timeout.
    pub async fn wait_resynced(&self, after: u64) -> Result<u64, ClientError> {
        self.wait_generation(after).await
    }

    async fn wait_generation(&self, after: u64) -> Result<u64, ClientError> {
        let mut synced = self.shared.synced.subscribe();
        let generation = synced
            .wait_for(|synced| synced.is_some_and(|generation| generation > after))
            .await
            .map_err(|_| ClientError::Disconnected)?;
        Ok(generation.unwrap_or(after))
    }

    /// A receiver that is marked changed whenever the replica changes (a monitor update or a
    /// resync was applied), e.g. to react to rows other clients write. The value counts the
    /// changes.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.shared.state.subscribe_changes()
    }

    /// Whether the client is connected and its replica synced.
    pub fn is_synced(&self) -> bool {
        self.shared.synced.borrow().is_some()
    }

    /// Increases on every (re)sync of the replica (1 after [`Client::connect`]).
    pub fn generation(&self) -> u64 {
        self.shared.state.generation()
    }

    /// The monitor method the server accepted at the last (re)connection.
    pub fn monitor_method(&self) -> Option<MonitorMethod> {
        *lock(&self.shared.method)
    }

    /// How the replica was last synced: in full, or incrementally when `monitor_cond_since`
    /// let the server send only what changed while the client was away (clustered servers;
    /// standalone ones report no transaction ids).
    pub fn last_sync(&self) -> Option<SyncKind> {
        self.shared.state.last_sync()
    }

    /// Sends an `echo` and checks the server returns its parameters.
    pub async fn echo(&self) -> Result<(), ClientError> {
        let params = vec![json!("udn")];
        let result = self.link()?.call("echo", params.clone()).await?;
        if result == Json::Array(params) {
            Ok(())
        } else {
            Err(unexpected(
                "echo",
                &result,
                "expected the request's parameters",
            ))
        }
    }

    /// The databases the server holds (`list_dbs`).
    pub async fn list_dbs(&self) -> Result<Vec<String>, ClientError> {
        let result = self.link()?.call("list_dbs", Vec::new()).await?;
        let names = match &result {
            Json::Array(items) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>(),
            _ => None,
        };
        names.ok_or_else(|| unexpected("list_dbs", &result, "expected an array of names"))
    }

    /// Reads a database's schema from the server (`get_schema`).
    pub async fn get_schema(&self, database: &str) -> Result<DbSchema, ClientError> {
        let link = self.link()?;
        get_schema(&link, database).await
    }
}

fn unexpected(method: &str, json: &Json, reason: &'static str) -> ClientError {
    ClientError::Protocol {
        context: method.to_owned(),
        source: ProtocolError::Unexpected {
            json: json.to_string(),
            reason,
        },
    }
}

async fn get_schema(link: &Link, database: &str) -> Result<DbSchema, ClientError> {
    let json = link.call("get_schema", vec![json!(database)]).await?;
    DbSchema::parse(&json).map_err(|source| ClientError::SchemaParse {
        database: database.to_owned(),
        source,
    })
}

/// Opens a connection and syncs the replica over it. On success the connection becomes the
/// client's live link and its reader task is returned.
async fn establish(shared: &Arc<Shared>) -> Result<JoinHandle<ClientError>, ClientError> {
    let config = &shared.config;
    let opened = tokio::time::timeout(config.request_timeout, config.endpoint.open()).await;
    let (read, write) = opened
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
        .map_err(|source| ClientError::Connect {
            endpoint: config.endpoint.to_string(),
            source,
        })?;
    let link = Link::start(write, config.request_timeout);
    let reader = tokio::spawn(read_loop(
        Arc::clone(&link),
        Arc::clone(&shared.state),
        read,
        config.probe_interval,
    ));
    if let Err(error) = sync(shared, &link).await {
        reader.abort();
        link.close();
        return Err(error);
    }
    *lock(&shared.reader) = Some(reader.abort_handle());
    *lock(&shared.link) = Some(link);
    shared.synced.send_replace(Some(shared.state.generation()));
    Ok(reader)
}

/// The wanted tables with an empty column set expanded to all the server's columns.
fn expand_wanted(wanted: &Requirements, schema: &DbSchema) -> Requirements {
    let mut out = wanted.clone();
    for (table, columns) in &mut out.tables {
        if columns.is_empty()
            && let Some(table_schema) = schema.table(table)
        {
            columns.extend(table_schema.columns.keys().cloned());
        }
    }
    out
}

/// Reads the schema, checks requirements and monitors, loading the replica.
async fn sync(shared: &Shared, link: &Link) -> Result<(), ClientError> {
    let config = &shared.config;
    let schema = get_schema(link, &config.database).await?;
    schema
        .check(&config.required)
        .map_err(ClientError::Schema)?;
    let wanted = expand_wanted(&config.monitor, &schema);
    let columns = schema.monitorable(&wanted);
    for table in wanted.tables.keys().filter(|t| !columns.contains_key(*t)) {
        info!(table = %table, version = %schema.version, "ovsdb server lacks a wanted table, not monitored");
    }
    let restricted = Arc::new(schema.restricted_to(&wanted));
    let keys: Vec<&str> = config.indexed_keys.iter().map(String::as_str).collect();
    // Resume from the last transaction only when the replica holds the same tables/columns.
    let since = {
        let replica = shared.state.read();
        (replica.schema() == &*restricted)
            .then(|| shared.state.last_txn_id())
            .flatten()
    };
    let mut accepted = None;
    for method in MonitorMethod::PREFERENCE {
        let fresh = Replica::new(Arc::clone(&restricted), &keys);
        let params = method.params(&config.database, &columns, &config.conditions, since);
        match link.monitor(method, params, fresh).await {
            Ok(()) => {
                accepted = Some(method);
                break;
            }
            Err(ClientError::Rpc { error, .. }) if error == "unknown method" => {
                debug!(
                    method = method.as_str(),
                    "ovsdb server lacks monitor method, trying the next"
                );
            }
            Err(error) => return Err(error),
        }
    }
    let Some(method) = accepted else {
        return Err(ClientError::Rpc {
            method: MonitorMethod::Plain.as_str().to_owned(),
            error: "unknown method".to_owned(),
            details: None,
        });
    };
    *lock(&shared.method) = Some(method);
    *shared
        .schema
        .write()
        .unwrap_or_else(PoisonError::into_inner) = Arc::new(schema);
    Ok(())
}

/// Waits for the live connection to end, then reconnects with backoff, forever.
async fn supervise(shared: Arc<Shared>, mut reader: JoinHandle<ClientError>) {
    let (min_delay, max_delay) = shared.config.reconnect_backoff;
    loop {
        let reason = reader.await.unwrap_or(ClientError::Disconnected);
        if let Some(link) = lock(&shared.link).take() {
            link.close();
        }
        shared.synced.send_replace(None);
        warn!(endpoint = %shared.config.endpoint, error = %error_chain(&reason), "ovsdb connection lost, reconnecting");
        let mut delay = min_delay;
        reader = loop {
            tokio::time::sleep(delay).await;
            match establish(&shared).await {
                Ok(reader) => {
                    info!(endpoint = %shared.config.endpoint, generation = shared.state.generation(), "ovsdb reconnected and resynced");
                    break reader;
                }
                Err(error) => {
                    warn!(endpoint = %shared.config.endpoint, error = %error_chain(&error), retry_in = ?delay, "ovsdb reconnect failed");
                    delay = (delay * 2).min(max_delay);
                }
            }
        };
    }
}

/// An error with its sources, for logs.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
