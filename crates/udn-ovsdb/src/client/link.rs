//! One connection to the server: a writer task fed by a channel and the table of pending
//! requests, which the reader ([`super::reader`]) answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value as Json;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, trace};

use super::endpoint::WriteHalf;
use super::error::{ClientError, ProtocolError};
use super::monitor::MonitorMethod;
use crate::jsonrpc::{Message, MessageError, encode_request};
use crate::protocol::{Operation, OperationResult, TransactParams};
use crate::replica::Replica;

/// Room reserved per operation when encoding a `transact` (it grows as needed).
const BYTES_PER_OPERATION: usize = 384;
/// The id of our inactivity probes.
pub(super) const PROBE_ID: &str = "udn-probe";

/// A request waiting for its reply.
pub(super) enum Pending {
    /// A plain request: the reply's `result` (or the error) goes back to the caller.
    Call {
        method: String,
        reply: oneshot::Sender<Result<Json, ClientError>>,
    },
    /// A `transact` of `operations` operations: the reader decodes the reply's results.
    Transact {
        operations: usize,
        reply: oneshot::Sender<Result<Vec<OperationResult>, ClientError>>,
    },
    /// A monitor request: the reader applies the reply to the replica, starting from `fresh`
    /// unless `monitor_cond_since` found the client's last transaction.
    Monitor {
        method: MonitorMethod,
        fresh: Box<Replica>,
        reply: oneshot::Sender<Result<(), ClientError>>,
    },
}

/// Where the results of a `transact` arrive.
pub(crate) type TransactReply = oneshot::Receiver<Result<Vec<OperationResult>, ClientError>>;

/// Encoded requests' buffers, handed back by the writer once written and reused: a big
/// `transact` is encoded without allocating (and freeing) its buffer anew each time.
#[derive(Debug, Default)]
struct BufferPool(Mutex<Vec<Vec<u8>>>);

impl BufferPool {
    /// Buffers kept at most.
    const KEEP: usize = 8;
    /// Larger buffers (a rare huge transaction) are freed, not kept.
    const MAX_BYTES: usize = 8 << 20;

    fn take(&self, capacity: usize) -> Vec<u8> {
        let mut buffer = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
            .unwrap_or_default();
        buffer.reserve(capacity);
        buffer
    }

    fn give(&self, mut buffer: Vec<u8>) {
        if buffer.capacity() > Self::MAX_BYTES {
            return;
        }
        buffer.clear();
        let mut pool = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < Self::KEEP {
            pool.push(buffer);
        }
    }
}

/// The sending side of one connection, shared by the callers and the reader.
pub(crate) struct Link {
    writer: mpsc::UnboundedSender<Vec<u8>>,
    buffers: Arc<BufferPool>,
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
        let buffers = Arc::new(BufferPool::default());
        tokio::spawn(write_loop(write, queue, Arc::clone(&buffers)));
        Arc::new(Self {
            writer,
            buffers,
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

    pub(super) fn send(&self, message: &Message) -> Result<(), ClientError> {
        trace!(message = %message.to_json(), "ovsdb send");
        self.send_bytes(message.to_vec())
    }

    fn send_bytes(&self, bytes: Vec<u8>) -> Result<(), ClientError> {
        self.writer
            .send(bytes)
            .map_err(|_| ClientError::Disconnected)
    }

    /// Registers `pending` under a new id and sends the request `encode` writes for that id.
    fn request(
        &self,
        method: &str,
        capacity: usize,
        pending: Pending,
        encode: impl FnOnce(&mut Vec<u8>, u64) -> Result<(), MessageError>,
    ) -> Result<u64, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut bytes = self.buffers.take(capacity);
        encode(&mut bytes, id).map_err(|source| ClientError::Protocol {
            context: method.to_owned(),
            source: ProtocolError::Message(source),
        })?;
        trace!(message = %String::from_utf8_lossy(&bytes), "ovsdb send");
        self.pending()
            .as_mut()
            .ok_or(ClientError::Disconnected)?
            .insert(id, pending);
        let sent = self.send_bytes(bytes);
        if sent.is_err() {
            self.forget(id);
        }
        sent.map(|()| id)
    }

    fn request_json(
        &self,
        method: &str,
        params: &[Json],
        pending: Pending,
    ) -> Result<u64, ClientError> {
        self.request(method, 256, pending, |out, id| {
            encode_request(out, &id, method, params)
        })
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
        let id = self.request_json(method, &params, pending)?;
        self.wait(id, method, rx).await
    }

    /// Sends a `transact` encoded straight from `operations`; the reader decodes the results
    /// straight from the reply. Returns the request id and where the results arrive.
    pub(crate) fn send_transact(
        &self,
        database: &str,
        operations: &[Operation],
    ) -> Result<(u64, TransactReply), ClientError> {
        let (reply, rx) = oneshot::channel();
        let pending = Pending::Transact {
            operations: operations.len(),
            reply,
        };
        let params = TransactParams {
            database,
            operations,
        };
        let capacity = BYTES_PER_OPERATION.saturating_mul(operations.len() + 1);
        let id = self.request("transact", capacity, pending, |out, id| {
            encode_request(out, &id, "transact", &params)
        })?;
        Ok((id, rx))
    }

    /// Waits for the results of a `transact` sent with [`Link::send_transact`].
    pub(crate) async fn wait_transact(
        &self,
        id: u64,
        reply: TransactReply,
    ) -> Result<Vec<OperationResult>, ClientError> {
        self.wait(id, "transact", reply).await
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
        let id = self.request_json(method.as_str(), &params, pending)?;
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
                Pending::Transact { reply, .. } => {
                    let _ = reply.send(Err(ClientError::Disconnected));
                }
                Pending::Monitor { reply, .. } => {
                    let _ = reply.send(Err(ClientError::Disconnected));
                }
            }
        }
    }

    pub(super) fn take(&self, id: u64) -> Option<Pending> {
        self.pending().as_mut()?.remove(&id)
    }
}

async fn write_loop(
    mut write: WriteHalf,
    mut queue: mpsc::UnboundedReceiver<Vec<u8>>,
    buffers: Arc<BufferPool>,
) {
    while let Some(bytes) = queue.recv().await {
        if let Err(error) = write.write_all(&bytes).await {
            debug!(%error, "ovsdb write failed");
            return;
        }
        buffers.give(bytes);
    }
    let _ = write.shutdown().await;
}
