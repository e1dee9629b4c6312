//! The network's Services as `Load_Balancer` rows, one unit per Service (owner type
//! [`SERVICE_UNIT`], named `<ns>/<name>` as upstream's `k8s.ovn.org/owner`). A cluster-wide
//! load balancer is in the network's `clusterLBGroup` (every node switch and gateway router
//! of the network has the group); a per-node one sits in its node's switch (the node switch,
//! or the Layer2 switch) and gateway router `load_balancer` columns. Neither the group nor
//! those columns are engine rows ([`super::keyed`]): they are written after the units, by
//! UUID, which is why each load balancer is inserted with a UUID derived from its name.

use std::collections::BTreeMap;

use udn_ovsdb::engine::DesiredRow;
use udn_ovsdb::nb::{load_balancer, logical_router, logical_switch};

use super::columns::string_map;
use super::context::NetCtx;
use super::desired::{Build, Rows};
use super::names::CLUSTER_LB_GROUP;
use super::shared_uuid::shared_row_uuid;
use crate::model::Topology;
use crate::services::{LbAttach, LbSpec};

/// Owner type of a Service's unit (named `<ns>/<name>`).
pub const SERVICE_UNIT: &str = "Service";

/// The load balancers of `ctx`'s network (from [`super::ZoneInputs::services`]).
pub(crate) fn build(ctx: &NetCtx<'_>, build: &mut Build) {
    if ctx.topology == Topology::Localnet || ctx.zone.services.is_empty() {
        return;
    }
    let group = ctx.names.load_balancer_group(CLUSTER_LB_GROUP);
    let mut units: BTreeMap<&str, Rows> = BTreeMap::new();
    for lb in ctx.zone.services {
        let uuid = shared_row_uuid(load_balancer::TABLE, &lb.name);
        units
            .entry(lb.service.as_str())
            .or_default()
            .add(row(lb).insert_uuid(uuid));
        match &lb.attach {
            LbAttach::ClusterGroup => {
                build
                    .load_balancer_members
                    .entry(group.clone())
                    .or_default()
                    .insert(uuid);
            }
            LbAttach::Nodes { switches, routers } => {
                for node in switches {
                    let switch = if ctx.topology == Topology::Layer2 {
                        ctx.names.layer2_switch()
                    } else {
                        ctx.names.node_switch(node)
                    };
                    build
                        .direct_load_balancers
                        .entry((logical_switch::TABLE, switch))
                        .or_default()
                        .insert(uuid);
                }
                for node in routers {
                    build
                        .direct_load_balancers
                        .entry((logical_router::TABLE, ctx.names.gateway_router(node)))
                        .or_default()
                        .insert(uuid);
                }
            }
        }
    }
    for (service, rows) in units {
        build.unit(SERVICE_UNIT, service, rows);
    }
}

fn row(lb: &LbSpec) -> DesiredRow {
    DesiredRow::new(load_balancer::TABLE, &lb.name)
        .string(load_balancer::NAME, &lb.name)
        .string(load_balancer::PROTOCOL, &lb.protocol)
        .value(load_balancer::VIPS, string_map(&lb.vips))
        .value(load_balancer::OPTIONS, string_map(&lb.options))
        .strings(
            load_balancer::SELECTION_FIELDS,
            lb.selection_fields.iter().map(String::as_str),
        )
        .value(load_balancer::EXTERNAL_IDS, string_map(&lb.external_ids))
}
