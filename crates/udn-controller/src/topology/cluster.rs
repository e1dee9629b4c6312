//! The network-wide unit of a Layer3 network and of the default network: the cluster
//! router, the join switch and its cluster router port, the cluster port groups, the
//! transit switch (upstream `init()`, `topologyfactory.NewClusterRouter`/`NewJoinSwitch`,
//! `setupClusterPortGroups`, `ZoneInterconnectHandler.createOrUpdateTransitSwitch`) and, for
//! the default network, the zone's COPP.

use udn_ipam::{BASE_TRANSIT_SWITCH_TUNNEL_KEY, ip_to_mac};
use udn_ovsdb::engine::{DesiredRow, RowRef};
use udn_ovsdb::nb::{
    logical_router, logical_router_port, logical_switch, logical_switch_port, port_group,
};

use super::columns::{Pairs, string_map, string_set};
use super::context::NetCtx;
use super::copp;
use super::dbids::{DbIds, PORT_GROUP_CLUSTER};
use super::desired::{Build, CLUSTER_UNIT, Rows};
use super::names::{CLUSTER_PORT_GROUP, CLUSTER_RTR_PORT_GROUP};
use super::problem::{Missing, Part, Problem};

/// The cluster unit of a Layer3 or the default network.
pub(crate) fn build(ctx: &NetCtx<'_>, build: &mut Build) {
    let mut rows = Rows::default();
    let mut router_ports = Vec::new();
    if ctx.gateway_topology {
        match join_switch(ctx, &mut rows, &build.links.join_ports) {
            Ok(rtoj) => router_ports.push(rtoj),
            Err(missing) => build.problems.push(Problem::Network {
                part: Part::Gateway,
                missing,
            }),
        }
        for row in cluster_port_groups(ctx, &build.links.cluster_pg_ports) {
            rows.add(row);
        }
    }
    router_ports.extend(build.links.router_ports.iter().cloned());
    let router = cluster_router(ctx, router_ports, build);
    rows.add(router);
    if build.transit {
        rows.add(transit_switch(
            ctx,
            &ctx.names.transit_switch(),
            &build.links.transit_ports,
        ));
    }
    if ctx.is_default() {
        copp::rows(ctx, &mut rows);
    }
    build.unit(CLUSTER_UNIT, &ctx.net.name, rows);
}

fn cluster_router(ctx: &NetCtx<'_>, ports: Vec<RowRef>, build: &mut Build) -> DesiredRow {
    let name = ctx.names.cluster_router();
    let mut ids: Pairs = vec![("k8s-cluster-router", "yes".to_owned())];
    ids.extend(ctx.markers.network());
    let mut options = vec![("always_learn_from_arp_request", "false")];
    if ctx.is_udn() && ctx.local_gateway() {
        // The LGW cluster router owns the conditional masquerade SNAT: committing all
        // traffic keeps replies from hitting that SNAT as new flows.
        options.push(("ct-commit-all", "true"));
    }
    let links = &build.links;
    let mut row = DesiredRow::new(logical_router::TABLE, &name)
        .string(logical_router::NAME, &name)
        .value(logical_router::EXTERNAL_IDS, string_map(ids))
        .value(logical_router::OPTIONS, string_map(options))
        .refs(logical_router::PORTS, ports)
        .refs(logical_router::STATIC_ROUTES, links.router_routes.clone())
        .refs(logical_router::NAT, links.router_nats.clone())
        .refs(logical_router::POLICIES, links.router_policies.clone());
    match ctx.copp_ref() {
        Some(copp) => row = row.refs(logical_router::COPP, [copp]),
        None => build.problems.push(missing_copp()),
    }
    row
}

/// The problem of a router rendered without its COPP.
pub(crate) fn missing_copp() -> Problem {
    Problem::Network {
        part: Part::SharedReference,
        missing: Missing::SharedRow {
            what: format!("COPP {}", copp::DEFAULT_COPP),
        },
    }
}

/// The join switch with the cluster router's port; returns the reference to `rtoj-`.
fn join_switch(
    ctx: &NetCtx<'_>,
    rows: &mut Rows,
    gateway_ports: &[RowRef],
) -> Result<RowRef, Missing> {
    let join_ips = ctx.cluster_join_ips()?;
    let first = join_ips.first().ok_or(Missing::Family {
        family: udn_ipam::IpFamily::V4,
        what: "join subnet",
    })?;
    let (rtoj, jtor) = (
        ctx.names.cluster_router_to_join(),
        ctx.names.join_to_cluster_router(),
    );
    let rtoj_ref = rows.add(
        DesiredRow::new(logical_router_port::TABLE, &rtoj)
            .string(logical_router_port::NAME, &rtoj)
            .string(logical_router_port::MAC, &ip_to_mac(first.ip()).to_string())
            .value(
                logical_router_port::NETWORKS,
                string_set(join_ips.iter().map(ToString::to_string)),
            )
            .value(
                logical_router_port::EXTERNAL_IDS,
                string_map(ctx.markers.network()),
            ),
    );
    let jtor_ref = rows.add(
        DesiredRow::new(logical_switch_port::TABLE, &jtor)
            .string(logical_switch_port::NAME, &jtor)
            .string(logical_switch_port::TYPE, "router")
            .strings(logical_switch_port::ADDRESSES, ["router"])
            .map(
                logical_switch_port::OPTIONS,
                [("router-port", rtoj.as_str())],
            ),
    );
    let name = ctx.names.join_switch();
    let mut ports = vec![jtor_ref];
    ports.extend(gateway_ports.iter().cloned());
    rows.add(
        DesiredRow::new(logical_switch::TABLE, &name)
            .string(logical_switch::NAME, &name)
            .value(
                logical_switch::EXTERNAL_IDS,
                string_map(ctx.markers.network()),
            )
            .refs(logical_switch::PORTS, ports),
    );
    Ok(rtoj_ref)
}

/// `clusterPortGroup` (holding `members`: the management ports) and `clusterRtrPortGroup`
/// (empty: multicast is off; left out with `--lean-skip-multicast`). Their `acls` are left to
/// the policy controllers.
pub(crate) fn cluster_port_groups(ctx: &NetCtx<'_>, members: &[RowRef]) -> Vec<DesiredRow> {
    let mut groups = vec![(CLUSTER_PORT_GROUP, members.to_vec())];
    if !ctx.zone.config.lean.skip_multicast {
        groups.push((CLUSTER_RTR_PORT_GROUP, Vec::new()));
    }
    groups
        .into_iter()
        .map(|(base, ports)| {
            let ids = DbIds::new(PORT_GROUP_CLUSTER, &ctx.controller, [base]);
            DesiredRow::new(port_group::TABLE, ids.primary_id())
                .string(port_group::NAME, &ids.port_group_name())
                .value(port_group::EXTERNAL_IDS, string_map(ids.object_ids()))
                .refs(port_group::PORTS, ports)
        })
        .collect()
}

/// A transit switch (`name`: the Layer3 transit switch, or the Layer2 switch whose
/// `other_config` this is part of): `interconn-ts`, the tunnel key `16711683 + network ID`
/// and the multicast keys upstream always sets (not with `--lean-skip-multicast`: IGMP/MLD
/// snooping flows for a multicast that is off).
pub(crate) fn transit_other_config(ctx: &NetCtx<'_>, name: &str) -> Vec<(&'static str, String)> {
    let mut config = vec![
        ("interconn-ts", name.to_owned()),
        (
            "requested-tnl-key",
            (BASE_TRANSIT_SWITCH_TUNNEL_KEY + ctx.net.id).to_string(),
        ),
    ];
    if !ctx.zone.config.lean.skip_multicast {
        config.extend([
            ("mcast_snoop", "true".to_owned()),
            ("mcast_querier", "false".to_owned()),
            ("mcast_flood_unregistered", "true".to_owned()),
        ]);
    }
    config
}

fn transit_switch(ctx: &NetCtx<'_>, name: &str, ports: &[RowRef]) -> DesiredRow {
    DesiredRow::new(logical_switch::TABLE, name)
        .string(logical_switch::NAME, name)
        .value(
            logical_switch::EXTERNAL_IDS,
            string_map(ctx.markers.switch()),
        )
        .value(
            logical_switch::OTHER_CONFIG,
            string_map(transit_other_config(ctx, name)),
        )
        .refs(logical_switch::PORTS, ports.to_vec())
}
