//! What a lab brings up.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use ipnetwork::Ipv4Network;

use crate::error::LabError;

/// Name of the zone in [`ZoneMode::Single`] (upstream's default zone name).
pub const SINGLE_ZONE_NAME: &str = "global";

/// kind's network, the default underlay.
const DEFAULT_UNDERLAY: Ipv4Network =
    match Ipv4Network::new_checked(Ipv4Addr::new(172, 18, 0, 0), 16) {
        Some(network) => network,
        None => panic!("172.18.0.0/16 is a network"),
    };

/// How the nodes are grouped into OVN zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZoneMode {
    /// Interconnect, as upstream runs: every node is its own zone (named after the node) with
    /// its own NB and SB ovsdb-server and ovn-northd.
    #[default]
    PerNode,
    /// One zone ([`SINGLE_ZONE_NAME`]): the first node runs NB, SB and ovn-northd, and every
    /// node's ovn-controller uses that SB. Handy for tests that write NB by hand.
    Single,
}

/// What [`crate::Lab::start`] brings up.
#[derive(Debug, Clone)]
pub struct LabConfig {
    /// Node names, in order (`node1`, `node2` by default). Node `i` (0-based) gets the
    /// underlay address `underlay.nth(i + 2)`.
    pub nodes: Vec<String>,
    /// Zone layout.
    pub zones: ZoneMode,
    /// The underlay network. Its first host address is the external host (the nodes' default
    /// gateway); `172.18.0.0/16` by default (kind's network).
    pub underlay: Ipv4Network,
    /// MTU of the underlay links and `breth0` (9000, so geneve fits around 1500-byte pods).
    pub underlay_mtu: u32,
    /// The longest the lab waits for one readiness condition while starting.
    pub timeout: Duration,
    /// Where the run directory goes (`<run_base>/udn-ovn-lab-<prefix>`); the temp dir when
    /// `None`. Only labs in the temp dir are cleaned up by [`crate::clean_stale_labs`], so a
    /// lab meant to outlive its process ([`crate::Lab::detach`]) lives elsewhere.
    pub run_base: Option<PathBuf>,
}

impl Default for LabConfig {
    fn default() -> Self {
        Self::with_nodes(2)
    }
}

impl LabConfig {
    /// `count` nodes named `node1..node<count>`, one zone per node.
    pub fn with_nodes(count: usize) -> Self {
        Self {
            nodes: (1..=count).map(|i| format!("node{i}")).collect(),
            zones: ZoneMode::PerNode,
            underlay: DEFAULT_UNDERLAY,
            underlay_mtu: 9000,
            timeout: Duration::from_secs(30),
            run_base: None,
        }
    }

    /// Nodes with these names.
    pub fn node_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.nodes = names.into_iter().map(Into::into).collect();
        self
    }

    /// The run directory under `base` instead of the temp dir.
    pub fn run_base(mut self, base: PathBuf) -> Self {
        self.run_base = Some(base);
        self
    }

    /// One zone for all nodes ([`ZoneMode::Single`]).
    pub fn single_zone(mut self) -> Self {
        self.zones = ZoneMode::Single;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), LabError> {
        let invalid = |field: &str, reason: String| LabError::Invalid {
            field: field.to_owned(),
            reason,
        };
        if self.nodes.is_empty() {
            return Err(invalid("nodes", "at least one node is needed".to_owned()));
        }
        let mut seen = BTreeSet::new();
        for name in &self.nodes {
            check_node_name(name).map_err(|reason| invalid("nodes", reason))?;
            if !seen.insert(name) {
                return Err(invalid("nodes", format!("{name:?} appears twice")));
            }
        }
        let hosts = u64::from(u32::MAX >> self.underlay.prefix()) - 1;
        if self.underlay.prefix() > 30 || hosts < self.nodes.len() as u64 + 1 {
            return Err(invalid(
                "underlay",
                format!(
                    "{} has no room for an external host and {} nodes",
                    self.underlay,
                    self.nodes.len()
                ),
            ));
        }
        if !(1280..=65535).contains(&self.underlay_mtu) {
            return Err(invalid(
                "underlay_mtu",
                format!("{} is outside 1280..=65535", self.underlay_mtu),
            ));
        }
        Ok(())
    }
}

/// Node names become network namespace names (`<prefix>-<node>`) and OVN names.
fn check_node_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && !name.starts_with('-');
    if !valid {
        return Err(format!(
            "{name:?} is not a node name (1-40 of a-z, 0-9, '-', '.')"
        ));
    }
    if matches!(name, "underlay" | "ext") || name.starts_with("pod-") {
        return Err(format!("{name:?} is reserved for the lab's own namespaces"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_two_nodes_per_node_zones() {
        let config = LabConfig::default();
        assert_eq!(config.nodes, ["node1", "node2"]);
        assert_eq!(config.zones, ZoneMode::PerNode);
        assert_eq!(config.underlay.to_string(), "172.18.0.0/16");
        config.validate().unwrap();
    }

    #[test]
    fn rejects_bad_names_and_small_underlays() {
        assert!(
            LabConfig::default()
                .node_names(["a", "a"])
                .validate()
                .is_err()
        );
        assert!(
            LabConfig::default()
                .node_names(["Node1"])
                .validate()
                .is_err()
        );
        assert!(
            LabConfig::default()
                .node_names(["pod-x"])
                .validate()
                .is_err()
        );
        assert!(
            LabConfig::default()
                .node_names(Vec::<String>::new())
                .validate()
                .is_err()
        );
        let mut small = LabConfig::with_nodes(3);
        small.underlay = "10.0.0.0/30".parse().unwrap();
        assert!(small.validate().is_err());
        small.underlay = "10.0.0.0/29".parse().unwrap();
        small.validate().unwrap();
    }
}
