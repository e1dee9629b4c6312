//! Rows that cannot carry ownership stamps (no `external_ids`: `Load_Balancer_Group`,
//! `Static_MAC_Binding`), so the engine cannot own them: they are ours by their key, as
//! upstream recognises them. A load balancer group is ours by its name
//! (`[<prefix>]clusterLBGroup`, `clusterSwitchLBGroup`, `clusterRouterLBGroup`); a static MAC
//! binding is ours when its logical port is (a port one of our controllers owns, or wants a
//! binding on), and garbage when it sits on a `rtoe-GR_` port that no longer exists.
//!
//! [`plan_keyed`] diffs what every network of the zone wants against the current rows and
//! returns the operations, split in two: `upserts` go before the engine's units (switches
//! and routers refer to the groups), `deletes` after them (a group still referred to cannot
//! be deleted; a group's members, the networks' load balancers, are set there too, once
//! the units that insert them are written).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use udn_ipam::MacAddress;
use udn_ovsdb::engine::OWNER_CONTROLLER_KEY;
use udn_ovsdb::nb::{
    load_balancer_group, logical_router, logical_router_port, logical_switch, static_mac_binding,
};
use udn_ovsdb::protocol::{Atom, Condition, ConditionFunction, Operation, Row, Uuid, Value};
use udn_ovsdb::replica::Replica;

use super::desired::{DirectLoadBalancers, NetworkDesired, StaticMacBinding};
use super::names::{GR, LB_GROUP_BASES, RTOE};

/// The keyed rows every network of the zone wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyedDesired {
    /// Load balancer group names.
    pub load_balancer_groups: BTreeSet<String>,
    /// Static MAC bindings by (logical port, IP): (MAC, `override_dynamic_mac`).
    pub static_mac_bindings: BTreeMap<(String, IpAddr), (MacAddress, bool)>,
    /// The zone's network controllers (`<network>-network-controller`): the router ports
    /// they own are ours.
    pub controllers: BTreeSet<String>,
    /// The load balancers each group holds, when this plan manages the groups' members:
    /// only after the networks' units are written (the references are weak: a member
    /// written before its load balancer exists would be dropped). `None` leaves them.
    pub load_balancer_members: Option<BTreeMap<String, BTreeSet<Uuid>>>,
    /// The per-node load balancers our switches and routers hold directly, managed like
    /// the groups' members (after the units; `None` leaves them). A switch or router of
    /// ours not named here holds none.
    pub direct_load_balancers: Option<DirectLoadBalancers>,
}

impl KeyedDesired {
    /// What `networks` (every network of the zone) want.
    pub fn from_networks<'a>(networks: impl IntoIterator<Item = &'a NetworkDesired>) -> Self {
        let mut desired = Self::default();
        let mut members: BTreeMap<String, BTreeSet<Uuid>> = BTreeMap::new();
        let mut direct = DirectLoadBalancers::new();
        for network in networks {
            for (key, lbs) in &network.direct_load_balancers {
                direct
                    .entry(key.clone())
                    .or_default()
                    .extend(lbs.iter().copied());
            }
            desired.controllers.insert(network.controller.clone());
            desired
                .load_balancer_groups
                .extend(network.load_balancer_groups.iter().cloned());
            for (group, lbs) in &network.load_balancer_members {
                members
                    .entry(group.clone())
                    .or_default()
                    .extend(lbs.iter().copied());
            }
            for binding in &network.static_mac_bindings {
                desired.add_binding(binding);
            }
        }
        desired.load_balancer_members = Some(members);
        desired.direct_load_balancers = Some(direct);
        desired
    }

    fn add_binding(&mut self, binding: &StaticMacBinding) {
        self.static_mac_bindings.insert(
            (binding.logical_port.clone(), binding.ip),
            (binding.mac, binding.override_dynamic_mac),
        );
    }
}

/// Read access to the current rows of a table.
pub trait KeyedRowsView {
    /// Every row of `table`.
    fn keyed_rows(&self, table: &str) -> Vec<(Uuid, &Row)>;
}

impl KeyedRowsView for Replica {
    fn keyed_rows(&self, table: &str) -> Vec<(Uuid, &Row)> {
        self.rows(table).map(|(uuid, row)| (*uuid, row)).collect()
    }
}

/// In-memory current rows, by table (tests, or a runtime that copies them out).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyedSnapshot {
    /// Rows by table.
    pub tables: BTreeMap<String, Vec<(Uuid, Row)>>,
}

impl KeyedRowsView for KeyedSnapshot {
    fn keyed_rows(&self, table: &str) -> Vec<(Uuid, &Row)> {
        self.tables
            .get(table)
            .map(|rows| rows.iter().map(|(uuid, row)| (*uuid, row)).collect())
            .unwrap_or_default()
    }
}

/// The operations that bring the keyed rows to `desired`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyedPlan {
    /// Inserts and updates: apply before the engine's units.
    pub upserts: Vec<Operation>,
    /// Deletes: apply after the engine's units.
    pub deletes: Vec<Operation>,
}

impl KeyedPlan {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.upserts.is_empty() && self.deletes.is_empty()
    }
}

/// Whether a load balancer group name is one of ours (upstream's three names, with any
/// network prefix).
pub fn is_our_load_balancer_group(name: &str) -> bool {
    LB_GROUP_BASES.iter().any(|base| {
        name.strip_suffix(base)
            .is_some_and(|prefix| prefix.is_empty() || prefix.ends_with('_'))
    })
}

/// The plan from `current` to `desired`.
pub fn plan_keyed(desired: &KeyedDesired, current: &impl KeyedRowsView) -> KeyedPlan {
    let mut plan = KeyedPlan::default();
    lb_groups(desired, current, &mut plan);
    direct_load_balancers(desired, current, &mut plan);
    mac_bindings(desired, current, &mut plan);
    plan
}

fn owned_by_us(desired: &KeyedDesired, row: &Row, external_ids: &str) -> bool {
    match row.get(external_ids) {
        Some(Value::Map(pairs)) => pairs.iter().any(|(k, v)| {
            matches!((k, v), (Atom::String(k), Atom::String(v))
                if k == OWNER_CONTROLLER_KEY && desired.controllers.contains(v))
        }),
        _ => false,
    }
}

/// The `load_balancer` column of our switches and routers: the per-node load balancers.
fn direct_load_balancers(
    desired: &KeyedDesired,
    current: &impl KeyedRowsView,
    plan: &mut KeyedPlan,
) {
    let Some(direct) = &desired.direct_load_balancers else {
        return;
    };
    let none = BTreeSet::new();
    for (table, name_column, lb_column, ids_column) in [
        (
            logical_switch::TABLE,
            logical_switch::NAME,
            logical_switch::LOAD_BALANCER,
            logical_switch::EXTERNAL_IDS,
        ),
        (
            logical_router::TABLE,
            logical_router::NAME,
            logical_router::LOAD_BALANCER,
            logical_router::EXTERNAL_IDS,
        ),
    ] {
        for (uuid, row) in current.keyed_rows(table) {
            let Some(name) = string_column(row, name_column) else {
                continue;
            };
            let wanted = direct.get(&(table, name.to_owned())).unwrap_or(&none);
            if current_uuids(row, lb_column) == *wanted
                || (wanted.is_empty() && !owned_by_us(desired, row, ids_column))
            {
                continue;
            }
            plan.deletes.push(Operation::Update {
                table: table.to_owned(),
                where_: by_uuid(uuid),
                row: Row::from([(lb_column.to_owned(), uuid_set(wanted))]),
            });
        }
    }
}

fn string_column<'r>(row: &'r Row, column: &str) -> Option<&'r str> {
    match row.get(column) {
        Some(Value::Atom(Atom::String(s))) => Some(s),
        _ => None,
    }
}

fn bool_column(row: &Row, column: &str) -> Option<bool> {
    match row.get(column) {
        Some(Value::Atom(Atom::Boolean(b))) => Some(*b),
        _ => None,
    }
}

fn by_uuid(uuid: Uuid) -> Vec<Condition> {
    vec![Condition {
        column: "_uuid".to_owned(),
        function: ConditionFunction::Equal,
        value: Value::Atom(Atom::Uuid(uuid)),
    }]
}

fn string(value: &str) -> Value {
    Value::Atom(Atom::String(value.to_owned()))
}

fn uuid_set(uuids: &BTreeSet<Uuid>) -> Value {
    Value::Set(uuids.iter().map(|u| Atom::Uuid(*u)).collect())
}

fn current_members(row: &Row) -> BTreeSet<Uuid> {
    current_uuids(row, load_balancer_group::LOAD_BALANCER)
}

fn current_uuids(row: &Row, column: &str) -> BTreeSet<Uuid> {
    match row.get(column) {
        Some(Value::Set(atoms)) => atoms
            .iter()
            .filter_map(|a| match a {
                Atom::Uuid(u) => Some(*u),
                _ => None,
            })
            .collect(),
        Some(Value::Atom(Atom::Uuid(u))) => BTreeSet::from([*u]),
        _ => BTreeSet::new(),
    }
}

fn lb_groups(desired: &KeyedDesired, current: &impl KeyedRowsView, plan: &mut KeyedPlan) {
    let none = BTreeSet::new();
    let wanted_members = |name: &str| {
        desired
            .load_balancer_members
            .as_ref()
            .map(|members| members.get(name).unwrap_or(&none))
    };
    let mut existing = BTreeSet::new();
    for (uuid, row) in current.keyed_rows(load_balancer_group::TABLE) {
        let Some(name) = string_column(row, load_balancer_group::NAME) else {
            continue;
        };
        existing.insert(name.to_owned());
        if !is_our_load_balancer_group(name) {
            continue;
        }
        if !desired.load_balancer_groups.contains(name) {
            plan.deletes.push(Operation::Delete {
                table: load_balancer_group::TABLE.to_owned(),
                where_: by_uuid(uuid),
            });
        } else if let Some(members) = wanted_members(name)
            && current_members(row) != *members
        {
            plan.deletes.push(Operation::Update {
                table: load_balancer_group::TABLE.to_owned(),
                where_: by_uuid(uuid),
                row: Row::from([(
                    load_balancer_group::LOAD_BALANCER.to_owned(),
                    uuid_set(members),
                )]),
            });
        }
    }
    for name in desired.load_balancer_groups.difference(&existing) {
        // With a chosen UUID: the networks' switches and routers are planned (and sent)
        // referring to it before this insert is answered.
        let mut row = Row::from([(load_balancer_group::NAME.to_owned(), string(name))]);
        if let Some(members) = wanted_members(name).filter(|m| !m.is_empty()) {
            row.insert(
                load_balancer_group::LOAD_BALANCER.to_owned(),
                uuid_set(members),
            );
        }
        plan.upserts.push(Operation::Insert {
            table: load_balancer_group::TABLE.to_owned(),
            row,
            uuid_name: None,
            uuid: Some(super::shared_row_uuid(load_balancer_group::TABLE, name)),
        });
    }
}

/// Router port names: all of them, and those our controllers own.
fn router_ports(
    desired: &KeyedDesired,
    current: &impl KeyedRowsView,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut all = BTreeSet::new();
    let mut ours = BTreeSet::new();
    for (_, row) in current.keyed_rows(logical_router_port::TABLE) {
        let Some(name) = string_column(row, logical_router_port::NAME) else {
            continue;
        };
        all.insert(name.to_owned());
        if owned_by_us(desired, row, logical_router_port::EXTERNAL_IDS) {
            ours.insert(name.to_owned());
        }
    }
    ours.extend(
        desired
            .static_mac_bindings
            .keys()
            .map(|(port, _)| port.clone()),
    );
    (all, ours)
}

fn mac_bindings(desired: &KeyedDesired, current: &impl KeyedRowsView, plan: &mut KeyedPlan) {
    let (all_ports, our_ports) = router_ports(desired, current);
    let garbage_prefix = format!("{RTOE}{GR}");
    let mut existing = BTreeSet::new();
    for (uuid, row) in current.keyed_rows(static_mac_binding::TABLE) {
        let (Some(port), Some(ip)) = (
            string_column(row, static_mac_binding::LOGICAL_PORT),
            string_column(row, static_mac_binding::IP).and_then(|ip| ip.parse::<IpAddr>().ok()),
        ) else {
            continue;
        };
        let key = (port.to_owned(), ip);
        if let Some((mac, override_dynamic)) = desired.static_mac_bindings.get(&key) {
            existing.insert(key);
            let mac = mac.to_string();
            let mut changes = Row::new();
            if string_column(row, static_mac_binding::MAC) != Some(mac.as_str()) {
                changes.insert(static_mac_binding::MAC.to_owned(), string(&mac));
            }
            if bool_column(row, static_mac_binding::OVERRIDE_DYNAMIC_MAC) != Some(*override_dynamic)
            {
                changes.insert(
                    static_mac_binding::OVERRIDE_DYNAMIC_MAC.to_owned(),
                    Value::Atom(Atom::Boolean(*override_dynamic)),
                );
            }
            if !changes.is_empty() {
                plan.upserts.push(Operation::Update {
                    table: static_mac_binding::TABLE.to_owned(),
                    where_: by_uuid(uuid),
                    row: changes,
                });
            }
            continue;
        }
        let stale = our_ports.contains(port)
            || (port.starts_with(&garbage_prefix) && !all_ports.contains(port));
        if stale {
            plan.deletes.push(Operation::Delete {
                table: static_mac_binding::TABLE.to_owned(),
                where_: by_uuid(uuid),
            });
        }
    }
    for ((port, ip), (mac, override_dynamic)) in &desired.static_mac_bindings {
        if existing.contains(&(port.clone(), *ip)) {
            continue;
        }
        plan.upserts.push(Operation::Insert {
            table: static_mac_binding::TABLE.to_owned(),
            row: Row::from([
                (static_mac_binding::LOGICAL_PORT.to_owned(), string(port)),
                (static_mac_binding::IP.to_owned(), string(&ip.to_string())),
                (static_mac_binding::MAC.to_owned(), string(&mac.to_string())),
                (
                    static_mac_binding::OVERRIDE_DYNAMIC_MAC.to_owned(),
                    Value::Atom(Atom::Boolean(*override_dynamic)),
                ),
            ]),
            uuid_name: None,
            uuid: None,
        });
    }
}
