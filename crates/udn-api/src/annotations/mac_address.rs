//! A 48-bit MAC address as carried in `k8s.ovn.org/pod-networks`.

use std::fmt;
use std::str::FromStr;

/// A 48-bit (EUI-48) MAC address. Displays as Go's `net.HardwareAddr.String()` does:
/// lowercase hex octets separated by `:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MacAddress(pub [u8; 6]);

/// Why a string is not a 48-bit MAC address.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{text:?} is not a 48-bit MAC address (xx:xx:xx:xx:xx:xx, xx-xx-xx-xx-xx-xx or xxxx.xxxx.xxxx)"
)]
pub struct MacAddressParseError {
    /// The rejected text.
    pub text: String,
}

impl MacAddress {
    /// The six octets.
    pub fn octets(self) -> [u8; 6] {
        self.0
    }
}

impl fmt::Display for MacAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl FromStr for MacAddress {
    type Err = MacAddressParseError;

    /// Accepts the EUI-48 forms Go's `net.ParseMAC` accepts: six two-digit hex groups separated
    /// by `:` or `-` (one separator throughout), or three four-digit groups separated by `.`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_groups(text).ok_or_else(|| MacAddressParseError {
            text: text.to_owned(),
        })
    }
}

fn parse_groups(text: &str) -> Option<MacAddress> {
    let mut octets = [0u8; 6];
    if text.len() == 17 {
        let sep = *text.as_bytes().get(2)?;
        if sep != b':' && sep != b'-' {
            return None;
        }
        let mut groups = text.split(char::from(sep));
        for octet in &mut octets {
            *octet = hex_octet(groups.next()?)?;
        }
        return groups.next().is_none().then_some(MacAddress(octets));
    }
    if text.len() == 14 {
        let mut groups = text.split('.');
        for pair in octets.chunks_exact_mut(2) {
            let group = groups.next()?;
            let (hi, lo) = (group.get(..2)?, group.get(2..)?);
            if let [first, second] = pair {
                *first = hex_octet(hi)?;
                *second = hex_octet(lo)?;
            }
        }
        return groups.next().is_none().then_some(MacAddress(octets));
    }
    None
}

fn hex_octet(text: &str) -> Option<u8> {
    if text.len() != 2 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u8::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_go_forms_and_prints_lowercase_colons() {
        for text in ["0a:58:FD:98:00:01", "0a-58-fd-98-00-01", "0a58.fd98.0001"] {
            assert_eq!(
                text.parse::<MacAddress>().unwrap().to_string(),
                "0a:58:fd:98:00:01"
            );
        }
    }

    #[test]
    fn rejects_malformed() {
        for text in [
            "",
            "0a:58:fd:98:00",
            "0a:58:fd:98:00:01:02",
            "0a:58-fd:98:00:01",
            "0a:58:fd:98:00:0g",
            "0a:58:fd:98:00:+1",
            "0a58.fd98.00011",
            "0a58.fd98.001",
            "00:00:5e:00:53:01:00:00",
            "é0:58:fd:98:00:0",
        ] {
            assert!(text.parse::<MacAddress>().is_err(), "{text}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parse_never_panics(text in ".{0,20}") {
            let _ = text.parse::<MacAddress>();
        }

        #[test]
        fn display_round_trips(octets in any::<[u8; 6]>()) {
            let mac = MacAddress(octets);
            prop_assert_eq!(mac.to_string().parse::<MacAddress>(), Ok(mac));
        }
    }
}
