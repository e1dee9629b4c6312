//! Permanent neighbour entries on the gateway bridge for each UDN's gateway-router masquerade
//! IP, MAC = `IPAddrToHWAddr(ip)` (upstream `addUDNMasqIPNeighbors`): these addresses live
//! behind OVS flows and never answer ARP or NS on the wire, so the kernel must not ask.
//!
//! Desired from the inputs, planned against the bridge's entries, applied through the agent's
//! [`netlink`](crate::netlink) module. Ours are the permanent entries in the masquerade subnet
//! past the default network's addresses whose MAC is derived from their IP: those not desired
//! (a network deleted while the agent was down) are removed.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_api::annotations::MacAddress;
use udn_ipam::{UDN_MASQUERADE_IP_BASE, ip_to_mac, udn_masquerade_ips};

use super::inputs::BridgeInputs;
use super::render::DesiredError;
use crate::netlink::link::require_link;
use crate::netlink::neighbor::{
    Neighbor, ObservedNeighbor, ensure_neighbor, list_neighbors, neighbor_needs_update,
    remove_neighbor,
};
use crate::netlink::{Netlink, NetlinkError};

/// A neighbour entry the bridge should have.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MasqueradeNeighbor {
    /// The entry (bridge, a UDN's gateway-router masquerade IP, the MAC derived from it).
    pub neighbor: Neighbor,
    /// The network, for logs.
    pub network: String,
}

/// What to change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NeighborPlan {
    /// Entries to add or replace (missing, not permanent, or with another MAC).
    pub replace: Vec<MasqueradeNeighbor>,
    /// Our entries no network wants any more.
    pub remove: Vec<IpAddr>,
}

impl NeighborPlan {
    /// Whether nothing needs changing.
    pub fn is_empty(&self) -> bool {
        self.replace.is_empty() && self.remove.is_empty()
    }
}

/// The MAC upstream's `IPAddrToHWAddr` gives `ip`.
fn derived_mac(ip: IpAddr) -> MacAddress {
    MacAddress(ip_to_mac(ip).0)
}

/// The entries for every UDN of `inputs` (patched or not yet), per enabled family.
pub fn desired_neighbors(inputs: &BridgeInputs) -> Result<Vec<MasqueradeNeighbor>, DesiredError> {
    let mut out: Vec<MasqueradeNeighbor> = Vec::new();
    for udn in &inputs.udns {
        for subnet in masquerade_subnets(inputs) {
            let ips = udn_masquerade_ips(subnet, udn.network_id).map_err(|source| {
                DesiredError::UdnMasquerade {
                    bridge: inputs.bridge.clone(),
                    network: udn.network.clone(),
                    source: Box::new(source),
                }
            })?;
            let ip = ips.gateway_router.ip();
            out.push(MasqueradeNeighbor {
                neighbor: Neighbor {
                    link: inputs.bridge.clone(),
                    ip,
                    mac: derived_mac(ip),
                },
                network: udn.network.clone(),
            });
        }
    }
    out.sort();
    out.dedup_by(|a, b| a.neighbor.ip == b.neighbor.ip);
    Ok(out)
}

/// Whether `entry` is one of ours: permanent, in a masquerade subnet past the default
/// network's addresses, with the MAC derived from its IP.
fn owned(entry: &ObservedNeighbor, masquerade_subnets: &[IpNetwork]) -> bool {
    let past_default = masquerade_subnets.iter().any(|subnet| {
        subnet.contains(entry.ip) && offset(*subnet, entry.ip) > UDN_MASQUERADE_IP_BASE
    });
    entry.permanent && past_default && entry.mac == Some(derived_mac(entry.ip))
}

/// `ip`'s offset from `subnet`'s base.
fn offset(subnet: IpNetwork, ip: IpAddr) -> u128 {
    let as_u128 = |ip: IpAddr| match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    };
    as_u128(ip).saturating_sub(as_u128(subnet.network()))
}

/// The changes that make `observed` (the bridge's entries) hold `desired`.
pub fn plan_neighbors(
    desired: &[MasqueradeNeighbor],
    observed: &[ObservedNeighbor],
    masquerade_subnets: &[IpNetwork],
) -> NeighborPlan {
    let by_ip: BTreeMap<IpAddr, &ObservedNeighbor> =
        observed.iter().map(|entry| (entry.ip, entry)).collect();
    let replace = desired
        .iter()
        .filter(|want| neighbor_needs_update(&want.neighbor, by_ip.get(&want.neighbor.ip).copied()))
        .cloned()
        .collect();
    let remove = observed
        .iter()
        .filter(|entry| owned(entry, masquerade_subnets))
        .filter(|entry| !desired.iter().any(|want| want.neighbor.ip == entry.ip))
        .map(|entry| entry.ip)
        .collect();
    NeighborPlan { replace, remove }
}

/// The masquerade subnets of `inputs`' enabled families.
pub fn masquerade_subnets(inputs: &BridgeInputs) -> Vec<IpNetwork> {
    let cluster = &inputs.cluster;
    let mut subnets = Vec::new();
    if cluster.ipv4 {
        subnets.push(IpNetwork::V4(cluster.masquerade_subnet_v4));
    }
    if cluster.ipv6 {
        subnets.push(IpNetwork::V6(cluster.masquerade_subnet_v6));
    }
    subnets
}

/// [`sync_neighbors`]'s errors.
#[derive(Debug, thiserror::Error)]
pub enum NeighborSyncError {
    /// The desired entries cannot be computed.
    #[error(transparent)]
    Desired(#[from] DesiredError),
    /// A netlink request failed.
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
}

/// Makes the bridge's entries those of `inputs`, through `netlink` (bound to the bridge's
/// netns); returns what was changed.
pub async fn sync_neighbors(
    netlink: &Netlink,
    inputs: &BridgeInputs,
) -> Result<NeighborPlan, NeighborSyncError> {
    let desired = desired_neighbors(inputs)?;
    let link = require_link(netlink, &inputs.bridge).await?;
    let observed = list_neighbors(netlink, link.index).await?;
    let plan = plan_neighbors(&desired, &observed, &masquerade_subnets(inputs));
    apply_neighbors(netlink, &inputs.bridge, &plan).await?;
    Ok(plan)
}

/// Performs `plan` on `link`.
pub async fn apply_neighbors(
    netlink: &Netlink,
    link: &str,
    plan: &NeighborPlan,
) -> Result<(), NetlinkError> {
    for entry in &plan.replace {
        ensure_neighbor(netlink, &entry.neighbor).await?;
        tracing::info!(
            link,
            ip = %entry.neighbor.ip,
            mac = %entry.neighbor.mac,
            network = %entry.network,
            "masquerade neighbour set"
        );
    }
    for ip in &plan.remove {
        remove_neighbor(netlink, link, *ip).await?;
        tracing::info!(link, ip = %ip, "masquerade neighbour removed");
    }
    Ok(())
}
