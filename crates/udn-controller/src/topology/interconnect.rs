//! Interconnect of a Layer3 network and of the default network (upstream
//! `ZoneInterconnectHandler`): the local node's `rtots-`/`tstor-` pair, and per remote node
//! a `remote` port on the transit switch plus cluster router routes to its subnets and
//! gateway router through its transit IP.

use ipnetwork::IpNetwork;
use udn_ipam::ip_to_mac;
use udn_ovsdb::engine::DesiredRow;
use udn_ovsdb::nb::{logical_router_port, logical_switch_port};

use super::addressing::family_of;
use super::columns::{NETWORK_KEY, string_map, string_set};
use super::context::NetCtx;
use super::desired::{Build, REMOTE_NODE_UNIT, Rows, node_unit_name};
use super::problem::{Missing, Part, Problem};
use super::routing::{Route, cidr};
use crate::model::Node;

/// The local node's cluster router port to the transit switch and the transit switch's
/// port to it (tunnel key: the node ID).
pub(crate) fn local_node(ctx: &NetCtx<'_>, node: &Node, rows: &mut Rows, build: &mut Build) {
    let problem = |missing| Problem::Node {
        node: node.name.clone(),
        part: Part::Interconnect,
        missing,
    };
    let Some(id) = node.id else {
        build.problems.push(problem(Missing::NodeId));
        return;
    };
    let Some(first) = node.transit_ips.first() else {
        build.problems.push(problem(Missing::TransitIps));
        return;
    };
    let (rtots, tstor) = (
        ctx.names.router_to_transit(&node.name),
        ctx.names.transit_to_router(&node.name),
    );
    // `mcast_flood` only matters with multicast on (`--lean-skip-multicast`).
    let options: &[(&str, &str)] = if ctx.zone.config.lean.skip_multicast {
        &[]
    } else {
        &[("mcast_flood", "true")]
    };
    let rtots_ref = rows.add(
        DesiredRow::new(logical_router_port::TABLE, &rtots)
            .string(logical_router_port::NAME, &rtots)
            .string(logical_router_port::MAC, &ip_to_mac(first.ip()).to_string())
            .value(
                logical_router_port::NETWORKS,
                string_set(node.transit_ips.iter().map(ToString::to_string)),
            )
            .map(logical_router_port::OPTIONS, options.iter().copied()),
    );
    build.links.router_ports.push(rtots_ref);
    let tstor_ref = rows.add(
        DesiredRow::new(logical_switch_port::TABLE, &tstor)
            .string(logical_switch_port::NAME, &tstor)
            .string(logical_switch_port::TYPE, "router")
            .strings(logical_switch_port::ADDRESSES, ["router"])
            .value(
                logical_switch_port::OPTIONS,
                string_map([
                    ("router-port", rtots),
                    ("requested-tnl-key", id.to_string()),
                ]),
            )
            .map(
                logical_switch_port::EXTERNAL_IDS,
                [("node", node.name.as_str())],
            ),
    );
    build.links.transit_ports.push(tstor_ref);
}

/// The remote nodes the network is rendered for (Dynamic UDN: those where it has pods).
fn rendered_remotes<'a>(ctx: &NetCtx<'a>) -> impl Iterator<Item = &'a Node> {
    let dynamic = ctx.zone.config.dynamic_udn;
    let net = ctx.net;
    ctx.nodes(false)
        .into_iter()
        // Not on that node (Dynamic UDN): no port, no route.
        .filter(move |node| !dynamic || crate::dynamic_udn::renders(net, node))
}

/// Whether a remote node has the network: what the transit switch is for.
pub(crate) fn has_remote(ctx: &NetCtx<'_>) -> bool {
    rendered_remotes(ctx).next().is_some()
}

/// The unit of every remote node.
pub(crate) fn remote_nodes(ctx: &NetCtx<'_>, build: &mut Build) {
    for node in rendered_remotes(ctx) {
        match remote_node(ctx, node, build) {
            Ok(rows) => build.unit(
                REMOTE_NODE_UNIT,
                &node_unit_name(&ctx.net.name, &node.name),
                rows,
            ),
            Err(missing) => build.problems.push(Problem::Node {
                node: node.name.clone(),
                part: Part::RemoteNode,
                missing,
            }),
        }
    }
}

/// The remote port address: the MAC of the first transit IP and every transit IP.
pub(crate) fn remote_port_address(mac_source: &IpNetwork, ips: &[IpNetwork]) -> String {
    let mut address = ip_to_mac(mac_source.ip()).to_string();
    for ip in ips {
        address.push(' ');
        address.push_str(&ip.to_string());
    }
    address
}

fn remote_node(ctx: &NetCtx<'_>, node: &Node, build: &mut Build) -> Result<Rows, Missing> {
    let id = node.id.ok_or(Missing::NodeId)?;
    let subnets = node.subnets_of(&ctx.net.name);
    if subnets.is_empty() {
        return Err(Missing::HostSubnets {
            network: ctx.net.name.clone(),
        });
    }
    let first = node.transit_ips.first().ok_or(Missing::TransitIps)?;
    let join_ips = if ctx.gateway_topology {
        ctx.gateway_join_ips(node)?
    } else {
        Vec::new()
    };
    let chassis = node.chassis_id.as_deref().ok_or(Missing::ChassisId)?;
    let mut rows = Rows::default();
    let tstor = ctx.names.transit_to_router(&node.name);
    let port = rows.add(
        DesiredRow::new(logical_switch_port::TABLE, &tstor)
            .string(logical_switch_port::NAME, &tstor)
            .string(logical_switch_port::TYPE, "remote")
            .strings(
                logical_switch_port::ADDRESSES,
                [remote_port_address(first, &node.transit_ips).as_str()],
            )
            .value(
                logical_switch_port::OPTIONS,
                string_map([
                    ("requested-tnl-key", id.to_string()),
                    ("requested-chassis", chassis.to_owned()),
                ]),
            )
            .map(
                logical_switch_port::EXTERNAL_IDS,
                [("node", node.name.as_str())],
            ),
    );
    build.links.transit_ports.push(port);
    let router = ctx.names.cluster_router();
    let prefixes = subnets
        .iter()
        .map(|s| cidr(*s))
        .zip(subnets.iter().copied())
        .chain(
            join_ips
                .iter()
                .map(|j| (format!("{}/{}", j.ip(), full_mask(j)), *j)),
        );
    for (prefix, net) in prefixes {
        // One route per prefix (upstream replaces the route of a prefix).
        if let Some(transit) = node
            .transit_ips
            .iter()
            .rev()
            .find(|t| family_of(**t) == family_of(net))
        {
            let route = Route {
                router: router.clone(),
                prefix: prefix.clone(),
                nexthop: transit.ip(),
                src_ip: false,
                output_port: None,
                external_ids: vec![
                    ("ic-node", node.name.clone()),
                    (NETWORK_KEY, ctx.network_name().to_owned()),
                ],
            };
            let reference = rows.add(route.row());
            build.links.router_routes.push(reference);
        }
    }
    Ok(rows)
}

fn full_mask(net: &IpNetwork) -> u8 {
    match net {
        IpNetwork::V4(_) => 32,
        IpNetwork::V6(_) => 128,
    }
}
