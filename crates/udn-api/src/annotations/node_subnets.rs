//! `k8s.ovn.org/node-subnets`: per network, the node's host subnets (upstream
//! `util/subnet_annotations.go`).
//!
//! Written as a JSON object network name -> array of CIDRs, keys sorted:
//! `{"cluster_udn_red":["10.200.0.0/24","fd00:200:0:1::/64"],"default":["10.244.1.0/24"]}`.
//! The reader also accepts the legacy single-string form `{"default":"10.130.0.0/23"}` (the
//! whole object in one form or the other, as upstream). An empty object or an empty
//! per-network list is an error; an annotation with no networks left is deleted.

use std::collections::BTreeMap;

use ipnetwork::IpNetwork;

use super::{AnnotationError, from_json, masked, parse_cidr, to_go_json};
use crate::names::ANNOTATION_NODE_SUBNETS;

/// Network name -> host subnets (at most one per IP family in practice), in annotation order.
pub type NodeSubnets = BTreeMap<String, Vec<IpNetwork>>;

/// Parses the annotation value. Subnets come back with host bits cleared (Go's
/// `net.ParseCIDR` network).
pub fn parse_node_subnets(value: &str) -> Result<NodeSubnets, AnnotationError> {
    let texts: BTreeMap<String, Vec<String>> = match from_json(ANNOTATION_NODE_SUBNETS, value) {
        Ok(lists) => lists,
        Err(list_error) => {
            let Ok(single) = serde_json::from_str::<BTreeMap<String, String>>(value) else {
                return Err(list_error);
            };
            single
                .into_iter()
                .map(|(network, cidr)| (network, vec![cidr]))
                .collect()
        }
    };
    if texts.is_empty() {
        return Err(AnnotationError::invalid(
            ANNOTATION_NODE_SUBNETS,
            "no networks in the annotation",
        ));
    }
    texts
        .into_iter()
        .map(|(network, cidrs)| {
            if cidrs.is_empty() {
                return Err(AnnotationError::field(
                    ANNOTATION_NODE_SUBNETS,
                    format!("network {network:?}"),
                    "subnets",
                    "",
                    "empty list of subnets",
                ));
            }
            let subnets = cidrs
                .iter()
                .map(|text| {
                    parse_cidr(text).map(masked).ok_or_else(|| {
                        AnnotationError::field(
                            ANNOTATION_NODE_SUBNETS,
                            format!("network {network:?}"),
                            "subnets",
                            text,
                            "not a CIDR",
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((network, subnets))
        })
        .collect()
}

/// Formats the annotation value: every network as an array, keys sorted, subnets with host
/// bits cleared. Networks with no subnets are left out; `Ok(None)` means nothing is left and the
/// annotation should be deleted.
pub fn format_node_subnets(subnets: &NodeSubnets) -> Result<Option<String>, AnnotationError> {
    let texts: BTreeMap<&str, Vec<String>> = subnets
        .iter()
        .filter(|(_, cidrs)| !cidrs.is_empty())
        .map(|(network, cidrs)| {
            let texts = cidrs.iter().map(|c| masked(*c).to_string()).collect();
            (network.as_str(), texts)
        })
        .collect();
    if texts.is_empty() {
        return Ok(None);
    }
    to_go_json(ANNOTATION_NODE_SUBNETS, &texts).map(Some)
}

/// Sets `network`'s subnets in an existing annotation value (`None` when the node has none)
/// and returns the new value. As upstream, empty `subnets` removes the network; `Ok(None)`
/// means no network is left and the annotation should be deleted.
pub fn set_node_subnets(
    existing: Option<&str>,
    network: &str,
    subnets: &[IpNetwork],
) -> Result<Option<String>, AnnotationError> {
    let mut all = existing
        .map(parse_node_subnets)
        .transpose()?
        .unwrap_or_default();
    if subnets.is_empty() {
        all.remove(network);
    } else {
        all.insert(network.to_owned(), subnets.to_vec());
    }
    format_node_subnets(&all)
}

/// Removes `network`'s entry from an existing annotation value; `Ok(None)` means no network is
/// left and the annotation should be deleted.
pub fn remove_node_subnets(
    existing: Option<&str>,
    network: &str,
) -> Result<Option<String>, AnnotationError> {
    set_node_subnets(existing, network, &[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::test_strategies::{cidr, label};
    use proptest::prelude::*;

    fn cidrs(texts: &[&str]) -> Vec<IpNetwork> {
        texts.iter().map(|t| t.parse().unwrap()).collect()
    }

    /// The §3.3 writer example. Go's `json.Marshal` sorts map keys, so the bytes upstream
    /// writes have the keys in sorted order.
    const WRITER_EXAMPLE: &str = r#"{"cluster_udn_red":["10.200.0.0/24","fd00:200:0:1::/64"],"default":["10.244.1.0/24"],"ns1_blue":["10.132.3.0/24"]}"#;

    #[test]
    fn writer_example_is_byte_identical() {
        let subnets = NodeSubnets::from([
            ("default".to_owned(), cidrs(&["10.244.1.0/24"])),
            ("ns1_blue".to_owned(), cidrs(&["10.132.3.0/24"])),
            (
                "cluster_udn_red".to_owned(),
                cidrs(&["10.200.0.0/24", "fd00:200:0:1::/64"]),
            ),
        ]);
        assert_eq!(
            format_node_subnets(&subnets).unwrap().as_deref(),
            Some(WRITER_EXAMPLE)
        );
        // The spec prints the same object in insertion order; it reads back identically.
        let spec_order = r#"{"default":["10.244.1.0/24"],"ns1_blue":["10.132.3.0/24"],"cluster_udn_red":["10.200.0.0/24","fd00:200:0:1::/64"]}"#;
        assert_eq!(parse_node_subnets(spec_order).unwrap(), subnets);
        assert_eq!(parse_node_subnets(WRITER_EXAMPLE).unwrap(), subnets);
    }

    #[test]
    fn reads_legacy_single_string_form_and_writes_arrays() {
        let parsed = parse_node_subnets(r#"{"default":"10.130.0.0/23"}"#).unwrap();
        assert_eq!(parsed["default"], cidrs(&["10.130.0.0/23"]));
        assert_eq!(
            format_node_subnets(&parsed).unwrap().as_deref(),
            Some(r#"{"default":["10.130.0.0/23"]}"#)
        );
        let dual =
            parse_node_subnets(r#"{"default":["10.130.0.0/23", "fd01:0:0:2::/64"]}"#).unwrap();
        assert_eq!(
            dual["default"],
            cidrs(&["10.130.0.0/23", "fd01:0:0:2::/64"])
        );
    }

    #[test]
    fn rejects_empty_and_malformed_values() {
        let cases = [
            (
                "{}",
                "annotation k8s.ovn.org/node-subnets: no networks in the annotation",
            ),
            (
                r#"{"default":[]}"#,
                "annotation k8s.ovn.org/node-subnets: network \"default\": field subnets \"\": empty list of subnets",
            ),
            (
                r#"{"blue":["10.1.0.0/24","10.2.0.0"]}"#,
                "annotation k8s.ovn.org/node-subnets: network \"blue\": field subnets \"10.2.0.0\": not a CIDR",
            ),
            (
                r#"{"a":"10.1.0.0/24","b":["10.2.0.0/24"]}"#,
                "annotation k8s.ovn.org/node-subnets: value is not JSON of the expected shape",
            ),
            ("", "value is not JSON of the expected shape"),
            ("null", "value is not JSON of the expected shape"),
            (r#"{"a":null}"#, "value is not JSON of the expected shape"),
        ];
        for (value, expected) in cases {
            let message = parse_node_subnets(value).unwrap_err().to_string();
            assert!(message.contains(expected), "{value}: {message}");
        }
    }

    #[test]
    fn reader_masks_host_bits() {
        let parsed = parse_node_subnets(r#"{"default":["10.244.1.7/24"]}"#).unwrap();
        assert_eq!(parsed["default"], cidrs(&["10.244.1.0/24"]));
    }

    #[test]
    fn set_and_remove_entries() {
        let value = set_node_subnets(None, "default", &cidrs(&["10.244.1.0/24"]))
            .unwrap()
            .unwrap();
        let value = set_node_subnets(Some(&value), "ns1_blue", &cidrs(&["10.132.3.0/24"]))
            .unwrap()
            .unwrap();
        assert_eq!(
            value,
            r#"{"default":["10.244.1.0/24"],"ns1_blue":["10.132.3.0/24"]}"#
        );
        let value = remove_node_subnets(Some(&value), "default")
            .unwrap()
            .unwrap();
        assert_eq!(value, r#"{"ns1_blue":["10.132.3.0/24"]}"#);
        assert_eq!(remove_node_subnets(Some(&value), "ns1_blue").unwrap(), None);
        assert_eq!(remove_node_subnets(None, "ns1_blue").unwrap(), None);
        assert_eq!(
            set_node_subnets(Some(&value), "ns1_blue", &[]).unwrap(),
            None
        );
        assert!(set_node_subnets(Some("{}"), "x", &cidrs(&["10.0.0.0/8"])).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parse_never_panics(value in ".{0,64}") {
            let _ = parse_node_subnets(&value);
        }

        #[test]
        fn parse_never_panics_on_json_shaped_input(
            network in ".{0,8}",
            texts in proptest::collection::vec(".{0,20}", 0..3),
        ) {
            let value = serde_json::json!({ network: texts }).to_string();
            let _ = parse_node_subnets(&value);
        }

        #[test]
        fn format_parse_format_is_stable(
            subnets in proptest::collection::btree_map(
                label(),
                proptest::collection::vec(cidr(), 0..3),
                0..4,
            ),
        ) {
            match format_node_subnets(&subnets).unwrap() {
                None => prop_assert!(subnets.values().all(Vec::is_empty)),
                Some(formatted) => {
                    let parsed = parse_node_subnets(&formatted).unwrap();
                    prop_assert_eq!(format_node_subnets(&parsed).unwrap(), Some(formatted));
                }
            }
        }
    }
}
