//! JSON-RPC 1.0 as OVSDB uses it: stream framing and message encoding.

pub mod framing;
pub mod message;
pub mod raw;

pub use framing::{Frames, FramingError, JsonSplitter};
pub use message::{Message, MessageError, Notification, Request, Response, encode_request};
pub use raw::{RawMessage, RawNotification, RawRequest, RawResponse};
