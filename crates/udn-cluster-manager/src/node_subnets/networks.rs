//! Which networks exist, read from NetworkAttachmentDefinitions (the source of truth): an
//! index NAD key -> parsed entry, updated by sync `apply`/`delete`/`reset`, and the views the
//! node controller needs (Layer3 networks with their cluster ranges, and the UDN/CUDN owners
//! that get the `NetworkAllocationSucceeded` condition).

use std::collections::{BTreeMap, BTreeSet};

use udn_api::cluster::ClusterConfig;
use udn_api::crd::NetworkTopology;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::netconf::{NetConf, NetConfParseError, NetInfo, NetInfoError, SubnetEntry};

/// Kind of the object a NAD was rendered from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum OwnerKind {
    /// `UserDefinedNetwork` (namespaced, same namespace as its NAD).
    Udn,
    /// `ClusterUserDefinedNetwork` (cluster scoped).
    Cudn,
}

impl OwnerKind {
    /// The Kubernetes kind.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Self::Udn => "UserDefinedNetwork",
            Self::Cudn => "ClusterUserDefinedNetwork",
        }
    }
}

/// Identity of a UDN or CUDN (namespace only for a UDN).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct OwnerKey {
    /// UDN or CUDN.
    pub(crate) kind: OwnerKind,
    /// Namespace of a UDN; `None` for a CUDN.
    pub(crate) namespace: Option<String>,
    /// Name.
    pub(crate) name: String,
}

/// The owner of a NAD as its controller ownerReference names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NadOwner {
    pub(crate) key: OwnerKey,
    pub(crate) uid: String,
}

/// What the node controller takes from one NAD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NadEntry {
    pub(crate) network: String,
    pub(crate) topology: NetworkTopology,
    /// Cluster subnets with host lengths (Layer3 only).
    pub(crate) ranges: Vec<SubnetEntry>,
    /// Upstream runs a network cluster controller (and reports its status) for Layer3,
    /// Layer2 and Localnet with subnets.
    pub(crate) has_cluster_controller: bool,
    /// A primary network's NAD (its namespace's primary network).
    pub(crate) primary: bool,
    pub(crate) owner: Option<NadOwner>,
}

/// Why a NAD was not indexed (logged; the NAD then counts as absent).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NadEntryError {
    #[error("NAD {nad}: spec.config is not a valid OVN-Kubernetes network configuration")]
    Config {
        nad: String,
        #[source]
        source: NetConfParseError,
    },
    #[error("NAD {nad}: invalid network configuration")]
    NetInfo {
        nad: String,
        #[source]
        source: NetInfoError,
    },
}

/// `<namespace>/<name>` of a NAD.
pub(crate) fn nad_key_of(nad: &NetworkAttachmentDefinition) -> String {
    udn_api::names::nad_key(
        nad.metadata.namespace.as_deref().unwrap_or_default(),
        nad.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// Parses one NAD. `Ok(None)` for NADs that are not OVN-Kubernetes user-defined networks.
pub(crate) fn nad_entry(
    nad: &NetworkAttachmentDefinition,
    cluster: &ClusterConfig,
) -> Result<Option<NadEntry>, NadEntryError> {
    let Some(config) = nad.spec.config.as_deref() else {
        return Ok(None);
    };
    let conf = match NetConf::parse(config, cluster.mtu) {
        Ok(conf) => conf,
        Err(NetConfParseError::NotOvnManaged) => return Ok(None),
        Err(source) => {
            return Err(NadEntryError::Config {
                nad: nad_key_of(nad),
                source,
            });
        }
    };
    let info = NetInfo::from_netconf(&conf, cluster).map_err(|source| NadEntryError::NetInfo {
        nad: nad_key_of(nad),
        source,
    })?;
    let Some(info) = info.user_defined() else {
        return Ok(None);
    };
    let has_cluster_controller = match info.topology {
        NetworkTopology::Layer3 | NetworkTopology::Layer2 => true,
        NetworkTopology::Localnet => !info.subnets.is_empty(),
    };
    Ok(Some(NadEntry {
        network: info.name.clone(),
        topology: info.topology,
        ranges: if info.topology == NetworkTopology::Layer3 {
            info.subnets.clone()
        } else {
            Vec::new()
        },
        has_cluster_controller,
        primary: info.primary,
        owner: nad_owner(nad),
    }))
}

/// The UDN/CUDN named by the NAD's controller ownerReference (its network is then gated by
/// Dynamic UDN).
pub(crate) fn nad_owner(nad: &NetworkAttachmentDefinition) -> Option<NadOwner> {
    let reference = nad
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true) && r.api_version.starts_with("k8s.ovn.org/"))?;
    let kind = match reference.kind.as_str() {
        "UserDefinedNetwork" => OwnerKind::Udn,
        "ClusterUserDefinedNetwork" => OwnerKind::Cudn,
        _ => return None,
    };
    Some(NadOwner {
        key: OwnerKey {
            kind,
            namespace: match kind {
                OwnerKind::Udn => nad.metadata.namespace.clone(),
                OwnerKind::Cudn => None,
            },
            name: reference.name.clone(),
        },
        uid: reference.uid.clone(),
    })
}

/// A Layer3 network as the subnet allocator sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Layer3Network {
    /// Cluster ranges in insertion order (the union over the network's NADs).
    pub(crate) ranges: Vec<SubnetEntry>,
    pub(crate) ipv4: bool,
    pub(crate) ipv6: bool,
    /// Every NAD of the network is owned by a UDN/CUDN: with Dynamic UDN, only the nodes
    /// that render it get a subnet (a plain NAD puts the network on every node).
    pub(crate) gated: bool,
}

impl Layer3Network {
    /// The default network: the cluster subnets (`--cluster-subnets`) as ranges.
    pub(crate) fn default_network(cluster: &ClusterConfig) -> Self {
        let mut network = Self::default();
        network.add_ranges(&cluster.cluster_subnets);
        network
    }

    /// Appends the ranges not present yet; the families follow the ranges.
    fn add_ranges(&mut self, ranges: &[SubnetEntry]) {
        for range in ranges {
            if !self.ranges.contains(range) {
                self.ranges.push(*range);
            }
            self.ipv4 |= range.cidr.is_ipv4();
            self.ipv6 |= range.cidr.is_ipv6();
        }
    }
}

/// What one index update affected.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct IndexChange {
    /// Networks of the old and new entry.
    pub(crate) networks: BTreeSet<String>,
    /// Owners of the old and new entry.
    pub(crate) owners: BTreeSet<OwnerKey>,
}

impl IndexChange {
    /// Whether nothing changed.
    pub(crate) fn is_empty(&self) -> bool {
        self.networks.is_empty() && self.owners.is_empty()
    }

    fn add(&mut self, entry: &NadEntry) {
        self.networks.insert(entry.network.clone());
        if let Some(owner) = &entry.owner {
            self.owners.insert(owner.key.clone());
        }
    }
}

/// NAD key -> entry, with the NAD keys of each network and of each owner.
#[derive(Debug, Default)]
pub(crate) struct NadIndex {
    nads: BTreeMap<String, NadEntry>,
    by_network: BTreeMap<String, BTreeSet<String>>,
    by_owner: BTreeMap<OwnerKey, BTreeSet<String>>,
}

/// A network as its first NAD makes it, before merging.
fn first_entry() -> Layer3Network {
    Layer3Network {
        gated: true,
        ..Layer3Network::default()
    }
}

fn merge_entry(network: &mut Layer3Network, entry: &NadEntry) {
    network.add_ranges(&entry.ranges);
    network.gated &= entry.owner.is_some();
}

impl NadIndex {
    /// Sets (or, with `None`, removes) the entry of NAD `key`; what changed.
    pub(crate) fn apply(&mut self, key: &str, entry: Option<NadEntry>) -> IndexChange {
        let mut change = IndexChange::default();
        let old = match entry {
            Some(entry) => {
                if self.nads.get(key) == Some(&entry) {
                    return change;
                }
                change.add(&entry);
                self.link(key, &entry);
                self.nads.insert(key.to_owned(), entry)
            }
            None => self.nads.remove(key),
        };
        if let Some(old) = old {
            change.add(&old);
            if self
                .nads
                .get(key)
                .is_none_or(|new| new.network != old.network)
            {
                unlink(&mut self.by_network, &old.network, key);
            }
            if let Some(owner) = &old.owner
                && self
                    .nads
                    .get(key)
                    .and_then(|new| new.owner.as_ref())
                    .is_none_or(|new| new.key != owner.key)
            {
                unlink(&mut self.by_owner, &owner.key, key);
            }
        }
        change
    }

    fn link(&mut self, key: &str, entry: &NadEntry) {
        self.by_network
            .entry(entry.network.clone())
            .or_default()
            .insert(key.to_owned());
        if let Some(owner) = &entry.owner {
            self.by_owner
                .entry(owner.key.clone())
                .or_default()
                .insert(key.to_owned());
        }
    }

    /// Replaces the whole index.
    pub(crate) fn reset(&mut self, entries: BTreeMap<String, NadEntry>) {
        self.by_network.clear();
        self.by_owner.clear();
        for (key, entry) in &entries {
            self.link(key, entry);
        }
        self.nads = entries;
    }

    /// The entries of network `name`, in NAD-key order.
    fn network_entries<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a NadEntry> + 'a {
        self.by_network
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|key| self.nads.get(key))
    }

    /// Every Layer3 network with its merged ranges: the ranges of its NADs in NAD-key order,
    /// each range once (append-only expansion makes this the newest NAD's list); gated when
    /// a UDN/CUDN owns each of its NADs.
    pub(crate) fn layer3_networks(&self) -> BTreeMap<String, Layer3Network> {
        let mut networks: BTreeMap<String, Layer3Network> = BTreeMap::new();
        for entry in self.nads.values() {
            if entry.topology == NetworkTopology::Layer3 {
                let network = networks
                    .entry(entry.network.clone())
                    .or_insert_with(first_entry);
                merge_entry(network, entry);
            }
        }
        networks
    }

    /// One Layer3 network, `None` when no Layer3 NAD defines it.
    pub(crate) fn layer3_network(&self, name: &str) -> Option<Layer3Network> {
        let mut found = None;
        for entry in self.network_entries(name) {
            if entry.topology == NetworkTopology::Layer3 {
                merge_entry(found.get_or_insert_with(first_entry), entry);
            }
        }
        found
    }

    /// The owners of a network's NADs (each once).
    pub(crate) fn owners_of_network(&self, name: &str) -> Vec<NadOwner> {
        let mut owners: Vec<NadOwner> = Vec::new();
        for entry in self.network_entries(name) {
            if let Some(owner) = &entry.owner
                && !owners.iter().any(|o| o.key == owner.key)
            {
                owners.push(owner.clone());
            }
        }
        owners
    }

    /// The networks (with a cluster controller) rendered from `owner`.
    pub(crate) fn owner_networks(&self, owner: &OwnerKey) -> BTreeSet<String> {
        self.by_owner
            .get(owner)
            .into_iter()
            .flatten()
            .filter_map(|key| self.nads.get(key))
            .filter(|e| e.has_cluster_controller)
            .map(|e| e.network.clone())
            .collect()
    }

    /// Every owner of a network with a cluster controller.
    pub(crate) fn owners(&self) -> BTreeSet<OwnerKey> {
        self.nads
            .values()
            .filter(|e| e.has_cluster_controller)
            .filter_map(|e| e.owner.as_ref().map(|o| o.key.clone()))
            .collect()
    }
}

/// Removes NAD `key` from the set of `group`, dropping the set when it empties.
fn unlink<K: Ord>(index: &mut BTreeMap<K, BTreeSet<String>>, group: &K, key: &str) {
    if let Some(keys) = index.get_mut(group) {
        keys.remove(key);
        if keys.is_empty() {
            index.remove(group);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use udn_api::nad::NetworkAttachmentDefinitionSpec;

    fn nad(
        namespace: &str,
        name: &str,
        config: &str,
        owner: Option<(&str, &str)>,
    ) -> NetworkAttachmentDefinition {
        NetworkAttachmentDefinition {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                owner_references: owner.map(|(kind, owner_name)| {
                    vec![OwnerReference {
                        api_version: "k8s.ovn.org/v1".into(),
                        kind: kind.into(),
                        name: owner_name.into(),
                        uid: "u1".into(),
                        controller: Some(true),
                        block_owner_deletion: Some(true),
                    }]
                }),
                ..ObjectMeta::default()
            },
            spec: NetworkAttachmentDefinitionSpec {
                config: Some(config.into()),
            },
        }
    }

    fn l3(name: &str, subnets: &str) -> String {
        format!(
            r#"{{"cniVersion":"1.1.0","name":"{name}","type":"ovn-k8s-cni-overlay","netAttachDefName":"ns/x","role":"primary","topology":"layer3","subnets":"{subnets}"}}"#
        )
    }

    #[test]
    fn parses_layer3_with_owner() {
        let cluster = ClusterConfig::default();
        let entry = nad_entry(
            &nad(
                "ns",
                "x",
                &l3("ns_x", "10.1.0.0/16/24"),
                Some(("UserDefinedNetwork", "x")),
            ),
            &cluster,
        )
        .unwrap()
        .unwrap();
        assert_eq!(entry.network, "ns_x");
        assert_eq!(entry.ranges.len(), 1);
        assert!(entry.has_cluster_controller);
        let owner = entry.owner.unwrap();
        assert_eq!(owner.key.kind, OwnerKind::Udn);
        assert_eq!(owner.key.namespace.as_deref(), Some("ns"));
        assert_eq!(owner.uid, "u1");
    }

    #[test]
    fn ignores_foreign_and_default_nads() {
        let cluster = ClusterConfig::default();
        let foreign = nad(
            "ns",
            "m",
            r#"{"cniVersion":"1.0.0","name":"m","type":"macvlan"}"#,
            None,
        );
        assert!(nad_entry(&foreign, &cluster).unwrap().is_none());
        let default = nad(
            "ns",
            "d",
            r#"{"cniVersion":"1.0.0","name":"default","type":"ovn-k8s-cni-overlay"}"#,
            None,
        );
        assert!(nad_entry(&default, &cluster).unwrap().is_none());
        let broken = nad("ns", "b", "{", None);
        assert!(nad_entry(&broken, &cluster).is_err());
    }

    #[test]
    fn merges_ranges_of_a_network_across_nads() {
        let cluster = ClusterConfig::default();
        let mut index = NadIndex::default();
        let old = nad_entry(
            &nad(
                "a",
                "net",
                &l3("cluster_udn_net", "10.1.0.0/16/24"),
                Some(("ClusterUserDefinedNetwork", "net")),
            ),
            &cluster,
        )
        .unwrap();
        let new = nad_entry(
            &nad(
                "b",
                "net",
                &l3("cluster_udn_net", "10.1.0.0/16/24,10.2.0.0/16/24"),
                Some(("ClusterUserDefinedNetwork", "net")),
            ),
            &cluster,
        )
        .unwrap();
        assert!(!index.apply("b/net", new.clone()).is_empty());
        assert!(!index.apply("a/net", old).is_empty());
        assert!(index.apply("b/net", new).is_empty());
        let networks = index.layer3_networks();
        let ranges: Vec<String> = networks["cluster_udn_net"]
            .ranges
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(ranges, ["10.1.0.0/16/24", "10.2.0.0/16/24"]);
        assert_eq!(
            index.layer3_network("cluster_udn_net").as_ref(),
            networks.get("cluster_udn_net")
        );
        assert!(networks["cluster_udn_net"].gated);
        let key = OwnerKey {
            kind: OwnerKind::Cudn,
            namespace: None,
            name: "net".into(),
        };
        assert_eq!(index.owners(), BTreeSet::from([key.clone()]));
        assert_eq!(index.owners_of_network("cluster_udn_net").len(), 1);
        assert_eq!(
            index.owner_networks(&key),
            BTreeSet::from(["cluster_udn_net".to_owned()])
        );
        let change = index.apply("a/net", None);
        assert_eq!(change.owners, BTreeSet::from([key]));
        assert!(!index.apply("b/net", None).is_empty());
        assert!(index.layer3_networks().is_empty());
        assert!(index.layer3_network("cluster_udn_net").is_none());
    }

    #[test]
    fn a_network_is_gated_only_when_a_udn_or_cudn_owns_every_nad() {
        let cluster = ClusterConfig::default();
        let mut index = NadIndex::default();
        let owned = nad(
            "a",
            "net",
            &l3("cluster_udn_net", "10.1.0.0/16/24"),
            Some(("ClusterUserDefinedNetwork", "net")),
        );
        let plain = nad("b", "net", &l3("cluster_udn_net", "10.1.0.0/16/24"), None);
        index.apply("a/net", nad_entry(&owned, &cluster).unwrap());
        assert_eq!(
            index.layer3_network("cluster_udn_net").map(|n| n.gated),
            Some(true)
        );
        index.apply("b/net", nad_entry(&plain, &cluster).unwrap());
        assert_eq!(
            index.layer3_network("cluster_udn_net").map(|n| n.gated),
            Some(false)
        );
        assert!(!index.layer3_networks()["cluster_udn_net"].gated);
        assert!(!Layer3Network::default_network(&cluster).gated);
    }

    #[test]
    fn a_nad_changing_network_or_owner_moves_in_the_index() {
        let cluster = ClusterConfig::default();
        let mut index = NadIndex::default();
        let entry = |network: &str, owner: &str| {
            nad_entry(
                &nad(
                    "ns",
                    "x",
                    &l3(network, "10.1.0.0/16/24"),
                    Some(("UserDefinedNetwork", owner)),
                ),
                &cluster,
            )
            .unwrap()
        };
        let key = |name: &str| OwnerKey {
            kind: OwnerKind::Udn,
            namespace: Some("ns".into()),
            name: name.into(),
        };
        index.apply("ns/x", entry("ns_a", "a"));
        index.apply("ns/x", entry("ns_b", "a"));
        assert!(index.layer3_network("ns_a").is_none());
        assert!(index.owners_of_network("ns_a").is_empty());
        assert!(index.layer3_network("ns_b").is_some());
        assert_eq!(
            index.owner_networks(&key("a")),
            BTreeSet::from(["ns_b".to_owned()])
        );
        index.apply("ns/x", entry("ns_b", "b"));
        assert!(index.owner_networks(&key("a")).is_empty());
        assert_eq!(index.owners_of_network("ns_b")[0].key, key("b"));
        index.reset(BTreeMap::from([(
            "ns/y".to_owned(),
            entry("ns_c", "c").unwrap(),
        )]));
        assert!(index.layer3_network("ns_b").is_none());
        assert!(index.owner_networks(&key("b")).is_empty());
        assert_eq!(
            index.owner_networks(&key("c")),
            BTreeSet::from(["ns_c".to_owned()])
        );
    }
}
