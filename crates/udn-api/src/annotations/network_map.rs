//! The shape two node annotations share: a JSON object network name -> decimal **string**
//! (upstream `parseNetworkMapAnnotationValue` / `updateNetworkAnnotation`), used by the legacy
//! `k8s.ovn.org/network-ids` and by `k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids`.
//!
//! An empty object is an error (as upstream); an annotation with no networks left is deleted
//! rather than written as `{}`.

use std::collections::BTreeMap;

use super::{AnnotationError, from_json, to_go_json};

/// Parses the object; `what` names the number in errors ("network ID", "tunnel ID").
pub(crate) fn parse_network_numbers(
    annotation: &'static str,
    value: &str,
    what: &'static str,
) -> Result<BTreeMap<String, u32>, AnnotationError> {
    let raw: BTreeMap<String, String> = from_json(annotation, value)?;
    if raw.is_empty() {
        return Err(AnnotationError::invalid(
            annotation,
            "no networks in the annotation",
        ));
    }
    raw.into_iter()
        .map(|(network, number)| match number.parse::<u32>() {
            Ok(parsed) => Ok((network, parsed)),
            Err(_) => Err(AnnotationError::field(
                annotation,
                format!("network {network:?}"),
                "id",
                number,
                format!("not a non-negative decimal {what}"),
            )),
        })
        .collect()
}

/// Formats the object (numbers as decimal strings, keys sorted); `Ok(None)` when empty,
/// meaning the annotation should be deleted.
pub(crate) fn format_network_numbers(
    annotation: &'static str,
    numbers: &BTreeMap<String, u32>,
) -> Result<Option<String>, AnnotationError> {
    if numbers.is_empty() {
        return Ok(None);
    }
    let texts: BTreeMap<&str, String> = numbers
        .iter()
        .map(|(network, number)| (network.as_str(), number.to_string()))
        .collect();
    to_go_json(annotation, &texts).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "k8s.ovn.org/test";

    #[test]
    fn decimal_strings_keyed_by_network() {
        let parsed = parse_network_numbers(KEY, r#"{"b":"12","a":"+3"}"#, "thing").unwrap();
        assert_eq!(parsed, BTreeMap::from([("a".into(), 3), ("b".into(), 12)]));
        assert_eq!(
            format_network_numbers(KEY, &parsed).unwrap().as_deref(),
            Some(r#"{"a":"3","b":"12"}"#)
        );
        assert_eq!(format_network_numbers(KEY, &BTreeMap::new()).unwrap(), None);
        assert_eq!(
            parse_network_numbers(KEY, "{}", "thing")
                .unwrap_err()
                .to_string(),
            "annotation k8s.ovn.org/test: no networks in the annotation"
        );
        assert_eq!(
            parse_network_numbers(KEY, r#"{"a":"-1"}"#, "thing")
                .unwrap_err()
                .to_string(),
            "annotation k8s.ovn.org/test: network \"a\": field id \"-1\": not a non-negative decimal thing"
        );
        assert!(parse_network_numbers(KEY, r#"{"a":1}"#, "thing").is_err());
    }

    #[test]
    fn network_names_are_escaped_as_go_does() {
        let numbers = BTreeMap::from([("a<b".to_owned(), 1)]);
        assert_eq!(
            format_network_numbers(KEY, &numbers).unwrap().as_deref(),
            Some(r#"{"a\u003cb":"1"}"#)
        );
    }
}
