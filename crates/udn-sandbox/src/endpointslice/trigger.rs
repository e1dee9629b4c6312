//! `endpoints.kubernetes.io/last-change-trigger-time`, as upstream's trigger-time tracker
//! computes it: for a Service seen for the first time, its creation time; afterwards, the
//! earliest of the changes since the previous sync (a selected pod's Ready condition
//! transition, the Service's creation), or nothing when nothing changed.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};

/// What the previous sync of one Service saw.
#[derive(Debug, Clone, Default, PartialEq)]
struct Seen {
    service: Option<Timestamp>,
    pods: BTreeMap<String, Timestamp>,
}

/// The trigger times of every Service synced so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TriggerTimes {
    seen: BTreeMap<String, Seen>,
}

fn ready_transition(pod: &Pod) -> Option<Timestamp> {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

fn earliest(current: Option<Timestamp>, candidate: Timestamp) -> Option<Timestamp> {
    Some(current.map_or(candidate, |c| c.min(candidate)))
}

impl TriggerTimes {
    /// The trigger time of this sync of `service` (key `key`) with its selected `pods`;
    /// remembers what it saw for the next one.
    pub fn compute(&mut self, key: &str, service: &Service, pods: &[Pod]) -> Option<Timestamp> {
        let known = self.seen.contains_key(key);
        let previous = self.seen.remove(key).unwrap_or_default();
        let mut changed = None;
        let mut now = Seen::default();
        for pod in pods {
            let Some(time) = ready_transition(pod) else {
                continue;
            };
            let name = pod.metadata.name.clone().unwrap_or_default();
            if previous.pods.get(&name).is_none_or(|last| time > *last) {
                changed = earliest(changed, time);
            }
            now.pods.insert(name, time);
        }
        let created = service.metadata.creation_timestamp.as_ref().map(|t| t.0);
        if let Some(created) = created
            && previous.service.is_none_or(|last| created > last)
        {
            changed = earliest(changed, created);
        }
        now.service = created;
        self.seen.insert(key.to_owned(), now);
        if known { changed } else { created }
    }

    /// Forgets a deleted Service.
    pub fn forget(&mut self, key: &str) {
        self.seen.remove(key);
    }
}

/// The annotation's value: RFC 3339 in UTC with the fractional seconds Go's
/// `time.RFC3339Nano` prints (none when zero).
pub fn format(time: Timestamp) -> String {
    time.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service() -> Service {
        serde_json::from_value(json!({"metadata": {"name": "s", "namespace": "n", "creationTimestamp": "2025-01-01T00:00:00Z"}})).unwrap()
    }

    fn pod(name: &str, ready_at: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}]},
        }))
        .unwrap()
    }

    #[test]
    fn first_the_creation_then_the_earliest_change_then_nothing() {
        let mut times = TriggerTimes::default();
        let a = pod("a", "2025-01-01T00:01:00Z");
        let stamp = |t: Option<Timestamp>| t.map(format);
        assert_eq!(
            stamp(times.compute("n/s", &service(), std::slice::from_ref(&a))).as_deref(),
            Some("2025-01-01T00:00:00Z")
        );
        assert_eq!(
            times.compute("n/s", &service(), std::slice::from_ref(&a)),
            None
        );
        let b = pod("b", "2025-01-01T00:03:00Z");
        let a2 = pod("a", "2025-01-01T00:02:00Z");
        assert_eq!(
            stamp(times.compute("n/s", &service(), &[a2, b])).as_deref(),
            Some("2025-01-01T00:02:00Z")
        );
        times.forget("n/s");
        assert_eq!(
            stamp(times.compute("n/s", &service(), &[])).as_deref(),
            Some("2025-01-01T00:00:00Z")
        );
    }

    #[test]
    fn fractional_seconds_are_printed_only_when_set() {
        let t: Timestamp = "2025-01-01T00:00:00.5Z".parse().unwrap();
        assert_eq!(format(t), "2025-01-01T00:00:00.5Z");
    }
}
