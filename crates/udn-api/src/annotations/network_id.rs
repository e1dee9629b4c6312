//! Network identity annotations.
//!
//! On NADs, written by cluster-manager (upstream `networkmanager/nad_controller.go`):
//! - `k8s.ovn.org/network-id`: decimal string, e.g. `"1"`.
//! - `k8s.ovn.org/network-name`: the network name, e.g. `"ns1_blue"`.
//! - `k8s.ovn.org/tunnel-keys`: JSON int array, `"[]"` when there are none.
//!
//! On nodes, the legacy `k8s.ovn.org/network-ids`: JSON object network name -> decimal
//! **string**, e.g. `{"blue":"3"}` (upstream `util/node_annotations.go`). Only read at startup
//! to keep old IDs, and cleaned up when a network is deleted.

use std::collections::BTreeMap;

use super::network_map::{format_network_numbers, parse_network_numbers};
use super::{AnnotationError, from_json};
use crate::names::{
    ANNOTATION_NETWORK_ID, ANNOTATION_NETWORK_NAME, ANNOTATION_NODE_NETWORK_IDS,
    ANNOTATION_TUNNEL_KEYS,
};

/// Parses `k8s.ovn.org/network-id`: a non-negative decimal integer (Go `strconv.Atoi`
/// syntax: optional `+`, leading zeros allowed).
pub fn parse_network_id(value: &str) -> Result<u32, AnnotationError> {
    value.parse::<u32>().map_err(|_| {
        AnnotationError::invalid(
            ANNOTATION_NETWORK_ID,
            format!("{value:?} is not a non-negative decimal network ID"),
        )
    })
}

/// Formats `k8s.ovn.org/network-id` (Go `strconv.Itoa`).
pub fn format_network_id(id: u32) -> String {
    id.to_string()
}

/// Parses `k8s.ovn.org/tunnel-keys`: a JSON array of non-negative integers (`null` is none).
pub fn parse_tunnel_keys(value: &str) -> Result<Vec<u32>, AnnotationError> {
    let keys: Option<Vec<u32>> = from_json(ANNOTATION_TUNNEL_KEYS, value)?;
    Ok(keys.unwrap_or_default())
}

/// Formats `k8s.ovn.org/tunnel-keys` as Go's `json.Marshal([]int)`: `[16711684,16715779]`,
/// `[]` when empty.
pub fn format_tunnel_keys(keys: &[u32]) -> String {
    let items: Vec<String> = keys.iter().map(ToString::to_string).collect();
    format!("[{}]", items.join(","))
}

/// The identity annotations of one NAD. An empty annotation value counts as absent, as
/// upstream treats it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NadNetworkAnnotations {
    /// `k8s.ovn.org/network-name`.
    pub network_name: Option<String>,
    /// `k8s.ovn.org/network-id`.
    pub network_id: Option<u32>,
    /// `k8s.ovn.org/tunnel-keys`.
    pub tunnel_keys: Vec<u32>,
}

impl NadNetworkAnnotations {
    /// Reads the three annotations from a NAD's annotations.
    pub fn from_annotations(
        annotations: &BTreeMap<String, String>,
    ) -> Result<Self, AnnotationError> {
        let present = |key: &str| {
            annotations
                .get(key)
                .map(String::as_str)
                .filter(|v| !v.is_empty())
        };
        Ok(Self {
            network_name: present(ANNOTATION_NETWORK_NAME).map(str::to_owned),
            network_id: present(ANNOTATION_NETWORK_ID)
                .map(parse_network_id)
                .transpose()?,
            tunnel_keys: present(ANNOTATION_TUNNEL_KEYS)
                .map(parse_tunnel_keys)
                .transpose()?
                .unwrap_or_default(),
        })
    }

    /// The annotations to write: name and ID when set, and always the tunnel keys (`"[]"`
    /// when none), as cluster-manager writes the three together.
    pub fn to_annotations(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        if let Some(name) = &self.network_name {
            out.insert(ANNOTATION_NETWORK_NAME.to_owned(), name.clone());
        }
        if let Some(id) = self.network_id {
            out.insert(ANNOTATION_NETWORK_ID.to_owned(), format_network_id(id));
        }
        out.insert(
            ANNOTATION_TUNNEL_KEYS.to_owned(),
            format_tunnel_keys(&self.tunnel_keys),
        );
        out
    }

    /// The subset of [`Self::to_annotations`] whose value differs from `current` (what
    /// cluster-manager patches; empty means nothing to write).
    pub fn patch_against(&self, current: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        self.to_annotations()
            .into_iter()
            .filter(|(key, value)| current.get(key) != Some(value))
            .collect()
    }
}

/// The legacy node annotation: network name -> network ID.
pub type NodeNetworkIds = BTreeMap<String, u32>;

/// Parses the legacy node annotation `k8s.ovn.org/network-ids`. An empty object is an error
/// (as upstream); an ID that is not a non-negative decimal string is an error naming the network.
pub fn parse_node_network_ids(value: &str) -> Result<NodeNetworkIds, AnnotationError> {
    parse_network_numbers(ANNOTATION_NODE_NETWORK_IDS, value, "network ID")
}

/// Formats the legacy node annotation (IDs as decimal strings, keys sorted); `Ok(None)` when
/// empty, meaning the annotation should be deleted.
pub fn format_node_network_ids(ids: &NodeNetworkIds) -> Result<Option<String>, AnnotationError> {
    format_network_numbers(ANNOTATION_NODE_NETWORK_IDS, ids)
}

/// Sets `network`'s ID in an existing legacy annotation value (`None` when absent).
pub fn set_node_network_id(
    existing: Option<&str>,
    network: &str,
    id: u32,
) -> Result<Option<String>, AnnotationError> {
    let mut ids = existing
        .map(parse_node_network_ids)
        .transpose()?
        .unwrap_or_default();
    ids.insert(network.to_owned(), id);
    format_node_network_ids(&ids)
}

/// Removes `network` from an existing legacy annotation value; `Ok(None)` means no network is
/// left and the annotation should be deleted.
pub fn remove_node_network_id(
    existing: Option<&str>,
    network: &str,
) -> Result<Option<String>, AnnotationError> {
    let mut ids = existing
        .map(parse_node_network_ids)
        .transpose()?
        .unwrap_or_default();
    ids.remove(network);
    format_node_network_ids(&ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::test_strategies::label;
    use proptest::prelude::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn network_id_is_a_decimal_string() {
        assert_eq!(parse_network_id("1").unwrap(), 1);
        assert_eq!(parse_network_id("4095").unwrap(), 4095);
        assert_eq!(parse_network_id("+7").unwrap(), 7);
        assert_eq!(format_network_id(1), "1");
        for bad in ["", "-1", " 1", "1.0", "0x1", "blue"] {
            assert!(parse_network_id(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_network_id("-1").unwrap_err().to_string(),
            "annotation k8s.ovn.org/network-id: \"-1\" is not a non-negative decimal network ID"
        );
    }

    #[test]
    fn tunnel_keys_are_a_json_int_array() {
        assert_eq!(format_tunnel_keys(&[]), "[]");
        assert_eq!(
            format_tunnel_keys(&[16711684, 16715779]),
            "[16711684,16715779]"
        );
        assert_eq!(
            parse_tunnel_keys("[16711684,16715779]").unwrap(),
            vec![16711684, 16715779]
        );
        assert_eq!(parse_tunnel_keys("[]").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_tunnel_keys("null").unwrap(), Vec::<u32>::new());
        for bad in ["", "[-1]", "[1.5]", "{}", "[\"1\"]"] {
            assert!(parse_tunnel_keys(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn nad_annotations_read_write_and_patch() {
        let current = annotations(&[
            ("k8s.ovn.org/network-name", "ns1_blue"),
            ("k8s.ovn.org/network-id", "1"),
            ("k8s.ovn.org/tunnel-keys", "[]"),
            ("other", "x"),
        ]);
        let read = NadNetworkAnnotations::from_annotations(&current).unwrap();
        assert_eq!(
            read,
            NadNetworkAnnotations {
                network_name: Some("ns1_blue".to_owned()),
                network_id: Some(1),
                tunnel_keys: vec![],
            }
        );
        assert!(read.patch_against(&current).is_empty());
        let primary_l2 = NadNetworkAnnotations {
            tunnel_keys: vec![16711684, 16715779],
            ..read
        };
        assert_eq!(
            primary_l2.patch_against(&current),
            annotations(&[("k8s.ovn.org/tunnel-keys", "[16711684,16715779]")])
        );
        let empty = annotations(&[("k8s.ovn.org/network-id", "")]);
        assert_eq!(
            NadNetworkAnnotations::from_annotations(&empty).unwrap(),
            NadNetworkAnnotations::default()
        );
        let bad = annotations(&[("k8s.ovn.org/network-id", "one")]);
        assert!(NadNetworkAnnotations::from_annotations(&bad).is_err());
    }

    #[test]
    fn legacy_node_network_ids() {
        let parsed = parse_node_network_ids(r#"{"blue":"3","red":"12"}"#).unwrap();
        assert_eq!(
            parsed,
            NodeNetworkIds::from([("blue".into(), 3), ("red".into(), 12)])
        );
        assert_eq!(
            format_node_network_ids(&parsed).unwrap().as_deref(),
            Some(r#"{"blue":"3","red":"12"}"#)
        );
        assert!(parse_node_network_ids("{}").is_err());
        assert!(parse_node_network_ids(r#"{"blue":3}"#).is_err());
        assert_eq!(
            parse_node_network_ids(r#"{"blue":"x"}"#)
                .unwrap_err()
                .to_string(),
            "annotation k8s.ovn.org/network-ids: network \"blue\": field id \"x\": \
             not a non-negative decimal network ID"
        );
        let value = set_node_network_id(None, "blue", 3).unwrap().unwrap();
        assert_eq!(value, r#"{"blue":"3"}"#);
        assert_eq!(remove_node_network_id(Some(&value), "blue").unwrap(), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parsers_never_panic(value in ".{0,40}") {
            let _ = parse_network_id(&value);
            let _ = parse_tunnel_keys(&value);
            let _ = parse_node_network_ids(&value);
        }

        #[test]
        fn round_trips(
            id in any::<u32>(),
            keys in proptest::collection::vec(any::<u32>(), 0..4),
            ids in proptest::collection::btree_map(label(), any::<u32>(), 0..4),
        ) {
            prop_assert_eq!(parse_network_id(&format_network_id(id)).unwrap(), id);
            let formatted = format_tunnel_keys(&keys);
            prop_assert_eq!(format_tunnel_keys(&parse_tunnel_keys(&formatted).unwrap()), formatted);
            match format_node_network_ids(&ids).unwrap() {
                None => prop_assert!(ids.is_empty()),
                Some(text) => {
                    let parsed = parse_node_network_ids(&text).unwrap();
                    prop_assert_eq!(format_node_network_ids(&parsed).unwrap(), Some(text));
                }
            }
        }
    }
}
