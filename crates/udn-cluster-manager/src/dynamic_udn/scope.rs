//! What the allocating controllers (node host subnets, Layer2 gateway router tunnel IDs) take
//! from Dynamic UDN: the [`NodeScope`] published on a watch channel, the decision "does node X
//! carry gated network N" ([`decide`]), and which (node, network) pairs a scope change
//! affects ([`rescoped`]), so only those nodes are looked at again. Pure.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tokio::sync::watch;

use super::rendering::Rendered;
use crate::context::Context;

/// Which nodes carry the per-node state of UDN/CUDN networks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NodeScope {
    /// Dynamic UDN is off: every node.
    All,
    /// The rendered nodes of every gated network (a gated network not listed has none).
    Only(Arc<Rendered>),
}

/// The scope channel's receiving end: `None` until Dynamic UDN has read the cluster once.
pub(crate) type ScopeReceiver = watch::Receiver<Option<NodeScope>>;

/// The scope channel: `None` until Dynamic UDN has read the cluster once (the allocating
/// controllers neither allocate nor release gated networks' node state meanwhile).
pub(crate) fn scope_channel(ctx: &Context) -> (watch::Sender<Option<NodeScope>>, ScopeReceiver) {
    let initial = (!ctx.config.dynamic_udn.enabled).then_some(NodeScope::All);
    watch::channel(initial)
}

/// A receiver that says "every node" forever (a controller run without Dynamic UDN).
pub(crate) fn every_node() -> ScopeReceiver {
    watch::channel(Some(NodeScope::All)).1
}

/// The scope an allocating controller plans with: what it last received. The default is
/// every node, as with Dynamic UDN off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CurrentScope(pub(crate) Option<NodeScope>);

impl Default for CurrentScope {
    fn default() -> Self {
        Self(Some(NodeScope::All))
    }
}

/// What to do with one network's entry on one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeNetwork {
    /// The node carries the network: keep or allocate its entry.
    Allocate,
    /// The node does not carry it: remove the entry and release what it holds.
    Release,
    /// Not known yet (Dynamic UDN has not read the cluster): leave the entry as it is.
    Keep,
}

impl CurrentScope {
    /// Whether `node` carries `network`. Networks not gated (a NAD not owned by a UDN/CUDN,
    /// the default network) are on every node.
    pub(crate) fn decide(&self, gated: bool, network: &str, node: &str) -> NodeNetwork {
        if !gated {
            return NodeNetwork::Allocate;
        }
        match &self.0 {
            None => NodeNetwork::Keep,
            Some(NodeScope::All) => NodeNetwork::Allocate,
            Some(NodeScope::Only(rendered)) => {
                if rendered
                    .get(network)
                    .is_some_and(|nodes| nodes.contains(node))
                {
                    NodeNetwork::Allocate
                } else {
                    NodeNetwork::Release
                }
            }
        }
    }
}

/// The nodes (and their gated networks) a scope change affects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Rescope {
    /// Every node, every gated network (the first scope, or a change between "every node"
    /// and a list).
    Everything,
    /// Node -> the networks it gained or lost (empty: nothing changed).
    Pairs(BTreeMap<String, BTreeSet<String>>),
}

/// What moving from scope `old` to `new` affects.
pub(crate) fn rescoped(old: &CurrentScope, new: &CurrentScope) -> Rescope {
    match (&old.0, &new.0) {
        (None, None) | (Some(NodeScope::All), Some(NodeScope::All)) => {
            Rescope::Pairs(BTreeMap::new())
        }
        (Some(NodeScope::Only(old)), Some(NodeScope::Only(new))) => {
            let mut pairs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            if Arc::ptr_eq(old, new) {
                return Rescope::Pairs(pairs);
            }
            let empty = BTreeSet::new();
            let networks: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
            for network in networks {
                let before = old.get(network).unwrap_or(&empty);
                let after = new.get(network).unwrap_or(&empty);
                for node in before.symmetric_difference(after) {
                    pairs
                        .entry(node.clone())
                        .or_default()
                        .insert(network.clone());
                }
            }
            Rescope::Pairs(pairs)
        }
        _ => Rescope::Everything,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(pairs: &[(&str, &str)]) -> CurrentScope {
        let mut rendered = Rendered::new();
        for (network, node) in pairs {
            rendered
                .entry((*network).to_owned())
                .or_default()
                .insert((*node).to_owned());
        }
        CurrentScope(Some(NodeScope::Only(Arc::new(rendered))))
    }

    fn all() -> CurrentScope {
        CurrentScope(Some(NodeScope::All))
    }

    fn unknown() -> CurrentScope {
        CurrentScope(None)
    }

    #[test]
    fn a_node_carries_a_gated_network_only_while_it_renders_it() {
        let scope = only(&[("blue", "a")]);
        assert_eq!(scope.decide(true, "blue", "a"), NodeNetwork::Allocate);
        assert_eq!(scope.decide(true, "blue", "b"), NodeNetwork::Release);
        // A gated network without rendered nodes is on none.
        assert_eq!(scope.decide(true, "red", "a"), NodeNetwork::Release);
        // Networks not gated are on every node.
        assert_eq!(scope.decide(false, "plain", "b"), NodeNetwork::Allocate);
    }

    #[test]
    fn before_the_first_scope_gated_entries_are_left_alone() {
        assert_eq!(unknown().decide(true, "blue", "a"), NodeNetwork::Keep);
        assert_eq!(unknown().decide(false, "plain", "a"), NodeNetwork::Allocate);
    }

    #[test]
    fn with_the_feature_off_every_node_carries_every_network() {
        assert_eq!(all().decide(true, "blue", "a"), NodeNetwork::Allocate);
        assert_eq!(CurrentScope::default(), all());
    }

    #[test]
    fn a_change_affects_only_the_pairs_that_moved() {
        let old = only(&[("blue", "a"), ("blue", "b"), ("red", "a")]);
        let new = only(&[("blue", "a"), ("blue", "c"), ("green", "b")]);
        let expected = BTreeMap::from([
            ("a".to_owned(), BTreeSet::from(["red".to_owned()])),
            (
                "b".to_owned(),
                BTreeSet::from(["blue".to_owned(), "green".to_owned()]),
            ),
            ("c".to_owned(), BTreeSet::from(["blue".to_owned()])),
        ]);
        assert_eq!(rescoped(&old, &new), Rescope::Pairs(expected));
        assert_eq!(
            rescoped(&new, &new.clone()),
            Rescope::Pairs(BTreeMap::new())
        );
        assert_eq!(rescoped(&all(), &all()), Rescope::Pairs(BTreeMap::new()));
    }

    #[test]
    fn the_first_scope_affects_everything() {
        assert_eq!(rescoped(&unknown(), &only(&[])), Rescope::Everything);
        assert_eq!(rescoped(&unknown(), &all()), Rescope::Everything);
        assert_eq!(rescoped(&all(), &only(&[])), Rescope::Everything);
    }
}
