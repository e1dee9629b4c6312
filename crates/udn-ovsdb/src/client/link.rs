//! One connection to the server: a writer task fed by a channel, the table of pending requests,
//! and the reader loop that frames and dispatches everything the server sends.
//!
//! The reader applies monitor replies and update notifications to the replica itself, in the
//! order they arrive, before it delivers any later reply: ovsdb-server sends the updates of a
//! transaction before the transaction's reply, so when `transact` returns the replica already
//! shows the commit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value as Json, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::{debug, trace, warn};

use super::endpoint::{ReadHalf, WriteHalf};
use super::error::{ClientError, ProtocolError};
use super::monitor::{MONITOR_ID, MonitorMethod};
use super::state::SyncState;
use crate::jsonrpc::{JsonSplitter, Message, Request, Response};
use crate::protocol::MonitorUpdate;
use crate::replica::Replica;

/// Largest message accepted (initial monitor replies of big databases are large).
const MAX_MESSAGE_BYTES: usize = 1 << 30;
/// The id of our inactivity probes.
const PROBE_ID: &str = "udn-probe";

/// A request waiting for its reply.
enum Pending {
    /// A plain request: the reply's `result` (or the error) goes back to the caller.
    Call {
        method: String,
        reply: oneshot::Sender<Result<Json, ClientError>>,
    },
    /// A monitor request: the reader applies the reply to the replica, starting from `fresh`
    /// unless `monitor_cond_since` found the client's last transaction.
    Monitor {
        method: MonitorMethod,
        fresh: Box<Replica>,
        reply: oneshot::Sender<Result<(), ClientError>>,
    },
}

/// The sending side of one connection, shared by the callers and the reader.
pub(crate) struct Link {
    writer: mpsc::UnboundedSender<Vec<u8>>,
    /// `None` once the connection is closed: new requests fail with `Disconnected`.
    pending: Mutex<Option<HashMap<u64, Pending>>>,
    next_id: AtomicU64,
    request_timeout: Duration,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

impl Link {
    /// Starts the writer task for `write` and returns the link.
    pub(crate) fn start(write: WriteHalf, request_timeout: Duration) -> Arc<Self> {
        let (writer, queue) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(write, queue));
        Arc::new(Self {
            writer,
            pending: Mutex::new(Some(HashMap::new())),
            next_id: AtomicU64::new(1),
            request_timeout,
        })
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Option<HashMap<u64, Pending>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the connection is still open.
    pub(crate) fn is_open(&self) -> bool {
        self.pending().is_some()
    }

    fn send(&self, message: &Message) -> Result<(), ClientError> {
        trace!(message = %message.to_json(), "ovsdb send");
        self.writer
            .send(message.to_vec())
            .map_err(|_| ClientError::Disconnected)
    }

    fn request(
        &self,
        method: &str,
        params: Vec<Json>,
        pending: Pending,
    ) -> Result<u64, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.pending()
            .as_mut()
            .ok_or(ClientError::Disconnected)?
            .insert(id, pending);
        let sent = self.send(&Message::Request(Request {
            id: json!(id),
            method: method.to_owned(),
            params,
        }));
        if sent.is_err() {
            self.forget(id);
        }
        sent.map(|()| id)
    }

    fn forget(&self, id: u64) {
        if let Some(pending) = self.pending().as_mut() {
            pending.remove(&id);
        }
    }

    async fn wait<T>(
        &self,
        id: u64,
        method: &str,
        reply: oneshot::Receiver<Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        match tokio::time::timeout(self.request_timeout, reply).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(ClientError::Disconnected),
            Err(_) => {
                self.forget(id);
                Err(ClientError::Timeout {
                    method: method.to_owned(),
                    timeout: self.request_timeout,
                })
            }
        }
    }

    /// Sends a request and waits for its `result`.
    pub(crate) async fn call(&self, method: &str, params: Vec<Json>) -> Result<Json, ClientError> {
        let (reply, rx) = oneshot::channel();
        let pending = Pending::Call {
            method: method.to_owned(),
            reply,
        };
        let id = self.request(method, params, pending)?;
        self.wait(id, method, rx).await
    }

    /// Sends a monitor request; the reader loads its reply into the replica.
    pub(crate) async fn monitor(
        &self,
        method: MonitorMethod,
        params: Vec<Json>,
        fresh: Replica,
    ) -> Result<(), ClientError> {
        let (reply, rx) = oneshot::channel();
        let pending = Pending::Monitor {
            method,
            fresh: Box::new(fresh),
            reply,
        };
        let id = self.request(method.as_str(), params, pending)?;
        self.wait(id, method.as_str(), rx).await
    }

    /// Closes the link: pending and later requests fail with `Disconnected`.
    pub(crate) fn close(&self) {
        let drained = self.pending().take();
        for pending in drained.into_iter().flat_map(HashMap::into_values) {
            match pending {
                Pending::Call { reply, .. } => {
                    let _ = reply.send(Err(ClientError::Disconnected));
                }
                Pending::Monitor { reply, .. } => {
                    let _ = reply.send(Err(ClientError::Disconnected));
                }
            }
        }
    }

    fn take(&self, id: &Json) -> Option<Pending> {
        let id = id.as_u64()?;
        self.pending().as_mut()?.remove(&id)
    }
}

async fn write_loop(mut write: WriteHalf, mut queue: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(bytes) = queue.recv().await {
        if let Err(error) = write.write_all(&bytes).await {
            debug!(%error, "ovsdb write failed");
            return;
        }
    }
    let _ = write.shutdown().await;
}

fn protocol(context: &str, source: ProtocolError) -> ClientError {
    ClientError::Protocol {
        context: context.to_owned(),
        source,
    }
}

/// Reads until the connection ends and returns why it ended. Closes the link on return.
pub(crate) async fn read_loop(
    link: Arc<Link>,
    state: Arc<SyncState>,
    mut read: ReadHalf,
    probe_interval: Duration,
) -> ClientError {
    let reason = read_messages(&link, &state, &mut read, probe_interval).await;
    link.close();
    reason
}

async fn read_messages(
    link: &Link,
    state: &SyncState,
    read: &mut ReadHalf,
    probe_interval: Duration,
) -> ClientError {
    let mut splitter = JsonSplitter::new(MAX_MESSAGE_BYTES);
    let mut buf = vec![0u8; 64 * 1024];
    let mut last_received = Instant::now();
    let mut probing = false;
    loop {
        let n = if probe_interval.is_zero() {
            read.read(&mut buf).await
        } else {
            let waited = if probing { 2 } else { 1 };
            let deadline = last_received + probe_interval * waited;
            match tokio::time::timeout_at(deadline, read.read(&mut buf)).await {
                Ok(result) => result,
                Err(_) if probing => {
                    return protocol(
                        "stream",
                        ProtocolError::ProbeUnanswered {
                            interval: probe_interval,
                        },
                    );
                }
                Err(_) => {
                    debug!(interval = ?probe_interval, "ovsdb connection idle, sending echo probe");
                    probing = true;
                    let probe = Message::Request(Request {
                        id: json!(PROBE_ID),
                        method: "echo".to_owned(),
                        params: Vec::new(),
                    });
                    if link.send(&probe).is_err() {
                        return ClientError::Disconnected;
                    }
                    continue;
                }
            }
        };
        let n = match n {
            Ok(0) => return ClientError::Disconnected,
            Ok(n) => n,
            Err(error) => {
                debug!(%error, "ovsdb read failed");
                return ClientError::Disconnected;
            }
        };
        last_received = Instant::now();
        probing = false;
        let messages = match splitter.push(buf.get(..n).unwrap_or_default()) {
            Ok(messages) => messages,
            Err(error) => return protocol("stream", ProtocolError::Framing(error)),
        };
        for bytes in messages {
            let message = Message::from_slice(&bytes);
            // Initial contents can be large: free the text before decoding further.
            drop(bytes);
            let message = match message {
                Ok(message) => message,
                Err(error) => return protocol("message", ProtocolError::Message(error)),
            };
            if let Err(error) = dispatch(link, state, message) {
                return error;
            }
        }
    }
}

fn dispatch(link: &Link, state: &SyncState, message: Message) -> Result<(), ClientError> {
    match message {
        Message::Response(response) => {
            if response.id == json!(PROBE_ID) {
                trace!("ovsdb echo probe answered");
                return Ok(());
            }
            match link.take(&response.id) {
                Some(pending) => deliver(state, pending, response),
                None => {
                    warn!(id = %response.id, "ovsdb reply to no pending request, ignored");
                    Ok(())
                }
            }
        }
        Message::Request(request) => {
            let (result, error) = if request.method == "echo" {
                (Json::Array(request.params), Json::Null)
            } else {
                warn!(method = %request.method, "ovsdb server request not supported");
                (Json::Null, json!("unknown method"))
            };
            link.send(&Message::Response(Response {
                id: request.id,
                result,
                error,
            }))
        }
        Message::Notification(notification) => {
            let update =
                MonitorUpdate::from_notification(&notification.method, &notification.params)
                    .map_err(|e| protocol(&notification.method, ProtocolError::Update(e)))?;
            match update {
                Some(update) if update.monitor_id == json!(MONITOR_ID) => state
                    .apply_update(update)
                    .map_err(|e| protocol(&notification.method, ProtocolError::Replica(e))),
                Some(_) => {
                    debug!(method = %notification.method, "ovsdb update for another monitor, ignored");
                    Ok(())
                }
                None => {
                    debug!(method = %notification.method, "ovsdb notification ignored");
                    Ok(())
                }
            }
        }
    }
}

/// Hands a reply to its waiter. Monitor replies are loaded into the replica first; failing to
/// load one ends the connection.
fn deliver(state: &SyncState, pending: Pending, response: Response) -> Result<(), ClientError> {
    let rpc_error = |method: &str, error: &Json| {
        let text = |json: &Json| {
            json.as_str()
                .map_or_else(|| json.to_string(), str::to_owned)
        };
        let (tag, details) = match error {
            Json::Object(o) => (
                o.get("error").map_or_else(|| error.to_string(), text),
                o.get("details").map(text),
            ),
            _ => (text(error), None),
        };
        ClientError::Rpc {
            method: method.to_owned(),
            error: tag,
            details,
        }
    };
    match pending {
        Pending::Call { method, reply } => {
            let result = if response.error.is_null() {
                Ok(response.result)
            } else {
                Err(rpc_error(&method, &response.error))
            };
            let _ = reply.send(result);
            Ok(())
        }
        Pending::Monitor {
            method,
            fresh,
            reply,
        } => {
            if !response.error.is_null() {
                let _ = reply.send(Err(rpc_error(method.as_str(), &response.error)));
                return Ok(());
            }
            let loaded = state.load_monitor_reply(method, response.result, *fresh);
            match loaded {
                Ok(()) => {
                    let _ = reply.send(Ok(()));
                    Ok(())
                }
                Err(source) => {
                    let _ = reply.send(Err(protocol(method.as_str(), source.clone())));
                    Err(protocol(method.as_str(), source))
                }
            }
        }
    }
}
