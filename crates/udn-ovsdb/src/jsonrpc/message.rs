//! JSON-RPC 1.0 messages as OVSDB uses them (RFC 7047 §4): requests, responses, notifications.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value as Json};

/// Errors decoding a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// The bytes are not valid JSON.
    #[error("message is not valid JSON: {reason}")]
    Json {
        /// The parser's explanation.
        reason: String,
    },
    /// A request's parameters cannot be encoded as JSON.
    #[error("cannot encode the parameters of a {method} request: {reason}")]
    Encode {
        /// The request's method.
        method: String,
        /// The encoder's explanation.
        reason: String,
    },
    /// The JSON is not a JSON-RPC request, response or notification.
    #[error("invalid JSON-RPC message {json}: {reason}")]
    Invalid {
        /// The offending JSON, rendered.
        json: String,
        /// Why it was rejected.
        reason: &'static str,
    },
}

/// A request: `{"method": ..., "params": [...], "id": <non-null>}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Request id (any non-null JSON), echoed in the response.
    pub id: Json,
    /// Method name, e.g. `transact`.
    pub method: String,
    /// Positional parameters.
    pub params: Vec<Json>,
}

/// A response: `{"id": ..., "result": ..., "error": ...}`; exactly one of result/error is non-null.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Id of the request answered.
    pub id: Json,
    /// Result (`null` on error).
    pub result: Json,
    /// Error (`null` on success).
    pub error: Json,
}

/// A notification: a request with `"id": null`, e.g. `update` or `locked`.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// Method name.
    pub method: String,
    /// Positional parameters.
    pub params: Vec<Json>,
}

/// Any JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request expecting a response.
    Request(Request),
    /// A response to an earlier request.
    Response(Response),
    /// A notification (no response).
    Notification(Notification),
}

impl Message {
    /// Encodes as a JSON object.
    pub fn to_json(&self) -> Json {
        let mut o = Map::new();
        match self {
            Self::Request(r) => {
                o.insert("method".into(), Json::from(r.method.as_str()));
                o.insert("params".into(), Json::Array(r.params.clone()));
                o.insert("id".into(), r.id.clone());
            }
            Self::Notification(n) => {
                o.insert("method".into(), Json::from(n.method.as_str()));
                o.insert("params".into(), Json::Array(n.params.clone()));
                o.insert("id".into(), Json::Null);
            }
            Self::Response(r) => {
                o.insert("id".into(), r.id.clone());
                o.insert("result".into(), r.result.clone());
                o.insert("error".into(), r.error.clone());
            }
        }
        Json::Object(o)
    }

    /// Encodes as compact JSON bytes (the text of [`Message::to_json`], written without
    /// copying the parameters).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let written = match self {
            Self::Request(r) => encode_request_into(&mut out, &r.id, &r.method, &r.params),
            Self::Notification(n) => {
                encode_request_into(&mut out, &Json::Null, &n.method, &n.params)
            }
            Self::Response(r) => serde_json::to_writer(
                &mut out,
                &ResponseText {
                    id: &r.id,
                    result: &r.result,
                    error: &r.error,
                },
            ),
        };
        match written {
            Ok(()) => out,
            // Unreachable: JSON trees always encode.
            Err(_) => self.to_json().to_string().into_bytes(),
        }
    }

    /// Decodes one message from JSON bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, MessageError> {
        let json: Json = serde_json::from_slice(bytes).map_err(|e| MessageError::Json {
            reason: e.to_string(),
        })?;
        Self::from_json(&json)
    }

    /// Decodes one message from parsed JSON.
    pub fn from_json(json: &Json) -> Result<Self, MessageError> {
        let invalid = |reason| MessageError::Invalid {
            json: json.to_string(),
            reason,
        };
        let Json::Object(o) = json else {
            return Err(invalid("a message must be a JSON object"));
        };
        if let Some(method) = o.get("method") {
            let Json::String(method) = method else {
                return Err(invalid("\"method\" must be a string"));
            };
            let params = match o.get("params") {
                Some(Json::Array(p)) => p.clone(),
                _ => return Err(invalid("\"params\" must be an array")),
            };
            return match o.get("id") {
                None | Some(Json::Null) => Ok(Self::Notification(Notification {
                    method: method.clone(),
                    params,
                })),
                Some(id) => Ok(Self::Request(Request {
                    id: id.clone(),
                    method: method.clone(),
                    params,
                })),
            };
        }
        let Some(id) = o.get("id") else {
            return Err(invalid(
                "a message needs \"method\" (request/notification) or \"id\" (response)",
            ));
        };
        if !o.contains_key("result") && !o.contains_key("error") {
            return Err(invalid("a response needs \"result\" or \"error\""));
        }
        Ok(Self::Response(Response {
            id: id.clone(),
            result: o.get("result").cloned().unwrap_or(Json::Null),
            error: o.get("error").cloned().unwrap_or(Json::Null),
        }))
    }
}

/// `{"method": ..., "params": ..., "id": ...}`, members in [`Message::to_json`]'s order.
struct RequestText<'a, I: ?Sized, P: ?Sized> {
    id: &'a I,
    method: &'a str,
    params: &'a P,
}

impl<I: Serialize + ?Sized, P: Serialize + ?Sized> Serialize for RequestText<'_, I, P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("method", self.method)?;
        map.serialize_entry("params", self.params)?;
        map.serialize_entry("id", self.id)?;
        map.end()
    }
}

/// `{"id": ..., "result": ..., "error": ...}`.
struct ResponseText<'a> {
    id: &'a Json,
    result: &'a Json,
    error: &'a Json,
}

impl Serialize for ResponseText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("id", self.id)?;
        map.serialize_entry("result", self.result)?;
        map.serialize_entry("error", self.error)?;
        map.end()
    }
}

fn encode_request_into<I: Serialize + ?Sized, P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &I,
    method: &str,
    params: &P,
) -> Result<(), serde_json::Error> {
    serde_json::to_writer(out, &RequestText { id, method, params })
}

/// Encodes a request `{"method": ..., "params": ..., "id": ...}` with any serializable
/// parameters (which should encode as a JSON array), appending the compact JSON to `out`:
/// for requests too large to build as a JSON tree first, e.g. a `transact` of thousands of
/// operations ([`crate::protocol::TransactParams`]).
pub fn encode_request<I: Serialize + ?Sized, P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &I,
    method: &str,
    params: &P,
) -> Result<(), MessageError> {
    encode_request_into(out, id, method, params).map_err(|e| MessageError::Encode {
        method: method.to_owned(),
        reason: e.to_string(),
    })
}
