//! The gateway bridge's inputs gathered from the host, OVS and the NADs (for
//! [`crate::gateway`]): the bridge's MAC and addresses, the ofports of its uplink and of
//! the patch ports ovn-controller made for the default network and every primary UDN, every
//! port of the bridge, and the cluster's Services.

use udn_api::names::ovn_prefix;

use super::primary_udns::{PrimaryUdn, primary_udns};
use super::services::service_views;
use crate::annotations::NodeFacts;
use crate::config::Config;
use crate::gateway::{BridgeInputs, GatewayCluster, OfPort, UdnPatch, patch_port_name};
use crate::ovs::{Focus, Ovs, OvsError, OvsState};
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
    // Called on every OVS change: only the gateway bridge's rows are typed.
    let state = ovs.focused_state(&Focus {
        bridges: vec![&gateway.bridge],
        ..Focus::default()
    })?;
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
        for PrimaryUdn { info, id } in primary_udns(stores, config) {
            let port = patch_port_name(&gateway.bridge, &ovn_prefix(&info.name), node);
            udns.push(UdnPatch {
                network: info.name.clone(),
                network_id: id,
                ofport: ofport(&port),
            });
        }
    }
    let bridge_ports = bridge_ports(&state, &gateway.bridge);
    Ok(Some(BridgeInputs {
        bridge_ports,
        services: service_views(stores, config),
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

/// The ofports of every interface of `bridge`, as `ovs-ofctl show` lists them: numbers
/// ascending, the bridge's own port (OpenFlow's 65534) as `LOCAL`, last.
fn bridge_ports(state: &OvsState, bridge: &str) -> Vec<OfPort> {
    /// `OFPP_LOCAL` as OVSDB reports the bridge's internal port.
    const OFPP_LOCAL: i64 = 65534;
    let Some((_, row)) = state.bridge(bridge) else {
        return Vec::new();
    };
    let mut numbers: Vec<i64> = row
        .ports
        .iter()
        .filter_map(|port| state.ports.get(port))
        .flat_map(|port| port.interfaces.iter())
        .filter_map(|interface| state.interfaces.get(interface)?.ofport)
        .filter(|ofport| *ofport > 0)
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    numbers
        .into_iter()
        .filter_map(|number| match number {
            OFPP_LOCAL => Some(OfPort::Local),
            other => u32::try_from(other).ok().map(OfPort::Number),
        })
        .collect()
}

/// Gateway init's host side of the masquerade subnet (upstream `initFunc` and
/// `configureSvcRouteViaInterface`, `node-and-interconnect.md` §5), after IPv4 forwarding
/// on the bridge (upstream `bridgedGatewayNodeSetup`: the replies to a UDN's traffic into the
/// host, e.g. to the `--udn-allowed-default-services`, come back on the bridge and are
/// forwarded to the network's management port, whatever the host's global setting): the host masquerade IP
/// on the bridge (`169.254.0.2/17` with the default subnet), the OVN masquerade IP routed out
/// of the bridge from the node IP, permanent neighbours for the OVN masquerade IP and the
/// dummy next hop, and the service CIDRs via the dummy next hop from the host masquerade IP.
/// Only adds (the bridge's other addresses and routes are the host's).
pub async fn init_masquerade(
    netlink: &crate::netlink::Netlink,
    config: &Config,
    facts: &NodeFacts,
) -> Result<(), crate::netlink::NetlinkError> {
    use crate::netlink::address::add_address;
    use crate::netlink::link::require_link;
    use crate::netlink::neighbor::{Neighbor, ensure_neighbor};
    use crate::netlink::route::{RouteSpec, add_route, resolve_routes};
    use udn_api::annotations::MacAddress;
    use udn_ipam::GlobalMasqueradeIps;

    let Some(gateway) = &facts.gateway else {
        return Ok(());
    };
    let link = require_link(netlink, &gateway.bridge).await?;
    if config.cluster.ipv4_enabled() {
        crate::netlink::sysctl::Sysctl::dotted(&format!(
            "net.ipv4.conf.{}.forwarding",
            gateway.bridge
        ))
        .ensure("host", "1")?;
    }
    let subnets = [
        ipnetwork::IpNetwork::V4(config.cluster.masquerade_subnet_v4),
        ipnetwork::IpNetwork::V6(config.cluster.masquerade_subnet_v6),
    ];
    let mut specs = std::collections::BTreeSet::new();
    for subnet in subnets {
        let Some(node_ip) = gateway
            .addresses
            .iter()
            .find(|a| a.is_ipv4() == subnet.is_ipv4())
            .map(ipnetwork::IpNetwork::ip)
        else {
            continue;
        };
        let Ok(global) = GlobalMasqueradeIps::from_subnet(subnet) else {
            continue;
        };
        let host = ipnetwork::IpNetwork::new(global.host, subnet.prefix())
            .unwrap_or_else(|_| ipnetwork::IpNetwork::from(global.host));
        add_address(netlink, link.index, &gateway.bridge, host, true).await?;
        for ip in [global.ovn, global.dummy_next_hop] {
            ensure_neighbor(
                netlink,
                &Neighbor {
                    link: gateway.bridge.clone(),
                    ip,
                    mac: MacAddress(udn_ipam::ip_to_mac(ip).0),
                },
            )
            .await?;
        }
        let prefix = if subnet.is_ipv4() { 32 } else { 128 };
        let ovn = ipnetwork::IpNetwork::new(global.ovn, prefix)
            .unwrap_or_else(|_| ipnetwork::IpNetwork::from(global.ovn));
        let mut route = RouteSpec::via(ovn, None, &gateway.bridge);
        route.src = Some(node_ip);
        specs.insert(route);
        for service in config
            .cluster
            .service_cidrs
            .iter()
            .filter(|s| s.is_ipv4() == subnet.is_ipv4())
        {
            let mut route = RouteSpec::via(*service, Some(global.dummy_next_hop), &gateway.bridge);
            route.src = Some(global.host);
            route.mtu = Some(config.cluster.mtu);
            specs.insert(route);
        }
    }
    let index = link.index;
    let bridge = gateway.bridge.clone();
    let routes = resolve_routes(
        &specs,
        &move |name: &str| (name == bridge).then_some(index),
        netlink.netns(),
    )?;
    for route in &routes {
        add_route(netlink, route).await?;
    }
    Ok(())
}
