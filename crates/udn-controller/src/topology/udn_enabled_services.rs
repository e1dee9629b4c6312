//! The default-network Services a primary UDN's pods may reach
//! (`--udn-allowed-default-services`, upstream `configureUDNEnabledServiceRoute`): per
//! Service, a `dst-ip` static route of its cluster IP to the node's management port on the
//! UDN's cluster router (legacy Layer2: its gateway router). The packet enters the host
//! through the management port, source-NATed to the network's management-port masquerade IP,
//! and the host sends it on to the default network's load balancer (the node agent's
//! table-2 flow for these cluster IPs on the gateway bridge).

use std::net::IpAddr;

use udn_ovsdb::engine::DesiredRow;
use udn_ovsdb::nb::logical_router_static_route;

use super::addressing::HostSubnet;
use super::columns::{optional_string, string_map};
use super::context::NetCtx;

/// `k8s.ovn.org/udn-enabled-default-service` (`types.UDNEnabledServiceExternalID`).
pub const UDN_ENABLED_SERVICE_KEY: &str = "k8s.ovn.org/udn-enabled-default-service";

/// One allowed default-network Service: `ns/name` and its (first) cluster IP.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct UdnEnabledService {
    /// `namespace/name`.
    pub key: String,
    /// `spec.clusterIP`.
    pub cluster_ip: IpAddr,
}

/// The routes on `router` of a node whose management port addresses are in `host_subnets`
/// (a Service whose cluster IP has no management address of its family gets none).
pub(crate) fn routes(
    ctx: &NetCtx<'_>,
    router: &str,
    host_subnets: &[HostSubnet],
) -> Vec<DesiredRow> {
    if !ctx.is_udn() {
        return Vec::new();
    }
    let mut rows = Vec::new();
    for service in ctx.zone.udn_enabled_services {
        let Some(management) = host_subnets
            .iter()
            .find(|s| s.management.is_ipv6() == service.cluster_ip.is_ipv6())
        else {
            continue;
        };
        let prefix = service.cluster_ip.to_string();
        let mut ids = ctx.markers.network();
        ids.push((UDN_ENABLED_SERVICE_KEY, service.key.clone()));
        rows.push(
            DesiredRow::new(
                logical_router_static_route::TABLE,
                format!("{router}:route:dst-ip:{prefix}"),
            )
            .string(logical_router_static_route::IP_PREFIX, &prefix)
            .string(
                logical_router_static_route::NEXTHOP,
                &management.management.ip().to_string(),
            )
            // Upstream sets the policy explicitly (its other dst-ip routes leave it empty).
            .value(
                logical_router_static_route::POLICY,
                optional_string(Some("dst-ip")),
            )
            .value(logical_router_static_route::EXTERNAL_IDS, string_map(ids)),
        );
    }
    rows
}
