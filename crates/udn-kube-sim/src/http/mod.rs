//! The HTTP face of the [`Sim`]: a [`SimService`] (`tower::Service`) that routes requests
//! exactly as kube-apiserver does, usable in-process by `kube::Client::new` (no socket)
//! or over HTTP/1.1 on loopback through [`serve`].
//!
//! Served: `/version`, `/healthz` (`/livez`, `/readyz`), legacy and aggregated discovery
//! (`/api`, `/apis`, `/apis/<group>`, `/api/v1`, `/apis/<group>/<version>`), the
//! `/openapi/v3` documents kubectl needs for `--validate=strict`, and every resource path
//! with get, list, watch, create, update, patch, delete and deletecollection, in JSON,
//! Table (`kubectl get`) or PartialObjectMetadata form.

// `ApiError` is the contract's error type; the HTTP layer passes it by value exactly as the
// `Sim` API returns it, and turns it into a response at one place.
#![allow(clippy::result_large_err)]

mod accept;
mod binding;
mod body;
mod discovery;
mod handler;
mod openapi;
mod protobuf;
mod query;
mod response;
mod route;
mod server;
mod table;
mod watch;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{ACCEPT, HOST};
use http::{Method, Request, Response};
use http_body_util::BodyExt;

use crate::error::ApiError;
use crate::sim::Sim;

pub use body::ResponseBody;
pub use discovery::KUBERNETES_VERSION;
pub use server::{ServeError, serve, serve_with_shutdown};

use accept::{Encoding, Endpoint, Representation, error_encoding, negotiate};
use query::Query;
use route::Route;

/// The largest request body accepted (as the real server's 3 MiB limit).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// A `tower::Service` answering Kubernetes API requests from a [`Sim`]:
/// `kube::Client::new(SimService::new(sim), "default")` is a client of the in-memory
/// server with no socket in between.
#[derive(Clone, Debug)]
pub struct SimService {
    sim: Sim,
}

impl SimService {
    /// A service over `sim` (clones share its state).
    pub fn new(sim: Sim) -> Self {
        Self { sim }
    }

    /// The server behind the service.
    pub fn sim(&self) -> &Sim {
        &self.sim
    }
}

impl<B> tower::Service<Request<B>> for SimService
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let sim = self.sim.clone();
        Box::pin(async move { Ok(handle(&sim, request).await) })
    }
}

/// Answers one request.
async fn handle<B>(sim: &Sim, request: Request<B>) -> Response<ResponseBody>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = request.into_parts();
    let query = Query::parse(parts.uri.query());
    let pretty = query.pretty();
    let errors = match &parts.uri.path() {
        path if path.starts_with("/api/") || path.starts_with("/apis/") => {
            error_encoding(parts.headers.get(ACCEPT).and_then(|v| v.to_str().ok()))
        }
        _ => Encoding::Json,
    };
    let body = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            let error = ApiError {
                code: 413,
                reason: "RequestEntityTooLarge",
                message: format!("Request entity too large: limit is {MAX_BODY}"),
                name: None,
                group: None,
                kind: None,
                causes: Vec::new(),
            };
            return response::error(&error, pretty, errors);
        }
        Err(e) => {
            let error = ApiError::bad_request(format!("reading the request body failed: {e}"));
            return response::error(&error, pretty, errors);
        }
    };
    let response =
        dispatch(sim, &parts, &query, body).unwrap_or_else(|e| response::error(&e, pretty, errors));
    tracing::debug!(
        method = %parts.method,
        uri = %parts.uri,
        status = response.status().as_u16(),
        "udn-kube-sim request"
    );
    response
}

fn dispatch(
    sim: &Sim,
    parts: &http::request::Parts,
    query: &Query,
    body: Bytes,
) -> Result<Response<ResponseBody>, ApiError> {
    let route = route::resolve(sim, parts.uri.path())?;
    if let Route::Resource(target) = &route {
        return handler::serve(
            sim,
            handler::ResourceRequest {
                target,
                method: &parts.method,
                headers: &parts.headers,
                query,
                body,
            },
        );
    }
    if let Route::PodBinding { namespace, name } = &route {
        return binding::serve(sim, &parts.method, query, &body, namespace, name);
    }
    if parts.method != Method::GET && parts.method != Method::HEAD {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let pretty = query.pretty();
    let accept = parts.headers.get(ACCEPT).and_then(|v| v.to_str().ok());
    let types = sim.resource_types();
    let document = match route {
        Route::Version => discovery::version(),
        Route::Health => return Ok(response::text(200, "ok")),
        Route::CoreVersions | Route::GroupList => {
            let core = matches!(route, Route::CoreVersions);
            let negotiated = negotiate(accept, Endpoint::Discovery)?;
            if let Representation::AggregatedDiscovery(version) = negotiated.representation {
                let list = discovery::aggregated(&types, core, version);
                let content_type = discovery::aggregated_content_type(version);
                return Ok(response::json_as(200, &list, pretty, &content_type));
            }
            if core {
                discovery::core_versions(&server_address(parts))
            } else {
                discovery::group_list(&types)
            }
        }
        Route::Group(group) => discovery::group(&types, &group),
        Route::ResourceList { group, version } => {
            discovery::resource_list(&types, &group, &version)
        }
        Route::OpenApiV3Root => openapi::root(sim, &types),
        Route::OpenApiV3 { group, version } => openapi::document(sim, &types, &group, &version),
        Route::Resource(_) | Route::PodBinding { .. } => {
            return Err(ApiError::resource_not_served());
        }
    };
    Ok(response::json(200, &document, pretty))
}

/// `host:port` the client used, for `/api`'s `serverAddressByClientCIDRs`.
fn server_address(parts: &http::request::Parts) -> String {
    parts
        .headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| parts.uri.authority().map(|a| a.to_string()))
        .unwrap_or_else(|| "127.0.0.1".to_owned())
}
