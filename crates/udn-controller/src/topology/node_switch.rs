//! A local node of a Layer3 network or of the default network: its switch and the switch's
//! router port pair, the cluster router port with its gateway chassis
//! (`createNodeLogicalSwitch`, `syncNodeClusterRouterPort`), the management port with its
//! allow-from-node ACLs (`syncNodeManagementPort`, `addAllowACLFromNode`) and the
//! masquerade SNAT (`buildUDNEgressSNAT`); then the gateway and the interconnect pair.

use std::collections::BTreeMap;

use udn_ipam::ip_to_mac;
use udn_ovsdb::engine::{DesiredRow, RowRef};
use udn_ovsdb::nb::{gateway_chassis, logical_router_port, logical_switch, logical_switch_port};

use super::acl::{AclSpec, DEFAULT_TIER, Pipeline, acl_row};
use super::addressing::{HostSubnet, match_prefix};
use super::columns::{string_map, string_set};
use super::context::NetCtx;
use super::dbids::{ACL_NETPOL_NODE, DbIds};
use super::desired::{Build, NODE_UNIT, Rows, node_unit_name};
use super::names::{CLUSTER_LB_GROUP, CLUSTER_SWITCH_LB_GROUP};
use super::problem::{Missing, Part, Problem};
use super::routing::{Route, Snat, cidr};
use super::{gateway, interconnect};
use crate::model::Node;

/// The kubevirt ARP proxy of the default network's `stor-` ports (`kubevirt` package):
/// MAC, IPv4, IPv6, then every cluster subnet.
const ARP_PROXY: [&str; 3] = ["0a:58:a9:fe:01:01", "169.254.1.1", "fe80::1"];

/// Priority of the allow-from-node ACL (`types.DefaultAllowPriority`).
const ALLOW_FROM_NODE_PRIORITY: i64 = 1001;

/// The host subnets of every local node whose switch can be rendered (Layer3, default
/// network); a problem for each local node that has none.
pub(crate) fn local_host_subnets(
    ctx: &NetCtx<'_>,
    build: &mut Build,
) -> BTreeMap<String, Vec<HostSubnet>> {
    let mut locals = BTreeMap::new();
    for node in ctx.nodes(true) {
        if ctx.zone.config.dynamic_udn && !crate::dynamic_udn::renders(ctx.net, node) {
            // Not rendered here (Dynamic UDN): nothing missing.
            continue;
        }
        match host_subnets(ctx, node) {
            Ok(subnets) => {
                locals.insert(node.name.clone(), subnets);
            }
            Err(missing) => build.problems.push(Problem::Node {
                node: node.name.clone(),
                part: Part::LocalNode,
                missing,
            }),
        }
    }
    locals
}

/// The node's host subnets of this network, each with its `.1` and `.2`.
pub(crate) fn host_subnets(ctx: &NetCtx<'_>, node: &Node) -> Result<Vec<HostSubnet>, Missing> {
    let subnets = node.subnets_of(&ctx.net.name);
    if subnets.is_empty() {
        return Err(Missing::HostSubnets {
            network: ctx.net.name.clone(),
        });
    }
    if ctx.is_default() {
        // One host subnet per cluster IP family (upstream `addNode`).
        let cluster = &ctx.zone.config.cluster;
        let (ipv4, ipv6) = (cluster.ipv4_enabled(), cluster.ipv6_enabled());
        if subnets.iter().any(|s| s.is_ipv4()) != ipv4
            || subnets.iter().any(|s| s.is_ipv6()) != ipv6
        {
            return Err(Missing::HostSubnetFamilies { ipv4, ipv6 });
        }
    }
    subnets.iter().map(|s| HostSubnet::plain(*s)).collect()
}

/// The unit of a local node with host subnets `subnets`.
pub(crate) fn build_node(ctx: &NetCtx<'_>, name: &str, subnets: &[HostSubnet], build: &mut Build) {
    let Some(node) = ctx.zone.node(name) else {
        return;
    };
    let mut rows = Rows::default();
    let switch = ctx.names.node_switch(name);
    let mut ports = vec![switch_to_router_port(ctx, name, &mut rows)];
    if let Some(rtos) = cluster_router_port(ctx, node, subnets, &mut rows, build) {
        build.links.router_ports.push(rtos);
    }
    let mut acls = Vec::new();
    if ctx.gateway_topology {
        let mgmt = management_port(ctx, node, &switch, subnets, &mut rows, build);
        ports.push(mgmt.port);
        acls = mgmt.acls;
    }
    if ctx.gateway_topology && ctx.is_udn() {
        masquerade_snats(ctx, node, subnets, &mut rows, build);
    }
    ports.extend(
        build
            .links
            .node_switch_ports
            .remove(name)
            .unwrap_or_default(),
    );
    let switch_row = node_switch_row(ctx, &switch, subnets, ports, acls, build);
    rows.add(switch_row);
    if ctx.gateway_topology {
        gateway::build_layer3(ctx, node, subnets, &mut rows, build);
    }
    if build.transit {
        interconnect::local_node(ctx, node, &mut rows, build);
    }
    build.unit(NODE_UNIT, &node_unit_name(&ctx.net.name, name), rows);
}

fn switch_to_router_port(ctx: &NetCtx<'_>, node: &str, rows: &mut Rows) -> RowRef {
    let (stor, rtos) = (
        ctx.names.switch_to_router(node),
        ctx.names.router_to_switch(node),
    );
    let mut options = vec![("router-port", rtos)];
    if ctx.is_default() {
        let mut proxy: Vec<String> = ARP_PROXY.iter().map(|s| (*s).to_owned()).collect();
        proxy.extend(ctx.cluster_subnets().into_iter().map(cidr));
        options.push(("arp_proxy", proxy.join(" ")));
    }
    rows.add(
        DesiredRow::new(logical_switch_port::TABLE, &stor)
            .string(logical_switch_port::NAME, &stor)
            .string(logical_switch_port::TYPE, "router")
            .strings(logical_switch_port::ADDRESSES, ["router"])
            .value(logical_switch_port::OPTIONS, string_map(options)),
    )
}

/// The router port's MAC: of the IPv4 gateway IP if any, else of the last IPv6 one.
fn router_port_mac(subnets: &[HostSubnet]) -> Option<String> {
    subnets
        .iter()
        .find(|s| s.subnet.is_ipv4())
        .or(subnets.last())
        .map(|s| ip_to_mac(s.gateway.ip()).to_string())
}

/// `rtos-<switch>` with its gateway chassis; `None` (and a problem) without a chassis ID.
fn cluster_router_port(
    ctx: &NetCtx<'_>,
    node: &Node,
    subnets: &[HostSubnet],
    rows: &mut Rows,
    build: &mut Build,
) -> Option<RowRef> {
    let Some(chassis) = node.chassis_id.as_deref() else {
        build.problems.push(Problem::Node {
            node: node.name.clone(),
            part: Part::ClusterRouterPort,
            missing: Missing::ChassisId,
        });
        return None;
    };
    let rtos = ctx.names.router_to_switch(&node.name);
    let gc_name = format!("{rtos}-{chassis}");
    let gc = rows.add(
        DesiredRow::new(gateway_chassis::TABLE, &gc_name)
            .string(gateway_chassis::NAME, &gc_name)
            .string(gateway_chassis::CHASSIS_NAME, chassis)
            .integer(gateway_chassis::PRIORITY, 1),
    );
    let mut options = Vec::new();
    if node.gateway_mtu_support {
        options.push(("gateway_mtu", ctx.zone.config.cluster.mtu.to_string()));
    }
    Some(
        rows.add(
            DesiredRow::new(logical_router_port::TABLE, &rtos)
                .string(logical_router_port::NAME, &rtos)
                .string(
                    logical_router_port::MAC,
                    &router_port_mac(subnets).unwrap_or_default(),
                )
                .value(
                    logical_router_port::NETWORKS,
                    string_set(subnets.iter().map(|s| s.gateway.to_string())),
                )
                .value(logical_router_port::OPTIONS, string_map(options))
                .refs(logical_router_port::GATEWAY_CHASSIS, [gc]),
        ),
    )
}

/// The management port, its ACLs and (local gateway) its routes.
pub(crate) struct ManagementPort {
    pub(crate) port: RowRef,
    pub(crate) acls: Vec<RowRef>,
}

/// `k8s-<prefix><node>` on `switch` (also added to `clusterPortGroup`), an allow-from-node
/// ACL per management IP and, in local gateway mode, the `src-ip` routes of the host subnets
/// to the management IP on `router` (the cluster router; the GR for legacy Layer2).
pub(crate) fn management_port(
    ctx: &NetCtx<'_>,
    node: &Node,
    switch: &str,
    subnets: &[HostSubnet],
    rows: &mut Rows,
    build: &mut Build,
) -> ManagementPort {
    let name = ctx.names.management_port(&node.name);
    let mac = subnets
        .first()
        .map(|s| ip_to_mac(s.management.ip()).to_string())
        .unwrap_or_default();
    let mut address = mac;
    let mut acls = Vec::new();
    // The allow-from-node ACL exempts the node from NetworkPolicy default-deny; a UDN has
    // no policy ACLs here, so with `--lean-skip-node-allow-acl` it is left out (alone it
    // only makes the switch stateful).
    let allow_acl = !(ctx.is_udn() && ctx.zone.config.lean.skip_node_allow_acl);
    for subnet in subnets {
        let ip = subnet.management.ip();
        address.push(' ');
        address.push_str(&ip.to_string());
        if !allow_acl {
            continue;
        }
        let ids = DbIds::new(ACL_NETPOL_NODE, &ctx.controller, [switch, &ip.to_string()]);
        let match_ = format!("{}.src=={ip}", match_prefix(subnet.family()));
        let spec = AclSpec {
            priority: ALLOW_FROM_NODE_PRIORITY,
            match_: &match_,
            action: "allow-related",
            pipeline: Pipeline::Ingress,
            tier: DEFAULT_TIER,
        };
        acls.push(rows.add(acl_row(&ids, spec, ctx.zone.features)));
    }
    if ctx.local_gateway() && ctx.topology != crate::model::Topology::Layer2 {
        let router = ctx.names.cluster_router();
        for subnet in subnets {
            let route = Route {
                router: router.clone(),
                prefix: cidr(subnet.subnet),
                nexthop: subnet.management.ip(),
                src_ip: true,
                output_port: None,
                external_ids: ctx.markers.network(),
            };
            let reference = rows.add(route.row());
            build.links.router_routes.push(reference);
        }
    }
    let port = rows.add(
        DesiredRow::new(logical_switch_port::TABLE, &name)
            .string(logical_switch_port::NAME, &name)
            .strings(logical_switch_port::ADDRESSES, [address.as_str()]),
    );
    build.links.cluster_pg_ports.push(port.clone());
    ManagementPort { port, acls }
}

/// The masquerade SNAT of each host subnet on the cluster router: what the router sends to
/// the management port leaves with the network's management masquerade IP.
fn masquerade_snats(
    ctx: &NetCtx<'_>,
    node: &Node,
    subnets: &[HostSubnet],
    rows: &mut Rows,
    build: &mut Build,
) {
    let router = ctx.names.cluster_router();
    let rtos = ctx.names.router_to_switch(&node.name);
    let Some(first) = subnets.first() else {
        return;
    };
    let match_ = format!("eth.dst == {}", ip_to_mac(first.management.ip()));
    for subnet in subnets {
        let masquerade = match ctx.udn_masquerade(subnet.family()) {
            Ok(ips) => ips,
            Err(missing) => {
                build.problems.push(Problem::Node {
                    node: node.name.clone(),
                    part: Part::ManagementPort,
                    missing,
                });
                continue;
            }
        };
        let snat = Snat {
            router: router.clone(),
            purpose: "masquerade",
            external_ip: masquerade.management_port.ip(),
            logical_ip: cidr(subnet.subnet),
            logical_port: Some(rtos.clone()),
            match_: match_.clone(),
            external_ids: ctx.markers.network(),
        };
        let reference = rows.add(snat.row(ctx));
        build.links.router_nats.push(reference);
    }
}

fn node_switch_row(
    ctx: &NetCtx<'_>,
    switch: &str,
    subnets: &[HostSubnet],
    ports: Vec<RowRef>,
    acls: Vec<RowRef>,
    build: &mut Build,
) -> DesiredRow {
    let mut other_config = Vec::new();
    for subnet in subnets {
        if subnet.subnet.is_ipv6() {
            other_config.push(("ipv6_prefix", subnet.subnet.network().to_string()));
        } else {
            other_config.push(("subnet", cidr(subnet.subnet)));
            if !ctx.gateway_topology {
                // Without a management port the `.2` stays excluded from dynamic
                // addressing (upstream drops `exclude_ips` once `k8s-<node>` exists).
                other_config.push(("exclude_ips", subnet.management.ip().to_string()));
            }
        }
    }
    let mut row = DesiredRow::new(logical_switch::TABLE, switch)
        .string(logical_switch::NAME, switch)
        .value(
            logical_switch::EXTERNAL_IDS,
            string_map(ctx.markers.switch()),
        )
        .value(logical_switch::OTHER_CONFIG, string_map(other_config))
        .refs(logical_switch::PORTS, ports)
        .refs(logical_switch::ACLS, acls);
    match ctx.lb_group_refs(&[CLUSTER_LB_GROUP, CLUSTER_SWITCH_LB_GROUP]) {
        Some(groups) => row = row.refs(logical_switch::LOAD_BALANCER_GROUP, groups),
        None => build.problems.push(missing_lb_groups(ctx)),
    }
    row
}

/// The problem of rows rendered without their load balancer groups.
pub(crate) fn missing_lb_groups(ctx: &NetCtx<'_>) -> Problem {
    Problem::Network {
        part: Part::SharedReference,
        missing: Missing::SharedRow {
            what: format!(
                "Load_Balancer_Group {}",
                ctx.names.load_balancer_group(CLUSTER_LB_GROUP)
            ),
        },
    }
}
