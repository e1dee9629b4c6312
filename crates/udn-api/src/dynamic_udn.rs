//! Dynamic UDN (upstream OKEP-5552, `--enable-dynamic-udn-allocation`,
//! `--udn-deletion-grace-period`): a node carries a UDN/CUDN network's per-node state (host
//! subnet, Layer2 tunnel IDs, the zone's OVN rows, the node's management port) only while a
//! scheduled pod on it attaches to the network, and for the grace period after the last one
//! left. Every component reads the same two settings.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::annotations::{parse_node_layer2_tunnel_ids, parse_node_subnets};
use crate::names::{ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS, ANNOTATION_NODE_SUBNETS};

/// Upstream's default `--udn-deletion-grace-period`.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(120);

/// The Dynamic UDN settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynamicUdn {
    /// `--enable-dynamic-udn-allocation`.
    pub enabled: bool,
    /// `--udn-deletion-grace-period`: how long an inactive node keeps the network.
    pub grace_period: Duration,
}

impl Default for DynamicUdn {
    fn default() -> Self {
        Self {
            enabled: false,
            grace_period: DEFAULT_GRACE_PERIOD,
        }
    }
}

/// The networks a Node carries per-node state of, as cluster-manager writes it: the keys of
/// its `k8s.ovn.org/node-subnets` (Layer3 host subnets, the default network included) and
/// `k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids` (primary Layer2) annotations.
/// An annotation that does not parse contributes nothing.
pub fn networks_with_node_state(annotations: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut networks = BTreeSet::new();
    if let Some(Ok(subnets)) = annotations
        .get(ANNOTATION_NODE_SUBNETS)
        .map(|text| parse_node_subnets(text))
    {
        networks.extend(subnets.into_keys());
    }
    if let Some(Ok(ids)) = annotations
        .get(ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS)
        .map(|text| parse_node_layer2_tunnel_ids(text))
    {
        networks.extend(ids.into_keys());
    }
    networks
}

/// Why a Go duration text does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("time: invalid duration {}", crate::go_text::quote(.0))]
pub struct DurationError(pub String);

/// Parses a Go duration (`time.ParseDuration`): a sequence of decimal numbers with units
/// `ns`, `us` (`µs`), `ms`, `s`, `m`, `h`, e.g. `120s`, `2m30s`, `1.5h`; `0` alone. Negative
/// durations are refused (a grace period cannot be negative).
pub fn parse_go_duration(text: &str) -> Result<Duration, DurationError> {
    let error = || DurationError(text.to_owned());
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(error());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(error)?;
        if number_len == 0 {
            return Err(error());
        }
        let number: f64 = rest[..number_len].parse().map_err(|_| error())?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(error()),
        };
        rest = &rest[unit_len..];
        total += number * seconds;
    }
    Duration::try_from_secs_f64(total).map_err(|_| error())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_state_is_read_from_both_annotations() {
        let annotations = BTreeMap::from([
            (
                ANNOTATION_NODE_SUBNETS.to_owned(),
                r#"{"default":["10.244.1.0/24"],"blue_net":["10.10.1.0/24"]}"#.to_owned(),
            ),
            (
                ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS.to_owned(),
                r#"{"l2_net":"5"}"#.to_owned(),
            ),
        ]);
        assert_eq!(
            networks_with_node_state(&annotations),
            BTreeSet::from(["blue_net".into(), "default".into(), "l2_net".into()])
        );
        let broken = BTreeMap::from([(ANNOTATION_NODE_SUBNETS.to_owned(), "{".to_owned())]);
        assert!(networks_with_node_state(&broken).is_empty());
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("120s"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_go_duration("2m30s"), Ok(Duration::from_secs(150)));
        assert_eq!(parse_go_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "10", "s", "-5s", "5d", "1..5s"] {
            let err = parse_go_duration(bad).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("time: invalid duration {}", crate::go_text::quote(bad))
            );
        }
    }
}
