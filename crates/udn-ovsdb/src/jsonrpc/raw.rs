//! JSON-RPC messages whose id, parameters, result and error stay JSON text borrowed from the
//! message's bytes: the client decodes a big `result` or `params` straight into typed values
//! instead of a `serde_json::Value` tree.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::message::{Message, MessageError, Notification, Request, Response};

/// A request, with its id and parameters (an array) as JSON text.
#[derive(Debug, Clone)]
pub struct RawRequest<'a> {
    /// Request id (any non-null JSON).
    pub id: &'a RawValue,
    /// Method name.
    pub method: Cow<'a, str>,
    /// Positional parameters: a JSON array.
    pub params: &'a RawValue,
}

/// A response, with its id, result and error as JSON text (`null` when absent).
#[derive(Debug, Clone)]
pub struct RawResponse<'a> {
    /// Id of the request answered.
    pub id: &'a RawValue,
    /// Result (`null` on error).
    pub result: &'a RawValue,
    /// Error (`null` on success).
    pub error: &'a RawValue,
}

/// A notification, with its parameters (an array) as JSON text.
#[derive(Debug, Clone)]
pub struct RawNotification<'a> {
    /// Method name.
    pub method: Cow<'a, str>,
    /// Positional parameters: a JSON array.
    pub params: &'a RawValue,
}

/// A JSON-RPC message borrowing from its bytes; the same messages [`Message::from_slice`]
/// accepts, told apart by the same rules.
#[derive(Debug, Clone)]
pub enum RawMessage<'a> {
    /// A request expecting a response.
    Request(RawRequest<'a>),
    /// A response to an earlier request.
    Response(RawResponse<'a>),
    /// A notification (no response).
    Notification(RawNotification<'a>),
}

impl<'a> RawMessage<'a> {
    /// Decodes one message from JSON bytes. Errors are [`Message::from_slice`]'s.
    pub fn from_slice(bytes: &'a [u8]) -> Result<Self, MessageError> {
        if let Some(message) = Self::parse(bytes) {
            return Ok(message);
        }
        match Message::from_slice(bytes) {
            Err(error) => Err(error),
            // Not expected: both accept the same messages.
            Ok(_) => Err(MessageError::Invalid {
                json: String::from_utf8_lossy(bytes).into_owned(),
                reason: "not a JSON-RPC message",
            }),
        }
    }

    fn parse(bytes: &'a [u8]) -> Option<Self> {
        let envelope: Envelope<'a> = serde_json::from_slice(bytes).ok()?;
        if let Some(method) = envelope.method {
            let method = string_of(method)?;
            let params = envelope.params.filter(|p| p.get().starts_with('['))?;
            return Some(match envelope.id.filter(|id| id.get() != "null") {
                None => Self::Notification(RawNotification { method, params }),
                Some(id) => Self::Request(RawRequest { id, method, params }),
            });
        }
        let id = envelope.id?;
        if envelope.result.is_none() && envelope.error.is_none() {
            return None;
        }
        Some(Self::Response(RawResponse {
            id,
            result: envelope.result.unwrap_or(RawValue::NULL),
            error: envelope.error.unwrap_or(RawValue::NULL),
        }))
    }

    /// The message with its parts parsed into JSON trees.
    pub fn to_message(&self) -> Result<Message, MessageError> {
        Ok(match self {
            Self::Request(r) => Message::Request(Request {
                id: tree(r.id)?,
                method: r.method.clone().into_owned(),
                params: tree(r.params)?,
            }),
            Self::Response(r) => Message::Response(Response {
                id: tree(r.id)?,
                result: tree(r.result)?,
                error: tree(r.error)?,
            }),
            Self::Notification(n) => Message::Notification(Notification {
                method: n.method.clone().into_owned(),
                params: tree(n.params)?,
            }),
        })
    }
}

/// Parses a part of a message into a JSON tree (or the parameters into a `Vec`).
pub fn tree<'de, T: Deserialize<'de>>(raw: &'de RawValue) -> Result<T, MessageError> {
    serde_json::from_str(raw.get()).map_err(|e| MessageError::Json {
        reason: e.to_string(),
    })
}

fn string_of(raw: &RawValue) -> Option<Cow<'_, str>> {
    if let Ok(text) = serde_json::from_str::<&str>(raw.get()) {
        return Some(Cow::Borrowed(text));
    }
    serde_json::from_str::<String>(raw.get())
        .ok()
        .map(Cow::Owned)
}

/// The members of a message object; a member given twice keeps its later value, as in a parsed
/// object.
#[derive(Default)]
struct Envelope<'a> {
    method: Option<&'a RawValue>,
    params: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

enum Member {
    Method,
    Params,
    Id,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(MemberVisitor)
    }
}

struct MemberVisitor;

impl Visitor<'_> for MemberVisitor {
    type Value = Member;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Member, E> {
        Ok(match name {
            "method" => Member::Method,
            "params" => Member::Params,
            "id" => Member::Id,
            "result" => Member::Result,
            "error" => Member::Error,
            _ => Member::Other,
        })
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EnvelopeVisitor(std::marker::PhantomData))
    }
}

struct EnvelopeVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for EnvelopeVisitor<'a> {
    type Value = Envelope<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Envelope<'a>, M::Error> {
        let mut envelope = Envelope::default();
        while let Some(member) = map.next_key::<Member>()? {
            let slot = match member {
                Member::Method => &mut envelope.method,
                Member::Params => &mut envelope.params,
                Member::Id => &mut envelope.id,
                Member::Result => &mut envelope.result,
                Member::Error => &mut envelope.error,
                Member::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value::<&'de RawValue>()?);
        }
        Ok(envelope)
    }
}
