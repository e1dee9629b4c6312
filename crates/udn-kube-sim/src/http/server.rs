//! The HTTP/1.1 server (hyper, keep-alive) over a [`SimService`], for `udn-kube-sim serve`
//! and for tests that want a real socket.

use std::future::Future;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::sim::Sim;

use super::SimService;

/// Why the server stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Accepting a connection failed.
    #[error("accepting a connection on {address} failed: {source}")]
    Accept {
        /// The listening address.
        address: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Serves `sim` on `listener` until the task is dropped.
pub async fn serve(sim: Sim, listener: TcpListener) -> Result<(), ServeError> {
    serve_with_shutdown(sim, listener, std::future::pending()).await
}

/// Serves `sim` on `listener` until `shutdown` completes; connections still open then
/// (watches) are left to end with the runtime.
pub async fn serve_with_shutdown(
    sim: Sim,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let address = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let service = SimService::new(sim);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => accepted.map_err(|source| ServeError::Accept {
                address: address.clone(),
                source,
            })?,
            () = &mut shutdown => return Ok(()),
        };
        let service = service.clone();
        tokio::spawn(async move {
            let handler = service_fn(move |request| {
                let mut service = service.clone();
                tower::Service::call(&mut service, request)
            });
            let connection = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), handler);
            if let Err(error) = connection.await {
                tracing::debug!(%peer, %error, "udn-kube-sim connection ended with an error");
            }
        });
    }
}
