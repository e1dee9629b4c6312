//! The whole flow table the gateway bridge should have.

use std::collections::HashSet;

use super::flow::Flow;
use super::flows_common::common_flows;
use super::flows_default::default_bridge_flows;
use super::flows_services::service_flows;
use super::inputs::BridgeInputs;
use super::render::{DesiredError, Render};

/// The catch-all every bridge keeps (upstream's `NORMAL` flow-cache entry, without cookie).
pub const NORMAL_FLOW: &str = "table=0,priority=0,actions=NORMAL";

/// The flows the bridge should have, in upstream's order (its `DEFAULT` flows: the default
/// bridge's own, then the common ones; then the per-Service flows, Services by namespace and
/// name; then the `NORMAL` catch-all). Networks come in a fixed order (the default network,
/// then UDNs by network ID) where upstream iterates a map.
///
/// A text upstream renders twice (table 1's bridge-MAC flow; the ARP bypass and ICMP flows
/// of an external IP on each of its Service's ports, which differ only in the cookie) is
/// kept once, the first: OVS would hold one flow per match and priority anyway, and
/// upstream's choice among them depends on its map order.
pub fn desired_flows(inputs: &BridgeInputs) -> Result<Vec<Flow>, DesiredError> {
    let render = Render::new(inputs)?;
    let mut texts = Vec::new();
    default_bridge_flows(&render, &mut texts);
    common_flows(&render, &mut texts);
    service_flows(&render, inputs, &mut texts);
    texts.push(NORMAL_FLOW.to_owned());
    let mut seen = HashSet::new();
    Ok(texts
        .into_iter()
        .filter(|text| seen.insert(without_cookie(text).to_owned()))
        .map(Flow::new)
        .collect())
}

/// `text` without its leading `cookie=<c>, ` (every flow we render starts with it but
/// NORMAL).
fn without_cookie(text: &str) -> &str {
    match text.strip_prefix("cookie=") {
        Some(rest) => rest
            .split_once(',')
            .map_or(rest, |(_, after)| after.trim_start()),
        None => text,
    }
}
