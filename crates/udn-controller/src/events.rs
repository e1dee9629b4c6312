//! Kubernetes Events about what the zone cannot render (a node without annotations yet, a
//! pod naming a missing NAD, an unparsable NetConf or open-ports annotation), each also a
//! log line. The same message about the same object is published once, not on every pass.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder};
use tracing::warn;

/// Longest event note the API accepts.
const MAX_NOTE: usize = 1024;

/// What an event is about.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Subject {
    /// A node (name).
    Node(String),
    /// A pod (namespace, name).
    Pod(String, String),
    /// A NAD (namespace, name).
    Nad(String, String),
}

impl Subject {
    /// A pod subject from its `namespace/name` key.
    pub fn pod(key: &str) -> Self {
        let (ns, name) = key.split_once('/').unwrap_or(("", key));
        Self::Pod(ns.to_owned(), name.to_owned())
    }

    /// A NAD subject from its `namespace/name` key.
    pub fn nad(key: &str) -> Self {
        let (ns, name) = key.split_once('/').unwrap_or(("", key));
        Self::Nad(ns.to_owned(), name.to_owned())
    }

    fn reference(&self) -> ObjectReference {
        let (api_version, kind, namespace, name) = match self {
            Self::Node(name) => ("v1", "Node", None, name),
            Self::Pod(ns, name) => ("v1", "Pod", Some(ns), name),
            Self::Nad(ns, name) => (
                "k8s.cni.cncf.io/v1",
                "NetworkAttachmentDefinition",
                Some(ns),
                name,
            ),
        };
        ObjectReference {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
            namespace: namespace.cloned(),
            name: Some(name.clone()),
            ..ObjectReference::default()
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Node(name) => format!("node {name}"),
            Self::Pod(ns, name) => format!("pod {ns}/{name}"),
            Self::Nad(ns, name) => format!("NetworkAttachmentDefinition {ns}/{name}"),
        }
    }
}

/// One Warning event.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Warning {
    /// The object.
    pub subject: Subject,
    /// CamelCase reason.
    pub reason: &'static str,
    /// Text.
    pub message: String,
}

/// Publishes warnings, each (subject, reason, message) once while it keeps being reported;
/// one that stopped and comes back is published again.
pub struct Events {
    recorder: Option<Recorder>,
    published: BTreeSet<Warning>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("publishing", &self.recorder.is_some())
            .field("published", &self.published.len())
            .finish()
    }
}

impl Events {
    /// Events through `recorder` (`None`: log only, e.g. in tests without an API).
    pub fn new(recorder: Option<Recorder>) -> Self {
        Self {
            recorder,
            published: BTreeSet::new(),
        }
    }

    /// Reports this pass's warnings: new ones are logged and published.
    pub async fn report(&mut self, warnings: Vec<Warning>) {
        let current: BTreeSet<Warning> = warnings.into_iter().collect();
        let mut by_subject: BTreeMap<&Subject, Vec<&Warning>> = BTreeMap::new();
        for warning in current.difference(&self.published) {
            by_subject
                .entry(&warning.subject)
                .or_default()
                .push(warning);
        }
        for (subject, warnings) in by_subject {
            for warning in warnings {
                warn!(
                    object = %subject.describe(),
                    reason = warning.reason,
                    message = %warning.message,
                    "cannot render"
                );
                let Some(recorder) = &self.recorder else {
                    continue;
                };
                let mut note = warning.message.clone();
                if note.len() > MAX_NOTE {
                    let mut end = MAX_NOTE;
                    while !note.is_char_boundary(end) {
                        end -= 1;
                    }
                    note.truncate(end);
                }
                let event = Event {
                    type_: EventType::Warning,
                    reason: warning.reason.to_owned(),
                    note: Some(note),
                    action: "Reconcile".to_owned(),
                    secondary: None,
                };
                if let Err(error) = recorder.publish(&event, &subject.reference()).await {
                    warn!(object = %subject.describe(), reason = warning.reason, error = %error, "failed to publish event");
                }
            }
        }
        self.published = current;
    }
}
