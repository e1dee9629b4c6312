//! Dynamic UDN scope changes in the node-subnets state: which nodes look again at which gated
//! network, and the release of the subnets of networks a node left.
//!
//! A scope change is recorded per (node, network) pair with a new state generation, like a
//! network change is recorded per network: a node's next plan looks again at the pairs moved
//! after its last complete plan, and a plan whose write fails leaves them for the retry.

use std::collections::BTreeSet;

use ipnetwork::IpNetwork;
use tracing::info;

use super::{SubnetState, Writing};
use crate::dynamic_udn::scope::{CurrentScope, Rescope, rescoped};

impl SubnetState {
    /// Follows the Dynamic UDN scope from now on. Returns the nodes to look at again:
    /// [`Rescope::Everything`] (every node, every gated network) or the pairs whose network
    /// has an allocator and is gated.
    pub(crate) fn set_scope(&mut self, scope: CurrentScope) -> Rescope {
        let change = rescoped(&self.scope, &scope);
        self.scope = scope;
        let gated: BTreeSet<&String> = self
            .networks
            .iter()
            .filter(|(_, network)| network.gated)
            .map(|(name, _)| name)
            .collect();
        match change {
            Rescope::Everything if gated.is_empty() => Rescope::Pairs(Default::default()),
            Rescope::Everything => {
                self.generation = self.generation.saturating_add(1);
                self.restart_at = self.generation;
                Rescope::Everything
            }
            Rescope::Pairs(mut pairs) => {
                for networks in pairs.values_mut() {
                    networks.retain(|network| gated.contains(network));
                }
                pairs.retain(|_, networks| !networks.is_empty());
                if pairs.is_empty() {
                    return Rescope::Pairs(pairs);
                }
                self.generation = self.generation.saturating_add(1);
                for (node, networks) in &pairs {
                    let moved = self.rescoped.entry(node.clone()).or_default();
                    for network in networks {
                        moved.insert(network.clone(), self.generation);
                    }
                }
                Rescope::Pairs(pairs)
            }
        }
    }

    /// The write begun by [`writing`](Self::writing) succeeded: the subnets of networks the
    /// node left are free now (not before: until then the node still shows them). Returns
    /// the networks whose allocator changed.
    pub(crate) fn written(&mut self, node: &str, writing: Writing) -> BTreeSet<String> {
        self.rescope_done(node, writing.generation);
        self.release_left(node, &writing.released)
    }

    /// The gated networks of `node` a scope change moved after generation `since`.
    pub(super) fn rescoped_since(&self, node: &str, since: u64) -> Vec<String> {
        self.rescoped
            .get(node)
            .into_iter()
            .flatten()
            .filter(|(_, generation)| **generation > since)
            .map(|(network, _)| network.clone())
            .collect()
    }

    /// A plan of generation `generation` is complete on the node: the pairs moved up to it
    /// are done.
    pub(super) fn rescope_done(&mut self, node: &str, generation: u64) {
        if let Some(moved) = self.rescoped.get_mut(node) {
            moved.retain(|_, moved_at| *moved_at > generation);
            if moved.is_empty() {
                self.rescoped.remove(node);
            }
        }
    }

    /// Releases the subnets of networks the node left (its annotation no longer shows
    /// them). Returns the networks whose allocator changed.
    pub(super) fn release_left(
        &mut self,
        node: &str,
        released: &[(String, IpNetwork)],
    ) -> BTreeSet<String> {
        let mut touched = BTreeSet::new();
        for (name, subnet) in released {
            if let Some(network) = self.networks.get_mut(name)
                && network.allocator.release(node, &[*subnet]).is_ok()
                && touched.insert(name.clone())
            {
                info!(network = %name, node = %node, "node left the network: released its subnets");
            }
        }
        touched
    }
}
