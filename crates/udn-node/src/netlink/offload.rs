//! Turning off TX checksum offload on a veth: with the userspace (`netdev`) datapath OVS
//! reads the host end through AF_PACKET, which does not complete offloaded (CHECKSUM_PARTIAL)
//! checksums, so without this ICMP works and TCP silently does not. Doing it on the pod end
//! is enough.
//!
//! No Rust ethtool crate can set features (rust-netlink's `ethtool` only reads them), so this
//! runs `ethtool -K <if> tx off`. A child process inherits the netns of the thread that
//! starts it: called from a worker of [`in_netns`](super::in_netns) it acts in that netns.

use std::process::Command;

use super::error::NetlinkError;

/// `ethtool -K <ifname> tx off` in the calling thread's netns (`netns` names it in errors).
/// Blocking: call it from a netns worker thread.
pub fn disable_tx_checksum_offload(netns: &str, ifname: &str) -> Result<(), NetlinkError> {
    let features = "tx off";
    let error = |detail: String| NetlinkError::Ethtool {
        netns: netns.to_owned(),
        ifname: ifname.to_owned(),
        features: features.to_owned(),
        detail,
    };
    let output = Command::new("ethtool")
        .args(["-K", ifname, "tx", "off"])
        .output()
        .map_err(|source| {
            error(format!(
                "cannot run ethtool (Debian package ethtool): {source}"
            ))
        })?;
    if output.status.success() {
        return Ok(());
    }
    Err(error(format!(
        "{}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}
