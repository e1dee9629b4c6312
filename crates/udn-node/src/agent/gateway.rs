//! The gateway bridge's inputs gathered from the host, OVS and the NADs (for
//! [`crate::gateway`]): the bridge's MAC and addresses, the ofports of its uplink and of
//! the patch ports ovn-controller made for the default network and every primary UDN.

use udn_api::names::ovn_prefix;
use udn_api::netconf::{NetConf, NetInfo};

use crate::annotations::NodeFacts;
use crate::config::Config;
use crate::gateway::{BridgeInputs, GatewayCluster, OfPort, UdnPatch, patch_port_name};
use crate::ovs::{Ovs, OvsError};
use crate::watch::Stores;

/// The bridge's inputs, or `None` while the default network's patch port does not exist
/// yet (ovn-controller makes it once the NB controller wrote the node's external switch,
/// as upstream waits for it).
pub fn bridge_inputs(
    config: &Config,
    facts: &NodeFacts,
    ovs: &Ovs,
    stores: &Stores,
) -> Result<Option<BridgeInputs>, OvsError> {
    let Some(gateway) = &facts.gateway else {
        return Ok(None);
    };
    let state = ovs.state()?;
    let ofport = |name: &str| {
        state
            .interface(name)
            .and_then(|(_, interface)| interface.ofport)
            .filter(|port| *port > 0)
            .and_then(|port| u32::try_from(port).ok())
            .map(OfPort::Number)
    };
    let node = &config.node_name;
    let Some(default_patch) = ofport(&patch_port_name(&gateway.bridge, "", node)) else {
        return Ok(None);
    };
    let uplink = state
        .bridge(&gateway.bridge)
        .and_then(|(_, bridge)| bridge.external_ids.get("bridge-uplink").cloned());
    let mut udns = Vec::new();
    if config.segmentation {
        for nad in stores.nads.state() {
            let Some(text) = nad.spec.config.as_deref() else {
                continue;
            };
            let Ok(conf) = NetConf::parse(text, config.cluster.mtu) else {
                continue;
            };
            let Ok(NetInfo::UserDefined(info)) = NetInfo::from_netconf(&conf, &config.cluster)
            else {
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
            if udns.iter().any(|u: &UdnPatch| u.network == info.name) {
                continue;
            }
            let port = patch_port_name(&gateway.bridge, &ovn_prefix(&info.name), node);
            udns.push(UdnPatch {
                network: info.name.clone(),
                network_id: id,
                ofport: ofport(&port),
            });
        }
    }
    Ok(Some(BridgeInputs {
        bridge: gateway.bridge.clone(),
        mac: gateway.mac,
        ofport_phys: uplink.as_deref().and_then(ofport),
        ofport_host: OfPort::Local,
        default_patch,
        bridge_ips: gateway.addresses.clone(),
        host_addresses: facts.host_cidrs.clone(),
        udns,
        cluster: GatewayCluster::from_cluster(&config.cluster),
    }))
}
