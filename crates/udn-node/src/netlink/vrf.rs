//! VRF devices (a primary UDN's `mp<ID>-udn-vrf`): created with their routing table, a
//! link enslaved to one. A kernel without VRF support answers `EOPNOTSUPP`, which comes back
//! as [`VrfOutcome::Unsupported`] so the caller can fall back to plain routing tables
//! selected by the same rules.

use rtnetlink::{LinkUnspec, LinkVrf};

use super::error::{NetlinkError, errno};
use super::link::{link_by_name, require_link};
use super::netns::Netlink;

/// `EOPNOTSUPP`: the kernel has no such link type.
const EOPNOTSUPP: i32 = 95;
/// `EEXIST`.
const EEXIST: i32 = 17;

/// What [`ensure_vrf`] found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VrfOutcome {
    /// The VRF exists (made now or before), with its ifindex.
    Present(u32),
    /// The kernel cannot make VRFs.
    Unsupported,
}

/// Makes the VRF `name` bound to `table` (up), unless it exists.
pub async fn ensure_vrf(
    netlink: &Netlink,
    name: &str,
    table: u32,
) -> Result<VrfOutcome, NetlinkError> {
    if let Some(link) = link_by_name(netlink, name).await? {
        return Ok(VrfOutcome::Present(link.index));
    }
    match netlink
        .handle()
        .link()
        .add(LinkVrf::new(name, table).up().build())
        .execute()
        .await
    {
        Ok(()) => {}
        Err(error) if errno(&error) == Some(EOPNOTSUPP) => return Ok(VrfOutcome::Unsupported),
        Err(error) if errno(&error) == Some(EEXIST) => {}
        Err(error) => return Err(netlink.request_error("add vrf", name, error)),
    }
    Ok(VrfOutcome::Present(
        require_link(netlink, name).await?.index,
    ))
}

/// Enslaves `link` to the device with ifindex `vrf` (no change when it already is).
pub async fn enslave(netlink: &Netlink, link: &str, vrf: u32) -> Result<(), NetlinkError> {
    let index = require_link(netlink, link).await?.index;
    netlink
        .handle()
        .link()
        .set(LinkUnspec::new_with_index(index).controller(vrf).build())
        .execute()
        .await
        .map_err(|error| netlink.request_error("set link master", link, error))
}
