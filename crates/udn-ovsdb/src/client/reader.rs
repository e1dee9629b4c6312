//! The reader of one connection: frames what the server sends, decodes each message straight
//! from its bytes and dispatches it.
//!
//! The reader applies monitor replies and update notifications to the replica itself, in the
//! order they arrive, before it delivers any later reply: ovsdb-server sends the updates of a
//! transaction before the transaction's reply, so when `transact` returns the replica already
//! shows the commit.
//!
//! The socket is drained by a task of its own ([`read_ahead`]) into a bounded queue of chunks
//! that the decoding loop takes from: ovsdb-server reads no further request of a connection
//! while what it has to send on it is not flushed, so a client decoding a burst of updates
//! straight from the socket would hold up its own later transactions.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value as Json, json};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;
use tracing::{debug, trace, warn};

use super::endpoint::ReadHalf;
use super::error::{ClientError, ProtocolError};
use super::link::{Link, PROBE_ID, Pending};
use super::monitor::MONITOR_ID;
use super::state::SyncState;
use crate::jsonrpc::raw::tree;
use crate::jsonrpc::{
    JsonSplitter, Message, RawMessage, RawNotification, RawRequest, RawResponse, Request, Response,
};
use crate::protocol::{MonitorUpdate, decode_transact_result_slice};

/// Largest message accepted (initial monitor replies of big databases are large).
const MAX_MESSAGE_BYTES: usize = 1 << 30;
/// Bytes read from the socket at a time: messages within one read are decoded in place.
const READ_BUFFER_BYTES: usize = 256 * 1024;
/// Chunks read ahead of the decoding (at most this many times [`READ_BUFFER_BYTES`]).
const READ_AHEAD_CHUNKS: usize = 256;

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
    read: ReadHalf,
    probe_interval: Duration,
) -> ClientError {
    let (chunks, mut queue) = tokio::sync::mpsc::channel(READ_AHEAD_CHUNKS);
    let drain = tokio::spawn(read_ahead(read, chunks));
    let reason = read_messages(&link, &state, &mut queue, probe_interval).await;
    drain.abort();
    link.close();
    reason
}

/// Reads the socket into `chunks` as fast as it delivers (until it ends or fails, which
/// is queued as the last chunk), so the server never waits for the decoding.
async fn read_ahead(
    mut read: ReadHalf,
    chunks: tokio::sync::mpsc::Sender<std::io::Result<Vec<u8>>>,
) {
    let mut buf = vec![0u8; READ_BUFFER_BYTES];
    loop {
        // Copied out at its length: a queued chunk holds no more than it read.
        let result = read
            .read(&mut buf)
            .await
            .map(|n| buf.get(..n).unwrap_or_default().to_vec());
        let last = !matches!(&result, Ok(chunk) if !chunk.is_empty());
        if chunks.send(result).await.is_err() || last {
            return;
        }
    }
}

async fn read_messages(
    link: &Link,
    state: &SyncState,
    queue: &mut tokio::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    probe_interval: Duration,
) -> ClientError {
    let mut splitter = JsonSplitter::new(MAX_MESSAGE_BYTES);
    let mut last_received = Instant::now();
    let mut probing = false;
    loop {
        let next = if probe_interval.is_zero() {
            queue.recv().await
        } else {
            let waited = if probing { 2 } else { 1 };
            let deadline = last_received + probe_interval * waited;
            match tokio::time::timeout_at(deadline, queue.recv()).await {
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
        let buf = match next {
            None => return ClientError::Disconnected,
            Some(Ok(buf)) if buf.is_empty() => return ClientError::Disconnected,
            Some(Ok(buf)) => buf,
            Some(Err(error)) => {
                debug!(%error, "ovsdb read failed");
                return ClientError::Disconnected;
            }
        };
        last_received = Instant::now();
        probing = false;
        let mut frames = splitter.frames(&buf);
        while let Some(bytes) = frames.next_message() {
            let bytes = match bytes {
                Ok(bytes) => bytes,
                Err(error) => return protocol("stream", ProtocolError::Framing(error)),
            };
            let message = match RawMessage::from_slice(bytes) {
                Ok(message) => message,
                Err(error) => return protocol("message", ProtocolError::Message(error)),
            };
            if let Err(error) = dispatch(link, state, message) {
                return error;
            }
        }
    }
}

fn dispatch(link: &Link, state: &SyncState, message: RawMessage<'_>) -> Result<(), ClientError> {
    match message {
        RawMessage::Response(response) => {
            let id: Json =
                tree(response.id).map_err(|e| protocol("message", ProtocolError::Message(e)))?;
            if id == json!(PROBE_ID) {
                trace!("ovsdb echo probe answered");
                return Ok(());
            }
            match id.as_u64().and_then(|id| link.take(id)) {
                Some(pending) => deliver(state, pending, &response),
                None => {
                    warn!(id = %id, "ovsdb reply to no pending request, ignored");
                    Ok(())
                }
            }
        }
        RawMessage::Request(request) => answer(link, &request),
        RawMessage::Notification(notification) => notify(state, &notification),
    }
}

/// Answers the server's requests: `echo` with its parameters, anything else with an error.
fn answer(link: &Link, request: &RawRequest<'_>) -> Result<(), ClientError> {
    let malformed = |e| protocol("message", ProtocolError::Message(e));
    let id = tree(request.id).map_err(malformed)?;
    let (result, error) = if request.method == "echo" {
        (tree(request.params).map_err(malformed)?, Json::Null)
    } else {
        warn!(method = %request.method, "ovsdb server request not supported");
        (Json::Null, json!("unknown method"))
    };
    link.send(&Message::Response(Response { id, result, error }))
}

/// Applies update notifications of our monitor to the replica; ignores other notifications.
fn notify(state: &SyncState, notification: &RawNotification<'_>) -> Result<(), ClientError> {
    let method = &*notification.method;
    let update =
        MonitorUpdate::from_notification_slice(method, notification.params.get().as_bytes())
            .map_err(|e| protocol(method, ProtocolError::Update(e)))?;
    match update {
        Some(update) if update.monitor_id == json!(MONITOR_ID) => state
            .apply_update(update)
            .map_err(|e| protocol(method, ProtocolError::Replica(e))),
        Some(_) => {
            debug!(method, "ovsdb update for another monitor, ignored");
            Ok(())
        }
        None => {
            debug!(method, "ovsdb notification ignored");
            Ok(())
        }
    }
}

/// A JSON-RPC error as [`ClientError::Rpc`]: its `error` tag and `details`.
fn rpc_error(method: &str, error: &Json) -> ClientError {
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
}

/// The reply's error as a client error, or `None` for a success (`"error": null`).
fn reply_error(method: &str, response: &RawResponse<'_>) -> Option<ClientError> {
    if response.error.get() == "null" {
        return None;
    }
    Some(match tree::<Json>(response.error) {
        Ok(Json::Null) => return None,
        Ok(error) => rpc_error(method, &error),
        Err(e) => protocol(method, ProtocolError::Message(e)),
    })
}

/// Hands a reply to its waiter. Monitor replies are loaded into the replica first; failing to
/// load one ends the connection.
fn deliver(
    state: &SyncState,
    pending: Pending,
    response: &RawResponse<'_>,
) -> Result<(), ClientError> {
    match pending {
        Pending::Call { method, reply } => {
            let result = match reply_error(&method, response) {
                Some(error) => Err(error),
                None => {
                    tree(response.result).map_err(|e| protocol(&method, ProtocolError::Message(e)))
                }
            };
            let _ = reply.send(result);
            Ok(())
        }
        Pending::Transact { operations, reply } => {
            let result = match reply_error("transact", response) {
                Some(error) => Err(error),
                None => decode_transact_result_slice(operations, response.result.get().as_bytes())
                    .map_err(ClientError::Transact),
            };
            let _ = reply.send(result);
            Ok(())
        }
        Pending::Monitor {
            method,
            fresh,
            reply,
        } => {
            if let Some(error) = reply_error(method.as_str(), response) {
                let _ = reply.send(Err(error));
                return Ok(());
            }
            let loaded = state.load_monitor_reply(method, response.result.get().as_bytes(), *fresh);
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
