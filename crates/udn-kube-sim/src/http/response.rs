//! Building responses: JSON documents, `metav1.Status` errors, streamed watches.

use bytes::Bytes;
use futures::stream::BoxStream;
use http::header::{CONTENT_TYPE, HeaderValue, TRANSFER_ENCODING};
use http::{Response, StatusCode};
use serde_json::Value;

use crate::error::ApiError;

use super::body::ResponseBody;

const JSON: &str = "application/json";

fn status_code(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn build(code: u16, content_type: &str, body: ResponseBody) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    *response.status_mut() = status_code(code);
    let content_type =
        HeaderValue::from_str(content_type).unwrap_or(HeaderValue::from_static(JSON));
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    response
}

fn encode(value: &Value, pretty: bool) -> Vec<u8> {
    let encoded = if pretty {
        serde_json::to_vec_pretty(value)
    } else {
        serde_json::to_vec(value)
    };
    let mut bytes = encoded.unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// A JSON document with HTTP `code`.
pub(crate) fn json(code: u16, value: &Value, pretty: bool) -> Response<ResponseBody> {
    json_as(code, value, pretty, JSON)
}

/// A JSON document with HTTP `code` and a specific `Content-Type`.
pub(crate) fn json_as(
    code: u16,
    value: &Value,
    pretty: bool,
    content_type: &str,
) -> Response<ResponseBody> {
    build(
        code,
        content_type,
        ResponseBody::full(encode(value, pretty)),
    )
}

/// The `metav1.Status` of `error`, with its HTTP code.
pub(crate) fn error(error: &ApiError, pretty: bool) -> Response<ResponseBody> {
    json(error.code, &error.to_status(), pretty)
}

/// A plain-text body (health checks).
pub(crate) fn text(code: u16, body: &'static str) -> Response<ResponseBody> {
    build(
        code,
        "text/plain; charset=utf-8",
        ResponseBody::full(Bytes::from_static(body.as_bytes())),
    )
}

/// A streamed watch: HTTP 200, JSON lines, chunked.
pub(crate) fn stream(chunks: BoxStream<'static, Bytes>) -> Response<ResponseBody> {
    let mut response = build(200, JSON, ResponseBody::stream(chunks));
    response
        .headers_mut()
        .insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
    response
}
