//! Kubernetes Events (on UDNs, CUDNs, NADs and pods). Publishing failures are logged, never fatal.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder};
use tracing::warn;

/// Longest event note the API accepts (1 kB).
const MAX_NOTE: usize = 1024;

/// One event to publish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Note {
    /// Normal or Warning.
    pub(crate) warning: bool,
    /// CamelCase reason.
    pub(crate) reason: &'static str,
    /// CamelCase action.
    pub(crate) action: &'static str,
    /// Text (cut at 1 kB).
    pub(crate) text: String,
}

/// Publish `notes` about `regarding`.
pub(crate) async fn publish(recorder: &Recorder, regarding: &ObjectReference, notes: Vec<Note>) {
    for note in notes {
        let event = Event {
            type_: if note.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: note.reason.to_owned(),
            note: Some(truncate(note.text, MAX_NOTE)),
            action: note.action.to_owned(),
            secondary: None,
        };
        if let Err(err) = recorder.publish(&event, regarding).await {
            warn!(
                object = ?regarding.name,
                reason = note.reason,
                error = %err,
                "failed to publish event"
            );
        }
    }
}

/// `text` cut to at most `max` bytes on a character boundary.
fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_cut_on_char_boundaries() {
        assert_eq!(truncate("abc".into(), 10), "abc");
        assert_eq!(truncate("aéb".into(), 2), "a");
        assert_eq!(truncate("x".repeat(2000), MAX_NOTE).len(), MAX_NOTE);
    }
}
