//! WATCH: the initial state or the kept change log after a resourceVersion, then live
//! changes from a broadcast channel; selectors applied per event as the watch cache does
//! (an object that stops matching is DELETED for the watcher); BOOKMARK events; timeout.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::time::{Instant, Interval, MissedTickBehavior, Sleep};

use super::filter::Filter;
use super::lock;
use super::meta;
use super::state::{Change, ChangeKind, State};
use crate::error::ApiError;
use crate::options::WatchOptions;
use crate::resource::ResourceKey;
use crate::sim::{WatchEvent, WatchEventType, WatchStream};

/// The annotation of the BOOKMARK that ends the initial events of `sendInitialEvents`.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// What one watcher sees.
#[derive(Debug)]
struct Selection {
    key: ResourceKey,
    namespace: Option<String>,
    filter: Filter,
    api_version: String,
    kind: String,
}

impl Selection {
    /// The event this watcher gets for a change, if any.
    fn convert(&self, change: &Change) -> Option<WatchEvent> {
        if change.key != self.key {
            return None;
        }
        if self
            .namespace
            .as_deref()
            .is_some_and(|ns| ns != change.namespace)
        {
            return None;
        }
        let event = |event_type, object: &Arc<Value>| {
            Some(WatchEvent {
                event_type,
                object: Arc::clone(object),
            })
        };
        if self.filter.is_empty() {
            let event_type = match change.kind {
                ChangeKind::Added => WatchEventType::Added,
                ChangeKind::Modified => WatchEventType::Modified,
                ChangeKind::Deleted => WatchEventType::Deleted,
            };
            return event(event_type, &change.object);
        }
        let now = self.filter.matches(&change.object);
        match change.kind {
            ChangeKind::Added if now => event(WatchEventType::Added, &change.object),
            ChangeKind::Deleted if now => event(WatchEventType::Deleted, &change.object),
            ChangeKind::Modified => {
                let before = change
                    .prev
                    .as_ref()
                    .is_some_and(|prev| self.filter.matches(prev));
                match (before, now) {
                    (true, true) => event(WatchEventType::Modified, &change.object),
                    (false, true) => event(WatchEventType::Added, &change.object),
                    (true, false) => {
                        // The previous state, at the change's resourceVersion.
                        let mut last = change.prev.as_deref().cloned().unwrap_or(Value::Null);
                        meta::set_resource_version(&mut last, change.rv);
                        event(WatchEventType::Deleted, &Arc::new(last))
                    }
                    (false, false) => None,
                }
            }
            ChangeKind::Added | ChangeKind::Deleted => None,
        }
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> WatchEvent {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            metadata["annotations"] = json!({INITIAL_EVENTS_END: "true"});
        }
        WatchEvent {
            event_type: WatchEventType::Bookmark,
            object: Arc::new(json!({
                "apiVersion": self.api_version,
                "kind": self.kind,
                "metadata": metadata,
            })),
        }
    }
}

/// One running watch.
struct Watcher {
    state: Arc<Mutex<State>>,
    rx: broadcast::Receiver<Arc<Change>>,
    selection: Selection,
    pending: VecDeque<WatchEvent>,
    /// Every change up to this resourceVersion has been looked at.
    last_rv: u64,
    deadline: Option<Instant>,
    sleep: Option<Pin<Box<Sleep>>>,
    bookmark_every: Option<Duration>,
    ticker: Option<Interval>,
    done: bool,
}

enum Step {
    Timeout,
    Received(Result<Arc<Change>, RecvError>),
    Tick,
}

async fn wait_sleep(sleep: &mut Option<Pin<Box<Sleep>>>) {
    match sleep {
        Some(sleep) => sleep.as_mut().await,
        None => std::future::pending().await,
    }
}

async fn wait_tick(ticker: &mut Option<Interval>) {
    match ticker {
        Some(ticker) => {
            ticker.tick().await;
        }
        None => std::future::pending().await,
    }
}

impl Watcher {
    async fn next_event(&mut self) -> Option<WatchEvent> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            if self.sleep.is_none()
                && let Some(deadline) = self.deadline
            {
                self.sleep = Some(Box::pin(tokio::time::sleep_until(deadline)));
            }
            if self.ticker.is_none()
                && let Some(every) = self.bookmark_every
            {
                let mut ticker = tokio::time::interval_at(Instant::now() + every, every);
                ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
                self.ticker = Some(ticker);
            }
            let step = tokio::select! {
                biased;
                () = wait_sleep(&mut self.sleep) => Step::Timeout,
                received = self.rx.recv() => Step::Received(received),
                () = wait_tick(&mut self.ticker) => Step::Tick,
            };
            match step {
                Step::Timeout => self.done = true,
                Step::Received(Ok(change)) => self.take(&change),
                Step::Received(Err(RecvError::Lagged(_))) => {
                    let state = Arc::clone(&self.state);
                    let guard = lock(&state);
                    self.catch_up(&guard);
                }
                Step::Received(Err(RecvError::Closed)) => self.done = true,
                Step::Tick => self.bookmark(),
            }
        }
    }

    fn take(&mut self, change: &Change) {
        if change.rv <= self.last_rv {
            return;
        }
        self.last_rv = change.rv;
        if let Some(event) = self.selection.convert(change) {
            self.pending.push_back(event);
        }
    }

    /// After falling behind the channel: replay the kept log and subscribe anew, or end
    /// the watch when the log no longer reaches back (the client resumes and gets 410).
    fn catch_up(&mut self, state: &State) {
        if self.last_rv < state.history_start {
            self.done = true;
            return;
        }
        let changes: Vec<Arc<Change>> = state.history_after(self.last_rv).cloned().collect();
        for change in changes {
            self.take(&change);
        }
        self.last_rv = state.rv;
        self.rx = state.sender.subscribe();
    }

    /// A BOOKMARK at the newest resourceVersion, after every change up to it.
    fn bookmark(&mut self) {
        let state = Arc::clone(&self.state);
        let guard = lock(&state);
        let rv = guard.rv;
        loop {
            match self.rx.try_recv() {
                Ok(change) => self.take(&change),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Lagged(_)) => {
                    self.catch_up(&guard);
                    break;
                }
                Err(TryRecvError::Closed) => {
                    self.done = true;
                    break;
                }
            }
        }
        drop(guard);
        self.last_rv = self.last_rv.max(rv);
        if !self.done {
            self.pending.push_back(self.selection.bookmark(rv, false));
        }
    }
}

/// Start a watch.
pub(super) fn start(
    state: &Arc<Mutex<State>>,
    bookmark_interval: Duration,
    key: &ResourceKey,
    namespace: Option<&str>,
    opts: &WatchOptions,
) -> Result<WatchStream, ApiError> {
    let guard = lock(state);
    let entry = guard.registry.entry(key)?;
    let filter = Filter::new(&entry, &opts.list)?;
    let namespace = if entry.rt.namespaced {
        namespace.map(str::to_owned)
    } else {
        None
    };
    let selection = Selection {
        key: key.clone(),
        namespace,
        filter,
        api_version: entry.api_version(),
        kind: entry.rt.kind.clone(),
    };
    let mut pending = VecDeque::new();
    let from = opts.resource_version.as_deref().unwrap_or_default();
    if opts.send_initial_events || from.is_empty() || from == "0" {
        for obj in guard.select(key, selection.namespace.as_deref(), &selection.filter) {
            pending.push_back(WatchEvent {
                event_type: WatchEventType::Added,
                object: obj,
            });
        }
        if opts.send_initial_events {
            pending.push_back(selection.bookmark(guard.rv, true));
        }
    } else {
        let Ok(rv) = from.parse::<u64>() else {
            return Err(ApiError::bad_request(format!(
                "invalid resource version: {from:?}"
            )));
        };
        if rv < guard.history_start {
            return Err(ApiError::gone(format!(
                "too old resource version: {rv} ({})",
                guard.history_start
            )));
        }
        for change in guard.history_after(rv) {
            if let Some(event) = selection.convert(change) {
                pending.push_back(event);
            }
        }
    }
    let watcher = Watcher {
        state: Arc::clone(state),
        rx: guard.sender.subscribe(),
        selection,
        pending,
        last_rv: guard.rv,
        deadline: opts.timeout.map(|timeout| Instant::now() + timeout),
        sleep: None,
        bookmark_every: opts
            .allow_bookmarks
            .then_some(bookmark_interval)
            .filter(|every| !every.is_zero()),
        ticker: None,
        done: false,
    };
    drop(guard);
    Ok(futures::stream::unfold(watcher, |mut watcher| async move {
        watcher.next_event().await.map(|event| (event, watcher))
    })
    .boxed())
}
