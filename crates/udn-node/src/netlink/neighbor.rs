//! Permanent neighbor entries (`ip neigh replace ... nud permanent`): the management port's
//! gateway and breth0's masquerade next hops.

use std::net::IpAddr;

use futures::TryStreamExt;
use rtnetlink::packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use udn_api::annotations::MacAddress;

use super::error::{ENOENT, ESRCH, NetlinkError, errno};
use super::link::require_link;
use super::netns::Netlink;

/// A permanent neighbor entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Neighbor {
    /// The link it is on.
    pub link: String,
    /// The neighbor's IP.
    pub ip: IpAddr,
    /// Its MAC.
    pub mac: MacAddress,
}

/// An entry the kernel has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObservedNeighbor {
    /// The IP.
    pub ip: IpAddr,
    /// The MAC, when resolved.
    pub mac: Option<MacAddress>,
    /// Whether it is permanent.
    pub permanent: bool,
}

/// Whether `observed` (the entry for the same IP, if any) must be replaced to be `desired`.
pub fn neighbor_needs_update(desired: &Neighbor, observed: Option<&ObservedNeighbor>) -> bool {
    !observed.is_some_and(|entry| entry.permanent && entry.mac == Some(desired.mac))
}

/// The neighbor entries on link `index`.
pub async fn list_neighbors(
    netlink: &Netlink,
    index: u32,
) -> Result<Vec<ObservedNeighbor>, NetlinkError> {
    let messages: Vec<NeighbourMessage> = netlink
        .handle()
        .neighbours()
        .get()
        .execute()
        .try_collect()
        .await
        .map_err(|error| netlink.request_error("dump neighbors", format!("link {index}"), error))?;
    Ok(messages
        .iter()
        .filter(|message| message.header.ifindex == index)
        .filter_map(|message| {
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
        })
        .collect())
}

/// Makes `neighbor` a permanent entry; returns whether anything changed.
pub async fn ensure_neighbor(netlink: &Netlink, neighbor: &Neighbor) -> Result<bool, NetlinkError> {
    let link = require_link(netlink, &neighbor.link).await?;
    let observed = list_neighbors(netlink, link.index).await?;
    let current = observed.iter().find(|entry| entry.ip == neighbor.ip);
    if !neighbor_needs_update(neighbor, current) {
        return Ok(false);
    }
    netlink
        .handle()
        .neighbours()
        .add(link.index, neighbor.ip)
        .link_layer_address(&neighbor.mac.0)
        .state(NeighbourState::Permanent)
        .replace()
        .execute()
        .await
        .map_err(|error| {
            netlink.request_error(
                "replace neighbor",
                format!(
                    "{} lladdr {} on {}",
                    neighbor.ip, neighbor.mac, neighbor.link
                ),
                error,
            )
        })?;
    Ok(true)
}

/// Removes the entry for `ip` on `link`; a missing one is not an error.
pub async fn remove_neighbor(
    netlink: &Netlink,
    link: &str,
    ip: IpAddr,
) -> Result<(), NetlinkError> {
    let index = require_link(netlink, link).await?.index;
    let mut message = NeighbourMessage::default();
    message.header.ifindex = index;
    message.header.family = match ip {
        IpAddr::V4(_) => rtnetlink::packet_route::AddressFamily::Inet,
        IpAddr::V6(_) => rtnetlink::packet_route::AddressFamily::Inet6,
    };
    message
        .attributes
        .push(NeighbourAttribute::Destination(match ip {
            IpAddr::V4(v4) => NeighbourAddress::Inet(v4),
            IpAddr::V6(v6) => NeighbourAddress::Inet6(v6),
        }));
    match netlink.handle().neighbours().del(message).execute().await {
        Ok(()) => Ok(()),
        Err(error) if matches!(errno(&error), Some(ESRCH | ENOENT)) => Ok(()),
        Err(error) => {
            Err(netlink.request_error("remove neighbor", format!("{ip} on {link}"), error))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_permanent_entry_with_the_mac_is_converged() {
        let mac = MacAddress([0x0a, 0x58, 0x0a, 0xf4, 0x01, 0x01]);
        let desired = Neighbor {
            link: "ovn-k8s-mp0".into(),
            ip: "10.244.1.1".parse().unwrap(),
            mac,
        };
        let entry = |mac, permanent| ObservedNeighbor {
            ip: desired.ip,
            mac,
            permanent,
        };
        assert!(neighbor_needs_update(&desired, None));
        assert!(neighbor_needs_update(
            &desired,
            Some(&entry(Some(mac), false))
        ));
        assert!(neighbor_needs_update(
            &desired,
            Some(&entry(Some(MacAddress([2; 6])), true))
        ));
        assert!(!neighbor_needs_update(
            &desired,
            Some(&entry(Some(mac), true))
        ));
    }
}
