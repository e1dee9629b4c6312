//! The admin HTTP server every udn binary runs: `/metrics` (Prometheus/OpenMetrics text of
//! the process's registry), `/healthz` (liveness) and `/readyz` (readiness), over HTTP/1.1.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::header::{ALLOW, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::signals::Shutdown;

/// Content type of `/metrics`.
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Content type of `/healthz` and `/readyz`.
const TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// Whether the process is ready to do its work (served at `/readyz`). Starts not ready.
///
/// Cheap to clone; every clone shares one flag.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    ready: Arc<AtomicBool>,
}

impl Readiness {
    /// A flag that starts not ready.
    pub fn new() -> Self {
        Self::default()
    }

    /// Mark the process ready (`true`) or not ready (`false`).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// Whether the process is ready.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

/// The admin server failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The listening socket could not be bound.
    #[error("binding the admin server to {addr}")]
    Bind {
        /// The requested address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Reading the bound address back failed.
    #[error("reading the admin server's local address (bound to {addr})")]
    LocalAddr {
        /// The requested address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// A bound, not yet serving, admin server.
#[derive(Debug)]
pub struct AdminServer {
    listener: TcpListener,
    addr: SocketAddr,
}

impl AdminServer {
    /// Bind the listening socket (port 0 picks a free port) and return the server with the
    /// address it is bound to. Needs a tokio runtime.
    pub async fn bind(addr: SocketAddr) -> Result<(Self, SocketAddr), AdminError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| AdminError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| AdminError::LocalAddr { addr, source })?;
        Ok((
            Self {
                listener,
                addr: local,
            },
            local,
        ))
    }

    /// Serve until `shutdown` is triggered: then stop accepting, let open connections
    /// finish their current request, and return.
    ///
    /// Failed accepts and broken connections are logged and do not stop the server.
    pub async fn serve(self, registry: Arc<Registry>, readiness: Readiness, shutdown: Shutdown) {
        tracing::info!(addr = %self.addr, "admin server listening");
        let state = Arc::new(State {
            registry,
            readiness,
        });
        loop {
            let accepted = tokio::select! {
                () = shutdown.wait() => break,
                accepted = self.listener.accept() => accepted,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "admin server accept failed");
                    continue;
                }
            };
            let state = Arc::clone(&state);
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let response = respond(&state, &request);
                    async move { Ok::<_, Infallible>(response) }
                });
                let connection =
                    http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                tokio::pin!(connection);
                let result = tokio::select! {
                    result = connection.as_mut() => result,
                    () = shutdown.wait() => {
                        connection.as_mut().graceful_shutdown();
                        connection.await
                    }
                };
                if let Err(error) = result {
                    tracing::debug!(%peer, %error, "admin connection ended with an error");
                }
            });
        }
        tracing::info!(addr = %self.addr, "admin server stopped");
    }
}

/// What the request handler reads.
#[derive(Debug)]
struct State {
    registry: Arc<Registry>,
    readiness: Readiness,
}

/// The response to one request.
fn respond(state: &State, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    if !matches!(path, "/metrics" | "/healthz" | "/readyz") {
        return text(StatusCode::NOT_FOUND, "not found");
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
        response
            .headers_mut()
            .insert(ALLOW, http::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    match path {
        "/metrics" => metrics(&state.registry),
        "/readyz" if !state.readiness.is_ready() => {
            text(StatusCode::SERVICE_UNAVAILABLE, "not ready")
        }
        _ => text(StatusCode::OK, "ok"),
    }
}

/// `/metrics`: the registry in OpenMetrics text.
fn metrics(registry: &Registry) -> Response<Full<Bytes>> {
    let mut body = String::new();
    if let Err(error) = prometheus_client::encoding::text::encode(&mut body, registry) {
        tracing::warn!(%error, "encoding metrics failed");
        return text(StatusCode::INTERNAL_SERVER_ERROR, "encoding metrics failed");
    }
    with_body(StatusCode::OK, METRICS_CONTENT_TYPE, body.into())
}

/// A plain-text response.
fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    with_body(
        status,
        TEXT_CONTENT_TYPE,
        Bytes::from_static(body.as_bytes()),
    )
}

/// A response with a body and a content type.
fn with_body(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    response
}
