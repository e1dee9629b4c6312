//! What the host says about itself, read for the node's annotations and the gateway: the
//! chassis (OVS `system-id`), the gateway bridge holding the gateway interface (a plain NIC
//! is moved into a new `br<nic>` first, as upstream's `NicToBridge`), its MAC and addresses,
//! the default next hops, the host's addresses.

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_api::annotations::if_addrs::IfAddrs;

use super::nic_to_bridge::{self, NicToBridge, NicToBridgeError};
use crate::annotations::{GatewayFacts, NodeFacts};
use crate::config::Config;
use crate::netlink::address::list_addresses;
use crate::netlink::link::list_links;
use crate::netlink::route::{MAIN_TABLE, list_routes};
use crate::netlink::{Netlink, NetlinkError, link_by_name};
use crate::ovs::{Ovs, OvsError};

/// Why the facts cannot be gathered.
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    /// OVS.
    #[error("{0}")]
    Ovs(#[from] OvsError),
    /// Netlink.
    #[error("{0}")]
    Netlink(#[from] NetlinkError),
    /// OVS has no `system-id` (upstream relies on `ovs-ctl --system-id=random`).
    #[error(
        "Open_vSwitch external_ids:system-id is not set (start OVS with ovs-ctl --system-id=random, or set it)"
    )]
    NoSystemId,
    /// No gateway interface.
    #[error("no gateway interface: --gateway-interface is not set and there is no default route")]
    NoGatewayInterface,
    /// The gateway interface, a plain NIC, could not be moved into its bridge.
    #[error(transparent)]
    NicToBridge(#[from] NicToBridgeError),
    /// The bridge's netdev is missing.
    #[error("gateway bridge {0}: no such network interface")]
    NoBridgeNetdev(String),
    /// The bridge has no address.
    #[error("gateway bridge {0}: no IP address (the node IP must be on the bridge)")]
    NoAddress(String),
}

/// The bridge `interface` belongs to (itself when it is one).
fn gateway_bridge(ovs: &Ovs, interface: &str) -> Result<Option<String>, OvsError> {
    let state = ovs.state()?;
    if state.bridge(interface).is_some() {
        return Ok(Some(interface.to_owned()));
    }
    let Some((port, _)) = state.port(interface) else {
        return Ok(None);
    };
    Ok(state
        .bridge_of_port(port)
        .map(|(_, bridge)| bridge.name.clone()))
}

/// The gateway bridge for `interface`: the bridge it is or belongs to, else (a plain NIC,
/// as upstream) a new `br<interface>` the NIC is moved into. A bridge `NicToBridge` made
/// (`external_ids:bridge-uplink`, the uplink one of its ports) gets the rest of a move a
/// crash cut short: the uplink's addresses and routes.
async fn ensure_gateway_bridge(
    config: &Config,
    ovs: &Ovs,
    netlink: &Netlink,
    interface: &str,
) -> Result<String, FactsError> {
    let Some(bridge) = gateway_bridge(ovs, interface)? else {
        let spec = NicToBridge::for_nic(interface, &config.datapath_type);
        nic_to_bridge::ensure(ovs, netlink, &spec).await?;
        return Ok(spec.bridge);
    };
    let Some(uplink) = ovs.bridge_uplink(&bridge)? else {
        return Ok(bridge);
    };
    if gateway_bridge(ovs, &uplink)?.as_deref() != Some(bridge.as_str()) {
        return Ok(bridge);
    }
    let spec = NicToBridge {
        nic: uplink,
        bridge,
        datapath_type: config.datapath_type.clone(),
    };
    match nic_to_bridge::ensure(ovs, netlink, &spec).await {
        // An uplink OVS holds without a netdev leaves nothing to finish.
        Ok(_) | Err(NicToBridgeError::NoNic { .. }) => Ok(spec.bridge),
        Err(error) => Err(error.into()),
    }
}

fn is_global(address: &IpNetwork) -> bool {
    match address.ip() {
        IpAddr::V4(ip) => !ip.is_loopback() && !ip.is_link_local(),
        IpAddr::V6(ip) => !ip.is_loopback() && (ip.segments()[0] & 0xffc0) != 0xfe80,
    }
}

/// Reads the node's facts (the agent runs in the host's netns).
pub async fn gather(config: &Config, ovs: &Ovs) -> Result<NodeFacts, FactsError> {
    let state = ovs.state()?;
    let chassis_id = state
        .open_vswitch
        .as_ref()
        .and_then(|row| row.external_ids.get("system-id").cloned())
        .filter(|id| !id.is_empty())
        .ok_or(FactsError::NoSystemId)?;
    let netlink = Netlink::connect_current("host")?;
    let routes = list_routes(&netlink).await?;
    let links = list_links(&netlink).await?;
    let default_routes: Vec<_> = routes
        .iter()
        .filter(|r| r.table == MAIN_TABLE && r.dest.prefix() == 0)
        .collect();
    let interface = match &config.gateway_interface {
        Some(name) => name.clone(),
        None => default_routes
            .iter()
            .find_map(|r| r.oif)
            .and_then(|index| links.iter().find(|l| l.index == index))
            .map(|link| link.name.clone())
            .ok_or(FactsError::NoGatewayInterface)?,
    };
    let bridge = ensure_gateway_bridge(config, ovs, &netlink, &interface).await?;
    // A NIC just moved: the bridge's netdev is new and the NIC's addresses moved with it.
    let links = list_links(&netlink).await?;
    let link = link_by_name(&netlink, &bridge)
        .await?
        .ok_or_else(|| FactsError::NoBridgeNetdev(bridge.clone()))?;
    let addresses: Vec<IpNetwork> = list_addresses(&netlink, link.index)
        .await?
        .into_iter()
        .filter(is_global)
        .collect();
    if addresses.is_empty() {
        return Err(FactsError::NoAddress(bridge));
    }
    let next_hops: Vec<IpAddr> = match config.gateway_nexthop {
        Some(hop) => vec![hop],
        None => default_routes.iter().filter_map(|r| r.gateway).collect(),
    };
    let mut host_cidrs = Vec::new();
    for other in &links {
        if other.name == "lo" || other.name.starts_with("ovn-k8s-mp") {
            continue;
        }
        host_cidrs.extend(
            list_addresses(&netlink, other.index)
                .await?
                .into_iter()
                .filter(is_global),
        );
    }
    let primary_ifaddr = IfAddrs::from_cidrs(&addresses);
    let encap_ips = match config.encap_ip {
        Some(ip) => vec![ip],
        None => primary_ifaddr
            .ipv4
            .map(|net| IpAddr::V4(net.ip()))
            .or(primary_ifaddr.ipv6.map(|net| IpAddr::V6(net.ip())))
            .into_iter()
            .collect(),
    };
    Ok(NodeFacts {
        node: config.node_name.clone(),
        zone: config.zone.clone(),
        chassis_id,
        encap_ips,
        gateway: Some(GatewayFacts {
            bridge: bridge.clone(),
            mac: link
                .mac
                .ok_or_else(|| FactsError::NoBridgeNetdev(bridge.clone()))?,
            addresses,
            next_hops,
            vlan_id: 0,
        }),
        primary_ifaddr,
        host_cidrs,
        masquerade_subnet: IfAddrs {
            ipv4: Some(config.cluster.masquerade_subnet_v4),
            ipv6: Some(config.cluster.masquerade_subnet_v6),
        },
        // Upstream writes `false` only with --disable-pkt-mtu-check, which udn does not have.
        mtu_supported: true,
    })
}
