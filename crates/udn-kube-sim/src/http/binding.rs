//! `POST /api/v1/namespaces/<ns>/pods/<name>/binding`: the body is a v1 Binding (JSON or
//! protobuf); the answer a success Status (201) or the store's error.

use bytes::Bytes;
use http::{Method, Response};
use serde_json::Value;

use crate::error::ApiError;
use crate::sim::Sim;

use super::body::ResponseBody;
use super::query::Query;
use super::{protobuf, response};

/// Serves one request on a pod's `binding` subresource (only POST is allowed, as upstream's
/// create-only `BindingREST`).
pub(crate) fn serve(
    sim: &Sim,
    method: &Method,
    query: &Query,
    body: &Bytes,
    namespace: &str,
    name: &str,
) -> Result<Response<ResponseBody>, ApiError> {
    if method != Method::POST {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let binding: Value = if protobuf::is_protobuf(body) {
        protobuf::decode(body)?
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the body of the request could not be decoded as a Binding: {e}"
            ))
        })?
    };
    let opts = query.write_options()?;
    let status = sim.bind(namespace, name, &binding, &opts)?;
    Ok(response::json(201, &status, query.pretty()))
}
