//! Column values the topology writes: upstream's `external_ids` markers
//! (`k8s.ovn.org/network`, `topology`, `role`, ...) and string maps, sets and optional
//! strings as `udn-ovsdb` values.

use udn_ovsdb::protocol::{Atom, Value};

/// `k8s.ovn.org/network` (`types.NetworkExternalID`).
pub(crate) const NETWORK_KEY: &str = "k8s.ovn.org/network";
/// `k8s.ovn.org/topology` (`types.TopologyExternalID`).
pub(crate) const TOPOLOGY_KEY: &str = "k8s.ovn.org/topology";
/// `k8s.ovn.org/role` (`types.NetworkRoleExternalID`).
pub(crate) const ROLE_KEY: &str = "k8s.ovn.org/role";
/// `k8s.ovn.org/nad` (`types.NADExternalID`).
pub(crate) const NAD_KEY: &str = "k8s.ovn.org/nad";
/// `k8s.ovn.org/node` (`types.NodeExternalID`).
pub(crate) const NODE_KEY: &str = "k8s.ovn.org/node";

/// A string-to-string map value (`external_ids`, `options`, `other_config`).
pub(crate) fn string_map<K: AsRef<str>, V: AsRef<str>>(
    pairs: impl IntoIterator<Item = (K, V)>,
) -> Value {
    Value::Map(
        pairs
            .into_iter()
            .map(|(k, v)| {
                (
                    Atom::String(k.as_ref().to_owned()),
                    Atom::String(v.as_ref().to_owned()),
                )
            })
            .collect(),
    )
}

/// A set-of-strings value.
pub(crate) fn string_set<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Value {
    Value::Set(
        items
            .into_iter()
            .map(|s| Atom::String(s.as_ref().to_owned()))
            .collect(),
    )
}

/// An optional string column: set, or empty.
pub(crate) fn optional_string(value: Option<&str>) -> Value {
    match value {
        Some(v) => Value::Atom(Atom::String(v.to_owned())),
        None => Value::Set(Vec::new()),
    }
}

/// The network markers of one network: none on the default network ("backward
/// compatibility" upstream), `network`/`topology` (and `role` on switches and gateway
/// routers) on a user-defined one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Markers {
    network: String,
    topology: &'static str,
    role: &'static str,
    user_defined: bool,
}

/// `external_ids` pairs.
pub(crate) type Pairs = Vec<(&'static str, String)>;

impl Markers {
    /// Markers of a network; `user_defined` false for the default network.
    pub(crate) fn new(
        network: &str,
        topology: &'static str,
        primary: bool,
        user_defined: bool,
    ) -> Self {
        Self {
            network: network.to_owned(),
            topology,
            role: if primary { "primary" } else { "secondary" },
            user_defined,
        }
    }

    /// `{network, topology}` (most rows), empty for the default network.
    pub(crate) fn network(&self) -> Pairs {
        if !self.user_defined {
            return Vec::new();
        }
        vec![
            (NETWORK_KEY, self.network.clone()),
            (TOPOLOGY_KEY, self.topology.to_owned()),
        ]
    }

    /// `{network, role, topology}` (`GenerateExternalIDsForSwitchOrRouter`: switches and
    /// gateway routers), empty for the default network.
    pub(crate) fn switch(&self) -> Pairs {
        let mut pairs = self.network();
        if self.user_defined {
            pairs.push((ROLE_KEY, self.role.to_owned()));
        }
        pairs
    }

    /// The topology marker value.
    pub(crate) fn topology(&self) -> &'static str {
        self.topology
    }
}
