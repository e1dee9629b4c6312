//! The NIC's addresses and routes as the kernel lists them (with what moving them keeps,
//! which the agent's general `netlink` helpers drop), and the rtnetlink requests that copy
//! one onto the bridge or remove it from the NIC. Each is idempotent: copying what is there
//! already or removing what is gone is not an error.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use futures::StreamExt;
use ipnetwork::IpNetwork;
use rtnetlink::packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_REQUEST, NetlinkMessage, NetlinkPayload,
};
use rtnetlink::packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage, CacheInfo,
};
use rtnetlink::packet_route::route::{RouteAddress, RouteAttribute, RouteFlags, RouteMessage};
use rtnetlink::packet_route::{AddressFamily, RouteNetlinkMessage};

use super::{NicAddress, NicRoute};
use crate::netlink::address::address_messages;
use crate::netlink::error::{EADDRNOTAVAIL, EEXIST, ESRCH, errno};
use crate::netlink::route::route_messages;
use crate::netlink::{Netlink, NetlinkError};

/// The flags a new address may carry (the kernel derives the others: secondary, permanent,
/// tentative, ...).
const SETTABLE_FLAGS: AddressFlags = AddressFlags::Nodad
    .union(AddressFlags::Optimistic)
    .union(AddressFlags::Homeaddress)
    .union(AddressFlags::Managetempaddr)
    .union(AddressFlags::Noprefixroute)
    .union(AddressFlags::Mcautojoin);

/// The addresses on link `index`, in the kernel's order.
pub(super) async fn addresses(
    netlink: &Netlink,
    index: u32,
) -> Result<Vec<NicAddress>, NetlinkError> {
    Ok(address_messages(netlink, index)
        .await?
        .iter()
        .filter_map(address_of)
        .collect())
}

/// An address message as a [`NicAddress`].
pub(super) fn address_of(message: &AddressMessage) -> Option<NicAddress> {
    let (mut local, mut address, mut broadcast, mut flags, mut lifetimes) =
        (None, None, None, None, None);
    for attribute in &message.attributes {
        match attribute {
            AddressAttribute::Local(ip) => local = Some(*ip),
            AddressAttribute::Address(ip) => address = Some(*ip),
            AddressAttribute::Broadcast(ip) => broadcast = Some(*ip),
            AddressAttribute::Flags(value) => flags = Some(*value),
            AddressAttribute::CacheInfo(info) => {
                lifetimes = Some((info.ifa_valid, info.ifa_preferred))
            }
            _ => {}
        }
    }
    // IFA_LOCAL is the interface's own address when there is one (IPv4 always, IPv6 with
    // a peer); IFA_ADDRESS is then the peer, or the same address.
    let ip = local.or(address)?;
    let peer = address.filter(|peer| local.is_some() && *peer != ip);
    let (valid_lft, preferred_lft) = lifetimes.unwrap_or((u32::MAX, u32::MAX));
    Some(NicAddress {
        address: IpNetwork::new(ip, message.header.prefix_len).ok()?,
        peer,
        broadcast,
        scope: message.header.scope,
        flags: flags
            .unwrap_or_else(|| AddressFlags::from_bits_retain(message.header.flags.bits().into())),
        valid_lft,
        preferred_lft,
    })
}

/// The message that puts `address` on link `index` named `link` (its IPv4 label is the
/// link's name, as upstream relabels; IPv6 without duplicate address detection).
pub(super) fn address_message(index: u32, link: &str, address: &NicAddress) -> AddressMessage {
    let mut message = AddressMessage::default();
    let ip = address.address.ip();
    message.header.family = family(ip);
    message.header.prefix_len = address.address.prefix();
    message.header.scope = address.scope;
    message.header.index = index;
    let mut flags = address.flags & SETTABLE_FLAGS;
    if ip.is_ipv6() {
        flags |= AddressFlags::Nodad;
    }
    // The header's byte holds the flags that fit it; IFA_FLAGS holds them all.
    message.header.flags = AddressHeaderFlags::from_bits_retain((flags.bits() & 0xff) as u8);
    let attributes = &mut message.attributes;
    if ip.is_ipv4() || address.peer.is_some() {
        attributes.push(AddressAttribute::Local(ip));
    }
    attributes.push(AddressAttribute::Address(address.peer.unwrap_or(ip)));
    if let Some(broadcast) = address.broadcast {
        attributes.push(AddressAttribute::Broadcast(broadcast));
    }
    if ip.is_ipv4() {
        attributes.push(AddressAttribute::Label(link.to_owned()));
    }
    attributes.push(AddressAttribute::Flags(flags));
    if address.valid_lft != u32::MAX || address.preferred_lft != u32::MAX {
        let mut info = CacheInfo::default();
        info.ifa_valid = address.valid_lft;
        info.ifa_preferred = address.preferred_lft;
        attributes.push(AddressAttribute::CacheInfo(info));
    }
    message
}

fn family(ip: IpAddr) -> AddressFamily {
    match ip {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    }
}

/// Adds `address` to link `index` named `link`; one already there is not an error.
pub(super) async fn add_address(
    netlink: &Netlink,
    index: u32,
    link: &str,
    address: &NicAddress,
) -> Result<(), NetlinkError> {
    let ip = address.address;
    let mut request = netlink.handle().address().add(index, ip.ip(), ip.prefix());
    *request.message_mut() = address_message(index, link, address);
    match request.execute().await {
        Ok(()) => Ok(()),
        Err(error) if errno(&error) == Some(EEXIST) => Ok(()),
        Err(error) => Err(netlink.request_error("add address", format!("{ip} on {link}"), error)),
    }
}

/// Removes `address` from link `index` named `link`; a missing one is not an error (the
/// kernel drops an IPv4 primary's secondaries with it).
pub(super) async fn remove_address(
    netlink: &Netlink,
    index: u32,
    link: &str,
    address: &NicAddress,
) -> Result<(), NetlinkError> {
    let ip = address.address;
    let mut message = AddressMessage::default();
    message.header.family = family(ip.ip());
    message.header.prefix_len = ip.prefix();
    message.header.index = index;
    if ip.is_ipv4() || address.peer.is_some() {
        message.attributes.push(AddressAttribute::Local(ip.ip()));
    }
    message
        .attributes
        .push(AddressAttribute::Address(address.peer.unwrap_or(ip.ip())));
    match netlink.handle().address().del(message).execute().await {
        Ok(()) => Ok(()),
        Err(error) if errno(&error) == Some(EADDRNOTAVAIL) => Ok(()),
        Err(error) => {
            Err(netlink.request_error("remove address", format!("{ip} on {link}"), error))
        }
    }
}

/// Every route out of link `oif`, both families, every table.
pub(super) async fn routes(netlink: &Netlink, oif: u32) -> Result<Vec<NicRoute>, NetlinkError> {
    Ok(route_messages(netlink)
        .await?
        .iter()
        .filter_map(|message| route_of(message, oif))
        .collect())
}

/// A route message as a [`NicRoute`] when it goes out of `oif` (alone or as one of its
/// next hops).
pub(super) fn route_of(message: &RouteMessage, oif: u32) -> Option<NicRoute> {
    let header = &message.header;
    let address = |value: &RouteAddress| match value {
        RouteAddress::Inet(ip) => Some(IpAddr::V4(*ip)),
        RouteAddress::Inet6(ip) => Some(IpAddr::V6(*ip)),
        _ => None,
    };
    let (mut dest, mut gateway, mut out, mut multipath) = (None, None, None, false);
    let mut table = u32::from(header.table);
    for attribute in &message.attributes {
        match attribute {
            RouteAttribute::Destination(value) => dest = address(value),
            RouteAttribute::Gateway(value) => gateway = address(value),
            RouteAttribute::Oif(index) => out = Some(*index),
            RouteAttribute::Table(id) => table = *id,
            RouteAttribute::MultiPath(hops) => {
                multipath = hops.iter().any(|hop| hop.interface_index == oif);
            }
            _ => {}
        }
    }
    if out != Some(oif) && !multipath {
        return None;
    }
    let dest = match (dest, header.address_family) {
        (Some(ip), _) => IpNetwork::new(ip, header.destination_prefix_length).ok()?,
        (None, AddressFamily::Inet) => IpNetwork::new(Ipv4Addr::UNSPECIFIED.into(), 0).ok()?,
        (None, AddressFamily::Inet6) => IpNetwork::new(Ipv6Addr::UNSPECIFIED.into(), 0).ok()?,
        (None, _) => return None,
    };
    Some(NicRoute {
        dest,
        gateway,
        table,
        protocol: header.protocol,
        multipath,
        message: message.clone(),
    })
}

/// `route`'s message as a request: without what only a dump carries (cache info, expiry)
/// and with only the next-hop flag a request may set (`onlink`).
fn request_message(route: &NicRoute) -> RouteMessage {
    let mut message = route.message.clone();
    message.header.flags &= RouteFlags::Onlink;
    message.attributes.retain(|attribute| {
        !matches!(
            attribute,
            RouteAttribute::CacheInfo(_)
                | RouteAttribute::Expires(_)
                | RouteAttribute::MulticastExpires(_)
                | RouteAttribute::MfcStats(_)
        )
    });
    message
}

/// The message that copies `route` out of link `oif`.
pub(super) fn retargeted(route: &NicRoute, oif: u32) -> RouteMessage {
    let mut message = request_message(route);
    for attribute in &mut message.attributes {
        if let RouteAttribute::Oif(index) = attribute {
            *index = oif;
        }
    }
    message
}

/// Copies `route` out of link `oif` named `link`. `NLM_F_CREATE` without `NLM_F_EXCL`: a
/// route of the same destination and metric out of the NIC does not stop it (the kernel
/// puts the new one first); the same route out of the bridge is not an error.
pub(super) async fn add_route(
    netlink: &Netlink,
    oif: u32,
    link: &str,
    route: &NicRoute,
) -> Result<(), NetlinkError> {
    let mut request = NetlinkMessage::from(RouteNetlinkMessage::NewRoute(retargeted(route, oif)));
    request.header.flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE;
    match send(netlink, request).await {
        Ok(()) => Ok(()),
        Err(error) if errno(&error) == Some(EEXIST) => Ok(()),
        Err(error) => Err(netlink.request_error(
            "add route",
            format!("{} via {:?} on {link}", route.dest, route.gateway),
            error,
        )),
    }
}

/// Removes `route` (out of the NIC); a missing one is not an error (the kernel drops the
/// NIC's routes with its last IPv4 address).
pub(super) async fn remove_route(
    netlink: &Netlink,
    link: &str,
    route: &NicRoute,
) -> Result<(), NetlinkError> {
    match netlink
        .handle()
        .route()
        .del(request_message(route))
        .execute()
        .await
    {
        Ok(()) => Ok(()),
        Err(error) if errno(&error) == Some(ESRCH) => Ok(()),
        Err(error) => Err(netlink.request_error(
            "remove route",
            format!("{} via {:?} on {link}", route.dest, route.gateway),
            error,
        )),
    }
}

/// Sends one request and reads its answer (an error message, or nothing: netlink-proto
/// keeps plain acknowledgements to itself).
async fn send(
    netlink: &Netlink,
    request: NetlinkMessage<RouteNetlinkMessage>,
) -> Result<(), rtnetlink::Error> {
    let mut handle = netlink.handle().clone();
    let mut response = handle.request(request)?;
    while let Some(message) = response.next().await {
        if let NetlinkPayload::Error(error) = message.payload {
            return Err(rtnetlink::Error::NetlinkError(error));
        }
    }
    Ok(())
}
