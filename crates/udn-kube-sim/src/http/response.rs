//! Building responses: JSON or protobuf documents, `metav1.Status` errors, streamed
//! watches.

use bytes::Bytes;
use futures::stream::BoxStream;
use http::header::{CONTENT_TYPE, HeaderValue, TRANSFER_ENCODING};
use http::{Response, StatusCode};
use serde_json::Value;

use crate::error::ApiError;

use super::accept::Encoding;
use super::body::ResponseBody;
use super::protobuf;

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

/// `value` with HTTP `code` in `encoding`.
pub(crate) fn document(
    code: u16,
    value: &Value,
    pretty: bool,
    encoding: Encoding,
) -> Result<Response<ResponseBody>, ApiError> {
    Ok(match encoding {
        Encoding::Json => json(code, value, pretty),
        Encoding::Protobuf => build(
            code,
            protobuf::MEDIA_TYPE,
            ResponseBody::full(protobuf::encode(value)?),
        ),
    })
}

/// The `metav1.Status` of `error`, with its HTTP code, in `encoding`.
pub(crate) fn error(error: &ApiError, pretty: bool, encoding: Encoding) -> Response<ResponseBody> {
    let status = error.to_status();
    document(error.code, &status, pretty, encoding)
        .unwrap_or_else(|_| json(error.code, &status, pretty))
}

/// A plain-text body (health checks).
pub(crate) fn text(code: u16, body: &'static str) -> Response<ResponseBody> {
    build(
        code,
        "text/plain; charset=utf-8",
        ResponseBody::full(Bytes::from_static(body.as_bytes())),
    )
}

/// A streamed watch: HTTP 200, chunked, JSON lines or protobuf frames.
pub(crate) fn stream(
    chunks: BoxStream<'static, Bytes>,
    encoding: Encoding,
) -> Response<ResponseBody> {
    let content_type = match encoding {
        Encoding::Json => JSON,
        Encoding::Protobuf => protobuf::WATCH_MEDIA_TYPE,
    };
    let mut response = build(200, content_type, ResponseBody::stream(chunks));
    response
        .headers_mut()
        .insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
    response
}
