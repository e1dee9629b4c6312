//! The host side of every primary UDN on this node (upstream `UserDefinedNetworkGateway`,
//! `dataplane.md` §4.1–4.3): the management port `ovn-k8s-mp<ID>` with the `.2` of each
//! local subnet, the VRF `mp<ID>-udn-vrf` holding it, the network's routing table (table id
//! = the port's ifindex + `routing-table-id-start`) and the priority-2000 `ip rule`s that
//! send the network's marked and masquerade traffic there. On a kernel without VRFs the same
//! routes go into the same table, selected by the same rules (the design's fallback), and
//! the agent says so once. Desired is pure; apply reconciles all networks at once, so a
//! network that went away loses its port, table and rules.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_api::annotations::mac_address::MacAddress;
use udn_api::crd::NetworkTopology;
use udn_ipam::{GlobalMasqueradeIps, gateway_ip, management_ip, udn_masquerade_ips};

use super::mgmt::MgmtError;
use super::primary_udns::{PrimaryUdn, primary_udns};
use crate::netlink::address::{DesiredAddresses, reconcile_addresses};
use crate::netlink::link::{DesiredLink, reconcile_link};
use crate::netlink::route::{DesiredRoutes, RouteKind, RouteSpec, reconcile_routes};
use crate::netlink::rule::{DesiredRules, IpFamily, Rule, reconcile_rules};
use crate::netlink::vrf::{VrfOutcome, enslave, ensure_vrf};
use crate::netlink::{Netlink, delete_link, link_by_name};
use crate::ovs::{BR_INT, MgmtPort, Ovs, mgmt_iface_id, mgmt_port_name};

/// Upstream's `UDNMasqueradeIPRulePriority`.
pub const UDN_RULE_PRIORITY: u32 = 2000;
/// Upstream's packet mark base: a network's mark is `0x1000 + ID`.
pub const PKT_MARK_BASE: u32 = 0x1000;
/// The metric of the per-family `unreachable default` (nothing leaks to the main table).
pub const UNREACHABLE_METRIC: u32 = 4_278_198_272;
/// A CUDN's network name prefix (its bare name may name the VRF).
const CUDN_PREFIX: &str = "cluster_udn_";

/// One primary UDN as the host side needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdnHostInput {
    /// The network name.
    pub network: String,
    /// Its ID.
    pub id: u32,
    /// Layer3 or Layer2.
    pub topology: NetworkTopology,
    /// This node's subnets of it (Layer3: the host subnet; Layer2: the network's subnets).
    pub local_subnets: Vec<IpNetwork>,
    /// The network's cluster subnets (Layer3).
    pub cluster_subnets: Vec<IpNetwork>,
    /// The network MTU.
    pub mtu: u32,
}

/// What the host needs besides the networks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdnHostContext {
    /// This node.
    pub node: String,
    /// The gateway bridge (`breth0`).
    pub bridge: String,
    /// Its next hops.
    pub next_hops: Vec<IpAddr>,
    /// The service CIDRs.
    pub service_cidrs: Vec<IpNetwork>,
    /// The masquerade subnets (one per family).
    pub masquerade: Vec<IpNetwork>,
    /// `routing-table-id-start`.
    pub table_start: u32,
}

/// The VRF's name (upstream `GetNetworkVRFName`): a CUDN's bare name when it fits in 15
/// characters and is not `default`, else `mp<ID>-udn-vrf`.
pub fn vrf_name(network: &str, id: u32) -> String {
    match network.strip_prefix(CUDN_PREFIX) {
        Some(bare) if bare.len() <= 15 && bare != "default" && !bare.is_empty() => bare.to_owned(),
        _ => format!("mp{id}-udn-vrf"),
    }
}

/// The network's packet mark.
pub fn pkt_mark(id: u32) -> u32 {
    PKT_MARK_BASE + id
}

fn host_prefix(ip: IpAddr) -> IpNetwork {
    let prefix = if ip.is_ipv4() { 32 } else { 128 };
    IpNetwork::new(ip, prefix).unwrap_or_else(|_| IpNetwork::from(ip))
}

fn mac_of(ip: IpAddr) -> MacAddress {
    MacAddress(udn_ipam::ip_to_mac(ip).0)
}

/// The management port of `net`.
pub fn desired_port(ctx: &UdnHostContext, net: &UdnHostInput) -> Result<MgmtPort, MgmtError> {
    let first = net.local_subnets.first().ok_or(MgmtError::NoSubnet)?;
    let mgmt = management_ip(*first).map_err(|e| MgmtError::Subnet {
        subnet: *first,
        reason: e.to_string(),
    })?;
    Ok(MgmtPort {
        bridge: BR_INT.to_owned(),
        name: mgmt_port_name(Some(net.id)),
        mac: mac_of(mgmt.ip()),
        mtu: net.mtu,
        iface_id: mgmt_iface_id(&ctx.node, Some(&net.network)),
        network: Some(net.network.clone()),
        remove_ports: Vec::new(),
    })
}

/// The port's addresses: the `.2` of each local subnet.
pub fn desired_addresses(net: &UdnHostInput) -> Result<BTreeSet<IpNetwork>, MgmtError> {
    net.local_subnets
        .iter()
        .map(|subnet| {
            management_ip(*subnet).map_err(|e| MgmtError::Subnet {
                subnet: *subnet,
                reason: e.to_string(),
            })
        })
        .collect()
}

/// The network's table (upstream `computeRoutesForUDN`, in its order).
pub fn desired_routes(
    ctx: &UdnHostContext,
    net: &UdnHostInput,
    table: u32,
) -> Result<BTreeSet<RouteSpec>, MgmtError> {
    let port = mgmt_port_name(Some(net.id));
    let mut routes = BTreeSet::new();
    let in_table = |mut route: RouteSpec| {
        route.table = table;
        route
    };
    let families: BTreeSet<bool> = net.local_subnets.iter().map(IpNetwork::is_ipv4).collect();
    for masquerade in ctx
        .masquerade
        .iter()
        .filter(|m| families.contains(&m.is_ipv4()))
    {
        let Ok(global) = GlobalMasqueradeIps::from_subnet(*masquerade) else {
            continue;
        };
        // 1. Services through the dummy next hop on the bridge, from the host masquerade IP.
        for service in ctx
            .service_cidrs
            .iter()
            .filter(|s| s.is_ipv4() == masquerade.is_ipv4())
        {
            let mut route = in_table(RouteSpec::via(
                *service,
                Some(global.dummy_next_hop),
                &ctx.bridge,
            ));
            route.src = Some(global.host);
            route.mtu = Some(net.mtu);
            routes.insert(route);
        }
        // 2. The default route via the node's next hops.
        for hop in ctx
            .next_hops
            .iter()
            .filter(|h| h.is_ipv4() == masquerade.is_ipv4())
        {
            let mut route = in_table(RouteSpec::default_via(*hop, &ctx.bridge));
            route.mtu = Some(net.mtu);
            routes.insert(route);
        }
        // 3. The management port's masquerade IP on the port.
        if let Ok(ips) = udn_masquerade_ips(*masquerade, net.id) {
            let mut route = in_table(RouteSpec::via(
                host_prefix(ips.management_port.ip()),
                None,
                &port,
            ));
            route.mtu = Some(net.mtu);
            routes.insert(route);
        }
        for subnet in net
            .local_subnets
            .iter()
            .filter(|s| s.is_ipv4() == masquerade.is_ipv4())
        {
            let gateway = gateway_ip(*subnet).map_err(|e| MgmtError::Subnet {
                subnet: *subnet,
                reason: e.to_string(),
            })?;
            // 4. The ETP=Local masquerade IP via the network's gateway.
            let mut route = in_table(RouteSpec::via(
                host_prefix(global.host_etp_local),
                Some(gateway.ip()),
                &port,
            ));
            route.mtu = Some(net.mtu);
            routes.insert(route);
            // 5. Layer3: the cluster subnets via the gateway.
            if net.topology == NetworkTopology::Layer3 {
                for cluster in net
                    .cluster_subnets
                    .iter()
                    .filter(|c| c.is_ipv4() == subnet.is_ipv4())
                {
                    let mut route = in_table(RouteSpec::via(*cluster, Some(gateway.ip()), &port));
                    route.mtu = Some(net.mtu);
                    routes.insert(route);
                }
            }
        }
        // 6. Nothing else leaves through the main table.
        let any = crate::netlink::route::default_dest(masquerade.ip());
        routes.insert(RouteSpec {
            dest: any,
            gateway: None,
            link: None,
            table,
            mtu: None,
            src: None,
            kind: RouteKind::Unreachable,
            metric: Some(UNREACHABLE_METRIC),
        });
    }
    Ok(routes)
}

/// The network's rules (upstream `constructUDNVRFIPRules`): its mark and its management
/// port's masquerade IP look up its table, per family.
pub fn desired_rules(ctx: &UdnHostContext, net: &UdnHostInput, table: u32) -> Vec<Rule> {
    let families: BTreeSet<bool> = net.local_subnets.iter().map(IpNetwork::is_ipv4).collect();
    let mut rules = Vec::new();
    for masquerade in ctx
        .masquerade
        .iter()
        .filter(|m| families.contains(&m.is_ipv4()))
    {
        let family = if masquerade.is_ipv4() {
            IpFamily::V4
        } else {
            IpFamily::V6
        };
        rules.push(Rule::fwmark(
            family,
            UDN_RULE_PRIORITY,
            pkt_mark(net.id),
            table,
        ));
        if let Ok(ips) = udn_masquerade_ips(*masquerade, net.id) {
            rules.push(Rule::to(
                UDN_RULE_PRIORITY,
                host_prefix(ips.management_port.ip()),
                table,
            ));
        }
    }
    rules
}

/// The primary UDNs of the cluster as this node's host side needs them: from the NADs
/// (with cluster-manager's network ID) and, for Layer3, this node's host subnet of each
/// (`k8s.ovn.org/node-subnets`); networks without either yet are left for later.
pub fn inputs(config: &crate::config::Config, stores: &crate::watch::Stores) -> Vec<UdnHostInput> {
    let host_subnets = stores
        .own_node()
        .and_then(|node| {
            node.metadata
                .annotations
                .as_ref()?
                .get(udn_api::names::ANNOTATION_NODE_SUBNETS)
                .cloned()
        })
        .and_then(|value| udn_api::annotations::node_subnets::parse_node_subnets(&value).ok())
        .unwrap_or_default();
    let mut out: BTreeMap<String, UdnHostInput> = BTreeMap::new();
    for PrimaryUdn { info, id } in primary_udns(stores, config) {
        let cidrs: Vec<IpNetwork> = info.subnets.iter().map(|entry| entry.cidr).collect();
        let (local_subnets, cluster_subnets) = match info.topology {
            NetworkTopology::Layer3 => (
                host_subnets.get(&info.name).cloned().unwrap_or_default(),
                cidrs,
            ),
            NetworkTopology::Layer2 => (cidrs, Vec::new()),
            NetworkTopology::Localnet => continue,
        };
        if local_subnets.is_empty() {
            continue;
        }
        out.entry(info.name.clone()).or_insert(UdnHostInput {
            network: info.name.clone(),
            id,
            topology: info.topology,
            local_subnets,
            cluster_subnets,
            mtu: u32::try_from(info.mtu).unwrap_or(config.cluster.mtu),
        });
    }
    out.into_values().collect()
}

/// What applying found about VRFs (for the one-time Event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UdnHostReport {
    /// Networks applied.
    pub networks: usize,
    /// Whether the kernel refused a VRF (plain tables were used instead).
    pub vrf_unsupported: bool,
}

/// Applies every primary UDN's host side; ports, tables and rules of networks not in `nets`
/// (found by their OVS port's `k8s.ovn.org/network`) are removed.
pub async fn apply(
    ovs: &Ovs,
    ctx: &UdnHostContext,
    nets: &[UdnHostInput],
) -> Result<UdnHostReport, MgmtError> {
    let netlink = Netlink::connect_current("host")?;
    let mut report = UdnHostReport::default();
    let mut rules = BTreeSet::new();
    let mut wanted_ports = BTreeSet::new();
    for net in nets {
        let port = desired_port(ctx, net)?;
        wanted_ports.insert(port.name.clone());
        ovs.ensure_mgmt_port(&port).await?;
        let link = super::mgmt::wait_netdev(&netlink, &port.name).await?;
        let table = ctx.table_start + link.index;
        match ensure_vrf(&netlink, &vrf_name(&net.network, net.id), table).await? {
            VrfOutcome::Present(vrf) => enslave(&netlink, &port.name, vrf).await?,
            VrfOutcome::Unsupported => report.vrf_unsupported = true,
        }
        reconcile_link(&netlink, &DesiredLink::up(&port.name, Some(net.mtu))).await?;
        reconcile_addresses(
            &netlink,
            &DesiredAddresses {
                link: port.name.clone(),
                addresses: desired_addresses(net)?,
                nodad: true,
            },
        )
        .await?;
        reconcile_routes(
            &netlink,
            &DesiredRoutes {
                table,
                link: None,
                routes: desired_routes(ctx, net, table)?,
            },
        )
        .await?;
        crate::netlink::sysctl::Sysctl::dotted(&format!("net.ipv4.conf.{}.forwarding", port.name))
            .ensure("host", "1")?;
        crate::netlink::sysctl::Sysctl::dotted(&format!("net.ipv4.conf.{}.rp_filter", port.name))
            .ensure("host", "2")?;
        rules.extend(desired_rules(ctx, net, table));
        report.networks += 1;
    }
    reconcile_rules(
        &netlink,
        &DesiredRules {
            priorities: BTreeSet::from([UDN_RULE_PRIORITY]),
            rules,
        },
    )
    .await?;
    // Networks gone: their ports (and tables, VRFs) go.
    let stale: BTreeMap<String, String> = ovs
        .state()?
        .interfaces
        .values()
        .filter(|i| i.name.starts_with("ovn-k8s-mp") && i.name != super::mgmt::MP0)
        .filter(|i| !wanted_ports.contains(&i.name))
        .filter_map(|i| {
            i.external_ids
                .get(crate::ovs::pod_port::NETWORK)
                .map(|net| (i.name.clone(), net.clone()))
        })
        .collect();
    for (port, network) in stale {
        if let Some(link) = link_by_name(&netlink, &port).await? {
            let table = ctx.table_start + link.index;
            reconcile_routes(
                &netlink,
                &DesiredRoutes {
                    table,
                    link: None,
                    routes: BTreeSet::new(),
                },
            )
            .await?;
        }
        ovs.delete_port(BR_INT, &port).await?;
        if let Some(id) = port
            .strip_prefix("ovn-k8s-mp")
            .and_then(|id| id.parse().ok())
        {
            delete_link(&netlink, &vrf_name(&network, id)).await?;
        }
        tracing::info!(port = %port, network = %network, "stale UDN management port removed");
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ctx() -> UdnHostContext {
        UdnHostContext {
            node: "node1".into(),
            bridge: "breth0".into(),
            next_hops: vec!["172.18.0.1".parse().unwrap()],
            service_cidrs: vec!["10.96.0.0/16".parse().unwrap()],
            masquerade: vec!["169.254.0.0/17".parse().unwrap()],
            table_start: 1000,
        }
    }

    fn blue() -> UdnHostInput {
        UdnHostInput {
            network: "blue_net".into(),
            id: 1,
            topology: NetworkTopology::Layer3,
            local_subnets: vec!["10.128.1.0/24".parse().unwrap()],
            cluster_subnets: vec!["10.128.0.0/16".parse().unwrap()],
            mtu: 1400,
        }
    }

    #[test]
    fn names_marks_and_the_port() {
        assert_eq!(vrf_name("blue_net", 1), "mp1-udn-vrf");
        assert_eq!(vrf_name("cluster_udn_tenant", 7), "tenant");
        assert_eq!(vrf_name("cluster_udn_a-very-long-name", 7), "mp7-udn-vrf");
        assert_eq!(pkt_mark(1), 0x1001);
        let port = desired_port(&ctx(), &blue()).unwrap();
        assert_eq!(port.name, "ovn-k8s-mp1");
        assert_eq!(port.mac.to_string(), "0a:58:0a:80:01:02");
        assert_eq!(port.network.as_deref(), Some("blue_net"));
        let addresses: Vec<String> = desired_addresses(&blue())
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(addresses, ["10.128.1.2/24"]);
    }

    #[test]
    fn upstreams_table_and_rules() {
        let routes = desired_routes(&ctx(), &blue(), 1042).unwrap();
        let text: BTreeSet<String> = routes
            .iter()
            .map(|r| {
                format!(
                    "{:?} {} via {:?} dev {:?} src {:?} table {}",
                    r.kind, r.dest, r.gateway, r.link, r.src, r.table
                )
            })
            .collect();
        let want: BTreeSet<String> = [
            "Unicast 10.96.0.0/16 via Some(169.254.0.4) dev Some(\"breth0\") src Some(169.254.0.2) table 1042",
            "Unicast 0.0.0.0/0 via Some(172.18.0.1) dev Some(\"breth0\") src None table 1042",
            "Unicast 169.254.0.12/32 via None dev Some(\"ovn-k8s-mp1\") src None table 1042",
            "Unicast 169.254.0.3/32 via Some(10.128.1.1) dev Some(\"ovn-k8s-mp1\") src None table 1042",
            "Unicast 10.128.0.0/16 via Some(10.128.1.1) dev Some(\"ovn-k8s-mp1\") src None table 1042",
            "Unreachable 0.0.0.0/0 via None dev None src None table 1042",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        assert_eq!(text, want);
        let rules: Vec<String> = desired_rules(&ctx(), &blue(), 1042)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            rules,
            [
                "prio 2000 fwmark 0x1001 lookup 1042",
                "prio 2000 to 169.254.0.12/32 lookup 1042"
            ]
        );
        let layer2 = UdnHostInput {
            topology: NetworkTopology::Layer2,
            cluster_subnets: Vec::new(),
            ..blue()
        };
        assert_eq!(desired_routes(&ctx(), &layer2, 1042).unwrap().len(), 5);
    }
}
