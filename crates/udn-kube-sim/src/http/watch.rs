//! Watch responses: one JSON object per line, `{"type":"ADDED","object":{...}}`, or in
//! protobuf one length-prefixed `WatchEvent` frame per event, streamed as the store
//! produces events. A watch that cannot start because its resourceVersion
//! is too old gets, as from the real server's watch cache, HTTP 200 and a single
//! `ERROR` event carrying the 410 `Expired` Status, which kube-runtime's watcher answers
//! with a relist (an HTTP 410 at watch start would make it retry the same version).

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resource::ResourceType;
use crate::sim::{WatchEvent, WatchEventType, WatchStream};

use super::accept::{Encoding, Representation};
use super::protobuf;
use super::query::IncludeObject;
use super::table;

/// How watch event objects are rendered.
#[derive(Clone, Debug)]
pub(crate) struct Render {
    /// The watched type (for Table columns).
    pub(crate) rt: ResourceType,
    /// Object, Table or PartialObjectMetadata.
    pub(crate) representation: Representation,
    /// `includeObject` of Table rows.
    pub(crate) include: IncludeObject,
    /// JSON lines or protobuf frames.
    pub(crate) encoding: Encoding,
}

fn line(event_type: &str, object: &Value, encoding: Encoding) -> Bytes {
    if encoding == Encoding::Protobuf {
        let frame = protobuf::watch_frame(event_type, object).or_else(|error| {
            // The object has no protobuf form: the client gets the failure as an event.
            tracing::error!(%error, "udn-kube-sim watch event not encodable as protobuf");
            protobuf::watch_frame("ERROR", &error.to_status())
        });
        return Bytes::from(frame.unwrap_or_default());
    }
    let mut bytes =
        serde_json::to_vec(&json!({"type": event_type, "object": object})).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

/// The body of a running watch.
pub(crate) fn events(events: WatchStream, render: Render) -> BoxStream<'static, Bytes> {
    let mut first = true;
    events
        .map(move |event: WatchEvent| {
            let object = render_object(&render, event.event_type, &event.object, first);
            if event.event_type != WatchEventType::Bookmark {
                first = false;
            }
            line(event.event_type.as_str(), &object, render.encoding)
        })
        .boxed()
}

fn render_object(render: &Render, kind: WatchEventType, object: &Arc<Value>, first: bool) -> Value {
    match (render.representation, kind) {
        (Representation::Table, WatchEventType::Bookmark) => (**object).clone(),
        (Representation::Table, _) => table::table(&render.rt, object, render.include, first),
        (Representation::PartialMetadata, _) => table::partial_metadata(object),
        (Representation::Object | Representation::AggregatedDiscovery(_), _) => (**object).clone(),
    }
}

/// The body of a watch that failed to start with `error`: one `ERROR` event.
pub(crate) fn error(error: &ApiError, encoding: Encoding) -> BoxStream<'static, Bytes> {
    let event = line("ERROR", &error.to_status(), encoding);
    stream::once(futures::future::ready(event)).boxed()
}
