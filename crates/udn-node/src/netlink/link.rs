//! Links: look up by name or index, delete by name (a missing link is fine), and the
//! desired -> plan -> apply of a link's MTU and up state.

use futures::TryStreamExt;
use rtnetlink::LinkUnspec;
use rtnetlink::packet_route::link::{
    LinkAttribute, LinkFlags, LinkInfo as NlLinkInfo, LinkMessage,
};
use udn_api::annotations::MacAddress;

use super::error::{ENODEV, NetlinkError, errno};
use super::netns::Netlink;

/// What the kernel says about one link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkInfo {
    /// The ifindex (in its netns).
    pub index: u32,
    /// The name.
    pub name: String,
    /// The hardware address, when it is a 6-byte one.
    pub mac: Option<MacAddress>,
    /// The MTU.
    pub mtu: u32,
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    /// The link kind (`veth`, `bridge`, `tun`, ...), when it has one.
    pub kind: Option<String>,
}

impl LinkInfo {
    pub(crate) fn from_message(message: &LinkMessage) -> Self {
        let mut info = Self {
            index: message.header.index,
            name: String::new(),
            mac: None,
            mtu: 0,
            up: message.header.flags.contains(LinkFlags::Up),
            kind: None,
        };
        for attribute in &message.attributes {
            match attribute {
                LinkAttribute::IfName(name) => info.name.clone_from(name),
                LinkAttribute::Mtu(mtu) => info.mtu = *mtu,
                LinkAttribute::Address(bytes) => {
                    info.mac = <[u8; 6]>::try_from(bytes.as_slice()).ok().map(MacAddress);
                }
                LinkAttribute::LinkInfo(infos) => {
                    info.kind = infos.iter().find_map(|i| match i {
                        NlLinkInfo::Kind(kind) => Some(kind.to_string()),
                        _ => None,
                    });
                }
                _ => {}
            }
        }
        info
    }
}

/// The link named `name`, or `None` when there is none.
pub async fn link_by_name(netlink: &Netlink, name: &str) -> Result<Option<LinkInfo>, NetlinkError> {
    let request = netlink.handle().link().get().match_name(name.to_owned());
    first_link(netlink, request.execute(), "get link", name).await
}

/// The link with index `index`, or `None` when there is none.
pub async fn link_by_index(
    netlink: &Netlink,
    index: u32,
) -> Result<Option<LinkInfo>, NetlinkError> {
    let request = netlink.handle().link().get().match_index(index);
    first_link(netlink, request.execute(), "get link", index).await
}

async fn first_link(
    netlink: &Netlink,
    stream: impl futures::Stream<Item = Result<LinkMessage, rtnetlink::Error>>,
    op: &'static str,
    object: impl std::fmt::Display,
) -> Result<Option<LinkInfo>, NetlinkError> {
    futures::pin_mut!(stream);
    match stream.try_next().await {
        Ok(found) => Ok(found.as_ref().map(LinkInfo::from_message)),
        Err(error) if errno(&error) == Some(ENODEV) => Ok(None),
        Err(error) => Err(netlink.request_error(op, object, error)),
    }
}

/// The link named `name`; [`NetlinkError::LinkNotFound`] when there is none.
pub async fn require_link(netlink: &Netlink, name: &str) -> Result<LinkInfo, NetlinkError> {
    link_by_name(netlink, name)
        .await?
        .ok_or_else(|| NetlinkError::LinkNotFound {
            netns: netlink.netns().to_owned(),
            name: name.to_owned(),
        })
}

/// Every link in the netns.
pub async fn list_links(netlink: &Netlink) -> Result<Vec<LinkInfo>, NetlinkError> {
    let messages: Vec<LinkMessage> = netlink
        .handle()
        .link()
        .get()
        .execute()
        .try_collect()
        .await
        .map_err(|error| netlink.request_error("dump links", "all links", error))?;
    Ok(messages.iter().map(LinkInfo::from_message).collect())
}

/// Deletes the link named `name`. Returns whether it existed (a missing link is not an error,
/// so teardown is idempotent). Deleting one end of a veth deletes both.
pub async fn delete_link(netlink: &Netlink, name: &str) -> Result<bool, NetlinkError> {
    let Some(link) = link_by_name(netlink, name).await? else {
        return Ok(false);
    };
    match netlink.handle().link().del(link.index).execute().await {
        Ok(()) => Ok(true),
        Err(error) if errno(&error) == Some(ENODEV) => Ok(false),
        Err(error) => Err(netlink.request_error("delete link", name, error)),
    }
}

/// The MTU and state a link should have (`None`: leave as is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredLink {
    /// The link's name.
    pub name: String,
    /// The MTU.
    pub mtu: Option<u32>,
    /// Whether it should be up (`Some(true)`), down, or left alone.
    pub up: Option<bool>,
    /// The hardware address.
    pub mac: Option<MacAddress>,
}

impl DesiredLink {
    /// `name`, up, with `mtu` when given.
    pub fn up(name: &str, mtu: Option<u32>) -> Self {
        Self {
            name: name.to_owned(),
            mtu,
            up: Some(true),
            mac: None,
        }
    }
}

/// One change to a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkOp {
    /// Set the MTU.
    SetMtu(u32),
    /// Set the hardware address.
    SetMac(MacAddress),
    /// Bring it up.
    SetUp,
    /// Bring it down.
    SetDown,
}

/// The changes that make `observed` what `desired` says (empty: converged). The MAC and MTU
/// are set before the link goes up.
pub fn diff_link(desired: &DesiredLink, observed: &LinkInfo) -> Vec<LinkOp> {
    let mut ops = Vec::new();
    if let Some(mac) = desired.mac
        && observed.mac != Some(mac)
    {
        ops.push(LinkOp::SetMac(mac));
    }
    if let Some(mtu) = desired.mtu
        && observed.mtu != mtu
    {
        ops.push(LinkOp::SetMtu(mtu));
    }
    match desired.up {
        Some(true) if !observed.up => ops.push(LinkOp::SetUp),
        Some(false) if observed.up => ops.push(LinkOp::SetDown),
        _ => {}
    }
    ops
}

/// Applies `ops` to the link with index `index` (named `name` in errors).
pub async fn apply_link(
    netlink: &Netlink,
    index: u32,
    name: &str,
    ops: &[LinkOp],
) -> Result<(), NetlinkError> {
    for op in ops {
        let builder = LinkUnspec::new_with_index(index);
        let (message, what) = match *op {
            LinkOp::SetMtu(mtu) => (builder.mtu(mtu).build(), "set link mtu"),
            LinkOp::SetMac(mac) => (builder.address(mac.0.to_vec()).build(), "set link address"),
            LinkOp::SetUp => (builder.up().build(), "set link up"),
            LinkOp::SetDown => (builder.down().build(), "set link down"),
        };
        netlink
            .handle()
            .link()
            .set(message)
            .execute()
            .await
            .map_err(|error| netlink.request_error(what, name, error))?;
    }
    Ok(())
}

/// Looks the link up, diffs it against `desired` and applies the difference; returns what was
/// done.
pub async fn reconcile_link(
    netlink: &Netlink,
    desired: &DesiredLink,
) -> Result<Vec<LinkOp>, NetlinkError> {
    let observed = require_link(netlink, &desired.name).await?;
    let ops = diff_link(desired, &observed);
    apply_link(netlink, observed.index, &desired.name, &ops).await?;
    Ok(ops)
}

/// Renames the (down) link `index` to `name`.
pub(crate) async fn rename_link(
    netlink: &Netlink,
    index: u32,
    name: &str,
) -> Result<(), NetlinkError> {
    let message = LinkUnspec::new_with_index(index).name(name).build();
    netlink
        .handle()
        .link()
        .set(message)
        .execute()
        .await
        .map_err(|error| netlink.request_error("rename link", format!("{index} to {name}"), error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(mtu: u32, up: bool) -> LinkInfo {
        LinkInfo {
            index: 7,
            name: "ovn-k8s-mp0".into(),
            mac: Some(MacAddress([0x0a, 0x58, 0x0a, 0xf4, 0x01, 0x02])),
            mtu,
            up,
            kind: None,
        }
    }

    #[test]
    fn diff_sets_mtu_before_up_and_is_empty_when_converged() {
        let desired = DesiredLink::up("ovn-k8s-mp0", Some(1400));
        assert_eq!(
            diff_link(&desired, &observed(1500, false)),
            [LinkOp::SetMtu(1400), LinkOp::SetUp]
        );
        assert!(diff_link(&desired, &observed(1400, true)).is_empty());
        let leave = DesiredLink {
            name: "x".into(),
            mtu: None,
            up: None,
            mac: None,
        };
        assert!(diff_link(&leave, &observed(1500, false)).is_empty());
    }

    #[test]
    fn diff_sets_a_different_mac() {
        let mac = MacAddress([0x0a, 0x58, 0, 0, 0, 1]);
        let desired = DesiredLink {
            mac: Some(mac),
            ..DesiredLink::up("ovn-k8s-mp0", None)
        };
        assert_eq!(
            diff_link(&desired, &observed(1500, true)),
            [LinkOp::SetMac(mac)]
        );
    }
}
