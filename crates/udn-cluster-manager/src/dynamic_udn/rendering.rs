//! Which nodes render which gated network: the active ones, and those whose last pod of the
//! network left less than the grace period ago (upstream `--udn-deletion-grace-period`), so
//! a pod that comes back soon finds everything in place and a network is never torn down
//! under a pod. Pure: time comes in as an `Instant`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::activity::Activity;

/// A (network, node) pair's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeState {
    /// A pod on the node uses the network.
    Active,
    /// No pod uses it since; it goes at this instant.
    Draining { until: Instant },
}

/// The rendering of every gated network.
#[derive(Clone, Debug, Default)]
pub(crate) struct Rendering {
    nodes: BTreeMap<(String, String), NodeState>,
}

/// Rendered nodes by gated network (a network without any is absent).
pub(crate) type Rendered = BTreeMap<String, BTreeSet<String>>;

impl Rendering {
    /// Takes (network, node) pairs that already carry per-node state (after a restart: the
    /// allocations found on the nodes) as draining from `now`, so they stay for a whole
    /// grace period unless a pod keeps them.
    pub(crate) fn seed(
        &mut self,
        existing: impl IntoIterator<Item = (String, String)>,
        now: Instant,
        grace: Duration,
    ) {
        for pair in existing {
            self.nodes
                .entry(pair)
                .or_insert(NodeState::Draining { until: now + grace });
        }
    }

    /// Moves to `active` at `now`: active pairs are rendered, pairs no longer active start
    /// draining, drained pairs go. Whether the rendered set changed.
    pub(crate) fn update(&mut self, active: &Activity, now: Instant, grace: Duration) -> bool {
        let before = self.rendered();
        for (pair, state) in &mut self.nodes {
            let is_active = active
                .get(&pair.0)
                .is_some_and(|nodes| nodes.contains(&pair.1));
            *state = match (*state, is_active) {
                (_, true) => NodeState::Active,
                (NodeState::Active, false) => NodeState::Draining { until: now + grace },
                (draining, false) => draining,
            };
        }
        for (network, nodes) in active {
            for node in nodes {
                self.nodes
                    .insert((network.clone(), node.clone()), NodeState::Active);
            }
        }
        self.nodes
            .retain(|_, state| !matches!(state, NodeState::Draining { until } if *until <= now));
        self.rendered() != before
    }

    /// The rendered nodes of every network.
    pub(crate) fn rendered(&self) -> Rendered {
        let mut out = Rendered::new();
        for (network, node) in self.nodes.keys() {
            out.entry(network.clone()).or_default().insert(node.clone());
        }
        out
    }

    /// When the next draining pair goes.
    pub(crate) fn next_expiry(&self) -> Option<Instant> {
        self.nodes
            .values()
            .filter_map(|state| match state {
                NodeState::Draining { until } => Some(*until),
                NodeState::Active => None,
            })
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn activity(pairs: &[(&str, &str)]) -> Activity {
        let mut out = Activity::new();
        for (net, node) in pairs {
            out.entry((*net).to_owned())
                .or_default()
                .insert((*node).to_owned());
        }
        out
    }

    fn nodes(rendering: &Rendering, network: &str) -> Vec<String> {
        rendering
            .rendered()
            .get(network)
            .map(|n| n.iter().cloned().collect())
            .unwrap_or_default()
    }

    const GRACE: Duration = Duration::from_secs(120);

    #[test]
    fn a_node_keeps_the_network_for_the_grace_period_after_its_last_pod() {
        let t0 = Instant::now();
        let mut r = Rendering::default();
        assert!(r.update(&activity(&[("blue", "a"), ("blue", "b")]), t0, GRACE));
        assert_eq!(nodes(&r, "blue"), ["a", "b"]);
        assert_eq!(r.next_expiry(), None);
        // b's pod leaves: still rendered until the grace period ends.
        let t1 = t0 + Duration::from_secs(10);
        assert!(!r.update(&activity(&[("blue", "a")]), t1, GRACE));
        assert_eq!(nodes(&r, "blue"), ["a", "b"]);
        assert_eq!(r.next_expiry(), Some(t1 + GRACE));
        // Just before the end nothing changes; at the end b goes.
        assert!(!r.update(
            &activity(&[("blue", "a")]),
            t1 + GRACE - Duration::from_millis(1),
            GRACE
        ));
        assert!(r.update(&activity(&[("blue", "a")]), t1 + GRACE, GRACE));
        assert_eq!(nodes(&r, "blue"), ["a"]);
    }

    #[test]
    fn a_pod_coming_back_in_time_keeps_the_node_without_a_change() {
        let t0 = Instant::now();
        let mut r = Rendering::default();
        r.update(&activity(&[("blue", "a")]), t0, GRACE);
        assert!(!r.update(&activity(&[]), t0 + Duration::from_secs(1), GRACE));
        assert!(!r.update(
            &activity(&[("blue", "a")]),
            t0 + Duration::from_secs(60),
            GRACE
        ));
        // Active again: the old deadline is gone.
        assert!(!r.update(
            &activity(&[("blue", "a")]),
            t0 + Duration::from_secs(500),
            GRACE
        ));
        assert_eq!(nodes(&r, "blue"), ["a"]);
    }

    #[test]
    fn seeded_allocations_survive_a_restart_for_a_grace_period() {
        let t0 = Instant::now();
        let mut r = Rendering::default();
        r.seed(
            [
                ("blue".to_owned(), "a".to_owned()),
                ("blue".to_owned(), "b".to_owned()),
            ],
            t0,
            GRACE,
        );
        // A restart with only a's pod: b stays for the grace period, then goes.
        r.update(&activity(&[("blue", "a")]), t0, GRACE);
        assert_eq!(nodes(&r, "blue"), ["a", "b"]);
        r.update(&activity(&[("blue", "a")]), t0 + GRACE, GRACE);
        assert_eq!(nodes(&r, "blue"), ["a"]);
    }
}
