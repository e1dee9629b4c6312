//! The raw baseline of `cargo xtask bench controller`: every row the controller wrote, copied
//! from the bench's NB replica, as `insert`s to write to a fresh server
//! ([`nb_raw`](super::nb_raw) sends them).
//!
//! Rows are grouped by network: a root row by its `k8s.ovn.org/owner-controller`
//! (`<network>-network-controller`; rows without it, the load balancer groups and static MAC
//! bindings, form the first group), a non-root row with the row that holds it (a port with
//! its switch, an ACL with its port group), so that a transaction holding a group holds what
//! keeps each of its rows alive. Groups go in order: unowned rows, the default network, then
//! the networks by name. Inside a group rows refer to each other by named UUID, as a
//! controller's transaction does; a row another group refers to (a network's gateway
//! router to the default network's COPP, switches to the load balancer groups) is inserted
//! with its UUID from the zone (`insert` with `uuid`), so later transactions can name it.
//! Columns holding their default are left out, as a controller leaves them out.

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::{anyhow, bail};
use serde_json::{Map, Value as Json, json};
use udn_ovsdb::engine::OWNER_CONTROLLER_KEY;
use udn_ovsdb::protocol::{Atom, Row, Uuid, Value};
use udn_ovsdb::replica::Replica;
use udn_ovsdb::schema::{DbSchema, RefType};

use super::nb_raw::{Batching, RawTransaction, encode_json};

/// The controller of the default network (upstream's name).
pub const DEFAULT_CONTROLLER: &str = "default-network-controller";

/// One group of rows (a network's, or the unowned ones): their insert operations.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The owning controller (empty: unowned rows).
    pub controller: String,
    /// The inserts.
    pub ops: Vec<Json>,
}

/// The copied rows, in groups in insertion order.
#[derive(Debug, Clone, PartialEq)]
pub struct Copied {
    /// The groups.
    pub groups: Vec<Group>,
    /// Rows per table.
    pub tables: BTreeMap<String, usize>,
}

impl Copied {
    /// Rows in all.
    pub fn rows(&self) -> usize {
        self.tables.values().sum()
    }

    /// The transactions for `batching`: one, or so many groups each (a group being a
    /// network, or the unowned rows).
    pub fn transactions(&self, batching: Batching) -> anyhow::Result<Vec<RawTransaction>> {
        let per = batching.networks_per_transaction(self.groups.len());
        encode_json(self.groups.chunks(per).map(|chunk| {
            chunk
                .iter()
                .flat_map(|group| group.ops.iter().cloned())
                .collect::<Vec<_>>()
        }))
    }
}

struct Entry<'r> {
    table: &'r str,
    uuid: Uuid,
    row: &'r Row,
}

fn owner_controller(row: &Row) -> Option<&str> {
    match row.get("external_ids") {
        Some(Value::Map(pairs)) => pairs.iter().find_map(|(k, v)| match (k, v) {
            (Atom::String(k), Atom::String(v)) if k == OWNER_CONTROLLER_KEY => Some(v.as_str()),
            _ => None,
        }),
        _ => None,
    }
}

fn uuids(value: &Value) -> Vec<Uuid> {
    let atoms: Vec<&Atom> = match value {
        Value::Atom(atom) => vec![atom],
        Value::Set(atoms) => atoms.iter().collect(),
        Value::Map(pairs) => pairs.iter().flat_map(|(k, v)| [k, v]).collect(),
    };
    atoms
        .into_iter()
        .filter_map(|atom| match atom {
            Atom::Uuid(uuid) => Some(*uuid),
            _ => None,
        })
        .collect()
}

fn rename(value: &Value, name: &impl Fn(&Uuid) -> Atom) -> Value {
    let atom = |atom: &Atom| match atom {
        Atom::Uuid(uuid) => name(uuid),
        other => other.clone(),
    };
    match value {
        Value::Atom(a) => Value::Atom(atom(a)),
        Value::Set(atoms) => Value::Set(atoms.iter().map(atom).collect()),
        Value::Map(pairs) => Value::Map(pairs.iter().map(|(k, v)| (atom(k), atom(v))).collect()),
    }
}

fn group_order(controller: &str) -> (bool, bool, &str) {
    (
        !controller.is_empty(),
        controller != DEFAULT_CONTROLLER,
        controller,
    )
}

/// Copies the rows of `tables` in `replica` that are not in `skip` (rows that were there
/// before the controller started). `schema` is the database's (reference types, root
/// tables, defaults). Fails naming a row that refers to a row outside the copy, or to a row
/// of a later group.
pub fn copy(
    replica: &Replica,
    schema: &DbSchema,
    tables: &[&str],
    skip: &HashSet<Uuid>,
) -> anyhow::Result<Copied> {
    let mut entries: Vec<Entry<'_>> = Vec::new();
    for table in tables {
        for (uuid, row) in replica.rows(table) {
            if !skip.contains(uuid) {
                entries.push(Entry {
                    table,
                    uuid: *uuid,
                    row,
                });
            }
        }
    }
    let index: HashMap<Uuid, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.uuid, i))
        .collect();
    let is_root = |table: &str| schema.table(table).is_some_and(|t| t.is_root);
    // The group of every row: root rows by owner, non-root rows with a strong referrer's.
    let mut group: Vec<Option<String>> = entries
        .iter()
        .map(|e| is_root(e.table).then(|| owner_controller(e.row).unwrap_or_default().to_owned()))
        .collect();
    loop {
        let mut progressed = false;
        for i in 0..entries.len() {
            if group[i].is_some() {
                continue;
            }
            let holder = replica
                .referrers(&entries[i].uuid)
                .into_iter()
                .filter(|(table, _, column)| {
                    schema
                        .column(table, column)
                        .and_then(|c| c.ty.reference())
                        .is_some_and(|(_, kind)| kind == RefType::Strong)
                })
                .find_map(|(_, uuid, _)| index.get(&uuid).and_then(|&j| group[j].clone()));
            if holder.is_some() {
                group[i] = holder;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    let group: Vec<String> = group
        .into_iter()
        .zip(&entries)
        .map(|(g, e)| {
            g.ok_or_else(|| anyhow!("{} row {}: nothing copied holds it", e.table, e.uuid))
        })
        .collect::<anyhow::Result<_>>()?;
    // Rows referred to from another group keep their UUID.
    let mut keep_uuid: HashSet<Uuid> = HashSet::new();
    for (i, entry) in entries.iter().enumerate() {
        for (column, value) in entry.row {
            for target in uuids(value) {
                let Some(&j) = index.get(&target) else {
                    bail!(
                        "{} row {} column {column}: refers to {target}, which is not copied",
                        entry.table,
                        entry.uuid
                    );
                };
                if group[j] == group[i] {
                    continue;
                }
                if group_order(&group[j]) > group_order(&group[i]) {
                    bail!(
                        "{} row {} ({}) column {column}: refers to a row of {}, a later group",
                        entry.table,
                        entry.uuid,
                        group[i],
                        group[j]
                    );
                }
                keep_uuid.insert(target);
            }
        }
    }
    let name = |uuid: &Uuid| match index.get(uuid) {
        Some(_) if keep_uuid.contains(uuid) => Atom::Uuid(*uuid),
        Some(j) => Atom::NamedUuid(format!("r{j}")),
        None => Atom::Uuid(*uuid),
    };
    let mut groups: BTreeMap<(bool, bool, String), Vec<Json>> = BTreeMap::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (i, entry) in entries.iter().enumerate() {
        let mut row = Map::new();
        for (column, value) in entry.row {
            let default = schema
                .column(entry.table, column)
                .map(|c| c.ty.default_value());
            if default.as_ref() == Some(value) {
                continue;
            }
            row.insert(column.clone(), rename(value, &name).to_json());
        }
        let mut op = json!({"op": "insert", "table": entry.table, "row": row});
        if keep_uuid.contains(&entry.uuid) {
            op["uuid"] = json!(entry.uuid.to_string());
        } else {
            op["uuid-name"] = json!(format!("r{i}"));
        }
        let (a, b, c) = group_order(&group[i]);
        groups.entry((a, b, c.to_owned())).or_default().push(op);
        *counts.entry(entry.table.to_owned()).or_default() += 1;
    }
    Ok(Copied {
        groups: groups
            .into_iter()
            .map(|((_, _, controller), ops)| Group { controller, ops })
            .collect(),
        tables: counts,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use udn_ovsdb::nb;
    use udn_ovsdb::protocol::{RowUpdate, TableUpdates};

    use super::*;

    fn uuid(n: u8) -> Uuid {
        Uuid::parse(&format!("00000000-0000-0000-0000-0000000000{n:02x}")).unwrap()
    }

    fn ids(controller: Option<&str>) -> Value {
        Value::Map(
            controller
                .map(|c| {
                    (
                        Atom::String(OWNER_CONTROLLER_KEY.to_owned()),
                        Atom::String(c.to_owned()),
                    )
                })
                .into_iter()
                .collect(),
        )
    }

    fn row(pairs: Vec<(&str, Value)>) -> Row {
        pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    fn text(s: &str) -> Value {
        Value::Atom(Atom::String(s.to_owned()))
    }

    /// A group, a default-network COPP, a network's router and switch with a port.
    fn replica() -> (Replica, DbSchema) {
        let schema = DbSchema::from_text(nb::SCHEMA_JSON).unwrap();
        let mut replica = Replica::new(Arc::new(schema.clone()), &[]);
        let mut updates = TableUpdates::default();
        let mut add = |table: &str, id: u8, values: Row| {
            updates
                .tables
                .entry(table.to_owned())
                .or_default()
                .insert(uuid(id), RowUpdate::Insert(values));
        };
        add(
            "Load_Balancer_Group",
            1,
            row(vec![("name", text("clusterLBGroup"))]),
        );
        add(
            "Copp",
            2,
            row(vec![
                ("name", text("ovnkube-default")),
                ("external_ids", ids(Some(DEFAULT_CONTROLLER))),
            ]),
        );
        add(
            "Logical_Router",
            3,
            row(vec![
                ("name", text("GR_a_node1")),
                ("copp", Value::Set(vec![Atom::Uuid(uuid(2))])),
                ("load_balancer_group", Value::Set(vec![Atom::Uuid(uuid(1))])),
                ("external_ids", ids(Some("a-network-controller"))),
            ]),
        );
        add(
            "Logical_Switch",
            4,
            row(vec![
                ("name", text("a_node1")),
                ("ports", Value::Set(vec![Atom::Uuid(uuid(5))])),
                ("external_ids", ids(Some("a-network-controller"))),
            ]),
        );
        add("Logical_Switch_Port", 5, row(vec![("name", text("p"))]));
        add("Logical_Switch", 6, row(vec![("name", text("before"))]));
        replica.apply_owned(updates).unwrap();
        (replica, schema)
    }

    #[test]
    fn rows_are_grouped_by_network_and_named_across_groups_by_uuid() {
        let (replica, schema) = replica();
        let skip = HashSet::from([uuid(6)]);
        let tables = [
            "Load_Balancer_Group",
            "Copp",
            "Logical_Router",
            "Logical_Switch",
            "Logical_Switch_Port",
        ];
        let copied = copy(&replica, &schema, &tables, &skip).unwrap();
        assert_eq!(copied.rows(), 5);
        let controllers: Vec<&str> = copied
            .groups
            .iter()
            .map(|g| g.controller.as_str())
            .collect();
        assert_eq!(
            controllers,
            ["", DEFAULT_CONTROLLER, "a-network-controller"]
        );
        let network = &copied.groups[2].ops;
        assert_eq!(network.len(), 3, "{network:?}");
        let router = network
            .iter()
            .find(|op| op["table"] == "Logical_Router")
            .unwrap();
        assert_eq!(
            router["row"]["copp"],
            json!(["set", [["uuid", uuid(2).to_string()]]])
        );
        assert!(
            router["row"].get("ports").is_none(),
            "defaults are left out"
        );
        let switch = network
            .iter()
            .find(|op| op["table"] == "Logical_Switch")
            .unwrap();
        let port = network
            .iter()
            .find(|op| op["table"] == "Logical_Switch_Port")
            .unwrap();
        let port_name = port["uuid-name"].as_str().unwrap();
        assert_eq!(
            switch["row"]["ports"],
            json!(["set", [["named-uuid", port_name]]])
        );
        let copp = &copied.groups[1].ops[0];
        assert_eq!(copp["uuid"], json!(uuid(2).to_string()));
        assert_eq!(copied.transactions(Batching::Single).unwrap().len(), 1);
        assert_eq!(copied.transactions(Batching::Networks(1)).unwrap().len(), 3);
        assert_eq!(copied.transactions(Batching::Networks(2)).unwrap().len(), 2);
    }

    #[test]
    fn references_outside_the_copy_are_refused() {
        let (replica, schema) = replica();
        let err = copy(&replica, &schema, &["Logical_Router"], &HashSet::new()).unwrap_err();
        assert!(err.to_string().contains("which is not copied"), "{err}");
    }
}
