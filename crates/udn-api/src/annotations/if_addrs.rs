//! The `{"ipv4":"…","ipv6":"…"}` object three node annotations share (upstream
//! `PrimaryIfAddrAnnotation`): the transit switch port addresses, the primary interface
//! addresses and the masquerade subnets.
//!
//! Both fields are `omitempty`, so a single-stack value has one key:
//! `{"ipv4":"100.88.0.2/16"}`. The CIDRs keep their host bits (`100.88.0.2/16` is an address
//! with its prefix length, not a network). A value with neither address is an error.

use ipnetwork::{IpNetwork, Ipv4Network, Ipv6Network};
use serde::Deserialize;

use super::{AnnotationError, from_json, from_json_object, null_as_default, parse_cidr};

/// One address (with prefix length) per IP family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IfAddrs {
    /// The IPv4 address, `ipv4`.
    pub ipv4: Option<Ipv4Network>,
    /// The IPv6 address, `ipv6`.
    pub ipv6: Option<Ipv6Network>,
}

impl IfAddrs {
    /// The first address of each family in `cidrs` (upstream `MatchFirstIPNetFamily`).
    pub fn from_cidrs(cidrs: &[IpNetwork]) -> Self {
        let mut addrs = Self::default();
        for cidr in cidrs {
            match cidr {
                IpNetwork::V4(v4) if addrs.ipv4.is_none() => addrs.ipv4 = Some(*v4),
                IpNetwork::V6(v6) if addrs.ipv6.is_none() => addrs.ipv6 = Some(*v6),
                _ => {}
            }
        }
        addrs
    }

    /// The addresses, IPv4 first.
    pub fn to_vec(&self) -> Vec<IpNetwork> {
        self.ipv4
            .map(IpNetwork::V4)
            .into_iter()
            .chain(self.ipv6.map(IpNetwork::V6))
            .collect()
    }

    /// Whether neither address is set.
    pub fn is_empty(&self) -> bool {
        self.ipv4.is_none() && self.ipv6.is_none()
    }
}

#[derive(Deserialize)]
struct IfAddrsJson {
    #[serde(default, deserialize_with = "null_as_default")]
    ipv4: String,
    #[serde(default, deserialize_with = "null_as_default")]
    ipv6: String,
}

fn family_field(
    annotation: &'static str,
    field: &'static str,
    text: &str,
    want_v6: bool,
) -> Result<Option<IpNetwork>, AnnotationError> {
    if text.is_empty() {
        return Ok(None);
    }
    match parse_cidr(text) {
        Some(cidr) if cidr.is_ipv6() == want_v6 => Ok(Some(cidr)),
        Some(_) => Err(AnnotationError::field(
            annotation,
            "value".to_owned(),
            field,
            text,
            "address of the other IP family",
        )),
        None => Err(AnnotationError::field(
            annotation,
            "value".to_owned(),
            field,
            text,
            "not a CIDR",
        )),
    }
}

/// Parses the object of `annotation`.
pub(crate) fn parse_if_addrs(
    annotation: &'static str,
    value: &str,
) -> Result<IfAddrs, AnnotationError> {
    let raw: IfAddrsJson = from_json_object(annotation, from_json(annotation, value)?)?;
    let ipv4 = match family_field(annotation, "ipv4", &raw.ipv4, false)? {
        Some(IpNetwork::V4(v4)) => Some(v4),
        _ => None,
    };
    let ipv6 = match family_field(annotation, "ipv6", &raw.ipv6, true)? {
        Some(IpNetwork::V6(v6)) => Some(v6),
        _ => None,
    };
    let addrs = IfAddrs { ipv4, ipv6 };
    if addrs.is_empty() {
        return Err(AnnotationError::invalid(
            annotation,
            "neither an ipv4 nor an ipv6 address",
        ));
    }
    Ok(addrs)
}

/// Formats the object as Go's `json.Marshal` writes it (`{}` when both are unset). CIDR text
/// never needs JSON escaping.
pub(crate) fn format_if_addrs(addrs: &IfAddrs) -> String {
    let mut fields = Vec::with_capacity(2);
    if let Some(v4) = addrs.ipv4 {
        fields.push(format!(r#""ipv4":"{v4}""#));
    }
    if let Some(v6) = addrs.ipv6 {
        fields.push(format!(r#""ipv6":"{v6}""#));
    }
    format!("{{{}}}", fields.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::test_strategies::cidr_of;
    use proptest::prelude::*;

    const KEY: &str = "k8s.ovn.org/test";

    fn v4(text: &str) -> Ipv4Network {
        text.parse().unwrap()
    }

    fn v6(text: &str) -> Ipv6Network {
        text.parse().unwrap()
    }

    #[test]
    fn single_and_dual_stack_forms() {
        let dual = IfAddrs {
            ipv4: Some(v4("100.88.0.2/16")),
            ipv6: Some(v6("fd97::2/64")),
        };
        let text = format_if_addrs(&dual);
        assert_eq!(text, r#"{"ipv4":"100.88.0.2/16","ipv6":"fd97::2/64"}"#);
        assert_eq!(parse_if_addrs(KEY, &text).unwrap(), dual);
        let single = IfAddrs {
            ipv4: Some(v4("172.18.0.3/16")),
            ipv6: None,
        };
        assert_eq!(format_if_addrs(&single), r#"{"ipv4":"172.18.0.3/16"}"#);
        assert_eq!(
            parse_if_addrs(KEY, r#"{"ipv4":"172.18.0.3/16","ipv6":""}"#).unwrap(),
            single
        );
        assert_eq!(format_if_addrs(&IfAddrs::default()), "{}");
        assert_eq!(
            dual.to_vec(),
            [
                IpNetwork::V4(v4("100.88.0.2/16")),
                IpNetwork::V6(v6("fd97::2/64"))
            ]
        );
    }

    #[test]
    fn from_cidrs_takes_the_first_of_each_family() {
        let cidrs: Vec<IpNetwork> = ["fd00::5/64", "10.0.0.1/24", "10.0.0.2/24"]
            .iter()
            .map(|c| c.parse().unwrap())
            .collect();
        let addrs = IfAddrs::from_cidrs(&cidrs);
        assert_eq!(addrs.ipv4, Some(v4("10.0.0.1/24")));
        assert_eq!(addrs.ipv6, Some(v6("fd00::5/64")));
    }

    #[test]
    fn rejects_bad_values() {
        for (value, expected) in [
            (
                "{}",
                "annotation k8s.ovn.org/test: neither an ipv4 nor an ipv6 address",
            ),
            (
                r#"{"ipv4":"","ipv6":null}"#,
                "neither an ipv4 nor an ipv6 address",
            ),
            (
                r#"{"ipv4":"100.88.0.2"}"#,
                "annotation k8s.ovn.org/test: value: field ipv4 \"100.88.0.2\": not a CIDR",
            ),
            (
                r#"{"ipv6":"100.88.0.2/16"}"#,
                "field ipv6 \"100.88.0.2/16\": address of the other IP family",
            ),
            (
                "[]",
                "annotation k8s.ovn.org/test: value is not a JSON object",
            ),
            (r#"{"ipv4":2}"#, "value is not JSON of the expected shape"),
        ] {
            let message = parse_if_addrs(KEY, value).unwrap_err().to_string();
            assert!(message.contains(expected), "{value}: {message}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parse_never_panics(value in ".{0,48}") {
            let _ = parse_if_addrs(KEY, &value);
        }

        #[test]
        fn round_trips(a in proptest::option::of(cidr_of(false)), b in proptest::option::of(cidr_of(true))) {
            let addrs = IfAddrs::from_cidrs(&a.into_iter().chain(b).collect::<Vec<_>>());
            let text = format_if_addrs(&addrs);
            if addrs.is_empty() {
                prop_assert!(parse_if_addrs(KEY, &text).is_err());
            } else {
                prop_assert_eq!(parse_if_addrs(KEY, &text).unwrap(), addrs);
            }
        }
    }
}
