//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`), the encoding client-go
//! programs use for built-in types: request bodies are read into the JSON the store
//! keeps, and responses (objects, lists, Status errors, watch events) are written from it
//! when the client asks for protobuf.
//!
//! A body is the magic `k8s\0` and a `runtime.Unknown` envelope: the object's apiVersion
//! and kind, then the object's message. The transcoder is table-driven: [`generated`] has
//! one table per Go API struct (field number, JSON name, type, pointer or `omitempty`)
//! written by `cargo xtask protobuf-tables` from the Kubernetes Go types and checked
//! against the `k8s-pb` crate by the tests. Custom resources have no protobuf form.
//! A watch in protobuf is a stream of `metav1.WatchEvent` messages, each prefixed by
//! its length (4 bytes, big-endian), whose `object.raw` is the enveloped object.

mod decode;
mod encode;
#[rustfmt::skip]
mod generated;
mod schema;
#[cfg(test)]
mod tests;
mod time;
mod wire;

use serde_json::{Map, Value};

use crate::error::ApiError;

use schema::Root;
use wire::{Reader, Wire, put_bytes_field};

/// The envelope's magic prefix.
const MAGIC: &[u8] = b"k8s\0";

/// The media type of Kubernetes protobuf.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a watch in protobuf.
pub(crate) const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Why a protobuf body cannot be read, and in which field (the innermost).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Malformed {
    why: &'static str,
    field: Option<String>,
}

impl Malformed {
    fn new(why: &'static str) -> Self {
        Self { why, field: None }
    }

    /// The error, located at `field` of `message` unless a nested field is already named.
    fn at(mut self, message: &schema::Message, field: &schema::Field) -> Self {
        if self.field.is_none() {
            self.field = Some(format!("{}.{}", message.name, field.proto));
        }
        self
    }
}

impl From<Malformed> for ApiError {
    fn from(malformed: Malformed) -> Self {
        let location = malformed
            .field
            .map(|field| format!(" (field {field})"))
            .unwrap_or_default();
        ApiError::bad_request(format!(
            "the protobuf body of the request is malformed: {}{location}",
            malformed.why
        ))
    }
}

/// Whether `body` is a Kubernetes protobuf envelope.
pub(crate) fn is_protobuf(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

fn root(api_version: &str, kind: &str) -> Option<&'static Root> {
    let roots = generated::ROOTS.iter();
    roots
        .clone()
        .find(|r| r.kind == kind && r.api_version == api_version)
        .or_else(|| {
            roots
                .clone()
                .find(|r| r.kind == kind && r.api_version.is_empty())
        })
}

/// Whether objects of this apiVersion and kind have a protobuf form.
pub(crate) fn has_form(api_version: &str, kind: &str) -> bool {
    root(api_version, kind).is_some()
}

/// 415 for a protobuf body of a kind without a protobuf form.
pub(crate) fn unsupported(what: &str) -> ApiError {
    ApiError {
        code: 415,
        reason: "UnsupportedMediaType",
        message: format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml ({what})"
        ),
        name: None,
        group: None,
        kind: None,
        causes: Vec::new(),
    }
}

fn utf8(bytes: &[u8]) -> Result<String, Malformed> {
    String::from_utf8(bytes.to_vec()).map_err(|_| Malformed::new("a string is not UTF-8"))
}

/// Decodes a protobuf-encoded object into its JSON form.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| Malformed::new("it does not start with the k8s protobuf magic"))?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for item in Reader(envelope) {
        match item? {
            (1, Wire::Bytes(type_meta)) => {
                for field in Reader(type_meta) {
                    match field? {
                        (1, Wire::Bytes(v)) => api_version = utf8(v)?,
                        (2, Wire::Bytes(v)) => kind = utf8(v)?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(bytes)) => raw = bytes,
            _ => {}
        }
    }
    let root = root(&api_version, &kind).ok_or_else(|| {
        unsupported(&format!(
            "{kind:?} of {api_version:?} has no protobuf form here; send JSON"
        ))
    })?;
    let mut object = Map::new();
    object.insert("apiVersion".to_owned(), Value::String(api_version));
    object.insert("kind".to_owned(), Value::String(kind));
    object.extend(decode::message(raw, root.message)?);
    Ok(Value::Object(object))
}

/// Encodes an object (with `apiVersion` and `kind`) in its enveloped protobuf form.
pub(crate) fn encode(value: &Value) -> Result<Vec<u8>, ApiError> {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let (Some(root), Value::Object(object)) = (root(api_version, kind), value) else {
        return Err(ApiError::internal(format!(
            "object {kind:?} of {api_version:?} cannot be encoded as protobuf"
        )));
    };
    let mut raw = Vec::new();
    encode::message(object, root.message, &mut raw).map_err(|e| {
        ApiError::internal(format!(
            "object {kind:?} of {api_version:?} cannot be encoded as protobuf: {}: {}",
            e.path, e.why
        ))
    })?;
    let mut type_meta = Vec::new();
    put_bytes_field(&mut type_meta, 1, api_version.as_bytes());
    put_bytes_field(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    put_bytes_field(&mut out, 1, &type_meta);
    put_bytes_field(&mut out, 2, &raw);
    // contentEncoding and contentType, empty as the apiserver writes them.
    put_bytes_field(&mut out, 3, b"");
    put_bytes_field(&mut out, 4, b"");
    Ok(out)
}

/// One frame of a protobuf watch: the length-prefixed `WatchEvent{type, object}`.
pub(crate) fn watch_frame(event_type: &str, object: &Value) -> Result<Vec<u8>, ApiError> {
    let embedded = encode(object)?;
    let mut raw_extension = Vec::new();
    put_bytes_field(&mut raw_extension, 1, &embedded);
    let mut event = Vec::new();
    put_bytes_field(&mut event, 1, event_type.as_bytes());
    put_bytes_field(&mut event, 2, &raw_extension);
    let length = u32::try_from(event.len())
        .map_err(|_| ApiError::internal("a watch event is too large for a protobuf frame"))?;
    let mut frame = length.to_be_bytes().to_vec();
    frame.extend_from_slice(&event);
    Ok(frame)
}
