//! Permanent neighbour entries on the gateway bridge for each UDN's gateway-router masquerade
//! IP, MAC = `IPAddrToHWAddr(ip)` (upstream `addUDNMasqIPNeighbors`): these addresses live
//! behind OVS flows and never answer ARP or NS on the wire, so the kernel must not ask.
//!
//! Desired from the inputs, planned against the bridge's entries, applied through rtnetlink.
//! Ours are the permanent entries in the masquerade subnet past the default network's
//! addresses whose MAC is derived from their IP: those not desired (a network deleted while
//! the agent was down) are removed.
//!
//! This talks to rtnetlink directly: the agent's `netlink` module was not committed when this
//! was written.

use std::collections::BTreeMap;
use std::net::IpAddr;

use futures::TryStreamExt;
use ipnetwork::IpNetwork;
use rtnetlink::Handle;
use rtnetlink::packet_route::AddressFamily;
use rtnetlink::packet_route::link::LinkMessage;
use rtnetlink::packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use udn_ipam::{MacAddress, UDN_MASQUERADE_IP_BASE, ip_to_mac, udn_masquerade_ips};

use super::inputs::BridgeInputs;
use super::render::DesiredError;

/// `ENODEV`, `ESRCH`, `ENOENT`: the link or entry is not there.
const ENODEV: i32 = 19;
const ESRCH: i32 = 3;
const ENOENT: i32 = 2;

/// A neighbour entry the bridge should have.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MasqueradeNeighbor {
    /// A UDN's gateway-router masquerade IP.
    pub ip: IpAddr,
    /// Its MAC, derived from the IP.
    pub mac: MacAddress,
    /// The network, for logs.
    pub network: String,
}

/// An entry the kernel has on the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObservedNeighbor {
    /// The IP.
    pub ip: IpAddr,
    /// The MAC, when resolved.
    pub mac: Option<MacAddress>,
    /// Whether it is permanent.
    pub permanent: bool,
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

/// A neighbour request that failed.
#[derive(Debug, thiserror::Error)]
pub enum NeighborError {
    /// The bridge's link does not exist.
    #[error("link {link} not found")]
    LinkNotFound {
        /// The link.
        link: String,
    },
    /// The kernel refused a request.
    #[error("cannot {action} {target}")]
    Request {
        /// What was asked.
        action: &'static str,
        /// On what.
        target: String,
        /// rtnetlink's error.
        #[source]
        source: rtnetlink::Error,
    },
}

/// The entries for every UDN of `inputs` (patched or not yet), per enabled family.
pub fn desired_neighbors(inputs: &BridgeInputs) -> Result<Vec<MasqueradeNeighbor>, DesiredError> {
    let cluster = &inputs.cluster;
    let mut out = Vec::new();
    for udn in &inputs.udns {
        let subnets = [
            (cluster.ipv4, IpNetwork::V4(cluster.masquerade_subnet_v4)),
            (cluster.ipv6, IpNetwork::V6(cluster.masquerade_subnet_v6)),
        ];
        for (enabled, subnet) in subnets {
            if !enabled {
                continue;
            }
            let ips = udn_masquerade_ips(subnet, udn.network_id).map_err(|source| {
                DesiredError::UdnMasquerade {
                    bridge: inputs.bridge.clone(),
                    network: udn.network.clone(),
                    source: Box::new(source),
                }
            })?;
            let ip = ips.gateway_router.ip();
            out.push(MasqueradeNeighbor {
                ip,
                mac: ip_to_mac(ip),
                network: udn.network.clone(),
            });
        }
    }
    out.sort();
    out.dedup_by(|a, b| a.ip == b.ip);
    Ok(out)
}

/// Whether `entry` is one of ours: permanent, in a masquerade subnet past the default
/// network's addresses, with the MAC derived from its IP.
fn owned(entry: &ObservedNeighbor, masquerade_subnets: &[IpNetwork]) -> bool {
    let past_default = masquerade_subnets.iter().any(|subnet| {
        subnet.contains(entry.ip) && offset(*subnet, entry.ip) > UDN_MASQUERADE_IP_BASE
    });
    entry.permanent && past_default && entry.mac == Some(ip_to_mac(entry.ip))
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
        .filter(|want| {
            !by_ip
                .get(&want.ip)
                .is_some_and(|have| have.permanent && have.mac == Some(want.mac))
        })
        .cloned()
        .collect();
    let remove = observed
        .iter()
        .filter(|entry| owned(entry, masquerade_subnets))
        .filter(|entry| !desired.iter().any(|want| want.ip == entry.ip))
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

/// Makes the bridge's entries those of `inputs`, through `handle` (a netlink socket in the
/// bridge's netns); returns what was changed.
pub async fn sync_neighbors(
    handle: &Handle,
    inputs: &BridgeInputs,
) -> Result<NeighborPlan, NeighborSyncError> {
    let desired = desired_neighbors(inputs)?;
    let index = link_index(handle, &inputs.bridge).await?;
    let observed = list_neighbors(handle, index).await?;
    let plan = plan_neighbors(&desired, &observed, &masquerade_subnets(inputs));
    apply_neighbors(handle, &inputs.bridge, index, &plan).await?;
    Ok(plan)
}

/// [`sync_neighbors`]'s errors.
#[derive(Debug, thiserror::Error)]
pub enum NeighborSyncError {
    /// The desired entries cannot be computed.
    #[error(transparent)]
    Desired(#[from] DesiredError),
    /// A netlink request failed.
    #[error(transparent)]
    Netlink(#[from] NeighborError),
}

/// The ifindex of `link`.
pub async fn link_index(handle: &Handle, link: &str) -> Result<u32, NeighborError> {
    let stream = handle.link().get().match_name(link.to_owned()).execute();
    futures::pin_mut!(stream);
    let found: Option<LinkMessage> = match stream.try_next().await {
        Ok(found) => found,
        Err(error) if errno(&error) == Some(ENODEV) => None,
        Err(source) => {
            return Err(NeighborError::Request {
                action: "get link",
                target: link.to_owned(),
                source,
            });
        }
    };
    found
        .map(|message| message.header.index)
        .ok_or_else(|| NeighborError::LinkNotFound {
            link: link.to_owned(),
        })
}

/// The neighbour entries on link `index`.
pub async fn list_neighbors(
    handle: &Handle,
    index: u32,
) -> Result<Vec<ObservedNeighbor>, NeighborError> {
    let messages: Vec<NeighbourMessage> = handle
        .neighbours()
        .get()
        .execute()
        .try_collect()
        .await
        .map_err(|source| NeighborError::Request {
        action: "dump neighbours",
        target: format!("of link {index}"),
        source,
    })?;
    Ok(messages
        .iter()
        .filter(|message| message.header.ifindex == index)
        .filter_map(observed)
        .collect())
}

fn observed(message: &NeighbourMessage) -> Option<ObservedNeighbor> {
    let mut ip = None;
    let mut mac = None;
    for attribute in &message.attributes {
        match attribute {
            NeighbourAttribute::Destination(NeighbourAddress::Inet(v4)) => {
                ip = Some(IpAddr::V4(*v4));
            }
            NeighbourAttribute::Destination(NeighbourAddress::Inet6(v6)) => {
                ip = Some(IpAddr::V6(*v6));
            }
            NeighbourAttribute::LinkLayerAddress(bytes) => {
                mac = <[u8; 6]>::try_from(bytes.as_slice()).ok().map(MacAddress);
            }
            _ => {}
        }
    }
    Some(ObservedNeighbor {
        ip: ip?,
        mac,
        permanent: message.header.state == NeighbourState::Permanent,
    })
}

/// Performs `plan` on link `index` (named `link` in errors).
pub async fn apply_neighbors(
    handle: &Handle,
    link: &str,
    index: u32,
    plan: &NeighborPlan,
) -> Result<(), NeighborError> {
    for entry in &plan.replace {
        handle
            .neighbours()
            .add(index, entry.ip)
            .link_layer_address(&entry.mac.octets())
            .state(NeighbourState::Permanent)
            .replace()
            .execute()
            .await
            .map_err(|source| NeighborError::Request {
                action: "replace neighbour",
                target: format!("{} lladdr {} on {link}", entry.ip, entry.mac),
                source,
            })?;
        tracing::info!(
            link,
            ip = %entry.ip,
            mac = %entry.mac,
            network = %entry.network,
            "masquerade neighbour set"
        );
    }
    for ip in &plan.remove {
        let mut message = NeighbourMessage::default();
        message.header.ifindex = index;
        message.header.family = match ip {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        };
        message
            .attributes
            .push(NeighbourAttribute::Destination(match ip {
                IpAddr::V4(v4) => NeighbourAddress::Inet(*v4),
                IpAddr::V6(v6) => NeighbourAddress::Inet6(*v6),
            }));
        match handle.neighbours().del(message).execute().await {
            Ok(()) => {}
            Err(error) if matches!(errno(&error), Some(ESRCH | ENOENT)) => {}
            Err(source) => {
                return Err(NeighborError::Request {
                    action: "remove neighbour",
                    target: format!("{ip} on {link}"),
                    source,
                });
            }
        }
        tracing::info!(link, ip = %ip, "masquerade neighbour removed");
    }
    Ok(())
}

/// The positive errno of a netlink error message, if it is one.
fn errno(error: &rtnetlink::Error) -> Option<i32> {
    match error {
        rtnetlink::Error::NetlinkError(message) => Some(message.raw_code().abs()),
        _ => None,
    }
}
