//! A Layer2 network in the legacy gateway topology (upstream `Layer2UsesTransitRouter =
//! false`): one switch for every node, which is also the transit switch; no cluster
//! router. On a primary network each node's gateway router hangs off that switch
//! (`rtos-`/`stor-<switch>`, tunnel key from the node's
//! `udn-layer2-node-gateway-router-lrp-tunnel-ids`), holds the pods' `.1` and does their
//! masquerade SNAT and same-node policies; remote nodes' gateway router ports are
//! `remote` ports of the switch.

use std::collections::BTreeMap;

use ipnetwork::IpNetwork;
use udn_ipam::ip_to_mac;
use udn_ovsdb::engine::DesiredRow;
use udn_ovsdb::nb::{logical_switch, logical_switch_port};

use super::addressing::{HostSubnet, match_prefix};
use super::cluster::{cluster_port_groups, transit_other_config};
use super::columns::{NETWORK_KEY, NODE_KEY, TOPOLOGY_KEY, string_map};
use super::context::NetCtx;
use super::desired::{Build, CLUSTER_UNIT, NODE_UNIT, REMOTE_NODE_UNIT, Rows, node_unit_name};
use super::gateway::{self, GatewayExtras, first_net_of};
use super::interconnect::remote_port_address;
use super::names::{CLUSTER_LB_GROUP, CLUSTER_SWITCH_LB_GROUP};
use super::node_switch::{management_port, missing_lb_groups};
use super::problem::{Missing, Part, Problem};
use super::routing::{Route, Snat, cidr, reroute_policy};
use super::{pods, routing};
use crate::model::{Node, PodAttachment};

/// Priority of the local gateway host-CIDR policy (`types.UDNHostCIDRPolicyPriority`).
const HOST_CIDR_POLICY_PRIORITY: i64 = 99;

/// Every unit of a Layer2 network.
pub(crate) fn build(ctx: &NetCtx<'_>, pods: &[PodAttachment], build: &mut Build) {
    pods::build(ctx, pods, &|_| true, build);
    let subnets = match network_subnets(ctx) {
        Ok(subnets) => subnets,
        Err(missing) => {
            build.problems.push(Problem::Network {
                part: Part::LocalNode,
                missing,
            });
            Vec::new()
        }
    };
    if ctx.gateway_topology && !subnets.is_empty() {
        // Dynamic UDN: only the nodes cluster-manager gave the network's tunnel ID.
        let rendered = |node: &Node| {
            !ctx.zone.config.dynamic_udn || crate::dynamic_udn::renders(ctx.net, node)
        };
        for node in ctx.nodes(true).into_iter().filter(|n| rendered(n)) {
            local_node(ctx, node, &subnets, build);
        }
        for node in ctx.nodes(false).into_iter().filter(|n| rendered(n)) {
            match remote_gateway_port(ctx, node, build) {
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
    cluster_unit(ctx, build);
}

/// The network's subnets with their gateway and management addresses (the same on every
/// node; preconfigured ones with the preconfigured-UDN-addresses feature).
fn network_subnets(ctx: &NetCtx<'_>) -> Result<Vec<HostSubnet>, Missing> {
    let Some(info) = ctx.net.user_defined() else {
        return Ok(Vec::new());
    };
    let preconfigured =
        ctx.zone.config.cluster.features.preconfigured_udn_addresses && info.primary;
    info.subnets
        .iter()
        .map(|s| {
            if preconfigured {
                HostSubnet::preconfigured(
                    s.cidr,
                    &info.infrastructure_subnets,
                    &info.default_gateway_ips,
                )
            } else {
                HostSubnet::plain(s.cidr)
            }
        })
        .collect()
}

fn local_node(ctx: &NetCtx<'_>, node: &Node, subnets: &[HostSubnet], build: &mut Build) {
    let mut rows = Rows::default();
    let switch = ctx.names.layer2_switch();
    let mgmt = management_port(ctx, node, &switch, subnets, &mut rows, build);
    build.links.switch_ports.push(mgmt.port);
    build.links.switch_acls.extend(mgmt.acls);
    if let Some((config, chassis)) = gateway::gateway_config(node, build) {
        let cidrs: Vec<IpNetwork> = subnets.iter().map(|s| s.subnet).collect();
        let plan =
            gateway::plan(ctx, node, config, chassis, subnets.to_vec(), cidrs).map(|mut plan| {
                plan.layer2_tunnel_key = node.layer2_gateway_tunnel_ids.get(&ctx.net.name).copied();
                plan
            });
        let built = plan.and_then(|plan| {
            let extras = gateway_extras(ctx, node, config, subnets)?;
            gateway::build_gateway(ctx, &plan, extras, &mut rows, build)
        });
        if let Err(missing) = built {
            build.problems.push(gateway::gateway_problem(node, missing));
        }
    }
    build.unit(NODE_UNIT, &node_unit_name(&ctx.net.name, &node.name), rows);
}

/// What the legacy Layer2 gateway router holds besides the common gateway rows: the
/// masquerade SNAT of what it sends to the management port (upstream
/// `addOrUpdateUDNClusterSubnetEgressSNAT` with the GR's `rtoj-` name as logical port) and,
/// in local gateway mode, the management port routes and the host CIDR policies.
fn gateway_extras(
    ctx: &NetCtx<'_>,
    node: &Node,
    config: &crate::model::GatewayConfig,
    subnets: &[HostSubnet],
) -> Result<GatewayExtras, Missing> {
    let gr = ctx.names.gateway_router(&node.name);
    let mut extras = GatewayExtras::default();
    // Without NAT.match this SNAT and the cluster-subnet SNAT would claim the same logical
    // IP on one router: only the cluster-subnet one is written then.
    if ctx.zone.features.nat_match
        && let Some(first) = subnets.first()
    {
        let match_ = format!("eth.dst == {}", ip_to_mac(first.management.ip()));
        for subnet in subnets {
            let masquerade = ctx.udn_masquerade(subnet.family())?;
            let snat = Snat {
                router: gr.clone(),
                purpose: "masquerade",
                external_ip: masquerade.management_port.ip(),
                logical_ip: cidr(subnet.subnet),
                logical_port: Some(ctx.names.gateway_router_to_join(&node.name)),
                match_: match_.clone(),
                external_ids: ctx.markers.network(),
            };
            extras.nats.push(snat.row(ctx));
        }
    }
    if ctx.local_gateway() {
        for subnet in subnets {
            let route = Route {
                router: gr.clone(),
                prefix: cidr(subnet.subnet),
                nexthop: subnet.management.ip(),
                src_ip: true,
                output_port: None,
                external_ids: ctx.markers.network(),
            };
            extras.routes.push(route.row());
            // The node's primary address network, from the gateway addresses (upstream
            // reads `k8s.ovn.org/node-primary-ifaddr`, the same first address of the family).
            let family = subnet.family();
            let primary = first_net_of(&config.ips, family).ok_or(Missing::Family {
                family,
                what: "gateway IP",
            })?;
            let prefix = match_prefix(family);
            let match_ = format!(
                "{prefix}.dst == {} && {prefix}.src == {}",
                routing::cidr(primary),
                cidr(subnet.subnet)
            );
            extras.policies.push(reroute_policy(
                &gr,
                HOST_CIDR_POLICY_PRIORITY,
                &match_,
                subnet.management.ip(),
                ctx.markers.network(),
            ));
        }
    }
    Ok(extras)
}

/// A remote node's gateway router port on the switch (`addSwitchPortForRemoteNodeGR`).
fn remote_gateway_port(ctx: &NetCtx<'_>, node: &Node, build: &mut Build) -> Result<Rows, Missing> {
    let joins = ctx.gateway_join_ips(node)?;
    let first = joins.first().ok_or(Missing::NodeId)?;
    let key = node
        .layer2_gateway_tunnel_ids
        .get(&ctx.net.name)
        .copied()
        .ok_or(Missing::Layer2GatewayTunnelId {
            network: ctx.net.name.clone(),
        })?;
    let chassis = node.chassis_id.as_deref().ok_or(Missing::ChassisId)?;
    let name = ctx.names.layer2_remote_gateway_port(&node.name);
    let mut rows = Rows::default();
    let port = rows.add(
        DesiredRow::new(logical_switch_port::TABLE, &name)
            .string(logical_switch_port::NAME, &name)
            .string(logical_switch_port::TYPE, "remote")
            .strings(
                logical_switch_port::ADDRESSES,
                [remote_port_address(first, &joins).as_str()],
            )
            .value(
                logical_switch_port::OPTIONS,
                string_map([
                    ("requested-tnl-key", key.to_string()),
                    ("requested-chassis", chassis.to_owned()),
                ]),
            )
            .value(
                logical_switch_port::EXTERNAL_IDS,
                string_map([
                    (NETWORK_KEY, ctx.net.name.as_str()),
                    (TOPOLOGY_KEY, ctx.markers.topology()),
                    (NODE_KEY, node.name.as_str()),
                ]),
            ),
    );
    build.links.switch_ports.push(port);
    Ok(rows)
}

/// The switch (with the transit switch configuration and the load balancer groups) and,
/// on a primary network, the cluster port groups.
fn cluster_unit(ctx: &NetCtx<'_>, build: &mut Build) {
    let mut rows = Rows::default();
    if ctx.gateway_topology {
        for row in cluster_port_groups(ctx, &build.links.cluster_pg_ports) {
            rows.add(row);
        }
    }
    let name = ctx.names.layer2_switch();
    let mut other_config: BTreeMap<&str, String> = BTreeMap::new();
    if let Some(info) = ctx.net.user_defined() {
        for subnet in &info.subnets {
            if subnet.cidr.is_ipv6() {
                other_config.insert("ipv6_prefix", subnet.cidr.network().to_string());
            } else {
                other_config.insert("subnet", cidr(subnet.cidr));
            }
        }
    }
    other_config.extend(transit_other_config(ctx, &name));
    let mut row = DesiredRow::new(logical_switch::TABLE, &name)
        .string(logical_switch::NAME, &name)
        .value(
            logical_switch::EXTERNAL_IDS,
            string_map(ctx.markers.switch()),
        )
        .value(logical_switch::OTHER_CONFIG, string_map(other_config))
        .refs(logical_switch::PORTS, build.links.switch_ports.clone())
        .refs(logical_switch::ACLS, build.links.switch_acls.clone());
    match ctx.lb_group_refs(&[CLUSTER_LB_GROUP, CLUSTER_SWITCH_LB_GROUP]) {
        Some(groups) => row = row.refs(logical_switch::LOAD_BALANCER_GROUP, groups),
        None => build.problems.push(missing_lb_groups(ctx)),
    }
    rows.add(row);
    build.unit(CLUSTER_UNIT, &ctx.net.name, rows);
}
