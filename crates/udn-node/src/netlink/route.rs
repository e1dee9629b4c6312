//! Routes: the desired set of one scope (a table, optionally one output link), the plan
//! against what the kernel has there, and its apply.
//!
//! A scope owns every route in it but the kernel's own (`proto kernel`: the prefix routes of
//! addresses) and local/broadcast/multicast ones: so a scope must be chosen with care (the
//! main table *with* a link, e.g. `ovn-k8s-mp0`; a per-network table on its own), or it
//! would remove the host's routes.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use futures::TryStreamExt;
use ipnetwork::IpNetwork;
use rtnetlink::RouteMessageBuilder;
use rtnetlink::packet_route::AddressFamily;
use rtnetlink::packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteMetric, RouteProtocol,
    RouteScope, RouteType,
};

use super::error::{EEXIST, ESRCH, NetlinkError, errno};
use super::link::{list_links, require_link};
use super::netns::Netlink;

/// The main routing table.
pub const MAIN_TABLE: u32 = 254;
/// The kernel's default metric of IPv6 routes added without one.
const IPV6_DEFAULT_METRIC: u32 = 1024;
/// `RT_TABLE_COMPAT`: the header's table when the real id does not fit a byte.
const TABLE_COMPAT: u8 = 252;

/// What a route does with matching packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteKind {
    /// Forward (via a gateway or on-link).
    Unicast,
    /// Answer "unreachable" (the per-network tables' catch-all, so nothing leaks out).
    Unreachable,
}

/// A route, with its output link by ifindex (what the kernel reports and takes).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Route {
    /// Destination (`0.0.0.0/0` / `::/0` for a default route).
    pub dest: IpNetwork,
    /// Next hop.
    pub gateway: Option<IpAddr>,
    /// Output link ifindex.
    pub oif: Option<u32>,
    /// Routing table id.
    pub table: u32,
    /// Route MTU (`mtu` metric).
    pub mtu: Option<u32>,
    /// Preferred source address.
    pub src: Option<IpAddr>,
    /// Unicast or unreachable.
    pub kind: RouteKind,
    /// Metric (priority). IPv6's kernel default (1024) is held as `None`.
    pub metric: Option<u32>,
}

/// A route as callers write it: the output link by name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RouteSpec {
    /// Destination.
    pub dest: IpNetwork,
    /// Next hop.
    pub gateway: Option<IpAddr>,
    /// Output link name.
    pub link: Option<String>,
    /// Table id ([`MAIN_TABLE`] for the main table).
    pub table: u32,
    /// Route MTU.
    pub mtu: Option<u32>,
    /// Preferred source.
    pub src: Option<IpAddr>,
    /// Unicast or unreachable.
    pub kind: RouteKind,
    /// Metric.
    pub metric: Option<u32>,
}

impl RouteSpec {
    /// A unicast route to `dest` via `gateway` on `link` in the main table.
    pub fn via(dest: IpNetwork, gateway: Option<IpAddr>, link: &str) -> Self {
        Self {
            dest,
            gateway,
            link: Some(link.to_owned()),
            table: MAIN_TABLE,
            mtu: None,
            src: None,
            kind: RouteKind::Unicast,
            metric: None,
        }
    }

    /// The default route of `gateway`'s family (`0.0.0.0/0` or `::/0`) via it on `link`.
    pub fn default_via(gateway: IpAddr, link: &str) -> Self {
        Self::via(default_dest(gateway), Some(gateway), link)
    }
}

/// `0.0.0.0/0` or `::/0`, of `ip`'s family.
pub fn default_dest(ip: IpAddr) -> IpNetwork {
    let unspecified = match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    // A zero prefix is valid for both families.
    IpNetwork::new(unspecified, 0).unwrap_or(IpNetwork::V4(ipnetwork::Ipv4Network::from(
        Ipv4Addr::UNSPECIFIED,
    )))
}

fn normalize_metric(dest: &IpNetwork, metric: Option<u32>) -> Option<u32> {
    match (dest, metric) {
        (_, Some(0)) | (IpNetwork::V6(_), Some(IPV6_DEFAULT_METRIC)) => None,
        (_, metric) => metric,
    }
}

/// The routes a scope should hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredRoutes {
    /// The table.
    pub table: u32,
    /// Only routes out of this link belong to the scope (`None`: the whole table).
    pub link: Option<String>,
    /// The routes (each in `table`, and out of `link` when it is set).
    pub routes: BTreeSet<RouteSpec>,
}

/// One route change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum RouteOp {
    /// Delete a route the scope should not have.
    Remove(Route),
    /// Add a missing route.
    Add(Route),
}

/// Resolves link names to ifindexes (`links`: name -> index) and normalizes metrics.
pub fn resolve_routes(
    specs: &BTreeSet<RouteSpec>,
    links: &dyn Fn(&str) -> Option<u32>,
    netns: &str,
) -> Result<BTreeSet<Route>, NetlinkError> {
    specs
        .iter()
        .map(|spec| {
            let oif = match &spec.link {
                Some(name) => Some(links(name).ok_or_else(|| NetlinkError::LinkNotFound {
                    netns: netns.to_owned(),
                    name: name.clone(),
                })?),
                None => None,
            };
            Ok(Route {
                dest: spec.dest,
                gateway: spec.gateway,
                oif,
                table: spec.table,
                mtu: spec.mtu.filter(|mtu| *mtu > 0),
                src: spec.src,
                kind: spec.kind,
                metric: normalize_metric(&spec.dest, spec.metric),
            })
        })
        .collect()
}

/// The changes that make the scope (`table`, `oif`) hold exactly `desired`: removals first
/// (a changed route is removed and re-added), then additions; empty when converged.
pub fn diff_routes(
    desired: &BTreeSet<Route>,
    observed: &[Route],
    table: u32,
    oif: Option<u32>,
) -> Vec<RouteOp> {
    let present: BTreeSet<Route> = observed
        .iter()
        .filter(|route| route.table == table && (oif.is_none() || route.oif == oif))
        .cloned()
        .collect();
    let mut ops: Vec<RouteOp> = present
        .difference(desired)
        .cloned()
        .map(RouteOp::Remove)
        .collect();
    ops.extend(desired.difference(&present).cloned().map(RouteOp::Add));
    ops
}

/// Every route of both families the kernel has, but its own and local ones (see the module
/// docs), parsed.
pub async fn list_routes(netlink: &Netlink) -> Result<Vec<Route>, NetlinkError> {
    Ok(route_messages(netlink)
        .await?
        .iter()
        .filter_map(route_of)
        .collect())
}

/// The kernel's route messages of both families, every table, in its order (for readers
/// that need them whole).
pub async fn route_messages(netlink: &Netlink) -> Result<Vec<RouteMessage>, NetlinkError> {
    let mut routes = Vec::new();
    for message in [
        RouteMessageBuilder::<Ipv4Addr>::new().build(),
        RouteMessageBuilder::<Ipv6Addr>::new().build(),
    ] {
        let family = message.header.address_family;
        let messages: Vec<RouteMessage> = netlink
            .handle()
            .route()
            .get(message)
            .execute()
            .try_collect()
            .await
            .map_err(|error| {
                netlink.request_error("dump routes", format!("family {family:?}"), error)
            })?;
        routes.extend(messages);
    }
    Ok(routes)
}

fn route_of(message: &RouteMessage) -> Option<Route> {
    let header = &message.header;
    let kind = match header.kind {
        RouteType::Unicast => RouteKind::Unicast,
        RouteType::Unreachable => RouteKind::Unreachable,
        _ => return None,
    };
    if header.protocol == RouteProtocol::Kernel {
        return None;
    }
    let address = |value: &RouteAddress| match value {
        RouteAddress::Inet(ip) => Some(IpAddr::V4(*ip)),
        RouteAddress::Inet6(ip) => Some(IpAddr::V6(*ip)),
        _ => None,
    };
    let mut table = u32::from(header.table);
    let (mut dest, mut gateway, mut oif, mut mtu, mut src, mut metric) =
        (None, None, None, None, None, None);
    for attribute in &message.attributes {
        match attribute {
            RouteAttribute::Destination(value) => dest = address(value),
            RouteAttribute::Gateway(value) => gateway = address(value),
            RouteAttribute::PrefSource(value) => src = address(value),
            RouteAttribute::Oif(index) => oif = Some(*index),
            RouteAttribute::Table(id) => table = *id,
            RouteAttribute::Priority(priority) => metric = Some(*priority),
            RouteAttribute::Metrics(metrics) => {
                mtu = metrics.iter().find_map(|metric| match metric {
                    RouteMetric::Mtu(mtu) => Some(*mtu),
                    _ => None,
                });
            }
            _ => {}
        }
    }
    let dest = match (dest, header.address_family) {
        (Some(ip), _) => IpNetwork::new(ip, header.destination_prefix_length).ok()?,
        (None, AddressFamily::Inet) => default_dest(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        (None, AddressFamily::Inet6) => default_dest(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
        (None, _) => return None,
    };
    // The kernel reports IPv6 unreachable routes as out of `lo`; the device means nothing.
    if kind == RouteKind::Unreachable {
        oif = None;
    }
    Some(Route {
        metric: normalize_metric(&dest, metric),
        dest,
        gateway,
        oif,
        table,
        mtu,
        src,
        kind,
    })
}

/// The netlink message for `route` (for add and delete).
pub(crate) fn route_message(route: &Route) -> RouteMessage {
    let mut message = RouteMessage::default();
    let header = &mut message.header;
    header.address_family = match route.dest {
        IpNetwork::V4(_) => AddressFamily::Inet,
        IpNetwork::V6(_) => AddressFamily::Inet6,
    };
    header.destination_prefix_length = route.dest.prefix();
    header.protocol = RouteProtocol::Static;
    header.kind = match route.kind {
        RouteKind::Unicast => RouteType::Unicast,
        RouteKind::Unreachable => RouteType::Unreachable,
    };
    // An on-link route out of a device (no next hop) has link scope, as `ip route` gives it.
    header.scope =
        if route.kind == RouteKind::Unicast && route.gateway.is_none() && route.oif.is_some() {
            RouteScope::Link
        } else {
            RouteScope::Universe
        };
    header.table = u8::try_from(route.table).unwrap_or(TABLE_COMPAT);
    let attributes = &mut message.attributes;
    if route.dest.prefix() > 0 {
        attributes.push(RouteAttribute::Destination(route.dest.network().into()));
    }
    if let Some(gateway) = route.gateway {
        attributes.push(RouteAttribute::Gateway(gateway.into()));
    }
    if let Some(oif) = route.oif {
        attributes.push(RouteAttribute::Oif(oif));
    }
    if let Some(src) = route.src {
        attributes.push(RouteAttribute::PrefSource(src.into()));
    }
    if let Some(metric) = route.metric {
        attributes.push(RouteAttribute::Priority(metric));
    }
    if route.table > u32::from(u8::MAX) {
        attributes.push(RouteAttribute::Table(route.table));
    }
    if let Some(mtu) = route.mtu {
        attributes.push(RouteAttribute::Metrics(vec![RouteMetric::Mtu(mtu)]));
    }
    if header.table == 0 {
        header.table = RouteHeader::RT_TABLE_MAIN;
    }
    message
}

/// Adds `route`; one that exists already is not an error.
pub async fn add_route(netlink: &Netlink, route: &Route) -> Result<(), NetlinkError> {
    match netlink
        .handle()
        .route()
        .add(route_message(route))
        .execute()
        .await
    {
        Ok(()) => Ok(()),
        Err(error) if errno(&error) == Some(EEXIST) => Ok(()),
        Err(error) => Err(netlink.request_error("add route", describe(route), error)),
    }
}

/// Deletes `route`; a missing one is not an error. Like `ip route del`, the request leaves
/// protocol and scope open: the kernel matches them when given, and a route someone else
/// added has its own protocol.
pub async fn remove_route(netlink: &Netlink, route: &Route) -> Result<(), NetlinkError> {
    let mut message = route_message(route);
    message.header.protocol = RouteProtocol::Unspec;
    message.header.scope = RouteScope::NoWhere;
    match netlink.handle().route().del(message).execute().await {
        Ok(()) => Ok(()),
        Err(error) if errno(&error) == Some(ESRCH) => Ok(()),
        Err(error) => Err(netlink.request_error("remove route", describe(route), error)),
    }
}

fn describe(route: &Route) -> String {
    let mut text = format!("{} table {}", route.dest, route.table);
    if let Some(gateway) = route.gateway {
        text.push_str(&format!(" via {gateway}"));
    }
    if let Some(oif) = route.oif {
        text.push_str(&format!(" oif {oif}"));
    }
    text
}

/// Applies route changes in order.
pub async fn apply_routes(netlink: &Netlink, ops: &[RouteOp]) -> Result<(), NetlinkError> {
    for op in ops {
        match op {
            RouteOp::Remove(route) => remove_route(netlink, route).await?,
            RouteOp::Add(route) => add_route(netlink, route).await?,
        }
    }
    Ok(())
}

/// Resolves, diffs against the kernel and applies; returns what was done.
pub async fn reconcile_routes(
    netlink: &Netlink,
    desired: &DesiredRoutes,
) -> Result<Vec<RouteOp>, NetlinkError> {
    let links = list_links(netlink).await?;
    let index_of = |name: &str| links.iter().find(|l| l.name == name).map(|l| l.index);
    let oif = match &desired.link {
        Some(name) => Some(require_link(netlink, name).await?.index),
        None => None,
    };
    let wanted = resolve_routes(&desired.routes, &index_of, netlink.netns())?;
    let observed = list_routes(netlink).await?;
    let ops = diff_routes(&wanted, &observed, desired.table, oif);
    apply_routes(netlink, &ops).await?;
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(text: &str) -> IpNetwork {
        text.parse().unwrap()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn route(dest: &str, gateway: Option<&str>, oif: u32, table: u32) -> Route {
        Route {
            dest: net(dest),
            gateway: gateway.map(ip),
            oif: Some(oif),
            table,
            mtu: None,
            src: None,
            kind: RouteKind::Unicast,
            metric: None,
        }
    }

    #[test]
    fn resolve_names_and_normalize_metrics() {
        let mut spec = RouteSpec::via(net("fd00::/64"), Some(ip("fd00::1")), "mp0");
        spec.metric = Some(1024);
        spec.mtu = Some(0);
        let links = |name: &str| (name == "mp0").then_some(5);
        let resolved = resolve_routes(&BTreeSet::from([spec.clone()]), &links, "host").unwrap();
        let only = resolved.iter().next().unwrap();
        assert_eq!(only.oif, Some(5));
        assert_eq!(only.metric, None);
        assert_eq!(only.mtu, None);
        spec.link = Some("missing".into());
        let error = resolve_routes(&BTreeSet::from([spec]), &links, "host").unwrap_err();
        assert_eq!(
            error.to_string(),
            "link missing not found in network namespace host"
        );
    }

    #[test]
    fn diff_stays_in_its_scope_and_replaces_changed_routes() {
        let keep = route("10.244.0.0/16", Some("10.244.1.1"), 5, MAIN_TABLE);
        let stale = route("10.96.0.0/16", Some("10.244.1.1"), 5, MAIN_TABLE);
        let other_link = route("0.0.0.0/0", Some("172.18.0.1"), 2, MAIN_TABLE);
        let other_table = route("10.96.0.0/16", Some("10.244.1.1"), 5, 1005);
        let mut with_mtu = keep.clone();
        with_mtu.mtu = Some(1400);
        let desired = BTreeSet::from([with_mtu.clone()]);
        let observed = [keep.clone(), stale.clone(), other_link, other_table];
        let ops = diff_routes(&desired, &observed, MAIN_TABLE, Some(5));
        assert_eq!(
            ops,
            [
                RouteOp::Remove(stale),
                RouteOp::Remove(keep),
                RouteOp::Add(with_mtu.clone()),
            ]
        );
        assert!(diff_routes(&desired, &[with_mtu], MAIN_TABLE, Some(5)).is_empty());
    }

    #[test]
    fn messages_round_trip_through_the_parser() {
        let mut unreachable = route("0.0.0.0/0", None, 0, 1005);
        unreachable.oif = None;
        unreachable.kind = RouteKind::Unreachable;
        unreachable.metric = Some(4_278_198_272);
        let mut with_src = route("169.254.169.1/32", None, 3, MAIN_TABLE);
        with_src.src = Some(ip("172.18.0.2"));
        with_src.mtu = Some(1400);
        for original in [
            unreachable,
            with_src,
            route("fd00::/64", Some("fd00::1"), 4, 300),
        ] {
            let message = route_message(&original);
            assert_eq!(route_of(&message), Some(original));
        }
    }
}
