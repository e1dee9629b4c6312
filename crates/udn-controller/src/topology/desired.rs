//! The entry point: one network's desired rows for the zone, as engine units, plus the
//! rows that cannot be engine rows (load balancer groups, static MAC bindings) and the
//! problems that kept parts from being rendered.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use udn_ipam::MacAddress;
use udn_ovsdb::engine::{DesiredRow, DesiredUnit, Engine, RowRef, Scope, UnitKey};
use udn_ovsdb::protocol::Uuid;

use super::context::NetCtx;
use super::dbids::NETPOL_NODE_OWNER_TYPE;
use super::problem::Problem;
use super::services::SERVICE_UNIT;
use super::zone::ZoneInputs;
use super::{cluster, interconnect, isolation, layer2, localnet, node_switch, pods, services};
use crate::model::{Network, PodAttachment, Topology};

/// Owner type of the network-wide unit (named after the network): cluster router, join
/// switch, cluster port groups, transit switch, the Layer2/localnet switch; the default
/// network's COPP and meters.
pub const CLUSTER_UNIT: &str = "Cluster";
/// Owner type of a local node's unit (named after the node).
pub const NODE_UNIT: &str = "Node";
/// Owner type of a remote node's unit (named after the node).
pub const REMOTE_NODE_UNIT: &str = "RemoteNode";
/// Owner type of a pod attachment's unit (named after its logical switch port).
pub const POD_UNIT: &str = "Pod";
/// Owner type of the default network's UDN isolation unit (named after the network).
pub const UDN_ISOLATION_UNIT: &str = "UDNIsolation";
/// Every unit owner type a network controller's engine uses: the scope the runtime plans
/// with, so that units no longer desired (a deleted node or pod) are removed.
pub const NETWORK_OWNER_TYPES: [&str; 6] = [
    CLUSTER_UNIT,
    NODE_UNIT,
    REMOTE_NODE_UNIT,
    POD_UNIT,
    UDN_ISOLATION_UNIT,
    SERVICE_UNIT,
];

/// Row owner types of a network controller's rows and the unit owner type they belong to
/// (declare them on the engine: [`network_engine`]): upstream's `NetpolNode` ACLs of the
/// management ports are rows of `Node` units.
pub const ROW_OWNER_TYPES: [(&str, &str); 1] = [(NETPOL_NODE_OWNER_TYPE, NODE_UNIT)];

/// The engine of the network controller `controller`, with the [`ROW_OWNER_TYPES`] declared.
pub fn network_engine(controller: &str) -> Engine {
    ROW_OWNER_TYPES
        .iter()
        .fold(Engine::new(controller), |engine, (row_type, unit_type)| {
            engine.with_row_owner_type(row_type, unit_type)
        })
}

/// The scope a network controller plans with: every unit of [`NETWORK_OWNER_TYPES`], so that
/// units no longer desired (a deleted node or pod) are removed whole.
pub fn network_scope() -> Scope {
    Scope::OwnerTypes(
        NETWORK_OWNER_TYPES
            .iter()
            .map(|t| (*t).to_owned())
            .collect(),
    )
}

/// One static MAC binding the network needs (`Static_MAC_Binding` has no `external_ids`,
/// so it is planned by [`super::keyed`], not by the engine).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StaticMacBinding {
    /// The router port (`rtoe-GR_...`).
    pub logical_port: String,
    /// The neighbour's IP.
    pub ip: IpAddr,
    /// Its MAC.
    pub mac: MacAddress,
    /// `override_dynamic_mac`.
    pub override_dynamic_mac: bool,
}

/// Everything one network wants in the zone's Northbound database.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkDesired {
    /// The engine's controller name (`<network>-network-controller`).
    pub controller: String,
    /// The units, for an engine of `controller` (scope: [`NETWORK_OWNER_TYPES`]).
    pub units: Vec<DesiredUnit>,
    /// Names of the `Load_Balancer_Group` rows the network needs.
    pub load_balancer_groups: Vec<String>,
    /// The load balancers (UUIDs: they are inserted with chosen ones) each group of the
    /// network holds.
    pub load_balancer_members: BTreeMap<String, BTreeSet<Uuid>>,
    /// The per-node load balancers each of the network's switches and routers holds
    /// directly, by (table, row name).
    pub direct_load_balancers: DirectLoadBalancers,
    /// The static MAC bindings the network needs.
    pub static_mac_bindings: Vec<StaticMacBinding>,
    /// What could not be rendered, and why.
    pub problems: Vec<Problem>,
}

/// Load balancers attached to switches and routers directly (`load_balancer` column), by
/// (`Logical_Switch` or `Logical_Router`, row name).
pub type DirectLoadBalancers = BTreeMap<(&'static str, String), BTreeSet<Uuid>>;

/// The desired rows of `net` in the zone. `pods` are the network's attachments (every
/// pod of the cluster attached to it: Layer2 networks need remote pods too).
pub fn network_desired(
    net: &Network,
    zone: &ZoneInputs<'_>,
    pods: &[PodAttachment],
) -> NetworkDesired {
    let ctx = NetCtx::new(net, zone);
    let mut build = Build {
        transit: true,
        ..Build::default()
    };
    match ctx.topology {
        Topology::Default | Topology::Layer3 => layer3(&ctx, pods, &mut build),
        Topology::Layer2 => layer2::build(&ctx, pods, &mut build),
        Topology::Localnet => localnet::build(&ctx, pods, &mut build),
    }
    services::build(&ctx, &mut build);
    let mut problems = build.problems;
    problems.sort();
    problems.dedup();
    let mut static_mac_bindings = build.static_mac_bindings;
    static_mac_bindings.sort();
    NetworkDesired {
        controller: ctx.controller.clone(),
        units: build.units,
        load_balancer_groups: load_balancer_groups(net),
        load_balancer_members: build.load_balancer_members,
        direct_load_balancers: build.direct_load_balancers,
        static_mac_bindings,
        problems,
    }
}

/// The `Load_Balancer_Group` names `net` needs (upstream `initLoadBalancerGroups`: Layer3,
/// Layer2 and the default network; none for localnet).
pub fn load_balancer_groups(net: &Network) -> Vec<String> {
    if net.topology() == Topology::Localnet {
        return Vec::new();
    }
    super::names::LB_GROUP_BASES
        .iter()
        .map(|base| net.scoped(base))
        .collect()
}

fn layer3(ctx: &NetCtx<'_>, pods: &[PodAttachment], build: &mut Build) {
    let locals = node_switch::local_host_subnets(ctx, build);
    build.transit = !ctx.zone.config.lean.transit_on_demand || interconnect::has_remote(ctx);
    pods::build(ctx, pods, &|node| locals.contains_key(node), build);
    for (node, subnets) in &locals {
        node_switch::build_node(ctx, node, subnets, build);
    }
    interconnect::remote_nodes(ctx, build);
    cluster::build(ctx, build);
    isolation::build(ctx, &locals, build);
}

/// What the builders accumulate: units, references other units' rows add to rows of the
/// cluster unit, problems and static MAC bindings.
#[derive(Debug, Default)]
pub(crate) struct Build {
    pub(crate) units: Vec<DesiredUnit>,
    pub(crate) links: Links,
    pub(crate) problems: Vec<Problem>,
    pub(crate) static_mac_bindings: Vec<StaticMacBinding>,
    pub(crate) load_balancer_members: BTreeMap<String, BTreeSet<Uuid>>,
    pub(crate) direct_load_balancers: DirectLoadBalancers,
    /// The network has a transit switch (and the local `rtots-`/`tstor-` pair): always,
    /// or with `--lean-transit-on-demand` only while a remote node has the network.
    pub(crate) transit: bool,
}

/// The unit name of a network's node unit (`Node`, `RemoteNode`): `<network>/<node>`. Unit
/// names are the `k8s.ovn.org/owner` stamp, which the replica indexes and versions across
/// every controller: a bare node name would be shared by every network's unit of that node,
/// so each lookup would read every network's rows and a write to one network's node unit
/// would make every other network's unit of that node look changed.
pub(crate) fn node_unit_name(network: &str, node: &str) -> String {
    format!("{network}/{node}")
}

impl Build {
    /// Adds a unit when it has rows.
    pub(crate) fn unit(&mut self, owner_type: &str, name: &str, rows: Rows) {
        if rows.0.is_empty() {
            return;
        }
        let mut unit = DesiredUnit::new(UnitKey::new(owner_type, name));
        unit.rows = rows.0;
        self.units.push(unit);
    }
}

/// References that rows of one unit need in rows of another (the router's ports and
/// routes are in node units, the router in the cluster unit).
#[derive(Debug, Default)]
pub(crate) struct Links {
    /// Cluster router `ports`, `static_routes`, `nat`, `policies`.
    pub(crate) router_ports: Vec<RowRef>,
    pub(crate) router_routes: Vec<RowRef>,
    pub(crate) router_nats: Vec<RowRef>,
    pub(crate) router_policies: Vec<RowRef>,
    /// Join switch `ports`.
    pub(crate) join_ports: Vec<RowRef>,
    /// Transit switch `ports`.
    pub(crate) transit_ports: Vec<RowRef>,
    /// The network-wide switch's (Layer2, localnet) `ports` and `acls`.
    pub(crate) switch_ports: Vec<RowRef>,
    pub(crate) switch_acls: Vec<RowRef>,
    /// `clusterPortGroup` `ports` (management ports).
    pub(crate) cluster_pg_ports: Vec<RowRef>,
    /// Node switch `ports` (pods), by node.
    pub(crate) node_switch_ports: BTreeMap<String, Vec<RowRef>>,
    /// `SecondaryPods` `ports` (default-network ports of primary-UDN pods).
    pub(crate) secondary_pods: Vec<RowRef>,
    /// The open-default-ports ACLs of those pods (rows of the isolation unit).
    pub(crate) open_port_acls: Vec<DesiredRow>,
}

/// The rows of one unit being built.
#[derive(Debug, Default)]
pub(crate) struct Rows(pub(crate) Vec<DesiredRow>);

impl Rows {
    /// Adds `row`, returning a reference to it.
    pub(crate) fn add(&mut self, row: DesiredRow) -> RowRef {
        let reference = RowRef::desired(&row.table, &row.id);
        self.0.push(row);
        reference
    }
}

/// `row` with its `k8s.ovn.org/owner-type` stamp set to `owner_type` (dbIDs rows inside a
/// unit of another owner type, e.g. the `NetpolNode` ACL of a node unit).
pub(crate) fn owned_as(row: DesiredRow, owner_type: &str) -> DesiredRow {
    row.owner_type(owner_type)
}
