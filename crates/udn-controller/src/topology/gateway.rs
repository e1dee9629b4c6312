//! A local node's gateway (upstream `GatewayManager.SyncGateway`/`gatewayInit`): the gateway
//! router, its port towards the cluster (join switch, or the Layer2 switch in the legacy
//! Layer2 topology), the external switch with its localnet and router ports, and through
//! [`super::gateway_routing`] the routes, NATs, policies and static MAC bindings.

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use udn_ipam::{IpFamily, ip_to_mac};
use udn_ovsdb::engine::{DesiredRow, RowRef};
use udn_ovsdb::nb::{logical_router, logical_router_port, logical_switch, logical_switch_port};

use super::addressing::{HostSubnet, family_of, host_net};
use super::columns::{Pairs, string_map, string_set};
use super::context::NetCtx;
use super::desired::{Build, Rows};
use super::gateway_routing;
use super::names::{CLUSTER_LB_GROUP, CLUSTER_ROUTER_LB_GROUP, PHYSICAL_NETWORK};
use super::problem::{Missing, Part, Problem};
use crate::model::{GatewayConfig, GatewayConfigMode, Node, Topology};

/// What a node's gateway is built from (upstream `GatewayConfig`).
#[derive(Clone, Debug)]
pub(crate) struct GatewayPlan<'a> {
    pub(crate) node: &'a Node,
    pub(crate) config: &'a GatewayConfig,
    pub(crate) chassis: &'a str,
    /// The gateway router's external addresses (the node's, plus the network's GR
    /// masquerade IPs as host routes on a UDN).
    pub(crate) ips: Vec<IpNetwork>,
    /// The external switch's localnet port.
    pub(crate) interface_id: String,
    pub(crate) host_subnets: Vec<HostSubnet>,
    pub(crate) cluster_subnets: Vec<IpNetwork>,
    /// The gateway router's join addresses.
    pub(crate) join_ips: Vec<IpNetwork>,
    /// Extra host addresses of the same-node policies.
    pub(crate) host_addrs: Vec<IpAddr>,
    /// What the gateway router SNATs to.
    pub(crate) external_ips: Vec<IpAddr>,
    /// The cluster router's join addresses (empty for the legacy Layer2 topology).
    pub(crate) cluster_join_ips: Vec<IpNetwork>,
    /// The tunnel key of the gateway router's port on the Layer2 switch (legacy Layer2).
    pub(crate) layer2_tunnel_key: Option<u32>,
}

/// The node's gateway config and chassis when its gateway can be built: a problem (and
/// `None`) without them, `None` alone when the gateway is disabled.
pub(crate) fn gateway_config<'a>(
    node: &'a Node,
    build: &mut Build,
) -> Option<(&'a GatewayConfig, &'a str)> {
    let problem = |missing| Problem::Node {
        node: node.name.clone(),
        part: Part::Gateway,
        missing,
    };
    let Some(config) = node.gateway.as_ref() else {
        build.problems.push(problem(Missing::GatewayConfig));
        return None;
    };
    if config.mode == GatewayConfigMode::Disabled {
        return None;
    }
    // Upstream's gateway config reader requires the chassis ID when the gateway is on.
    let Some(chassis) = node.chassis_id.as_deref() else {
        build.problems.push(problem(Missing::ChassisId));
        return None;
    };
    Some((config, chassis))
}

/// The gateway of a Layer3 (or the default) network on a local node.
pub(crate) fn build_layer3(
    ctx: &NetCtx<'_>,
    node: &Node,
    subnets: &[HostSubnet],
    rows: &mut Rows,
    build: &mut Build,
) {
    let Some((config, chassis)) = gateway_config(node, build) else {
        return;
    };
    let plan = plan(
        ctx,
        node,
        config,
        chassis,
        subnets.to_vec(),
        ctx.cluster_subnets(),
    )
    .and_then(|mut plan| {
        plan.cluster_join_ips = ctx.cluster_join_ips()?;
        Ok(plan)
    });
    match plan {
        Ok(plan) => {
            let extra = GatewayExtras::default();
            if let Err(missing) = build_gateway(ctx, &plan, extra, rows, build) {
                build.problems.push(gateway_problem(node, missing));
            }
        }
        Err(missing) => build.problems.push(gateway_problem(node, missing)),
    }
}

pub(crate) fn gateway_problem(node: &Node, missing: Missing) -> Problem {
    Problem::Node {
        node: node.name.clone(),
        part: Part::Gateway,
        missing,
    }
}

/// The gateway plan of `node` (upstream `nodeGatewayConfig` of each controller).
pub(crate) fn plan<'a>(
    ctx: &NetCtx<'_>,
    node: &'a Node,
    config: &'a GatewayConfig,
    chassis: &'a str,
    host_subnets: Vec<HostSubnet>,
    cluster_subnets: Vec<IpNetwork>,
) -> Result<GatewayPlan<'a>, Missing> {
    let join_ips = ctx.gateway_join_ips(node)?;
    let mut ips = config.ips.clone();
    let (interface_id, host_addrs, external_ips) = if ctx.is_udn() {
        let mut masquerade = Vec::new();
        for family in ctx.families() {
            masquerade.push(ctx.udn_masquerade(family)?.gateway_router.ip());
        }
        ips.extend(masquerade.iter().map(|ip| host_net(*ip)));
        let host_addrs = if ctx.topology == Topology::Layer3 {
            masquerade.clone()
        } else {
            Vec::new()
        };
        (
            ctx.names.external_port(&config.bridge_id, &node.name),
            host_addrs,
            masquerade,
        )
    } else {
        let host_addrs = if ctx.local_gateway() {
            Vec::new()
        } else {
            let mut addrs: Vec<IpAddr> = node.host_cidrs.iter().map(IpNetwork::ip).collect();
            addrs.sort();
            addrs.dedup();
            addrs
        };
        (
            config.interface_id.clone(),
            host_addrs,
            config.ips.iter().map(IpNetwork::ip).collect(),
        )
    };
    Ok(GatewayPlan {
        node,
        config,
        chassis,
        ips,
        interface_id,
        host_subnets,
        cluster_subnets,
        join_ips,
        host_addrs,
        external_ips,
        cluster_join_ips: Vec::new(),
        layer2_tunnel_key: None,
    })
}

/// Rows the Layer2 code adds to the gateway router besides the common ones (added only
/// when the gateway is).
#[derive(Debug, Default)]
pub(crate) struct GatewayExtras {
    pub(crate) routes: Vec<DesiredRow>,
    pub(crate) nats: Vec<DesiredRow>,
    pub(crate) policies: Vec<DesiredRow>,
}

/// Every gateway row of `plan`; the cluster router's routes and policies go to the links.
pub(crate) fn build_gateway(
    ctx: &NetCtx<'_>,
    plan: &GatewayPlan<'_>,
    extra: GatewayExtras,
    rows: &mut Rows,
    build: &mut Build,
) -> Result<(), Missing> {
    // Everything that can fail is checked before the first row is added.
    let routing = gateway_routing::plan(ctx, plan)?;
    let gr = ctx.names.gateway_router(&plan.node.name);
    let peer_port = router_port_to_cluster(ctx, plan, rows, build)?;
    let external_port = external_side(ctx, plan, rows);
    let mut refs = gateway_routing::rows(ctx, plan, &routing, rows, build);
    refs.routes
        .extend(extra.routes.into_iter().map(|r| rows.add(r)));
    refs.nats
        .extend(extra.nats.into_iter().map(|r| rows.add(r)));
    refs.policies
        .extend(extra.policies.into_iter().map(|r| rows.add(r)));
    let router = gateway_router_row(ctx, plan, &gr, [peer_port, external_port], refs, build);
    rows.add(router);
    Ok(())
}

fn gateway_router_row(
    ctx: &NetCtx<'_>,
    plan: &GatewayPlan<'_>,
    gr: &str,
    ports: [RowRef; 2],
    extra: gateway_routing::GatewayRouterRefs,
    build: &mut Build,
) -> DesiredRow {
    let mut options = vec![
        ("always_learn_from_arp_request", "false".to_owned()),
        ("dynamic_neigh_routers", "false".to_owned()),
        ("chassis", plan.chassis.to_owned()),
        ("lb_force_snat_ip", "router_ip".to_owned()),
        ("mac_binding_age_threshold", "300".to_owned()),
    ];
    if ctx.is_default() {
        options.push(("snat-ct-zone", "0".to_owned()));
    } else {
        // UDN GRs carry link-local masquerade IPs shared by every node: no GARPs.
        options.push(("disable_garp_rarp", "true".to_owned()));
    }
    if ctx.topology == Topology::Layer2 {
        let joins: Vec<String> = plan.join_ips.iter().map(|j| j.ip().to_string()).collect();
        if let Some(slot) = options.iter_mut().find(|(k, _)| *k == "lb_force_snat_ip") {
            slot.1 = joins.join(" ");
        }
    }
    let physical: Vec<String> = plan.ips.iter().map(|ip| ip.ip().to_string()).collect();
    let mut ids: Pairs = vec![
        ("physical_ip", physical.first().cloned().unwrap_or_default()),
        ("physical_ips", physical.join(",")),
    ];
    ids.extend(ctx.markers.switch());
    let mut row = DesiredRow::new(logical_router::TABLE, gr)
        .string(logical_router::NAME, gr)
        .value(logical_router::OPTIONS, string_map(options))
        .value(logical_router::EXTERNAL_IDS, string_map(ids))
        .refs(logical_router::PORTS, ports)
        .refs(logical_router::STATIC_ROUTES, extra.routes)
        .refs(logical_router::NAT, extra.nats)
        .refs(logical_router::POLICIES, extra.policies);
    match ctx.copp_ref() {
        Some(copp) => row = row.refs(logical_router::COPP, [copp]),
        None => build.problems.push(super::cluster::missing_copp()),
    }
    let mut groups = vec![CLUSTER_LB_GROUP];
    if plan.config.node_port_enable {
        groups.push(CLUSTER_ROUTER_LB_GROUP);
    }
    match ctx.lb_group_refs(&groups) {
        Some(groups) => row = row.refs(logical_router::LOAD_BALANCER_GROUP, groups),
        None => build
            .problems
            .push(super::node_switch::missing_lb_groups(ctx)),
    }
    row
}

/// The gateway router's port towards the cluster and its peer switch port: `rtoj-GR_`
/// and `jtor-GR_` on the join switch (Layer3), or `rtos-<layer2 switch>` and
/// `stor-<layer2 switch>` on the Layer2 switch (legacy Layer2).
fn router_port_to_cluster(
    ctx: &NetCtx<'_>,
    plan: &GatewayPlan<'_>,
    rows: &mut Rows,
    build: &mut Build,
) -> Result<RowRef, Missing> {
    let node = &plan.node.name;
    let layer2 = ctx.topology == Topology::Layer2;
    let (port, peer) = if layer2 {
        (
            ctx.names.router_to_switch(node),
            ctx.names.switch_to_router(node),
        )
    } else {
        (
            ctx.names.gateway_router_to_join(node),
            ctx.names.join_to_gateway_router(node),
        )
    };
    let first = plan.join_ips.first().ok_or(Missing::NodeId)?;
    let tunnel_key = if layer2 {
        Some(
            plan.layer2_tunnel_key
                .ok_or(Missing::Layer2GatewayTunnelId {
                    network: ctx.net.name.clone(),
                })?,
        )
    } else {
        None
    };
    let mut networks: Vec<String> = plan.join_ips.iter().map(ToString::to_string).collect();
    if layer2 {
        // The legacy Layer2 GR is the pods' gateway on every node: it holds the `.1`s.
        networks.extend(plan.host_subnets.iter().map(|s| s.gateway.to_string()));
    }
    let mut options = Vec::new();
    if plan.node.gateway_mtu_support {
        options.push(("gateway_mtu", ctx.zone.config.cluster.mtu.to_string()));
    }
    let mut row = DesiredRow::new(logical_router_port::TABLE, &port)
        .string(logical_router_port::NAME, &port)
        .string(logical_router_port::MAC, &ip_to_mac(first.ip()).to_string())
        .value(logical_router_port::NETWORKS, string_set(networks))
        .value(logical_router_port::OPTIONS, string_map(options))
        .value(
            logical_router_port::EXTERNAL_IDS,
            string_map(ctx.markers.network()),
        );
    if layer2 && ctx.network_ipv6() && ctx.families().contains(&IpFamily::V6) {
        row = row.value(
            logical_router_port::IPV6_RA_CONFIGS,
            string_map(ipv6_ra_configs(ctx)),
        );
    }
    let reference = rows.add(row);
    let mut peer_options = vec![("router-port", port)];
    if let Some(key) = tunnel_key {
        peer_options.push(("requested-tnl-key", key.to_string()));
    }
    let peer_ref = rows.add(
        DesiredRow::new(logical_switch_port::TABLE, &peer)
            .string(logical_switch_port::NAME, &peer)
            .string(logical_switch_port::TYPE, "router")
            .strings(logical_switch_port::ADDRESSES, ["router"])
            .value(logical_switch_port::OPTIONS, string_map(peer_options))
            .value(
                logical_switch_port::EXTERNAL_IDS,
                string_map(ctx.markers.network()),
            ),
    );
    if layer2 {
        build.links.switch_ports.push(peer_ref);
    } else {
        build.links.join_ports.push(peer_ref);
    }
    Ok(reference)
}

/// `ipv6_ra_configs` of a primary Layer2 network's router port.
pub(crate) fn ipv6_ra_configs(ctx: &NetCtx<'_>) -> Vec<(&'static str, String)> {
    let mut configs = vec![
        ("address_mode", "dhcpv6_stateful".to_owned()),
        ("send_periodic", "true".to_owned()),
        ("max_interval", "900".to_owned()),
        ("min_interval", "300".to_owned()),
        ("router_preference", "LOW".to_owned()),
    ];
    if let Some(info) = ctx.net.user_defined()
        && info.mtu > 0
    {
        configs.push(("mtu", info.mtu.to_string()));
    }
    configs
}

/// The physical network of the external switch's localnet port (`physNetName`).
fn physical_network(ctx: &NetCtx<'_>) -> String {
    match ctx.net.user_defined() {
        Some(info) if !(info.primary && info.uplink.is_empty()) => ctx.net.name.clone(),
        _ => PHYSICAL_NETWORK.to_owned(),
    }
}

/// `rtoe-GR_` and the external switch `ext_` with its localnet and `etor-GR_` ports;
/// returns the reference to `rtoe-GR_`.
fn external_side(ctx: &NetCtx<'_>, plan: &GatewayPlan<'_>, rows: &mut Rows) -> RowRef {
    let node = &plan.node.name;
    let (rtoe, etor) = (
        ctx.names.gateway_router_to_external(node),
        ctx.names.external_to_gateway_router(node),
    );
    let mac = plan.config.mac.to_string();
    let rtoe_ids: Pairs = if ctx.is_udn() {
        ctx.markers.network()
    } else {
        vec![("gateway-physical-ip", "yes".to_owned())]
    };
    let rtoe_ref = rows.add(
        DesiredRow::new(logical_router_port::TABLE, &rtoe)
            .string(logical_router_port::NAME, &rtoe)
            .string(logical_router_port::MAC, &mac)
            .value(
                logical_router_port::NETWORKS,
                string_set(plan.ips.iter().map(ToString::to_string)),
            )
            .value(logical_router_port::EXTERNAL_IDS, string_map(rtoe_ids))
            .value(logical_router_port::OPTIONS, string_map::<&str, &str>([])),
    );
    let mut localnet = DesiredRow::new(logical_switch_port::TABLE, &plan.interface_id)
        .string(logical_switch_port::NAME, &plan.interface_id)
        .string(logical_switch_port::TYPE, "localnet")
        .strings(logical_switch_port::ADDRESSES, ["unknown"])
        .map(
            logical_switch_port::OPTIONS,
            [("network_name", physical_network(ctx).as_str())],
        )
        .value(
            logical_switch_port::EXTERNAL_IDS,
            string_map(ctx.markers.network()),
        );
    if plan.config.vlan_id != 0 {
        localnet = localnet.integer(
            logical_switch_port::TAG_REQUEST,
            i64::from(plan.config.vlan_id),
        );
    }
    let localnet_ref = rows.add(localnet);
    let mut etor_options = vec![("router-port", rtoe)];
    if ctx.is_default() {
        // GARPs for the node IP (egress IP moves); never on UDNs, whose GR IPs are the
        // masquerade IPs every node shares.
        etor_options.push(("nat-addresses", "router".to_owned()));
        etor_options.push(("exclude-lb-vips-from-garp", "true".to_owned()));
    }
    let etor_ref = rows.add(
        DesiredRow::new(logical_switch_port::TABLE, &etor)
            .string(logical_switch_port::NAME, &etor)
            .string(logical_switch_port::TYPE, "router")
            .strings(logical_switch_port::ADDRESSES, [mac.as_str()])
            .value(logical_switch_port::OPTIONS, string_map(etor_options))
            .value(
                logical_switch_port::EXTERNAL_IDS,
                string_map(ctx.markers.network()),
            ),
    );
    let ext = ctx.names.external_switch(node);
    rows.add(
        DesiredRow::new(logical_switch::TABLE, &ext)
            .string(logical_switch::NAME, &ext)
            .value(
                logical_switch::EXTERNAL_IDS,
                string_map(ctx.markers.switch()),
            )
            .refs(logical_switch::PORTS, [localnet_ref, etor_ref]),
    );
    rtoe_ref
}

/// The first address of `family` among `ips`.
pub(crate) fn first_ip_of(ips: &[IpAddr], family: IpFamily) -> Option<IpAddr> {
    ips.iter()
        .copied()
        .find(|ip| IpFamily::of_addr(*ip) == family)
}

/// The first network of `family` among `nets`.
pub(crate) fn first_net_of(nets: &[IpNetwork], family: IpFamily) -> Option<IpNetwork> {
    nets.iter().copied().find(|n| family_of(*n) == family)
}
