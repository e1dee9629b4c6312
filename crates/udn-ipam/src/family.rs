//! IP families and the integer view of addresses that every allocator computes with.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::IpNetwork;

/// An IP address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpFamily {
    /// IPv4 (32-bit addresses).
    V4,
    /// IPv6 (128-bit addresses).
    V6,
}

impl IpFamily {
    /// The family of an address.
    pub fn of_addr(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(_) => Self::V4,
            IpAddr::V6(_) => Self::V6,
        }
    }

    /// The family of a network.
    pub fn of_net(net: IpNetwork) -> Self {
        match net {
            IpNetwork::V4(_) => Self::V4,
            IpNetwork::V6(_) => Self::V6,
        }
    }

    /// Address length in bits: 32 or 128.
    pub fn bits(self) -> u32 {
        match self {
            Self::V4 => 32,
            Self::V6 => 128,
        }
    }

    /// The largest address of the family as an integer.
    pub(crate) fn max_value(self) -> u128 {
        match self {
            Self::V4 => u128::from(u32::MAX),
            Self::V6 => u128::MAX,
        }
    }
}

impl fmt::Display for IpFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::V4 => "IPv4",
            Self::V6 => "IPv6",
        })
    }
}

/// The address as an integer (IPv4 in the low 32 bits).
pub(crate) fn addr_to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// The address of `family` with integer value `value`; `None` when it does not fit the family.
pub(crate) fn u128_to_addr(family: IpFamily, value: u128) -> Option<IpAddr> {
    match family {
        IpFamily::V4 => u32::try_from(value)
            .ok()
            .map(|v| IpAddr::V4(Ipv4Addr::from(v))),
        IpFamily::V6 => Some(IpAddr::V6(Ipv6Addr::from(value))),
    }
}

/// The network address of `net` as an integer.
pub(crate) fn network_base(net: IpNetwork) -> u128 {
    addr_to_u128(net.network())
}

/// Number of addresses in `net`, saturating at `u128::MAX` for `::/0`.
pub(crate) fn network_size(net: IpNetwork) -> u128 {
    let host_bits = IpFamily::of_net(net).bits() - u32::from(net.prefix());
    1u128.checked_shl(host_bits).unwrap_or(u128::MAX)
}

/// `net` with its host bits cleared (what Go's `net.ParseCIDR` hands back).
pub(crate) fn canonical(net: IpNetwork) -> IpNetwork {
    IpNetwork::new(net.network(), net.prefix()).unwrap_or(net)
}

/// Whether `inner` lies wholly inside `outer` (same family, longer or equal prefix).
pub(crate) fn contains_net(outer: IpNetwork, inner: IpNetwork) -> bool {
    outer.prefix() <= inner.prefix() && outer.contains(inner.network())
}

/// The address `offset` past the network address of `net`, if it is still an address of the family.
pub(crate) fn addr_at(net: IpNetwork, offset: u128) -> Option<IpAddr> {
    let family = IpFamily::of_net(net);
    let value = network_base(net).checked_add(offset)?;
    if value > family.max_value() {
        return None;
    }
    u128_to_addr(family, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNetwork {
        s.parse().unwrap()
    }

    #[test]
    fn family_and_bits() {
        assert_eq!(IpFamily::of_net(net("10.0.0.0/8")), IpFamily::V4);
        assert_eq!(IpFamily::of_net(net("fd00::/64")), IpFamily::V6);
        assert_eq!(IpFamily::V4.bits(), 32);
        assert_eq!(IpFamily::V6.bits(), 128);
        assert_eq!(IpFamily::V6.to_string(), "IPv6");
    }

    #[test]
    fn canonical_clears_host_bits() {
        assert_eq!(canonical(net("10.1.2.3/16")).to_string(), "10.1.0.0/16");
        assert_eq!(canonical(net("fd00::5/64")).to_string(), "fd00::/64");
    }

    #[test]
    fn sizes() {
        assert_eq!(network_size(net("10.0.0.0/24")), 256);
        assert_eq!(network_size(net("10.0.0.0/0")), 1 << 32);
        assert_eq!(network_size(net("::/0")), u128::MAX);
        assert_eq!(network_size(net("fd00::/64")), 1 << 64);
    }

    #[test]
    fn contains_net_checks_prefix() {
        assert!(contains_net(net("10.0.0.0/16"), net("10.0.1.0/24")));
        assert!(!contains_net(net("10.0.1.0/24"), net("10.0.0.0/16")));
        assert!(!contains_net(net("10.0.0.0/16"), net("fd00::/64")));
    }

    #[test]
    fn addr_at_stops_at_the_end_of_the_family() {
        assert_eq!(
            addr_at(net("10.0.0.0/8"), 258),
            Some("10.0.1.2".parse().unwrap())
        );
        assert_eq!(addr_at(net("255.255.255.255/32"), 1), None);
    }
}
