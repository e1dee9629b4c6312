//! Warning Events about what a component cannot do (the NB controller: a node without
//! annotations yet, a pod naming a missing NAD, an unparsable NetConf; the node agent: no
//! kubelet probes for UDN pods, ...), each also a log line. The same message about the same
//! object is published once while it keeps being reported, not on every pass.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
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
/// one that stopped and comes back is published again, and one whose publishing failed is
/// tried again on the next pass.
pub struct Events {
    publisher: Option<Publisher>,
    published: BTreeSet<Warning>,
}

/// Where Events go: the API server, reported as `reporter`.
#[derive(Clone)]
pub struct Publisher {
    /// The API client.
    pub client: kube::Client,
    /// The reporting controller and instance.
    pub reporter: Reporter,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("reporter", &self.reporter)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("publishing", &self.publisher.is_some())
            .field("published", &self.published.len())
            .finish()
    }
}

impl Events {
    /// Events through `publisher` (`None`: log only, e.g. in tests without an API).
    pub fn new(publisher: Option<Publisher>) -> Self {
        Self {
            publisher,
            published: BTreeSet::new(),
        }
    }

    /// Reports this pass's warnings: new ones are logged and published.
    pub async fn report(&mut self, warnings: Vec<Warning>) {
        let current: BTreeSet<Warning> = warnings.into_iter().collect();
        let mut by_subject: BTreeMap<&Subject, Vec<&Warning>> = BTreeMap::new();
        let mut failed: Vec<&Warning> = Vec::new();
        for warning in current.difference(&self.published) {
            by_subject
                .entry(&warning.subject)
                .or_default()
                .push(warning);
        }
        for (subject, warnings) in by_subject {
            for warning in warnings {
                // `note`, not `message`: that is the name of tracing's own message field.
                warn!(
                    object = %subject.describe(),
                    reason = warning.reason,
                    note = %warning.message,
                    "warning event"
                );
                let Some(publisher) = &self.publisher else {
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
                // A recorder per Event: kube's Recorder keys its cache without the note, so a
                // second warning with the same reason about the same object (a node missing
                // an annotation on two networks) would only count as a repeat of the first,
                // its text lost. Repeats are already kept out here.
                let recorder = Recorder::new(publisher.client.clone(), publisher.reporter.clone());
                if let Err(error) = recorder.publish(&event, &subject.reference()).await {
                    warn!(object = %subject.describe(), reason = warning.reason, error = %error, "failed to publish event");
                    failed.push(warning);
                }
            }
        }
        let failed: BTreeSet<Warning> = failed.into_iter().cloned().collect();
        self.published = current.difference(&failed).cloned().collect();
    }
}
