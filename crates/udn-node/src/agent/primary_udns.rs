//! The primary UDNs the node knows from its NADs: each network once (its first NAD in the
//! store's order), with the network ID cluster-manager annotated on it. A NAD whose config
//! does not parse, that is not a primary UDN, or has no ID yet is skipped (the agent looks
//! again on the next change).

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

/// The primary UDNs of `stores`' NADs, in the store's order, each network once.
pub fn primary_udns(stores: &Stores, config: &Config) -> Vec<PrimaryUdn> {
    let mut out: Vec<PrimaryUdn> = Vec::new();
    for nad in stores.nads.state() {
        let Some(text) = nad.spec.config.as_deref() else {
            continue;
        };
        let Ok(conf) = NetConf::parse(text, config.cluster.mtu) else {
            continue;
        };
        let Ok(NetInfo::UserDefined(info)) = NetInfo::from_netconf(&conf, &config.cluster) else {
            continue;
        };
        let id = nad
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(udn_api::names::ANNOTATION_NETWORK_ID))
            .and_then(|id| id.parse::<u32>().ok());
        let (true, Some(id)) = (info.primary, id) else {
            continue;
        };
        if out.iter().any(|udn| udn.info.name == info.name) {
            continue;
        }
        out.push(PrimaryUdn { info: *info, id });
    }
    out
}
