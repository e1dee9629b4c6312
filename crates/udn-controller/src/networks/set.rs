//! All networks of the cluster from all NADs: grouped by network name, checked for
//! agreement, with the primary NAD of each namespace.

use std::collections::{BTreeMap, BTreeSet};

use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::netconf::NetInfo;

use super::identity::NetworkIdentity;
use super::nad::{NadNetwork, parse_nad};
use crate::model::{DEFAULT_NETWORK, Network, ZoneConfig};

/// Event reason of a NAD that defines no network (upstream's network manager: `InvalidConfig`).
const INVALID_CONFIG: &str = "InvalidConfig";

/// The networks the zone renders, and how NADs and namespaces map onto them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetworkSet {
    /// Every network that can be rendered, by name; always holds the default network.
    pub networks: BTreeMap<String, Network>,
    /// NAD key -> network name, for every NAD that is part of a network in `networks` or
    /// `pending`.
    pub nad_networks: BTreeMap<String, String>,
    /// Namespace -> key of its primary network's NAD.
    pub primary_nads: BTreeMap<String, String>,
    /// Networks defined by valid NADs that cannot be rendered yet (no network ID).
    pub pending: BTreeSet<String>,
    /// NADs that define nothing, and why.
    pub problems: Vec<NadProblem>,
}

/// A NAD that was left out, with the reason (logged and reported as an Event on the NAD).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NadProblem {
    /// NAD key.
    pub nad: String,
    /// Event reason (CamelCase, constant).
    pub reason: &'static str,
    /// Event message.
    pub message: String,
}

impl NetworkSet {
    /// The network a NAD key belongs to.
    pub fn network_of_nad(&self, nad_key: &str) -> Option<&Network> {
        self.networks.get(self.nad_networks.get(nad_key)?)
    }

    /// The primary network of a namespace and its NAD key, when it has one that can be
    /// rendered.
    pub fn primary_of(&self, namespace: &str) -> Option<(&str, &Network)> {
        let nad = self.primary_nads.get(namespace)?;
        Some((nad.as_str(), self.network_of_nad(nad)?))
    }
}

/// Builds the network set from every NAD of the cluster (in any order).
pub fn network_set<'a>(
    nads: impl IntoIterator<Item = &'a NetworkAttachmentDefinition>,
    config: &ZoneConfig,
) -> NetworkSet {
    let mut set = NetworkSet::default();
    set.networks
        .insert(DEFAULT_NETWORK.to_owned(), Network::default_network());
    if !config.multi_network {
        return set;
    }
    let mut parsed: Vec<NadNetwork> = Vec::new();
    for nad in nads {
        match parse_nad(nad, &config.cluster) {
            Ok(Some(entry)) => parsed.push(entry),
            Ok(None) => {}
            Err(error) => set.problems.push(NadProblem {
                nad: error_nad(&error).to_owned(),
                reason: INVALID_CONFIG,
                // Upstream's network manager: `Failed to parse network config: <error>`.
                message: format!("Failed to parse network config: {error}"),
            }),
        }
    }
    parsed.sort_by(|a, b| a.key.cmp(&b.key));
    let mut groups: BTreeMap<String, Vec<NadNetwork>> = BTreeMap::new();
    for entry in parsed {
        if entry.info.primary && !config.segmentation {
            set.problems.push(NadProblem {
                nad: entry.key.clone(),
                reason: INVALID_CONFIG,
                message: format!(
                    "NetworkAttachmentDefinition {}: network {} has role primary, which needs --enable-network-segmentation",
                    entry.key, entry.info.name
                ),
            });
            continue;
        }
        groups
            .entry(entry.info.name.clone())
            .or_default()
            .push(entry);
    }
    for (name, entries) in groups {
        add_network(&mut set, name, entries);
    }
    set
}

fn error_nad(error: &super::NadError) -> &str {
    match error {
        super::NadError::Config { nad, .. }
        | super::NadError::NetInfo { nad, .. }
        | super::NadError::NameMismatch { nad, .. }
        | super::NadError::Annotation { nad, .. } => nad,
    }
}

/// Adds the network defined by `entries` (sorted by NAD key): the first NAD defines the
/// configuration, NADs that disagree are left out, Layer3 ranges of all agreeing NADs are
/// merged in order (expansion).
fn add_network(set: &mut NetworkSet, name: String, entries: Vec<NadNetwork>) {
    let mut entries = entries.into_iter();
    let Some(first) = entries.next() else {
        return;
    };
    let identity = NetworkIdentity::of(&first.info);
    let mut info = first.info.clone();
    let mut nads = BTreeSet::from([first.key.clone()]);
    let mut network_id = first.network_id;
    let mut tunnel_keys = first.tunnel_keys.clone();
    let mut members = vec![first];
    for entry in entries {
        if NetworkIdentity::of(&entry.info) != identity {
            set.problems.push(NadProblem {
                nad: entry.key.clone(),
                reason: INVALID_CONFIG,
                message: format!(
                    "NetworkAttachmentDefinition {}: network {name} is already defined by NetworkAttachmentDefinition {} with a different configuration",
                    entry.key,
                    members.first().map_or("", |m| m.key.as_str())
                ),
            });
            continue;
        }
        for subnet in &entry.info.subnets {
            if !info.subnets.contains(subnet) {
                info.subnets.push(*subnet);
            }
        }
        network_id = network_id.or(entry.network_id);
        if tunnel_keys.is_empty() {
            tunnel_keys.clone_from(&entry.tunnel_keys);
        }
        nads.insert(entry.key.clone());
        members.push(entry);
    }
    for member in &members {
        set.nad_networks.insert(member.key.clone(), name.clone());
        if member.info.primary {
            let namespace = member.key.split('/').next().unwrap_or_default().to_owned();
            match set.primary_nads.get(&namespace) {
                Some(existing) if *existing != member.key => set.problems.push(NadProblem {
                    nad: member.key.clone(),
                    reason: INVALID_CONFIG,
                    message: format!(
                        "NetworkAttachmentDefinition {}: namespace {namespace} already has primary network NetworkAttachmentDefinition {existing}",
                        member.key
                    ),
                }),
                _ => {
                    set.primary_nads.insert(namespace, member.key.clone());
                }
            }
        }
    }
    let Some(id) = network_id else {
        set.pending.insert(name);
        return;
    };
    set.networks.insert(
        name.clone(),
        Network {
            name,
            id,
            info: NetInfo::UserDefined(Box::new(info)),
            nads,
            tunnel_keys,
        },
    );
}

#[cfg(test)]
mod tests;
