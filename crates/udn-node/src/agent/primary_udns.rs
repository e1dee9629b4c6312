//! The primary UDNs the node knows from its NADs: each network once (its first NAD in the
//! store's order), with the network ID cluster-manager annotated on it. A NAD whose config
//! does not parse, that is not a primary UDN, or has no ID yet is skipped (the agent looks
//! again on the next change). Also which namespaces those networks are primary in, which
//! decides the network of a Service.

use std::collections::{BTreeMap, BTreeSet};

use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::netconf::{NetConf, NetInfo, UserDefinedNetInfo};

use crate::config::Config;
use crate::watch::Stores;

/// One primary UDN and its network ID.
#[derive(Debug, Clone)]
pub struct PrimaryUdn {
    /// The network, as its NetConf says.
    pub info: UserDefinedNetInfo,
    /// `k8s.ovn.org/network-id`.
    pub id: u32,
}

/// The primary UDNs of `stores`' NADs, in the store's order, each network once. With Dynamic
/// UDN, only those cluster-manager rendered on this node (its Layer3 host subnet, or its
/// Layer2 gateway router tunnel ID, is on the Node).
pub fn primary_udns(stores: &Stores, config: &Config) -> Vec<PrimaryUdn> {
    let rendered = config.dynamic_udn.then(|| rendered_here(stores));
    let mut out: Vec<PrimaryUdn> = Vec::new();
    for nad in stores.nads.state() {
        let Some((info, Some(id))) = primary_udn_of(&nad, config) else {
            continue;
        };
        if out.iter().any(|udn| udn.info.name == info.name) {
            continue;
        }
        if rendered
            .as_ref()
            .is_some_and(|here| !here.contains(&info.name))
        {
            continue;
        }
        out.push(PrimaryUdn { info, id });
    }
    out
}

/// The networks with per-node state on this node (its Node's annotations).
fn rendered_here(stores: &Stores) -> BTreeSet<String> {
    stores
        .node
        .state()
        .iter()
        .filter_map(|node| node.metadata.annotations.as_ref())
        .flat_map(udn_api::dynamic_udn::networks_with_node_state)
        .collect()
}

/// The primary network of a namespace that has a primary-UDN NAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceUdn {
    /// The network, with its ID.
    Ready {
        /// The network's name.
        network: String,
        /// `k8s.ovn.org/network-id`.
        id: u32,
    },
    /// The NAD has no network ID yet: the namespace's network is not usable yet (upstream's
    /// invalid-primary-network case, whose Services are skipped until it is).
    Pending,
}

/// The namespaces with a primary-UDN NAD and their network (a namespace's first such NAD in
/// the store's order); namespaces not listed are on the default network.
pub fn primary_udn_namespaces(stores: &Stores, config: &Config) -> BTreeMap<String, NamespaceUdn> {
    let mut out = BTreeMap::new();
    for nad in stores.nads.state() {
        let Some(namespace) = nad.metadata.namespace.clone() else {
            continue;
        };
        let Some((info, id)) = primary_udn_of(&nad, config) else {
            continue;
        };
        out.entry(namespace).or_insert(match id {
            Some(id) => NamespaceUdn::Ready {
                network: info.name,
                id,
            },
            None => NamespaceUdn::Pending,
        });
    }
    out
}

/// The network of `nad` and its ID (if annotated yet), when it is a primary UDN whose config
/// parses.
fn primary_udn_of(
    nad: &NetworkAttachmentDefinition,
    config: &Config,
) -> Option<(UserDefinedNetInfo, Option<u32>)> {
    let conf = NetConf::parse(nad.spec.config.as_deref()?, config.cluster.mtu).ok()?;
    let NetInfo::UserDefined(info) = NetInfo::from_netconf(&conf, &config.cluster).ok()? else {
        return None;
    };
    if !info.primary {
        return None;
    }
    let id = nad
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(udn_api::names::ANNOTATION_NETWORK_ID))
        .and_then(|id| id.parse::<u32>().ok());
    Some((*info, id))
}
