//! An address with its prefix length, as CNI results write it (`10.244.1.5/24`): the host
//! bits are kept (Go's `types.ParseCIDR` keeps the address, not the network).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// `address/prefix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpCidr {
    /// The address (host bits kept).
    pub addr: IpAddr,
    /// The prefix length (at most 32 for IPv4, 128 for IPv6).
    pub prefix: u8,
}

/// Text that is not `address/prefix`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CIDR address: {text}")]
pub struct IpCidrError {
    /// The text as given.
    pub text: String,
}

impl IpCidr {
    /// A CIDR; `None` if the prefix is too long for the family.
    pub fn new(addr: IpAddr, prefix: u8) -> Option<IpCidr> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (prefix <= max).then_some(IpCidr { addr, prefix })
    }

    /// Is this an IPv4 address in Go's sense (`IP.To4() != nil`): IPv4, or IPv4-mapped IPv6.
    pub fn is_ipv4_like(&self) -> bool {
        match self.addr {
            IpAddr::V4(_) => true,
            IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some(),
        }
    }
}

impl FromStr for IpCidr {
    type Err = IpCidrError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = || IpCidrError {
            text: text.to_owned(),
        };
        let (addr, prefix) = text.split_once('/').ok_or_else(err)?;
        // Go's ParseCIDR takes only decimal digits for the length (no sign, no spaces).
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        let addr: IpAddr = addr.parse().map_err(|_| err())?;
        let prefix: u8 = prefix.parse().map_err(|_| err())?;
        IpCidr::new(addr, prefix).ok_or_else(err)
    }
}

impl fmt::Display for IpCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Serialize for IpCidr {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for IpCidr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for text in [
            "10.244.1.5/24",
            "fd00:10:244:1::5/64",
            "0.0.0.0/0",
            "::/0",
            "10.0.0.1/32",
        ] {
            assert_eq!(text.parse::<IpCidr>().unwrap().to_string(), text);
        }
        for bad in [
            "10.0.0.1",
            "10.0.0.1/33",
            "::1/129",
            "10.0.0.1/+4",
            "x/4",
            "10.0.0.1/",
            "10.0.0.1/ 4",
        ] {
            assert!(bad.parse::<IpCidr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn ipv4_like_follows_go_to4() {
        assert!("10.0.0.1/24".parse::<IpCidr>().unwrap().is_ipv4_like());
        assert!(
            "::ffff:10.0.0.1/120"
                .parse::<IpCidr>()
                .unwrap()
                .is_ipv4_like()
        );
        assert!(!"fd00::1/64".parse::<IpCidr>().unwrap().is_ipv4_like());
    }
}
