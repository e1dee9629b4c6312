//! A deduplicating work queue (client-go `workqueue` semantics): a key is queued at most
//! once, a key is handed to at most one worker at a time, and a key added while a worker
//! holds it is queued again when that worker is done. Bursts of triggers for one key thus
//! collapse into one reconcile (plus at most one more).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

/// The queue; share it as `Arc<WorkQueue<K>>`.
#[derive(Debug)]
pub(crate) struct WorkQueue<K> {
    inner: Mutex<Inner<K>>,
    notify: Notify,
}

#[derive(Debug)]
struct Inner<K> {
    order: VecDeque<K>,
    queued: BTreeSet<K>,
    active: BTreeSet<K>,
    again: BTreeSet<K>,
    closed: bool,
}

impl<K: Ord + Clone + Send + Sync + 'static> WorkQueue<K> {
    /// An empty, open queue.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner {
                order: VecDeque::new(),
                queued: BTreeSet::new(),
                active: BTreeSet::new(),
                again: BTreeSet::new(),
                closed: false,
            }),
            notify: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner<K>> {
        // The queue's invariants hold between statements, so a poisoned lock is usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue `key` (no-op when already queued; re-queued after `done` when active).
    pub(crate) fn add(&self, key: K) {
        let mut inner = self.lock();
        if inner.closed {
            return;
        }
        if inner.active.contains(&key) {
            inner.again.insert(key);
            return;
        }
        if inner.queued.insert(key.clone()) {
            inner.order.push_back(key);
            drop(inner);
            self.notify.notify_one();
        }
    }

    /// Queue every key.
    pub(crate) fn add_all(&self, keys: impl IntoIterator<Item = K>) {
        for key in keys {
            self.add(key);
        }
    }

    /// Queue `key` after `delay` (retries with backoff).
    pub(crate) fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        let queue = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            queue.add(key);
        });
    }

    /// The next key to work on; `None` once the queue is closed.
    pub(crate) async fn next(&self) -> Option<K> {
        loop {
            {
                let mut inner = self.lock();
                if inner.closed {
                    return None;
                }
                if let Some(key) = inner.order.pop_front() {
                    inner.queued.remove(&key);
                    inner.active.insert(key.clone());
                    return Some(key);
                }
            }
            self.notify.notified().await;
        }
    }

    /// The worker is done with `key`.
    pub(crate) fn done(&self, key: &K) {
        let mut inner = self.lock();
        inner.active.remove(key);
        if inner.again.remove(key) && !inner.closed && inner.queued.insert(key.clone()) {
            inner.order.push_back(key.clone());
            drop(inner);
            self.notify.notify_one();
        }
    }

    /// Stop handing out keys; waiting workers get `None`.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.notify.notify_waiters();
    }

    /// Whether nothing is queued or being worked on.
    #[cfg(test)]
    pub(crate) fn is_idle(&self) -> bool {
        let inner = self.lock();
        inner.order.is_empty() && inner.active.is_empty()
    }
}

/// Consecutive failures per key, for retry backoff: the delay doubles with every failure
/// from `base` up to `cap`, and a success starts over.
#[derive(Debug)]
pub(crate) struct Failures<K> {
    counts: Mutex<BTreeMap<K, u32>>,
}

impl<K: Ord + Clone> Default for Failures<K> {
    fn default() -> Self {
        Self {
            counts: Mutex::new(BTreeMap::new()),
        }
    }
}

impl<K: Ord + Clone> Failures<K> {
    /// Counts one more failure of `key` and returns how long to wait before retrying it.
    pub(crate) fn delay(&self, key: &K, base: Duration, cap: Duration) -> Duration {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry(key.clone()).or_insert(0);
        *count = count.saturating_add(1);
        base.saturating_mul(1u32 << (*count).min(16)).min(cap)
    }

    /// `key` succeeded.
    pub(crate) fn clear(&self, key: &K) {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dedups_and_requeues_active_keys() {
        let queue = WorkQueue::new();
        queue.add("a");
        queue.add("b");
        queue.add("a");
        assert_eq!(queue.next().await, Some("a"));
        queue.add("a");
        assert_eq!(queue.next().await, Some("b"));
        queue.done(&"b");
        queue.done(&"a");
        assert_eq!(queue.next().await, Some("a"));
        queue.done(&"a");
        assert!(queue.is_idle());
        queue.close();
        assert_eq!(queue.next().await, None);
    }

    #[test]
    fn failure_delays_double_up_to_the_cap_and_reset() {
        let failures = Failures::default();
        let (base, cap) = (Duration::from_millis(100), Duration::from_secs(1));
        assert_eq!(failures.delay(&"a", base, cap), Duration::from_millis(200));
        assert_eq!(failures.delay(&"a", base, cap), Duration::from_millis(400));
        assert_eq!(failures.delay(&"b", base, cap), Duration::from_millis(200));
        assert_eq!(failures.delay(&"a", base, cap), Duration::from_millis(800));
        assert_eq!(failures.delay(&"a", base, cap), cap);
        failures.clear(&"a");
        assert_eq!(failures.delay(&"a", base, cap), Duration::from_millis(200));
    }

    #[tokio::test]
    async fn waiting_worker_wakes_on_add() {
        let queue = WorkQueue::new();
        let worker = {
            let queue = Arc::clone(&queue);
            tokio::spawn(async move { queue.next().await })
        };
        tokio::task::yield_now().await;
        queue.add(7);
        assert_eq!(worker.await.ok().flatten(), Some(7));
    }
}
