//! MAC addresses derived from IPs (upstream `util.IPAddrToHWAddr`) and the IPv6 link-local
//! address built from a MAC (`util.HWAddrToIPv6LLA`).

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use sha2::{Digest, Sha256};

/// A 48-bit MAC address, displayed lowercase with colons (`0a:58:0a:f4:00:06`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MacAddress(pub [u8; 6]);

impl MacAddress {
    /// The six octets.
    pub fn octets(self) -> [u8; 6] {
        self.0
    }

    /// The `fe80::/64` link-local address of this MAC (modified EUI-64: the universal/local bit
    /// flipped, `ff:fe` in the middle).
    pub fn ipv6_link_local(self) -> Ipv6Addr {
        let [a, b, c, d, e, f] = self.0;
        Ipv6Addr::from([
            0xfe,
            0x80,
            0,
            0,
            0,
            0,
            0,
            0,
            a ^ 0x02,
            b,
            c,
            0xff,
            0xfe,
            d,
            e,
            f,
        ])
    }
}

impl fmt::Display for MacAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

/// The MAC of a pod or port address: IPv4 `a.b.c.d` gives `0a:58:aa:bb:cc:dd`; IPv6 gives
/// `0a:58` followed by the first four bytes of the SHA-256 of the address's canonical text
/// (RFC 5952, as Go's `net.IP.String` prints it). An IPv4-mapped IPv6 address counts as IPv4.
pub fn ip_to_mac(ip: IpAddr) -> MacAddress {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    };
    if let Some(v4) = v4 {
        let [a, b, c, d] = v4.octets();
        return MacAddress([0x0a, 0x58, a, b, c, d]);
    }
    let hash = Sha256::digest(ip.to_string().as_bytes());
    let [h0, h1, h2, h3] = [0, 1, 2, 3].map(|i| hash.get(i).copied().unwrap_or_default());
    MacAddress([0x0a, 0x58, h0, h1, h2, h3])
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv4_examples() {
        assert_eq!(ip_to_mac(ip("10.244.0.6")).to_string(), "0a:58:0a:f4:00:06");
        assert_eq!(
            ip_to_mac(ip("203.203.2.5")).to_string(),
            "0a:58:cb:cb:02:05"
        );
        assert_eq!(ip_to_mac(ip("100.10.1.7")).to_string(), "0a:58:64:0a:01:07");
        assert_eq!(
            ip_to_mac(ip("::ffff:10.244.0.6")).to_string(),
            "0a:58:0a:f4:00:06"
        );
    }

    #[test]
    fn ipv6_hashes_the_canonical_text() {
        // Vectors from `printf '<text>' | sha256sum`.
        assert_eq!(
            ip_to_mac(ip("2010:100:200::3")).to_string(),
            "0a:58:75:c0:87:92"
        );
        // Non-canonical input is hashed in its canonical form.
        assert_eq!(
            ip_to_mac(ip("fd00:10:244:1:0:0:0:5")).to_string(),
            "0a:58:fc:09:1d:4e"
        );
    }

    #[test]
    fn link_local_from_mac() {
        let mac = ip_to_mac(ip("100.65.0.4"));
        assert_eq!(mac.to_string(), "0a:58:64:41:00:04");
        assert_eq!(mac.ipv6_link_local().to_string(), "fe80::858:64ff:fe41:4");
    }

    /// Go's `net.IP.String` for a non-IPv4-mapped IPv6 address (RFC 5952): lowercase hex
    /// groups, the first longest run of two or more zero groups replaced by `::`.
    fn go_ipv6_string(addr: Ipv6Addr) -> String {
        let groups = addr.segments();
        let (mut best_start, mut best_len) = (usize::MAX, 0);
        let mut i = 0;
        while i < 8 {
            let mut j = i;
            while j < 8 && groups[j] == 0 {
                j += 1;
            }
            if j - i > best_len {
                best_start = i;
                best_len = j - i;
            }
            i = j.max(i + 1);
        }
        if best_len < 2 {
            best_start = usize::MAX;
        }
        let mut out = String::new();
        let mut k = 0;
        while k < 8 {
            if k == best_start {
                out.push_str("::");
                k += best_len;
                continue;
            }
            if !out.is_empty() && !out.ends_with(':') {
                out.push(':');
            }
            out.push_str(&format!("{:x}", groups[k]));
            k += 1;
        }
        out
    }

    #[test]
    fn go_text_form_edge_cases() {
        for s in [
            "2001:db8:0:1:1:1:1:1",
            "2001:0:0:1:0:0:0:1",
            "::",
            "::1",
            "fd00::",
            "1:0:0:2:0:0:3:4",
        ] {
            let addr: Ipv6Addr = s.parse().unwrap();
            assert_eq!(addr.to_string(), go_ipv6_string(addr), "{s}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn rust_ipv6_text_matches_go(groups in prop::array::uniform8(prop_oneof![3 => Just(0u16), 1 => any::<u16>()])) {
            let addr = Ipv6Addr::from(groups);
            prop_assume!(addr.to_ipv4_mapped().is_none());
            prop_assert_eq!(addr.to_string(), go_ipv6_string(addr));
        }
    }
}
