//! JSON-RPC 1.0 as OVSDB uses it: stream framing and message encoding.

pub mod framing;
pub mod message;

pub use framing::{FramingError, JsonSplitter};
pub use message::{Message, MessageError, Notification, Request, Response};
