//! The names, types and comments upstream gives the table, chain and six sets (exactly).

use crate::nft::{Family, TableId};

/// The table (shared with the node's other nftables rules).
pub const TABLE: &str = "ovn-kubernetes";
/// The base chain.
pub const CHAIN: &str = "udn-isolation";
/// The chain's comment.
pub const CHAIN_COMMENT: &str = "Host isolation for user defined networks";

/// `inet ovn-kubernetes`.
pub fn table_id() -> TableId {
    TableId::new(Family::Inet, TABLE)
}

/// An IP family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpFamily {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

impl IpFamily {
    /// Of an address.
    pub fn of(ip: &std::net::IpAddr) -> Self {
        if ip.is_ipv4() { Self::V4 } else { Self::V6 }
    }

    /// The payload keyword (`ip`, `ip6`).
    pub fn payload(self) -> &'static str {
        match self {
            Self::V4 => "ip",
            Self::V6 => "ip6",
        }
    }

    /// The ICMP protocol name for `meta l4proto`.
    pub fn icmp(self) -> &'static str {
        match self {
            Self::V4 => "icmp",
            Self::V6 => "icmpv6",
        }
    }

    fn address_type(self) -> &'static str {
        match self {
            Self::V4 => "ipv4_addr",
            Self::V6 => "ipv6_addr",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::V4 => "IPv4",
            Self::V6 => "IPv6",
        }
    }
}

/// What a set holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SetKind {
    /// `address . protocol . port` of opened ports.
    OpenPorts,
    /// Addresses that accept ICMP.
    OpenIcmp,
    /// Every default-network address of primary-UDN pods.
    PodIps,
}

/// One of the six sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SetId {
    /// What it holds.
    pub kind: SetKind,
    /// Of which family.
    pub family: IpFamily,
}

impl SetId {
    /// The six sets, in the order upstream creates them.
    pub const ALL: [SetId; 6] = [
        SetId::new(SetKind::OpenPorts, IpFamily::V4),
        SetId::new(SetKind::OpenPorts, IpFamily::V6),
        SetId::new(SetKind::OpenIcmp, IpFamily::V4),
        SetId::new(SetKind::OpenIcmp, IpFamily::V6),
        SetId::new(SetKind::PodIps, IpFamily::V4),
        SetId::new(SetKind::PodIps, IpFamily::V6),
    ];

    /// `kind` of `family`.
    pub const fn new(kind: SetKind, family: IpFamily) -> Self {
        Self { kind, family }
    }

    /// Its name (`udn-open-ports-v4`, ...).
    pub fn name(self) -> &'static str {
        match (self.kind, self.family) {
            (SetKind::OpenPorts, IpFamily::V4) => "udn-open-ports-v4",
            (SetKind::OpenPorts, IpFamily::V6) => "udn-open-ports-v6",
            (SetKind::OpenIcmp, IpFamily::V4) => "udn-open-ports-icmp-v4",
            (SetKind::OpenIcmp, IpFamily::V6) => "udn-open-ports-icmp-v6",
            (SetKind::PodIps, IpFamily::V4) => "udn-pod-default-ips-v4",
            (SetKind::PodIps, IpFamily::V6) => "udn-pod-default-ips-v6",
        }
    }

    /// Its key type.
    pub fn key_type(self) -> String {
        let address = self.family.address_type();
        match self.kind {
            SetKind::OpenPorts => format!("{address} . inet_proto . inet_service"),
            SetKind::OpenIcmp | SetKind::PodIps => address.to_owned(),
        }
    }

    /// Its comment.
    pub fn comment(self) -> String {
        let what = match self.kind {
            SetKind::OpenPorts => "default network open ports of pods in user defined networks",
            SetKind::OpenIcmp => {
                "default network IPs of pods in user defined networks that allow ICMP"
            }
            SetKind::PodIps => "default network IPs of pods in user defined networks",
        };
        format!("{what} ({})", self.family.label())
    }
}
