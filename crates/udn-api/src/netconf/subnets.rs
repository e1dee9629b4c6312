//! Subnet list parsers with upstream semantics and messages: Go `net.ParseCIDR`,
//! `config.ParseClusterSubnetEntriesWithDefaults` (`cidr[/hostLen]` entries) and
//! `util.ParseIPList`.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use ipnetwork::IpNetwork;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Default Layer3 host subnet length for IPv4 entries without one.
pub const DEFAULT_IPV4_HOST_LENGTH: u8 = 24;
/// Default (and only allowed) Layer3 host subnet length for IPv6 entries.
pub const DEFAULT_IPV6_HOST_LENGTH: u8 = 64;

/// A Go `net.ParseCIDR` failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid CIDR address: {text}")]
pub struct CidrError {
    /// The text that failed to parse.
    pub text: String,
}

/// Why a subnet list entry was rejected. Display is the upstream text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubnetParseError {
    /// Not `cidr` / `cidr/hostLen`, or a host length where none is allowed.
    #[error("CIDR {} not properly formatted", go_quote(entry))]
    NotProperlyFormatted {
        /// The (trimmed) entry.
        entry: String,
    },
    /// The `addr/prefix` part does not parse.
    #[error(transparent)]
    InvalidCidr(#[from] CidrError),
    /// The host length is not a decimal integer (Go `strconv.Atoi`).
    #[error("strconv.Atoi: parsing {}: {}", go_quote(value), if *out_of_range { "value out of range" } else { "invalid syntax" })]
    InvalidHostLength {
        /// The host length text.
        value: String,
        /// Whether the number was syntactically fine but too large.
        out_of_range: bool,
    },
    /// IPv6 host subnets must be /64.
    #[error("IPv6 only supports /64 host subnets")]
    Ipv6HostLength,
    /// IPv4 host length above 32.
    #[error("invalid host subnet, IPv4 subnet must be < 32")]
    Ipv4HostTooLong,
    /// Two IPv4 entries with different host lengths.
    #[error(
        "all IPv4 cluster subnet entries must have the same host subnet length; found {first} and {found}"
    )]
    MixedIpv4HostLengths {
        /// Host length of the first IPv4 entry.
        first: i64,
        /// The differing host length.
        found: i64,
    },
    /// Host length not longer than the entry's prefix length.
    #[error(
        "cannot use a host subnet length mask shorter than or equal to the cluster subnet mask. host subnet length: {host}, cluster subnet length: {cluster}"
    )]
    HostSubnetMask {
        /// The host subnet length.
        host: i64,
        /// The entry's prefix length.
        cluster: u8,
    },
}

/// One parsed `cidr[/hostLen]` entry (upstream `CIDRNetworkEntry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SubnetEntry {
    /// The network, masked as Go's `net.ParseCIDR` returns it.
    pub cidr: IpNetwork,
    /// Per-node host subnet length; 0 where host lengths do not apply (Layer2/Localnet lists).
    pub host_subnet_length: u8,
}

impl fmt::Display for SubnetEntry {
    /// `cidr/hostLen`, as upstream `CIDRNetworkEntry.String`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.cidr, self.host_subnet_length)
    }
}

impl FromStr for SubnetEntry {
    type Err = SubnetParseError;

    /// One cluster subnet entry with the 24/64 defaults (e.g. `10.244.0.0/16/24`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut entries =
            parse_subnet_entries(s, DEFAULT_IPV4_HOST_LENGTH, DEFAULT_IPV6_HOST_LENGTH)?;
        match (entries.pop(), entries.is_empty()) {
            (Some(entry), true) => Ok(entry),
            _ => Err(SubnetParseError::NotProperlyFormatted {
                entry: s.trim().to_owned(),
            }),
        }
    }
}

impl Serialize for SubnetEntry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SubnetEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Go `net.ParseCIDR`: `addr/prefix` with a decimal prefix in range; returns the masked
/// network.
pub fn parse_cidr(text: &str) -> Result<IpNetwork, CidrError> {
    let err = || CidrError {
        text: text.to_owned(),
    };
    let (addr, prefix) = text.split_once('/').ok_or_else(err)?;
    let addr: IpAddr = addr.parse().map_err(|_| err())?;
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err());
    }
    let prefix: u8 = prefix.parse().map_err(|_| err())?;
    let net = IpNetwork::new(addr, prefix).map_err(|_| err())?;
    IpNetwork::new(net.network(), prefix).map_err(|_| err())
}

/// Upstream `ParseClusterSubnetEntriesWithDefaults`: comma-separated `cidr[/hostLen]`
/// entries. A default of 0 for a family means host lengths are not allowed for it
/// (a third `/` part is then a format error) and are not validated.
pub fn parse_subnet_entries(
    list: &str,
    ipv4_default: u8,
    ipv6_default: u8,
) -> Result<Vec<SubnetEntry>, SubnetParseError> {
    let mut parsed = Vec::new();
    let mut first_ipv4_host: i64 = 0;
    for raw in list.split(',') {
        let entry = raw.trim();
        let parts: Vec<&str> = entry.split('/').collect();
        let (addr, prefix, host) = match parts.as_slice() {
            [addr, prefix] => (addr, prefix, None),
            [addr, prefix, host] => (addr, prefix, Some(host)),
            _ => {
                return Err(SubnetParseError::NotProperlyFormatted {
                    entry: entry.to_owned(),
                });
            }
        };
        let cidr = parse_cidr(&format!("{addr}/{prefix}"))?;
        let ipv6 = cidr.is_ipv6();
        let default = if ipv6 { ipv6_default } else { ipv4_default };
        let host_allowed = default != 0;
        let host_length = match host {
            Some(_) if !host_allowed => {
                return Err(SubnetParseError::NotProperlyFormatted {
                    entry: entry.to_owned(),
                });
            }
            Some(text) => go_atoi(text)?,
            None => i64::from(default),
        };
        if host_allowed {
            check_host_length(ipv6, host_length, cidr.prefix(), &mut first_ipv4_host)?;
        }
        parsed.push(SubnetEntry {
            cidr,
            host_subnet_length: u8::try_from(host_length).unwrap_or_default(),
        });
    }
    Ok(parsed)
}

fn check_host_length(
    ipv6: bool,
    host: i64,
    prefix: u8,
    first_ipv4_host: &mut i64,
) -> Result<(), SubnetParseError> {
    if ipv6 && host != i64::from(DEFAULT_IPV6_HOST_LENGTH) {
        return Err(SubnetParseError::Ipv6HostLength);
    }
    if !ipv6 {
        if host > 32 {
            return Err(SubnetParseError::Ipv4HostTooLong);
        }
        if *first_ipv4_host == 0 {
            *first_ipv4_host = host;
        } else if host != *first_ipv4_host {
            return Err(SubnetParseError::MixedIpv4HostLengths {
                first: *first_ipv4_host,
                found: host,
            });
        }
    }
    if host <= i64::from(prefix) {
        return Err(SubnetParseError::HostSubnetMask {
            host,
            cluster: prefix,
        });
    }
    Ok(())
}

/// Go `strconv.Atoi` on a 64-bit platform: optional sign, decimal digits.
fn go_atoi(text: &str) -> Result<i64, SubnetParseError> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    let syntax_ok = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    let err = |out_of_range| SubnetParseError::InvalidHostLength {
        value: text.to_owned(),
        out_of_range,
    };
    if !syntax_ok {
        return Err(err(false));
    }
    text.parse::<i64>().map_err(|_| err(true))
}

/// Upstream `ParseClusterSubnetEntries`: entries with the 24 (IPv4) / 64 (IPv6) host defaults.
pub fn parse_cluster_subnet_entries(list: &str) -> Result<Vec<SubnetEntry>, SubnetParseError> {
    parse_subnet_entries(list, DEFAULT_IPV4_HOST_LENGTH, DEFAULT_IPV6_HOST_LENGTH)
}

/// Upstream `parseSubnetList`: a blank string is an empty list; otherwise plain CIDRs
/// (no host lengths allowed).
pub fn parse_subnet_list(list: &str) -> Result<Vec<IpNetwork>, SubnetParseError> {
    if list.trim().is_empty() {
        return Ok(Vec::new());
    }
    Ok(parse_subnet_entries(list, 0, 0)?
        .into_iter()
        .map(|entry| entry.cidr)
        .collect())
}

/// An IP list entry that is not an IP address (upstream `ParseIPList`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid IP address {}", go_quote(value))]
pub struct IpListError {
    /// The offending entry.
    pub value: String,
}

/// Upstream `ParseIPList`: comma-separated IPs, blanks skipped.
pub fn parse_ip_list(list: &str) -> Result<Vec<IpAddr>, IpListError> {
    list.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            entry.parse().map_err(|_| IpListError {
                value: entry.to_owned(),
            })
        })
        .collect()
}

/// Upstream `ContainsCIDR`: `outer` contains `inner` (same family, prefix not longer).
pub fn contains_cidr(outer: &IpNetwork, inner: &IpNetwork) -> bool {
    outer.prefix() <= inner.prefix() && outer.contains(inner.ip())
}

/// Go's `%q` for a string.
pub(crate) use crate::go_text::quote as go_quote;

#[cfg(test)]
mod tests {
    use super::*;

    fn err(list: &str) -> String {
        match parse_cluster_subnet_entries(list) {
            Ok(entries) => panic!("{list} parsed as {entries:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn cluster_entries_take_defaults_and_explicit_lengths() {
        let entries = parse_cluster_subnet_entries("10.128.0.0/14/23, fd00:10:244::/48").unwrap();
        assert_eq!(entries[0].to_string(), "10.128.0.0/14/23");
        assert_eq!(entries[1].to_string(), "fd00:10:244::/48/64");
        let entries = parse_cluster_subnet_entries("192.168.100.0/16").unwrap();
        assert_eq!(entries[0].to_string(), "192.168.0.0/16/24");
    }

    #[test]
    fn cluster_entry_errors_use_upstream_messages() {
        assert_eq!(err("abc"), r#"CIDR "abc" not properly formatted"#);
        assert_eq!(err("a/b/c/d"), r#"CIDR "a/b/c/d" not properly formatted"#);
        assert_eq!(err("!/16"), "invalid CIDR address: !/16");
        assert_eq!(err("10.0.0.0/33"), "invalid CIDR address: 10.0.0.0/33");
        assert_eq!(
            err("10.0.0.0/16/x"),
            r#"strconv.Atoi: parsing "x": invalid syntax"#
        );
        assert_eq!(
            err("10.0.0.0/16/99999999999999999999"),
            r#"strconv.Atoi: parsing "99999999999999999999": value out of range"#
        );
        assert_eq!(err("fd00::/48/60"), "IPv6 only supports /64 host subnets");
        assert_eq!(
            err("10.0.0.0/16/33"),
            "invalid host subnet, IPv4 subnet must be < 32"
        );
        assert_eq!(
            err("10.0.0.0/16/24,10.1.0.0/16/25"),
            "all IPv4 cluster subnet entries must have the same host subnet length; found 24 and 25"
        );
        assert_eq!(
            err("10.10.0.0/24/16"),
            "cannot use a host subnet length mask shorter than or equal to the cluster subnet mask. host subnet length: 16, cluster subnet length: 24"
        );
        assert_eq!(
            err("fd00::/64"),
            "cannot use a host subnet length mask shorter than or equal to the cluster subnet mask. host subnet length: 64, cluster subnet length: 64"
        );
        assert_eq!(err("10.0.0.0/16,"), r#"CIDR "" not properly formatted"#);
    }

    #[test]
    fn plain_lists_reject_host_lengths_and_skip_blank() {
        assert_eq!(parse_subnet_list("  ").unwrap(), Vec::<IpNetwork>::new());
        assert_eq!(
            parse_subnet_list("10.0.0.0/24/26").unwrap_err().to_string(),
            r#"CIDR "10.0.0.0/24/26" not properly formatted"#
        );
        let nets = parse_subnet_list("2001:dbb::0/128,192.168.100.1/24").unwrap();
        assert_eq!(nets[0].to_string(), "2001:dbb::/128");
        assert_eq!(nets[1].to_string(), "192.168.100.0/24");
    }

    #[test]
    fn ip_list_and_containment() {
        assert_eq!(parse_ip_list("10.0.0.1, ,fd00::1").unwrap().len(), 2);
        assert_eq!(
            parse_ip_list("10.0.0.1,nope").unwrap_err().to_string(),
            r#"invalid IP address "nope""#
        );
        let outer = parse_cidr("10.0.0.0/16").unwrap();
        assert!(contains_cidr(&outer, &parse_cidr("10.0.3.0/24").unwrap()));
        assert!(!contains_cidr(&outer, &parse_cidr("10.0.0.0/8").unwrap()));
        assert!(!contains_cidr(&outer, &parse_cidr("fd00::/64").unwrap()));
    }

    #[test]
    fn go_quote_escapes_like_go() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
    }

    #[test]
    fn subnet_entry_serde_round_trips() {
        let entry: SubnetEntry = serde_json::from_str(r#""10.244.0.0/16""#).unwrap();
        assert_eq!(
            serde_json::to_string(&entry).unwrap(),
            r#""10.244.0.0/16/24""#
        );
    }
}
