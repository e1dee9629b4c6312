//! Addresses on a link: list, add, and the exact-set reconcile ("exactly these addresses,
//! others removed") the management ports need. IPv6 link-local addresses (`fe80::/10`, which
//! the kernel makes for every up link) are never part of the set.

use std::collections::BTreeSet;
use std::net::IpAddr;

use futures::TryStreamExt;
use ipnetwork::IpNetwork;
use rtnetlink::packet_route::AddressFamily;
use rtnetlink::packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage,
};

use super::error::{EADDRNOTAVAIL, EEXIST, NetlinkError, errno};
use super::link::require_link;
use super::netns::Netlink;

/// The addresses on link `index`, with their prefix lengths, in the kernel's order.
pub async fn list_addresses(netlink: &Netlink, index: u32) -> Result<Vec<IpNetwork>, NetlinkError> {
    Ok(address_messages(netlink, index)
        .await?
        .iter()
        .filter_map(address_of)
        .collect())
}

/// The kernel's address messages of link `index`, in its order (for readers that need more
/// than the prefix: flags, lifetimes, label).
pub async fn address_messages(
    netlink: &Netlink,
    index: u32,
) -> Result<Vec<AddressMessage>, NetlinkError> {
    let messages: Vec<AddressMessage> = netlink
        .handle()
        .address()
        .get()
        .set_link_index_filter(index)
        .execute()
        .try_collect()
        .await
        .map_err(|error| netlink.request_error("dump addresses", format!("link {index}"), error))?;
    Ok(messages
        .into_iter()
        .filter(|message| message.header.index == index)
        .collect())
}

fn address_of(message: &AddressMessage) -> Option<IpNetwork> {
    let find = |local: bool| {
        message
            .attributes
            .iter()
            .find_map(|attribute| match attribute {
                AddressAttribute::Local(ip) if local => Some(*ip),
                AddressAttribute::Address(ip) if !local => Some(*ip),
                _ => None,
            })
    };
    // IPv4 carries the interface's own address in IFA_LOCAL (IFA_ADDRESS is the peer).
    let ip = find(true).or_else(|| find(false))?;
    IpNetwork::new(ip, message.header.prefix_len).ok()
}

/// Whether any address on link `index` is still tentative (IPv6 duplicate address detection
/// not done).
pub async fn has_tentative_addresses(netlink: &Netlink, index: u32) -> Result<bool, NetlinkError> {
    let messages: Vec<AddressMessage> = netlink
        .handle()
        .address()
        .get()
        .set_link_index_filter(index)
        .execute()
        .try_collect()
        .await
        .map_err(|error| netlink.request_error("dump addresses", format!("link {index}"), error))?;
    Ok(messages.iter().any(|message| {
        message.header.index == index
            && (message.header.flags.contains(AddressHeaderFlags::Tentative)
                || message.attributes.iter().any(|attribute| {
                    matches!(attribute, AddressAttribute::Flags(flags) if flags.contains(AddressFlags::Tentative))
                }))
    }))
}

/// Waits (polling every 20 ms, up to `timeout`) until no address on link `index` is
/// tentative, as upstream's `SettleAddresses`; returns whether they settled.
pub async fn settle_addresses(
    netlink: &Netlink,
    index: u32,
    timeout: std::time::Duration,
) -> Result<bool, NetlinkError> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if !has_tentative_addresses(netlink, index).await? {
            return Ok(true);
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Whether an address is IPv6 link-local (kernel-made; never reconciled).
pub fn is_ipv6_link_local(address: &IpNetwork) -> bool {
    matches!(address.ip(), IpAddr::V6(ip) if ip.segments()[0] & 0xffc0 == 0xfe80)
}

/// Adds `address` to link `index` (named `link` in errors). `nodad` skips IPv6 duplicate
/// address detection, so the address is usable at once. An address that is already there is
/// not an error.
pub async fn add_address(
    netlink: &Netlink,
    index: u32,
    link: &str,
    address: IpNetwork,
    nodad: bool,
) -> Result<(), NetlinkError> {
    let mut request = netlink
        .handle()
        .address()
        .add(index, address.ip(), address.prefix());
    if nodad && address.is_ipv6() {
        let message = request.message_mut();
        message.header.flags |= AddressHeaderFlags::Nodad;
        message
            .attributes
            .push(AddressAttribute::Flags(AddressFlags::Nodad));
    }
    match request.execute().await {
        Ok(()) => Ok(()),
        Err(error) if errno(&error) == Some(EEXIST) => Ok(()),
        Err(error) => {
            Err(netlink.request_error("add address", format!("{address} on {link}"), error))
        }
    }
}

/// Removes `address` from link `index`. A missing address is not an error.
pub async fn remove_address(
    netlink: &Netlink,
    index: u32,
    link: &str,
    address: IpNetwork,
) -> Result<(), NetlinkError> {
    let mut message = AddressMessage::default();
    message.header.index = index;
    message.header.prefix_len = address.prefix();
    message.header.family = match address {
        IpNetwork::V4(_) => AddressFamily::Inet,
        IpNetwork::V6(_) => AddressFamily::Inet6,
    };
    if address.is_ipv4() {
        message
            .attributes
            .push(AddressAttribute::Local(address.ip()));
    }
    message
        .attributes
        .push(AddressAttribute::Address(address.ip()));
    match netlink.handle().address().del(message).execute().await {
        Ok(()) => Ok(()),
        Err(error) if errno(&error) == Some(EADDRNOTAVAIL) => Ok(()),
        Err(error) => {
            Err(netlink.request_error("remove address", format!("{address} on {link}"), error))
        }
    }
}

/// Exactly these addresses (with their prefix lengths) on a link; any other address but
/// IPv6 link-local ones is removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredAddresses {
    /// The link's name.
    pub link: String,
    /// The addresses, host bits kept (`10.244.1.2/24`).
    pub addresses: BTreeSet<IpNetwork>,
    /// Add IPv6 ones without duplicate address detection.
    pub nodad: bool,
}

/// One address change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AddressOp {
    /// Remove an address the link should not have.
    Remove(IpNetwork),
    /// Add a missing address.
    Add(IpNetwork),
}

/// The changes that give the link exactly `desired` (removals first, then additions, each in
/// address order); empty when converged.
pub fn diff_addresses(desired: &BTreeSet<IpNetwork>, observed: &[IpNetwork]) -> Vec<AddressOp> {
    let present: BTreeSet<IpNetwork> = observed
        .iter()
        .copied()
        .filter(|address| !is_ipv6_link_local(address))
        .collect();
    let mut ops: Vec<AddressOp> = present
        .difference(desired)
        .map(|address| AddressOp::Remove(*address))
        .collect();
    ops.extend(
        desired
            .difference(&present)
            .filter(|address| !is_ipv6_link_local(address))
            .map(|address| AddressOp::Add(*address)),
    );
    ops
}

/// Applies address changes to link `index`.
pub async fn apply_addresses(
    netlink: &Netlink,
    index: u32,
    link: &str,
    ops: &[AddressOp],
    nodad: bool,
) -> Result<(), NetlinkError> {
    for op in ops {
        match *op {
            AddressOp::Remove(address) => remove_address(netlink, index, link, address).await?,
            AddressOp::Add(address) => add_address(netlink, index, link, address, nodad).await?,
        }
    }
    Ok(())
}

/// Looks up the link and its addresses, diffs and applies; returns what was done.
pub async fn reconcile_addresses(
    netlink: &Netlink,
    desired: &DesiredAddresses,
) -> Result<Vec<AddressOp>, NetlinkError> {
    let link = require_link(netlink, &desired.link).await?;
    let observed = list_addresses(netlink, link.index).await?;
    let ops = diff_addresses(&desired.addresses, &observed);
    apply_addresses(netlink, link.index, &desired.link, &ops, desired.nodad).await?;
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(text: &str) -> IpNetwork {
        text.parse().unwrap()
    }

    #[test]
    fn exact_set_removes_others_but_keeps_link_local() {
        let desired = BTreeSet::from([net("10.244.1.2/24"), net("fd00::2/64")]);
        let observed = [
            net("10.244.1.2/24"),
            net("10.244.9.2/24"),
            net("fe80::858:aff:fef4:102/64"),
        ];
        assert_eq!(
            diff_addresses(&desired, &observed),
            [
                AddressOp::Remove(net("10.244.9.2/24")),
                AddressOp::Add(net("fd00::2/64")),
            ]
        );
        let converged = [net("fd00::2/64"), net("10.244.1.2/24"), net("fe80::1/64")];
        assert!(diff_addresses(&desired, &converged).is_empty());
    }

    #[test]
    fn a_changed_prefix_length_is_a_remove_and_an_add() {
        let desired = BTreeSet::from([net("10.244.1.2/24")]);
        assert_eq!(
            diff_addresses(&desired, &[net("10.244.1.2/16")]),
            [
                AddressOp::Remove(net("10.244.1.2/16")),
                AddressOp::Add(net("10.244.1.2/24")),
            ]
        );
    }

    #[test]
    fn link_local_detection() {
        assert!(is_ipv6_link_local(&net("fe80::1/64")));
        assert!(is_ipv6_link_local(&net("febf::1/64")));
        assert!(!is_ipv6_link_local(&net("fec0::1/64")));
        assert!(!is_ipv6_link_local(&net("169.254.169.2/29")));
    }
}
