//! A gateway's routing: the gateway router's static routes (`updateGWRouterStaticRoutes`),
//! the cluster router's routes to it (`updateClusterRouterStaticRoutes`), its SNATs
//! (`updateGWRouterNAT`), the same-node policies (`PolicyBasedRoutesManager.
//! AddSameNodeIPPolicy`) and the static MAC bindings of the dummy next hops
//! (`CreateDummyGWMacBindings`).

use std::collections::BTreeSet;
use std::net::IpAddr;

use udn_ipam::{IpFamily, ip_to_mac};
use udn_ovsdb::engine::RowRef;

use super::addressing::{family_of, host_net, match_prefix};
use super::columns::Pairs;
use super::context::NetCtx;
use super::desired::{Build, Rows, StaticMacBinding};
use super::gateway::{GatewayPlan, first_ip_of, first_net_of};
use super::problem::Missing;
use super::routing::{Route, Snat, cidr, nat_logical_ip, reroute_policy};
use super::udn_enabled_services;
use crate::model::Topology;

/// Priority of the same-node policies (`types.NodeSubnetPolicyPriority`).
pub(crate) const NODE_SUBNET_POLICY_PRIORITY: i64 = 1004;

/// `external_ids` upstream puts on the default network's masquerade route.
const NODE_MASQUERADE_SUBNET_KEY: &str = "k8s.ovn.org/node-masquerade-subnet";

/// The routing of one gateway, computed (and checked) before any row is added.
#[derive(Debug)]
pub(crate) struct RoutingPlan {
    gr_routes: Vec<Route>,
    cluster_routes: Vec<Route>,
    snats: Vec<Snat>,
    /// Same-node policies: (match, next hop).
    policies: Vec<(String, IpAddr)>,
    /// The router holding the policies (the cluster router, or the GR in legacy Layer2).
    policy_router: String,
    mac_bindings: Vec<StaticMacBinding>,
}

/// References to the gateway router's own routes, NATs and policies.
#[derive(Debug, Default)]
pub(crate) struct GatewayRouterRefs {
    pub(crate) routes: Vec<RowRef>,
    pub(crate) nats: Vec<RowRef>,
    pub(crate) policies: Vec<RowRef>,
}

/// The routing of `plan`.
pub(crate) fn plan(ctx: &NetCtx<'_>, plan: &GatewayPlan<'_>) -> Result<RoutingPlan, Missing> {
    let gr = ctx.names.gateway_router(&plan.node.name);
    let layer2 = ctx.topology == Topology::Layer2;
    Ok(RoutingPlan {
        gr_routes: gateway_router_routes(ctx, plan, &gr)?,
        cluster_routes: cluster_router_routes(ctx, plan)?,
        snats: gateway_snats(ctx, plan, &gr)?,
        policies: same_node_policies(ctx, plan)?,
        policy_router: if layer2 {
            gr.clone()
        } else {
            ctx.names.cluster_router()
        },
        mac_bindings: mac_bindings(ctx, plan)?,
    })
}

/// Adds the rows of `routing`: the cluster router's go to the links, the gateway router's
/// are returned.
pub(crate) fn rows(
    ctx: &NetCtx<'_>,
    plan: &GatewayPlan<'_>,
    routing: &RoutingPlan,
    rows: &mut Rows,
    build: &mut Build,
) -> GatewayRouterRefs {
    let mut refs = GatewayRouterRefs::default();
    for route in &routing.gr_routes {
        refs.routes.push(rows.add(route.row()));
    }
    for route in &routing.cluster_routes {
        let reference = rows.add(route.row());
        build.links.router_routes.push(reference);
    }
    let on_gateway_router = routing.policy_router == ctx.names.gateway_router(&plan.node.name);
    for row in udn_enabled_services::routes(ctx, &routing.policy_router, &plan.host_subnets) {
        let reference = rows.add(row);
        if on_gateway_router {
            refs.routes.push(reference);
        } else {
            build.links.router_routes.push(reference);
        }
    }
    for snat in &routing.snats {
        refs.nats.push(rows.add(snat.row(ctx)));
    }
    for (match_, nexthop) in &routing.policies {
        let reference = rows.add(reroute_policy(
            &routing.policy_router,
            NODE_SUBNET_POLICY_PRIORITY,
            match_,
            *nexthop,
            ctx.markers.network(),
        ));
        if on_gateway_router {
            refs.policies.push(reference);
        } else {
            build.links.router_policies.push(reference);
        }
    }
    build
        .static_mac_bindings
        .extend(routing.mac_bindings.iter().cloned());
    refs
}

fn missing(family: IpFamily, what: &'static str) -> Missing {
    Missing::Family { family, what }
}

fn gateway_router_routes(
    ctx: &NetCtx<'_>,
    plan: &GatewayPlan<'_>,
    gr: &str,
) -> Result<Vec<Route>, Missing> {
    let rtoe = ctx.names.gateway_router_to_external(&plan.node.name);
    let route = |prefix: String, nexthop, output: bool, ids: Pairs| Route {
        router: gr.to_owned(),
        prefix,
        nexthop,
        src_ip: false,
        output_port: output.then(|| rtoe.clone()),
        external_ids: ids,
    };
    let mut routes = Vec::new();
    if !plan.cluster_join_ips.is_empty() {
        // Layer3: the whole cluster subnet goes back to the cluster router.
        for subnet in &plan.cluster_subnets {
            let family = family_of(*subnet);
            let nexthop = first_net_of(&plan.cluster_join_ips, family)
                .ok_or(missing(family, "cluster router join IP"))?;
            routes.push(route(
                cidr(*subnet),
                nexthop.ip(),
                false,
                ctx.markers.network(),
            ));
        }
    }
    for family in ctx.families() {
        let next_hop = ctx.global_masquerade(family)?.dummy_next_hop;
        let ids = if ctx.is_udn() {
            ctx.markers.network()
        } else {
            vec![(NODE_MASQUERADE_SUBNET_KEY, String::new())]
        };
        routes.push(route(
            cidr(ctx.masquerade_subnet(family)),
            next_hop,
            true,
            ids,
        ));
    }
    // One default route per family: upstream replaces the route of the prefix with each
    // next hop in turn, so the last one stays.
    let mut defaults: Vec<Route> = Vec::new();
    for next_hop in &plan.config.next_hops {
        let prefix = match next_hop {
            IpAddr::V4(_) => "0.0.0.0/0",
            IpAddr::V6(_) => "::/0",
        };
        defaults.retain(|r| r.prefix != prefix);
        defaults.push(route(
            prefix.to_owned(),
            *next_hop,
            true,
            ctx.markers.network(),
        ));
    }
    routes.extend(defaults);
    Ok(routes)
}

fn cluster_router_routes(ctx: &NetCtx<'_>, plan: &GatewayPlan<'_>) -> Result<Vec<Route>, Missing> {
    if plan.cluster_join_ips.is_empty() {
        // Legacy Layer2 has no cluster router.
        return Ok(Vec::new());
    }
    let router = ctx.names.cluster_router();
    let mut routes = Vec::new();
    for join in &plan.join_ips {
        routes.push(Route {
            router: router.clone(),
            prefix: join.ip().to_string(),
            nexthop: join.ip(),
            src_ip: false,
            output_port: None,
            external_ids: ctx.markers.network(),
        });
    }
    if !ctx.local_gateway() {
        // Shared gateway: pod egress of this node goes to its gateway router (local gateway
        // sends it to the management port instead, see the management port).
        for subnet in &plan.host_subnets {
            let family = subnet.family();
            let nexthop = first_net_of(&plan.join_ips, family)
                .ok_or(missing(family, "gateway router join IP"))?;
            routes.push(Route {
                router: router.clone(),
                prefix: cidr(subnet.subnet),
                nexthop: nexthop.ip(),
                src_ip: true,
                output_port: None,
                external_ids: ctx.markers.network(),
            });
        }
    }
    Ok(routes)
}

fn gateway_snats(ctx: &NetCtx<'_>, plan: &GatewayPlan<'_>, gr: &str) -> Result<Vec<Snat>, Missing> {
    let mut snats = Vec::new();
    for join in &plan.join_ips {
        let family = family_of(*join);
        let external = first_ip_of(&plan.external_ips, family)
            .ok_or(missing(family, "gateway router external IP"))?;
        snats.push(Snat {
            router: gr.to_owned(),
            purpose: "join",
            external_ip: external,
            logical_ip: nat_logical_ip(host_net(join.ip())),
            logical_port: None,
            match_: String::new(),
            external_ids: ctx.markers.network(),
        });
    }
    let match_ = if ctx.topology == Topology::Layer2 {
        // One router holds two SNATs of the cluster subnet in legacy Layer2: this one is
        // for what leaves to the external switch.
        format!(
            "outport == \"{}\"",
            ctx.names.gateway_router_to_external(&plan.node.name)
        )
    } else {
        String::new()
    };
    for subnet in &plan.cluster_subnets {
        let family = family_of(*subnet);
        let external = first_ip_of(&plan.external_ips, family)
            .ok_or(missing(family, "gateway router external IP"))?;
        snats.push(Snat {
            router: gr.to_owned(),
            purpose: "cluster-subnet",
            external_ip: external,
            logical_ip: cidr(*subnet),
            logical_port: None,
            match_: match_.clone(),
            external_ids: ctx.markers.network(),
        });
    }
    Ok(snats)
}

/// The 1004 policies: traffic from the node's pods to the node's own addresses goes to the
/// management port.
fn same_node_policies(
    ctx: &NetCtx<'_>,
    plan: &GatewayPlan<'_>,
) -> Result<Vec<(String, IpAddr)>, Missing> {
    let node = &plan.node.name;
    let inport = ctx.names.router_to_switch(node);
    let switch = ctx.names.node_switch(node);
    let mut policies = Vec::new();
    for subnet in &plan.host_subnets {
        let family = subnet.family();
        let gateway_ip = first_net_of(&plan.ips, family).ok_or(missing(family, "gateway IP"))?;
        let mut hosts: BTreeSet<IpAddr> = plan
            .host_addrs
            .iter()
            .copied()
            .filter(|ip| IpFamily::of_addr(*ip) == family)
            .collect();
        hosts.insert(gateway_ip.ip());
        for host in hosts {
            let match_ = format!(
                "inport == \"{inport}\" && {}.dst == {host} /* {switch} */",
                match_prefix(family)
            );
            policies.push((match_, subnet.management.ip()));
        }
    }
    Ok(policies)
}

fn mac_bindings(
    ctx: &NetCtx<'_>,
    plan: &GatewayPlan<'_>,
) -> Result<Vec<StaticMacBinding>, Missing> {
    let port = ctx.names.gateway_router_to_external(&plan.node.name);
    let mut ips = Vec::new();
    let mut hosts = Vec::new();
    for family in ctx.families() {
        let global = ctx.global_masquerade(family)?;
        ips.push(global.dummy_next_hop);
        hosts.push(global.host);
    }
    if ctx.is_udn() {
        // The masquerade network is attached to the GR's external port: no neighbour
        // discovery for IPs every node shares.
        ips.extend(hosts);
    }
    Ok(ips
        .into_iter()
        .map(|ip| StaticMacBinding {
            logical_port: port.clone(),
            ip,
            mac: ip_to_mac(ip),
            override_dynamic_mac: true,
        })
        .collect())
}
