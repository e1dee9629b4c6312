//! The CNI server's transport, as upstream's: HTTP/1.1 on a unix socket (directory 0700,
//! socket 0600, no keep-alive), `POST /` for CNI requests and `POST /metrics` for the shim's
//! timing reports; each request gets upstream's 2-minute budget.

use std::future::Future;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::UnixListener;
use tracing::{debug, warn};
use udn_runtime::Shutdown;

/// Upstream's per-request budget (`kubeletDefaultCRIOperationTimeout`).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// A reply: status, content type and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status.
    pub status: StatusCode,
    /// `application/json` or `text/plain`.
    pub content_type: &'static str,
    /// The body.
    pub body: Bytes,
    /// `X-Content-Type-Options: nosniff` (Go's `http.Error` sets it on plain-text errors).
    pub nosniff: bool,
}

impl Reply {
    /// 200 with a JSON body.
    pub fn json(body: impl Into<Bytes>) -> Self {
        Self {
            status: StatusCode::OK,
            content_type: "application/json",
            body: body.into(),
            nosniff: false,
        }
    }

    /// 200 with an empty body (CHECK, STATUS, ...).
    pub fn empty() -> Self {
        Self {
            status: StatusCode::OK,
            content_type: "text/plain",
            body: Bytes::new(),
            nosniff: false,
        }
    }

    /// 400 with a CNI error JSON.
    pub fn cni_error(body: impl Into<Bytes>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            content_type: "application/json",
            body: body.into(),
            nosniff: false,
        }
    }

    /// 400 with plain text and a newline, as Go's `http.Error` (upstream's form for errors
    /// that are no CNI errors).
    pub fn text_error(text: impl Into<String>) -> Self {
        Self::text_error_bytes(format!("{}\n", text.into()))
    }

    /// 400 with the plain-text body `body` (already ending in a newline).
    pub fn text_error_bytes(body: impl Into<Bytes>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
            nosniff: true,
        }
    }
}

/// What answers the requests.
pub trait Handler: Send + Sync + 'static {
    /// A CNI request (upstream's `Request` JSON).
    fn request(&self, body: Bytes) -> impl Future<Output = Reply> + Send;
    /// The shim's report after a command (`{"command","elapsedTime","hasErr"}`).
    fn shim_metrics(&self, body: Bytes);
    /// The reply when a request runs out of time.
    fn timed_out(&self) -> Reply;
    /// The budget of one request (upstream's [`REQUEST_TIMEOUT`]).
    fn timeout(&self) -> Duration {
        REQUEST_TIMEOUT
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[error("CNI server socket {path}: {source}")]
pub struct ServerError {
    /// The socket.
    pub path: PathBuf,
    /// The error.
    #[source]
    pub source: std::io::Error,
}

/// Binds the socket: its directory created with mode 0700, a stale socket removed, the
/// socket made 0600.
pub fn bind(path: &Path) -> Result<UnixListener, ServerError> {
    let err = |source| ServerError {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(e)),
    }
    let listener = UnixListener::bind(path).map_err(err)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(err)?;
    Ok(listener)
}

/// Serves `listener` until `shutdown`; each connection on its own task.
pub async fn serve<H: Handler>(listener: UnixListener, handler: Arc<H>, shutdown: Shutdown) {
    loop {
        let accepted = tokio::select! {
            () = shutdown.wait() => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                warn!(error = %error, "CNI server accept failed");
                continue;
            }
        };
        let handler = Arc::clone(&handler);
        tokio::spawn(async move {
            let service = service_fn(move |request: http::Request<Incoming>| {
                let handler = Arc::clone(&handler);
                async move { Ok::<_, std::convert::Infallible>(route(&*handler, request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                debug!(error = %error, "CNI server connection ended with an error");
            }
        });
    }
}

async fn route<H: Handler>(handler: &H, request: http::Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            return respond(Reply::text_error(format!(
                "reading the request body: {error}"
            )));
        }
    };
    if parts.method != Method::POST {
        return respond(Reply {
            status: StatusCode::METHOD_NOT_ALLOWED,
            content_type: "text/plain",
            body: Bytes::from_static(b"only POST is served"),
            nosniff: false,
        });
    }
    match parts.uri.path() {
        "/" => match tokio::time::timeout(handler.timeout(), handler.request(body)).await {
            Ok(reply) => respond(reply),
            Err(_) => respond(handler.timed_out()),
        },
        "/metrics" => {
            handler.shim_metrics(body);
            respond(Reply::empty())
        }
        other => respond(Reply {
            status: StatusCode::NOT_FOUND,
            content_type: "text/plain",
            body: Bytes::from(format!("no handler for {other}")),
            nosniff: false,
        }),
    }
}

fn respond(reply: Reply) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(reply.body));
    *response.status_mut() = reply.status;
    if let Ok(value) = http::HeaderValue::from_str(reply.content_type) {
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, value);
    }
    if reply.nosniff {
        response.headers_mut().insert(
            http::header::X_CONTENT_TYPE_OPTIONS,
            http::HeaderValue::from_static("nosniff"),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::{Read as _, Write as _};
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Echo {
        metrics: Mutex<Vec<Bytes>>,
    }

    impl Handler for Echo {
        async fn request(&self, body: Bytes) -> Reply {
            if body.as_ref() == b"fail" {
                Reply::text_error("[ns/pod] no")
            } else {
                Reply::json(body)
            }
        }
        fn shim_metrics(&self, body: Bytes) {
            self.metrics.lock().unwrap().push(body);
        }
        fn timed_out(&self) -> Reply {
            Reply::text_error("timed out")
        }
    }

    fn post(socket: &Path, path: &str, body: &str) -> String {
        let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: dummy\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).unwrap();
        out
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_requests_and_metrics_on_a_private_socket() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("cni").join("ovn-cni-server.sock");
        std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
        std::fs::write(&socket, "stale").unwrap();
        let listener = bind(&socket).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(socket.parent().unwrap()), 0o700);
        assert_eq!(mode(&socket), 0o600);
        let handler = Arc::new(Echo::default());
        let shutdown = Shutdown::new();
        let server = tokio::spawn(serve(listener, Arc::clone(&handler), shutdown.clone()));
        let s = socket.clone();
        let (ok, failed, metrics) = tokio::task::spawn_blocking(move || {
            (
                post(&s, "/", r#"{"a":1}"#),
                post(&s, "/", "fail"),
                post(&s, "/metrics", r#"{"command":"ADD"}"#),
            )
        })
        .await
        .unwrap();
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.ends_with("\r\n\r\n{\"a\":1}"), "{ok}");
        assert!(
            ok.to_ascii_lowercase().contains("connection: close"),
            "{ok}"
        );
        assert!(
            failed.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{failed}"
        );
        assert!(failed.ends_with("[ns/pod] no\n"), "{failed}");
        assert!(failed.contains("nosniff"), "{failed}");
        assert!(metrics.starts_with("HTTP/1.1 200 OK\r\n"), "{metrics}");
        assert_eq!(
            handler.metrics.lock().unwrap().as_slice(),
            [Bytes::from_static(br#"{"command":"ADD"}"#)]
        );
        shutdown.trigger();
        server.await.unwrap();
    }
}
