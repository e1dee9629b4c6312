//! proptest strategies for the typed annotation values (test-only).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::IpNetwork;
use proptest::prelude::*;

/// Any IPv4 address.
pub(crate) fn ipv4() -> impl Strategy<Value = Ipv4Addr> {
    any::<[u8; 4]>().prop_map(Ipv4Addr::from)
}

/// Any IPv6 address that is not IPv4-mapped (Go prints those in dotted form).
pub(crate) fn ipv6() -> impl Strategy<Value = Ipv6Addr> {
    any::<[u8; 16]>()
        .prop_map(Ipv6Addr::from)
        .prop_filter("not IPv4-mapped", |ip| ip.to_ipv4_mapped().is_none())
}

/// An IP address of the requested family.
pub(crate) fn ip_of(v6: bool) -> BoxedStrategy<IpAddr> {
    if v6 {
        ipv6().prop_map(IpAddr::V6).boxed()
    } else {
        ipv4().prop_map(IpAddr::V4).boxed()
    }
}

/// Any IP address.
pub(crate) fn ip() -> impl Strategy<Value = IpAddr> {
    any::<bool>().prop_flat_map(ip_of)
}

/// A CIDR of the requested family, host bits kept.
pub(crate) fn cidr_of(v6: bool) -> BoxedStrategy<IpNetwork> {
    let max = if v6 { 128u8 } else { 32u8 };
    (ip_of(v6), 0..=max)
        .prop_filter_map("valid prefix", |(ip, prefix)| {
            IpNetwork::new(ip, prefix).ok()
        })
        .boxed()
}

/// Any CIDR, host bits kept.
pub(crate) fn cidr() -> impl Strategy<Value = IpNetwork> {
    any::<bool>().prop_flat_map(cidr_of)
}

/// A short lowercase DNS-1123 label.
pub(crate) fn label() -> impl Strategy<Value = String> {
    "[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?"
}

/// Arbitrary text, including characters Go escapes in JSON.
pub(crate) fn text() -> impl Strategy<Value = String> {
    prop_oneof![label(), "[ -~<>&\u{2028}\u{e9}]{1,12}"]
}
