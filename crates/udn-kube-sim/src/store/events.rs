//! events.k8s.io/v1 Events are a view of the core/v1 Events, as in the real server: one
//! storage, converted field by field on the way in and out, so `kubectl get events` shows
//! what a `kube::runtime::events::Recorder` wrote.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::resource::ResourceKey;
use crate::sim::{WatchEvent, WatchStream};

const GROUP: &str = "events.k8s.io";
const API_VERSION: &str = "events.k8s.io/v1";

/// (events.k8s.io/v1 field, core/v1 field) pairs that differ in name.
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// Whether `key` is the events.k8s.io view.
pub(super) fn is_view(key: &ResourceKey) -> bool {
    key.group == GROUP && key.plural == "events"
}

/// The key of the storage behind the view.
pub(super) fn core_key() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        plural: "events".to_owned(),
    }
}

fn rename(obj: &Value, to_core: bool, api_version: &str) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    for (field, value) in map {
        let renamed = RENAMED.iter().find_map(|(view, core)| {
            let (from, to) = if to_core { (view, core) } else { (core, view) };
            (field == from).then_some(*to)
        });
        out.insert(renamed.unwrap_or(field).to_owned(), value.clone());
    }
    if out.contains_key("apiVersion") || out.contains_key("kind") {
        out.insert("apiVersion".to_owned(), json!(api_version));
        out.insert("kind".to_owned(), json!("Event"));
    }
    Value::Object(out)
}

/// An events.k8s.io/v1 Event as the core/v1 Event that stores it.
pub(super) fn to_core(obj: &Value) -> Value {
    rename(obj, true, "v1")
}

/// A stored core/v1 Event as events.k8s.io/v1.
pub(super) fn to_view(obj: &Value) -> Value {
    rename(obj, false, API_VERSION)
}

/// A list of core Events as an events.k8s.io/v1 `EventList`.
pub(super) fn list_to_view(mut list: Value) -> Value {
    if let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) {
        for item in items.iter_mut() {
            *item = to_view(item);
        }
    }
    if let Some(map) = list.as_object_mut() {
        map.insert("apiVersion".to_owned(), json!(API_VERSION));
    }
    list
}

/// An error about core `events` reworded for the view's resource.
pub(super) fn error_to_view(mut error: ApiError) -> ApiError {
    if error.kind.as_deref() == Some("events") && error.group.as_deref().is_none_or(str::is_empty) {
        error.group = Some(GROUP.to_owned());
        error.message = error
            .message
            .replacen("events \"", "events.events.k8s.io \"", 1);
    }
    error
}

/// A watch of core Events seen through the view.
pub(super) fn stream_to_view(stream: WatchStream) -> WatchStream {
    stream
        .map(|event| WatchEvent {
            event_type: event.event_type,
            object: Arc::new(to_view(&event.object)),
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_convert_both_ways() {
        let view = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e"},
            "regarding": {"kind": "Pod", "name": "web"},
            "note": "started", "reason": "Started", "type": "Normal",
            "reportingController": "udn", "reportingInstance": "udn-1",
            "eventTime": "2026-01-01T00:00:00.000000Z",
        });
        let core = to_core(&view);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "web");
        assert_eq!(core["message"], "started");
        assert_eq!(core["reportingComponent"], "udn");
        assert_eq!(core["reportingInstance"], "udn-1");
        assert_eq!(to_view(&core), view);
    }
}
