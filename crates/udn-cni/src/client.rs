//! The exchange with the node agent's CNI server, as upstream's shim (`doCNI`,
//! `postMetrics`): `POST http://dummy/` with the request, then `POST http://dummy/metrics`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use udn_cni_protocol::{
    DEFAULT_SERVER_SOCKET, METRICS_PATH, REQUEST_PATH, ReplyError, Request, RequestMetrics,
    SERVER_REQUEST_TIMEOUT,
};

use crate::http::{self, HttpError};

/// The environment variable that overrides the server socket path (tests and sandboxes
/// run several node agents side by side; upstream's path is fixed).
pub(crate) const SOCKET_ENV: &str = "UDN_CNI_SERVER_SOCKET";

/// How long the plugin waits for an answer: the server's own 2-minute budget plus a
/// margin, so the server's timeout error (not ours) reaches the runtime. Upstream's shim
/// sets no timeout at all; a hung server would then hold the runtime's call forever.
pub(crate) const REQUEST_TIMEOUT: Duration =
    SERVER_REQUEST_TIMEOUT.saturating_add(Duration::from_secs(30));

/// The metrics post is best effort and must not hold up the answer.
const METRICS_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a request brought no result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ForwardError {
    /// No HTTP answer (no server, broken connection, timeout, not HTTP).
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A non-200 answer.
    #[error(transparent)]
    Reply(#[from] ReplyError),
}

/// The server at one socket.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    socket: PathBuf,
}

impl Server {
    /// The socket named by `UDN_CNI_SERVER_SOCKET`, else upstream's.
    pub(crate) fn from_env(env: &BTreeMap<String, String>) -> Server {
        let socket = env
            .get(SOCKET_ENV)
            .filter(|s| !s.is_empty())
            .map_or(DEFAULT_SERVER_SOCKET, String::as_str);
        Server {
            socket: PathBuf::from(socket),
        }
    }

    /// The socket path.
    pub(crate) fn socket(&self) -> &std::path::Path {
        &self.socket
    }

    /// Posts a CNI request; the body of a 200 answer.
    pub(crate) fn request(&self, request: &Request) -> Result<Vec<u8>, ForwardError> {
        let answer = http::post_json(
            &self.socket,
            REQUEST_PATH,
            &request.to_json(),
            REQUEST_TIMEOUT,
        )?;
        match ReplyError::from_reply(answer.status, &answer.body) {
            Some(err) => Err(err.into()),
            None => Ok(answer.body),
        }
    }

    /// Posts the command's duration; failures are ignored, as upstream's shim does.
    pub(crate) fn post_metrics(&self, metrics: &RequestMetrics) {
        let _ = http::post_json(
            &self.socket,
            METRICS_PATH,
            &metrics.to_json(),
            METRICS_TIMEOUT,
        );
    }
}
