//! Reading a pod interface back (CNI CHECK, DEL's host-name lookup) and comparing it with
//! what it should be.

use ipnetwork::IpNetwork;

use super::address::list_addresses;
use super::error::NetlinkError;
use super::link::{LinkInfo, link_by_name};
use super::netns::{NetnsPath, in_netns};
use super::pod_interface::PodInterfaceSpec;
use super::route::{MAIN_TABLE, Route, default_dest, list_routes};

/// A pod interface as the kernel has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedPodInterface {
    /// The link.
    pub link: LinkInfo,
    /// Its addresses.
    pub addresses: Vec<IpNetwork>,
    /// The routes out of it.
    pub routes: Vec<Route>,
}

/// The interface `ifname` in `netns` with its addresses and routes, or `None` when the netns
/// has no such link.
pub async fn inspect_pod_interface(
    netns: &NetnsPath,
    ifname: &str,
) -> Result<Option<ObservedPodInterface>, NetlinkError> {
    let ifname = ifname.to_owned();
    in_netns(netns, move |netlink| async move {
        let Some(link) = link_by_name(&netlink, &ifname).await? else {
            return Ok(None);
        };
        let addresses = list_addresses(&netlink, link.index).await?;
        let routes = list_routes(&netlink)
            .await?
            .into_iter()
            .filter(|route| route.oif == Some(link.index))
            .collect();
        Ok(Some(ObservedPodInterface {
            link,
            addresses,
            routes,
        }))
    })
    .await
}

/// The ifindex of `ifname` in `netns` (DEL needs it to name a non-default network's host
/// veth), or `None` when it is not there.
pub async fn container_ifindex(
    netns: &NetnsPath,
    ifname: &str,
) -> Result<Option<u32>, NetlinkError> {
    let ifname = ifname.to_owned();
    in_netns(netns, move |netlink| async move {
        Ok(link_by_name(&netlink, &ifname)
            .await?
            .map(|link| link.index))
    })
    .await
}

/// What differs between `spec` and the interface the kernel has (empty: as it should be).
/// Each entry reads like `mtu 1500, expected 1400`.
pub fn check_pod_interface(
    spec: &PodInterfaceSpec,
    observed: &ObservedPodInterface,
) -> Vec<String> {
    let mut problems = Vec::new();
    let link = &observed.link;
    if link.mac != Some(spec.mac) {
        let found = link
            .mac
            .map_or_else(|| "none".to_owned(), |mac| mac.to_string());
        problems.push(format!("mac {found}, expected {}", spec.mac));
    }
    if link.mtu != spec.mtu {
        problems.push(format!("mtu {}, expected {}", link.mtu, spec.mtu));
    }
    if !link.up {
        problems.push("link is down".to_owned());
    }
    if spec.skip_ip_config {
        return problems;
    }
    for address in &spec.ips {
        if !observed.addresses.contains(address) {
            problems.push(format!("address {address} missing"));
        }
    }
    let has_route = |dest: IpNetwork, via: Option<std::net::IpAddr>| {
        observed
            .routes
            .iter()
            .any(|route| route.table == MAIN_TABLE && route.dest == dest && route.gateway == via)
    };
    for gateway in &spec.gateways {
        if !has_route(default_dest(*gateway), Some(*gateway)) {
            problems.push(format!("default route via {gateway} missing"));
        }
    }
    for route in &spec.routes {
        if !has_route(route.dest, route.next_hop) {
            let via = route
                .next_hop
                .map(|ip| format!(" via {ip}"))
                .unwrap_or_default();
            problems.push(format!("route {}{via} missing", route.dest));
        }
    }
    problems
}
