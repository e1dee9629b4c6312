//! The default network's UDN isolation (upstream `udn_isolation.go`, `setupUDNACLs`): the
//! `SecondaryPods` port group of primary-UDN pods' default-network ports, with ACLs that drop
//! everything but ARP/ND and connections from the node's management port (kubelet probes),
//! plus each pod's open-default-ports ACLs.

use std::collections::BTreeMap;
use std::net::IpAddr;

use udn_ovsdb::engine::{DesiredRow, RowRef};
use udn_ovsdb::nb::port_group;

use super::acl::{AclSpec, PRIMARY_TIER, Pipeline, acl_row};
use super::addressing::{HostSubnet, match_prefix};
use super::columns::string_map;
use super::context::NetCtx;
use super::dbids::{ACL_UDN, DbIds, PORT_GROUP_UDN};
use super::desired::{Build, Rows, UDN_ISOLATION_UNIT};
use super::pods::PRIMARY_UDN_ALLOW_PRIORITY;
use super::problem::{Missing, Part, Problem};

/// The port group's name key; "Secondary" kept on purpose upstream (ACL matches refer to
/// the hashed name, which cannot change).
const SECONDARY_PODS: &str = "SecondaryPods";
/// Priority of the deny ACLs (`types.PrimaryUDNDenyPriority`).
const PRIMARY_UDN_DENY_PRIORITY: i64 = 1000;

/// The isolation unit of the default network when segmentation is on. The ACLs allow the
/// management IPs of the first local node (in name order) with host subnets: in a zone of
/// one node, that node's (upstream rewrites the match on each local node add).
pub(crate) fn build(
    ctx: &NetCtx<'_>,
    locals: &BTreeMap<String, Vec<HostSubnet>>,
    build: &mut Build,
) {
    if !ctx.is_default() || !ctx.zone.config.segmentation {
        return;
    }
    let Some(subnets) = locals.values().next() else {
        build.problems.push(Problem::Network {
            part: Part::Isolation,
            missing: Missing::HostSubnets {
                network: ctx.net.name.clone(),
            },
        });
        return;
    };
    let mgmt: Vec<IpAddr> = subnets.iter().map(|s| s.management.ip()).collect();
    let ids = DbIds::new(PORT_GROUP_UDN, &ctx.controller, [SECONDARY_PODS]);
    let pg = ids.port_group_name();
    let mut rows = Rows::default();
    let mut acls: Vec<RowRef> = isolation_acls(ctx, &pg, &mgmt)
        .into_iter()
        .map(|row| rows.add(row))
        .collect();
    for row in std::mem::take(&mut build.links.open_port_acls) {
        acls.push(rows.add(row));
    }
    rows.add(
        DesiredRow::new(port_group::TABLE, ids.primary_id())
            .string(port_group::NAME, &pg)
            .value(port_group::EXTERNAL_IDS, string_map(ids.object_ids()))
            .refs(port_group::PORTS, build.links.secondary_pods.clone())
            .refs(port_group::ACLS, acls),
    );
    build.unit(UDN_ISOLATION_UNIT, &ctx.net.name, rows);
}

fn isolation_acls(ctx: &NetCtx<'_>, pg: &str, mgmt: &[IpAddr]) -> Vec<DesiredRow> {
    let ingress = format!("outport == @{pg}");
    let egress = format!("inport == @{pg}");
    let arp = |spa_or_tpa: &str| {
        let parts: Vec<String> = mgmt
            .iter()
            .map(|ip| match ip {
                IpAddr::V4(_) => format!("( arp && arp.{spa_or_tpa} == {ip} )"),
                IpAddr::V6(_) => format!("( nd && nd.target == {ip} )"),
            })
            .collect();
        format!("({})", parts.join(" || "))
    };
    let from_host: Vec<String> = mgmt
        .iter()
        .map(|ip| {
            let family = udn_ipam::IpFamily::of_addr(*ip);
            format!("{}.src=={ip}", match_prefix(family))
        })
        .collect();
    let specs = [
        (
            "DenyPrimaryUDN",
            "Egress",
            egress.clone(),
            PRIMARY_UDN_DENY_PRIORITY,
            "drop",
            Pipeline::Egress,
        ),
        (
            "AllowHostARPPrimaryUDN",
            "Egress",
            format!("{egress} && {}", arp("tpa")),
            PRIMARY_UDN_ALLOW_PRIORITY,
            "allow",
            Pipeline::Egress,
        ),
        (
            "AllowHostARPPrimaryUDN",
            "Ingress",
            format!("{ingress} && {}", arp("spa")),
            PRIMARY_UDN_ALLOW_PRIORITY,
            "allow",
            Pipeline::Ingress,
        ),
        (
            "DenyPrimaryUDN",
            "Ingress",
            ingress.clone(),
            PRIMARY_UDN_DENY_PRIORITY,
            "drop",
            Pipeline::Ingress,
        ),
        (
            "AllowHostPrimaryUDN",
            "Ingress",
            format!("{ingress} && ({})", from_host.join(" || ")),
            PRIMARY_UDN_ALLOW_PRIORITY,
            "allow-related",
            Pipeline::Ingress,
        ),
    ];
    specs
        .into_iter()
        .map(|(name, direction, match_, priority, action, pipeline)| {
            let ids = DbIds::new(ACL_UDN, &ctx.controller, [name, direction]);
            let spec = AclSpec {
                priority,
                match_: &match_,
                action,
                pipeline,
                tier: PRIMARY_TIER,
            };
            acl_row(&ids, spec, ctx.zone.features)
        })
        .collect()
}
