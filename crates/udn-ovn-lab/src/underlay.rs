//! The underlay: one Linux bridge in its own netns joining every node's uplink, and the
//! "external host" netns on the same L2 network, which is the nodes' default gateway.

use std::net::Ipv4Addr;

use crate::command::Cmd;
use crate::error::LabError;
use crate::netns::{Netns, ip};

/// The underlay bridge's name inside its netns.
pub(crate) const UNDERLAY_BRIDGE: &str = "br0";
/// The external host's interface.
pub(crate) const EXTERNAL_IFNAME: &str = "eth0";

/// A locally administered MAC derived from an IPv4 address (`02:00:<the four octets>`), so
/// every lab address has a stable, readable MAC.
pub(crate) fn mac_for(ip: Ipv4Addr) -> String {
    let [a, b, c, d] = ip.octets();
    format!("02:00:{a:02x}:{b:02x}:{c:02x}:{d:02x}")
}

/// The underlay bridge's netns. Dropped after the nodes (whose uplinks plug into it).
#[derive(Debug)]
pub(crate) struct Underlay {
    pub(crate) netns: Netns,
}

impl Underlay {
    pub(crate) fn start(netns: &str, mtu: u32) -> Result<Self, LabError> {
        let step = "start the underlay";
        let netns = Netns::create(step, netns)?;
        ip(netns.name())
            .args([
                "link",
                "add",
                UNDERLAY_BRIDGE,
                "mtu",
                &mtu.to_string(),
                "type",
                "bridge",
            ])
            .run(step)?;
        ip(netns.name())
            .args(["link", "set", UNDERLAY_BRIDGE, "up"])
            .run(step)?;
        Ok(Self { netns })
    }
}

/// The external host: an address on the underlay outside every node, the nodes' default
/// gateway, where tests run listeners or captures.
#[derive(Debug)]
pub struct ExternalHost {
    pub(crate) ip: Ipv4Addr,
    pub(crate) prefix_len: u8,
    pub(crate) mac: String,
    pub(crate) netns: Netns,
}

impl ExternalHost {
    pub(crate) fn start(
        netns: &str,
        underlay: &Underlay,
        ip_addr: Ipv4Addr,
        prefix_len: u8,
        mtu: u32,
    ) -> Result<Self, LabError> {
        let step = "start the external host";
        let netns = Netns::create(step, netns)?;
        let mac = mac_for(ip_addr);
        let mtu = mtu.to_string();
        ip(netns.name())
            .args(["link", "add", EXTERNAL_IFNAME, "mtu", &mtu, "address", &mac])
            .args(["type", "veth", "peer", "name", "ext", "mtu", &mtu])
            .args(["netns", underlay.netns.name()])
            .run(step)?;
        ip(underlay.netns.name())
            .args(["link", "set", "ext", "master", UNDERLAY_BRIDGE, "up"])
            .run(step)?;
        ip(netns.name())
            .args(["addr", "add", &format!("{ip_addr}/{prefix_len}")])
            .args(["dev", EXTERNAL_IFNAME])
            .run(step)?;
        ip(netns.name())
            .args(["link", "set", EXTERNAL_IFNAME, "up"])
            .run(step)?;
        // The nodes' uplinks are read by OVS's userspace datapath through AF_PACKET, which
        // does not complete offloaded checksums: TCP from here to a node would carry bad ones.
        Cmd::new("ethtool")
            .netns(netns.name())
            .args(["-K", EXTERNAL_IFNAME, "tx", "off"])
            .run(step)?;
        Ok(Self {
            ip: ip_addr,
            prefix_len,
            mac,
            netns,
        })
    }

    /// The external host's netns.
    pub fn netns(&self) -> &str {
        self.netns.name()
    }

    /// Its IP (the nodes' next hop): `172.18.0.1` by default.
    pub fn ip(&self) -> Ipv4Addr {
        self.ip
    }

    /// The prefix length of its address on the underlay.
    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// Its MAC.
    pub fn mac(&self) -> &str {
        &self.mac
    }

    /// Its interface on the underlay (`eth0`), e.g. for captures.
    pub fn ifname(&self) -> &'static str {
        EXTERNAL_IFNAME
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_follows_the_address() {
        assert_eq!(mac_for(Ipv4Addr::new(172, 18, 0, 2)), "02:00:ac:12:00:02");
    }
}
