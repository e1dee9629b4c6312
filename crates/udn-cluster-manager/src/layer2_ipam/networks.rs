//! The networks whose pods the cluster-manager allocates (upstream: Layer2, and Localnet with
//! subnets), read from NetworkAttachmentDefinitions: NAD key -> entry, the network
//! definitions, and each namespace's primary NAD.

use std::collections::{BTreeMap, BTreeSet};

use udn_api::cluster::ClusterConfig;
use udn_api::crd::NetworkTopology;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::netconf::{NetConf, NetConfParseError, NetInfo, UserDefinedNetInfo};

use crate::node_subnets::networks::{nad_key_of, nad_owner};

/// One NAD of a pod-allocated network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layer2Nad {
    pub(crate) namespace: String,
    pub(crate) info: UserDefinedNetInfo,
    /// A UDN/CUDN owns it (controller reference): Dynamic UDN gates its network.
    pub(crate) owned: bool,
}

/// Why a NAD was not indexed (logged; the NAD then counts as absent).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Layer2NadError {
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
        source: udn_api::netconf::NetInfoError,
    },
}

/// Parses a NAD; `Ok(None)` unless it is a Layer2 network or a Localnet with subnets.
pub(crate) fn layer2_nad(
    nad: &NetworkAttachmentDefinition,
    cluster: &ClusterConfig,
) -> Result<Option<Layer2Nad>, Layer2NadError> {
    let Some(config) = nad.spec.config.as_deref() else {
        return Ok(None);
    };
    let conf = match NetConf::parse(config, cluster.mtu) {
        Ok(conf) => conf,
        Err(NetConfParseError::NotOvnManaged) => return Ok(None),
        Err(source) => {
            return Err(Layer2NadError::Config {
                nad: nad_key_of(nad),
                source,
            });
        }
    };
    let info = NetInfo::from_netconf(&conf, cluster).map_err(|source| Layer2NadError::NetInfo {
        nad: nad_key_of(nad),
        source,
    })?;
    let Some(info) = info.user_defined() else {
        return Ok(None);
    };
    let allocated_here = match info.topology {
        NetworkTopology::Layer2 => true,
        NetworkTopology::Localnet => !info.subnets.is_empty(),
        NetworkTopology::Layer3 => false,
    };
    Ok(allocated_here.then(|| Layer2Nad {
        namespace: nad.metadata.namespace.clone().unwrap_or_default(),
        info: info.clone(),
        owned: nad_owner(nad).is_some(),
    }))
}

/// NAD key -> entry.
#[derive(Debug, Default)]
pub(crate) struct Layer2Index {
    nads: BTreeMap<String, Layer2Nad>,
}

impl Layer2Index {
    /// Sets or removes one NAD; the networks whose definition may have changed.
    pub(crate) fn apply(&mut self, key: &str, entry: Option<Layer2Nad>) -> BTreeSet<String> {
        let mut changed = BTreeSet::new();
        let old = match entry {
            Some(entry) => {
                if self.nads.get(key) == Some(&entry) {
                    return changed;
                }
                changed.insert(entry.info.name.clone());
                self.nads.insert(key.to_owned(), entry)
            }
            None => self.nads.remove(key),
        };
        if let Some(old) = old {
            changed.insert(old.info.name);
        }
        changed
    }

    /// Replaces everything.
    pub(crate) fn reset(&mut self, nads: BTreeMap<String, Layer2Nad>) {
        self.nads = nads;
    }

    /// The NAD of `key`.
    pub(crate) fn nad(&self, key: &str) -> Option<&Layer2Nad> {
        self.nads.get(key)
    }

    /// The definition of a network: the config of its first NAD (by key). NADs of one
    /// network carry the same config; Layer2 subnets are immutable.
    pub(crate) fn network(&self, name: &str) -> Option<&UserDefinedNetInfo> {
        self.nads
            .values()
            .map(|nad| &nad.info)
            .find(|info| info.name == name)
    }

    /// Every network name.
    pub(crate) fn network_names(&self) -> BTreeSet<String> {
        self.nads
            .values()
            .map(|nad| nad.info.name.clone())
            .collect()
    }

    /// Whether Dynamic UDN gates the network: it has NADs and a UDN/CUDN owns each (a plain
    /// NAD puts the network on every node).
    pub(crate) fn is_gated(&self, name: &str) -> bool {
        let mut nads = self
            .nads
            .values()
            .filter(|nad| nad.info.name == name)
            .peekable();
        nads.peek().is_some() && nads.all(|nad| nad.owned)
    }

    /// The NAD keys of a network.
    pub(crate) fn nads_of(&self, name: &str) -> BTreeSet<&str> {
        self.nads
            .iter()
            .filter(|(_, nad)| nad.info.name == name)
            .map(|(key, _)| key.as_str())
            .collect()
    }

    /// The primary NAD of `namespace` among the indexed (Layer2) ones, first by key.
    pub(crate) fn primary_nad(&self, namespace: &str) -> Option<(&str, &Layer2Nad)> {
        self.nads
            .iter()
            .find(|(_, nad)| nad.namespace == namespace && nad.info.primary)
            .map(|(key, nad)| (key.as_str(), nad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use udn_api::nad::NetworkAttachmentDefinitionSpec;

    fn nad(namespace: &str, name: &str, config: &str) -> NetworkAttachmentDefinition {
        NetworkAttachmentDefinition {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                ..ObjectMeta::default()
            },
            spec: NetworkAttachmentDefinitionSpec {
                config: Some(config.into()),
            },
        }
    }

    fn conf(name: &str, topology: &str, role: &str, subnets: &str) -> String {
        format!(
            r#"{{"cniVersion":"1.1.0","name":"{name}","type":"ovn-k8s-cni-overlay","netAttachDefName":"ns/x","role":"{role}","topology":"{topology}","subnets":"{subnets}"}}"#
        )
    }

    #[test]
    fn indexes_layer2_and_localnet_with_subnets_only() {
        let cluster = ClusterConfig::default();
        let l2 = nad("ns", "a", &conf("ns_a", "layer2", "primary", "10.0.0.0/24"));
        let l3 = nad(
            "ns",
            "b",
            &conf("ns_b", "layer3", "secondary", "10.1.0.0/16/24"),
        );
        let ln = nad(
            "ns",
            "c",
            &conf("cluster_udn_c", "localnet", "secondary", "10.2.0.0/24"),
        );
        let ln_bare = nad(
            "ns",
            "d",
            &conf("cluster_udn_d", "localnet", "secondary", ""),
        );
        let l2_bare = nad("ns", "e", &conf("ns_e", "layer2", "secondary", ""));
        assert!(layer2_nad(&l2, &cluster).unwrap().is_some());
        assert!(layer2_nad(&l3, &cluster).unwrap().is_none());
        assert!(layer2_nad(&ln, &cluster).unwrap().is_some());
        assert!(layer2_nad(&ln_bare, &cluster).unwrap().is_none());
        assert!(layer2_nad(&l2_bare, &cluster).unwrap().is_some());
    }

    #[test]
    fn a_network_is_gated_when_a_udn_or_cudn_owns_every_nad() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let cluster = ClusterConfig::default();
        let config = conf("cluster_udn_c", "layer2", "primary", "10.0.0.0/24");
        let mut owned = nad("a", "c", &config);
        owned.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "k8s.ovn.org/v1".into(),
            kind: "ClusterUserDefinedNetwork".into(),
            name: "c".into(),
            uid: "u1".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
        let mut index = Layer2Index::default();
        assert!(!index.is_gated("cluster_udn_c"));
        index.apply("a/c", layer2_nad(&owned, &cluster).unwrap());
        assert!(index.is_gated("cluster_udn_c"));
        index.apply(
            "b/c",
            layer2_nad(&nad("b", "c", &config), &cluster).unwrap(),
        );
        assert!(!index.is_gated("cluster_udn_c"));
    }

    #[test]
    fn primary_nad_and_network_lookup() {
        let cluster = ClusterConfig::default();
        let mut index = Layer2Index::default();
        let primary = layer2_nad(
            &nad("ns", "p", &conf("ns_p", "layer2", "primary", "10.0.0.0/24")),
            &cluster,
        )
        .unwrap();
        let secondary = layer2_nad(
            &nad(
                "ns",
                "s",
                &conf("ns_s", "layer2", "secondary", "10.1.0.0/24"),
            ),
            &cluster,
        )
        .unwrap();
        assert_eq!(
            index.apply("ns/p", primary.clone()),
            BTreeSet::from(["ns_p".to_owned()])
        );
        assert!(index.apply("ns/p", primary).is_empty());
        index.apply("ns/s", secondary);
        assert_eq!(index.primary_nad("ns").map(|(k, _)| k), Some("ns/p"));
        assert!(index.primary_nad("other").is_none());
        assert_eq!(index.network("ns_s").map(|i| i.primary), Some(false));
        assert_eq!(index.nads_of("ns_s"), BTreeSet::from(["ns/s"]));
        assert_eq!(
            index.apply("ns/s", None),
            BTreeSet::from(["ns_s".to_owned()])
        );
        assert_eq!(index.network_names(), BTreeSet::from(["ns_p".to_owned()]));
    }
}
