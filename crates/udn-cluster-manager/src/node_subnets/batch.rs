//! When network changes queue the nodes (the decision only; the controller's batch task
//! sleeps and queues). Every node's `k8s.ovn.org/node-subnets` holds every network, so each
//! batch rewrites every node's whole annotation: batching at a fixed interval while a burst
//! of new networks lasts costs, per node, (burst length / interval) writes of a growing
//! annotation, i.e. bytes that grow with the square of the networks.
//!
//! The schedule instead makes the wait before each batch as long as the burst has lasted so
//! far (at least [`MIN_WAIT`]): batches go out at 0, 0.25, 0.5, 1, 2, 4, ... s into a burst,
//! so a burst of any length writes each node O(log(length)) times and the bytes written are
//! at most about twice the last annotation. A burst that goes quiet (no change for a
//! sixteenth of the current wait, at least [`MIN_WAIT`]) is written at once, so the last
//! networks of a burst are not held for the whole wait. A change after a quiet spell as long
//! as the last wait starts a new burst and is queued right away.
//!
//! Dynamic UDN scope changes ride the same schedule, but a batch of them queues only the
//! nodes they moved ([`PendingNodes`]); a network change in the batch queues every node.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::Instant;

/// The shortest wait between two batches (and the quiet time that ends a short burst).
pub(crate) const MIN_WAIT: Duration = Duration::from_millis(250);
/// The quiet time that releases a batch early is this fraction of the current wait.
const QUIET_DIVISOR: u32 = 16;

/// What the batch task should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchStep {
    /// Queue every node now.
    Release,
    /// Nothing before this instant (unless another change comes).
    WaitUntil(Instant),
    /// Nothing pending: wait for a change.
    Idle,
}

/// The current burst of network changes.
#[derive(Debug, Clone, Copy)]
struct Burst {
    /// Its first change.
    started: Instant,
    /// Its latest change.
    last_change: Instant,
    /// Its latest batch, if one went out.
    released: Option<Instant>,
    /// Whether a change came after the latest batch.
    pending: bool,
}

impl Burst {
    /// The wait after the latest batch: as long as the burst had lasted when it went out.
    fn wait(&self) -> Duration {
        self.released
            .map_or(MIN_WAIT, |released| released - self.started)
            .max(MIN_WAIT)
    }

    /// The quiet time after which the pending changes go out before the wait is over.
    fn quiet(&self) -> Duration {
        (self.wait() / QUIET_DIVISOR).max(MIN_WAIT)
    }

    /// Whether the burst is over at `now`: nothing pending and quiet for a whole wait.
    fn is_over(&self, now: Instant) -> bool {
        !self.pending && now >= self.last_change + self.wait()
    }
}

/// The batch schedule of network changes (pure: time is passed in).
#[derive(Debug, Default)]
pub(crate) struct BatchSchedule {
    burst: Option<Burst>,
}

impl BatchSchedule {
    /// A network changed at `now`.
    pub(crate) fn changed(&mut self, now: Instant) {
        match &mut self.burst {
            Some(burst) if !burst.is_over(now) => {
                burst.last_change = now;
                burst.pending = true;
            }
            _ => {
                self.burst = Some(Burst {
                    started: now,
                    last_change: now,
                    released: None,
                    pending: true,
                });
            }
        }
    }

    /// What to do at `now`; [`BatchStep::Release`] records the batch as sent.
    pub(crate) fn step(&mut self, now: Instant) -> BatchStep {
        let Some(burst) = &mut self.burst else {
            return BatchStep::Idle;
        };
        if !burst.pending {
            return BatchStep::Idle;
        }
        let due = match burst.released {
            // The first change of a burst is not delayed.
            None => burst.started,
            Some(released) => {
                let waited = released + burst.wait();
                let quiet = burst.last_change + burst.quiet();
                waited.min(quiet)
            }
        };
        if now < due {
            return BatchStep::WaitUntil(due);
        }
        burst.released = Some(now);
        burst.pending = false;
        BatchStep::Release
    }
}

/// The nodes the next batch queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Batch {
    /// Every node (a network changed).
    Every,
    /// These nodes (a scope change moved them).
    Nodes(BTreeSet<String>),
}

/// The nodes waiting for the next batch.
#[derive(Debug, Default)]
pub(crate) struct PendingNodes {
    every: bool,
    nodes: BTreeSet<String>,
}

impl PendingNodes {
    /// A network changed: every node.
    pub(crate) fn every(&mut self) {
        self.every = true;
        self.nodes.clear();
    }

    /// A scope change moved `nodes`.
    pub(crate) fn add(&mut self, nodes: impl IntoIterator<Item = String>) {
        if !self.every {
            self.nodes.extend(nodes);
        }
    }

    /// The batch to queue now; nothing is pending afterwards.
    pub(crate) fn take(&mut self) -> Batch {
        let nodes = std::mem::take(&mut self.nodes);
        if std::mem::take(&mut self.every) {
            Batch::Every
        } else {
            Batch::Nodes(nodes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_queues_the_moved_nodes_unless_a_network_changed() {
        let mut pending = PendingNodes::default();
        assert_eq!(pending.take(), Batch::Nodes(BTreeSet::new()));
        pending.add(["a".to_owned(), "b".to_owned()]);
        pending.add(["a".to_owned()]);
        assert_eq!(
            pending.take(),
            Batch::Nodes(BTreeSet::from(["a".to_owned(), "b".to_owned()]))
        );
        pending.add(["a".to_owned()]);
        pending.every();
        pending.add(["c".to_owned()]);
        assert_eq!(pending.take(), Batch::Every);
        assert_eq!(pending.take(), Batch::Nodes(BTreeSet::new()));
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Feeds a change every `every` for `length`, stepping at each change and at each
    /// instant the schedule asks for; returns the release times (relative to the start).
    fn simulate(every: Duration, length: Duration) -> Vec<Duration> {
        let start = Instant::now();
        let mut schedule = BatchSchedule::default();
        let mut releases = Vec::new();
        let mut next_change = start;
        let end = start + length;
        let mut wake: Option<Instant> = None;
        loop {
            let change_pending = next_change <= end;
            let now = match (change_pending, wake) {
                (true, Some(at)) => next_change.min(at),
                (true, None) => next_change,
                (false, Some(at)) => at,
                (false, None) => break,
            };
            if change_pending && now == next_change {
                schedule.changed(now);
                next_change += every;
            }
            wake = None;
            match schedule.step(now) {
                BatchStep::Release => releases.push(now - start),
                BatchStep::WaitUntil(at) => wake = Some(at),
                BatchStep::Idle => {}
            }
        }
        releases
    }

    #[test]
    fn a_lone_change_goes_out_at_once() {
        let now = Instant::now();
        let mut schedule = BatchSchedule::default();
        assert_eq!(schedule.step(now), BatchStep::Idle);
        schedule.changed(now);
        assert_eq!(schedule.step(now), BatchStep::Release);
        assert_eq!(schedule.step(now), BatchStep::Idle);
    }

    #[test]
    fn a_second_change_waits_the_minimum() {
        let now = Instant::now();
        let mut schedule = BatchSchedule::default();
        schedule.changed(now);
        assert_eq!(schedule.step(now), BatchStep::Release);
        schedule.changed(now + ms(10));
        assert_eq!(
            schedule.step(now + ms(10)),
            BatchStep::WaitUntil(now + MIN_WAIT)
        );
        assert_eq!(schedule.step(now + MIN_WAIT), BatchStep::Release);
    }

    #[test]
    fn waits_double_while_a_burst_lasts() {
        // A change every 10 ms for 10 s: batches at 0, 0.25, 0.5, 1, 2, 4, 8 s, then the
        // burst's end once quiet.
        let releases = simulate(ms(10), Duration::from_secs(10));
        let expected: Vec<Duration> = [0, 250, 500, 1000, 2000, 4000, 8000, 10_500]
            .into_iter()
            .map(ms)
            .collect();
        assert_eq!(releases, expected);
    }

    #[test]
    fn batches_grow_logarithmically_with_the_burst() {
        // 100x the burst length adds ~log2(100) batches, not 100x as many.
        let short = simulate(ms(10), Duration::from_secs(2)).len();
        let long = simulate(ms(10), Duration::from_secs(200)).len();
        assert!(short >= 4, "{short}");
        assert!(long <= short + 8, "short {short}, long {long}");
    }

    #[test]
    fn the_end_of_a_long_burst_waits_only_for_quiet() {
        // 60 s of changes: the last wait is 32 s long, but the last changes go out once the
        // changes have been quiet for 2 s (a sixteenth of it).
        let releases = simulate(ms(10), Duration::from_secs(60));
        let last = *releases.last().unwrap();
        assert_eq!(last, Duration::from_secs(62));
    }

    #[test]
    fn a_change_after_a_quiet_spell_starts_a_new_burst() {
        let start = Instant::now();
        let mut schedule = BatchSchedule::default();
        schedule.changed(start);
        assert_eq!(schedule.step(start), BatchStep::Release);
        schedule.changed(start + ms(100));
        assert_eq!(schedule.step(start + MIN_WAIT), BatchStep::Release);
        // The last wait was 250 ms: a change 250 ms after the last one is a new burst.
        let later = start + ms(350);
        schedule.changed(later);
        assert_eq!(schedule.step(later), BatchStep::Release);
    }
}
