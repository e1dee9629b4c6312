//! Static route, NAT and router policy rows, with the row ids that identify them (they
//! have no name): `<router>:route:<policy>:<prefix>`, `<router>:snat:<purpose>:<logical ip>`,
//! `<router>:policy:<priority>:<match>`.

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_ovsdb::engine::DesiredRow;
use udn_ovsdb::nb::{logical_router_policy, logical_router_static_route, nat};

use super::columns::{Pairs, optional_string, string_map, string_set};
use super::context::NetCtx;

/// A static route (upstream `nbdb.LogicalRouterStaticRoute` as the gateway and interconnect
/// code build them).
#[derive(Clone, Debug)]
pub(crate) struct Route {
    pub(crate) router: String,
    pub(crate) prefix: String,
    pub(crate) nexthop: IpAddr,
    /// `src-ip` routes; `None` is the default (`dst-ip`).
    pub(crate) src_ip: bool,
    pub(crate) output_port: Option<String>,
    pub(crate) external_ids: Pairs,
}

impl Route {
    /// The route's row.
    pub(crate) fn row(&self) -> DesiredRow {
        let policy = if self.src_ip { "src-ip" } else { "dst-ip" };
        DesiredRow::new(
            logical_router_static_route::TABLE,
            format!("{}:route:{policy}:{}", self.router, self.prefix),
        )
        .string(logical_router_static_route::IP_PREFIX, &self.prefix)
        .string(
            logical_router_static_route::NEXTHOP,
            &self.nexthop.to_string(),
        )
        .value(
            logical_router_static_route::POLICY,
            optional_string(self.src_ip.then_some("src-ip")),
        )
        .value(
            logical_router_static_route::OUTPUT_PORT,
            optional_string(self.output_port.as_deref()),
        )
        .value(
            logical_router_static_route::EXTERNAL_IDS,
            string_map(self.external_ids.clone()),
        )
    }
}

/// A route prefix as upstream writes it: the subnet in CIDR form.
pub(crate) fn cidr(net: IpNetwork) -> String {
    format!("{}/{}", net.network(), net.prefix())
}

/// A NAT `logical_ip` as upstream's `BuildSNAT` writes it: a host address without its
/// mask, a subnet in CIDR form.
pub(crate) fn nat_logical_ip(net: IpNetwork) -> String {
    let host = match net {
        IpNetwork::V4(_) => net.prefix() == 32,
        IpNetwork::V6(_) => net.prefix() == 128,
    };
    if host {
        net.ip().to_string()
    } else {
        cidr(net)
    }
}

/// An SNAT (upstream `BuildSNATWithMatch`).
#[derive(Clone, Debug)]
pub(crate) struct Snat {
    pub(crate) router: String,
    /// What the SNAT is for (part of its row id): `join`, `cluster-subnet`, `masquerade`.
    pub(crate) purpose: &'static str,
    pub(crate) external_ip: IpAddr,
    pub(crate) logical_ip: String,
    pub(crate) logical_port: Option<String>,
    /// The `match`, written only where the server has `NAT.match`.
    pub(crate) match_: String,
    pub(crate) external_ids: Pairs,
}

impl Snat {
    /// The SNAT's row.
    pub(crate) fn row(&self, ctx: &NetCtx<'_>) -> DesiredRow {
        let row = DesiredRow::new(
            nat::TABLE,
            format!("{}:snat:{}:{}", self.router, self.purpose, self.logical_ip),
        )
        .string(nat::TYPE, "snat")
        .string(nat::EXTERNAL_IP, &self.external_ip.to_string())
        .string(nat::LOGICAL_IP, &self.logical_ip)
        .value(
            nat::LOGICAL_PORT,
            optional_string(self.logical_port.as_deref()),
        )
        .value(nat::EXTERNAL_IDS, string_map(self.external_ids.clone()));
        let row = if ctx.zone.features.nat_match {
            row.string("match", &self.match_)
        } else {
            row
        };
        ctx.nat_row(row)
    }
}

/// A `reroute` router policy.
pub(crate) fn reroute_policy(
    router: &str,
    priority: i64,
    match_: &str,
    nexthop: IpAddr,
    external_ids: Pairs,
) -> DesiredRow {
    DesiredRow::new(
        logical_router_policy::TABLE,
        format!("{router}:policy:{priority}:{match_}"),
    )
    .integer(logical_router_policy::PRIORITY, priority)
    .string(logical_router_policy::MATCH, match_)
    .string(logical_router_policy::ACTION, "reroute")
    .value(
        logical_router_policy::NEXTHOPS,
        string_set([nexthop.to_string()]),
    )
    .value(
        logical_router_policy::EXTERNAL_IDS,
        string_map(external_ids),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nat_logical_ips_drop_host_masks_only() {
        let net = |s: &str| s.parse::<IpNetwork>().unwrap();
        assert_eq!(nat_logical_ip(net("100.65.0.4/32")), "100.65.0.4");
        assert_eq!(nat_logical_ip(net("fd99::4/128")), "fd99::4");
        assert_eq!(nat_logical_ip(net("192.168.0.0/16")), "192.168.0.0/16");
        assert_eq!(cidr(net("10.244.1.0/24")), "10.244.1.0/24");
    }
}
