//! Remote nodes as Southbound chassis (upstream `AddRemoteZoneNode`): `Chassis{name=<the
//! node's chassis id>, hostname=<node>, other_config:is-remote=true}` with one geneve `Encap`
//! per `k8s.ovn.org/node-encap-ips` entry (`options:csum=true`). Chassis marked remote that no
//! remote node wants are deleted; chassis ovn-controller registers (the local one) are never
//! touched.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use udn_ovsdb::protocol::{Atom, Operation, Row, Uuid, Value};

use super::rows::{TableRows, by_uuid, map_get, map_value, string, string_map, uuids};
use crate::model::Node;

const CHASSIS: &str = "Chassis";
const ENCAP: &str = "Encap";
const IS_REMOTE: &str = "is-remote";

/// One remote chassis we want.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteChassis {
    /// Chassis name (the node's `k8s.ovn.org/node-chassis-id`).
    pub name: String,
    /// The node name (`hostname`, a debugging hint upstream sets).
    pub hostname: String,
    /// Its tunnel endpoints.
    pub encaps: Vec<RemoteEncap>,
}

/// One tunnel endpoint of a remote chassis.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RemoteEncap {
    /// `type` (`geneve`).
    pub kind: String,
    /// `ip`.
    pub ip: String,
    /// `options`.
    pub options: BTreeMap<String, String>,
}

/// The remote chassis of the remote nodes, and the remote nodes that cannot have one yet
/// (node name, the annotation missing).
pub fn remote_chassis(nodes: &[Node]) -> (Vec<RemoteChassis>, Vec<(String, &'static str)>) {
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for node in nodes.iter().filter(|n| !n.local) {
        let Some(chassis) = node.chassis_id.as_deref().filter(|c| !c.is_empty()) else {
            missing.push((node.name.clone(), "k8s.ovn.org/node-chassis-id"));
            continue;
        };
        if node.encap_ips.is_empty() {
            missing.push((node.name.clone(), "k8s.ovn.org/node-encap-ips"));
            continue;
        }
        out.push(RemoteChassis {
            name: chassis.to_owned(),
            hostname: node.name.clone(),
            encaps: node
                .encap_ips
                .iter()
                .map(|ip: &IpAddr| RemoteEncap {
                    kind: "geneve".to_owned(),
                    ip: ip.to_string(),
                    options: BTreeMap::from([("csum".to_owned(), "true".to_owned())]),
                })
                .collect(),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.name == b.name);
    (out, missing)
}

fn encap_of(row: &Row) -> RemoteEncap {
    RemoteEncap {
        kind: string(row, "type").unwrap_or_default().to_owned(),
        ip: string(row, "ip").unwrap_or_default().to_owned(),
        options: string_map(row, "options"),
    }
}

fn text(value: &str) -> Value {
    Value::Atom(Atom::String(value.to_owned()))
}

/// Inserts of the encaps of `chassis`, named `<prefix><i>`, and the set value referring to
/// them.
fn insert_encaps(chassis: &RemoteChassis, prefix: &str, ops: &mut Vec<Operation>) -> Value {
    let mut names = Vec::new();
    for (i, encap) in chassis.encaps.iter().enumerate() {
        let name = format!("{prefix}{i}");
        ops.push(Operation::Insert {
            table: ENCAP.to_owned(),
            row: Row::from([
                ("type".to_owned(), text(&encap.kind)),
                ("ip".to_owned(), text(&encap.ip)),
                ("options".to_owned(), map_value(&encap.options)),
                ("chassis_name".to_owned(), text(&chassis.name)),
            ]),
            uuid_name: Some(name.clone()),
            uuid: None,
        });
        names.push(Atom::NamedUuid(name));
    }
    Value::Set(names)
}

/// The operations that make the Southbound hold exactly `desired` as remote chassis. Empty
/// when it does.
pub fn remote_chassis_ops(desired: &[RemoteChassis], sb: &impl TableRows) -> Vec<Operation> {
    let chassis_rows = sb.table_rows(CHASSIS);
    let encap_rows: BTreeMap<Uuid, &Row> = sb.table_rows(ENCAP).into_iter().collect();
    let by_name: BTreeMap<&str, (Uuid, &Row)> = chassis_rows
        .iter()
        .filter_map(|(uuid, row)| Some((string(row, "name")?, (*uuid, *row))))
        .collect();
    let wanted: BTreeSet<&str> = desired.iter().map(|c| c.name.as_str()).collect();
    let mut ops = Vec::new();
    for (index, chassis) in desired.iter().enumerate() {
        let prefix = format!("encap{index}_");
        let Some((uuid, row)) = by_name.get(chassis.name.as_str()) else {
            let encaps = insert_encaps(chassis, &prefix, &mut ops);
            ops.push(Operation::Insert {
                table: CHASSIS.to_owned(),
                row: Row::from([
                    ("name".to_owned(), text(&chassis.name)),
                    ("hostname".to_owned(), text(&chassis.hostname)),
                    ("encaps".to_owned(), encaps),
                    (
                        "other_config".to_owned(),
                        map_value(&BTreeMap::from([(IS_REMOTE.to_owned(), "true".to_owned())])),
                    ),
                ]),
                uuid_name: None,
                uuid: None,
            });
            continue;
        };
        let mut update = Row::new();
        if map_get(row, "other_config", IS_REMOTE) != Some("true") {
            let mut other = string_map(row, "other_config");
            other.insert(IS_REMOTE.to_owned(), "true".to_owned());
            update.insert("other_config".to_owned(), map_value(&other));
        }
        if string(row, "hostname") != Some(chassis.hostname.as_str()) {
            update.insert("hostname".to_owned(), text(&chassis.hostname));
        }
        let mut have: Vec<RemoteEncap> = uuids(row, "encaps")
            .iter()
            .filter_map(|u| encap_rows.get(u).map(|r| encap_of(r)))
            .collect();
        have.sort();
        let mut want = chassis.encaps.clone();
        want.sort();
        if have != want {
            let encaps = insert_encaps(chassis, &prefix, &mut ops);
            update.insert("encaps".to_owned(), encaps);
        }
        if !update.is_empty() {
            ops.push(Operation::Update {
                table: CHASSIS.to_owned(),
                where_: vec![by_uuid(*uuid)],
                row: update,
            });
        }
    }
    for (uuid, row) in &chassis_rows {
        let name = string(row, "name").unwrap_or_default();
        if map_get(row, "other_config", IS_REMOTE) == Some("true") && !wanted.contains(name) {
            ops.push(Operation::Delete {
                table: CHASSIS.to_owned(),
                where_: vec![by_uuid(*uuid)],
            });
        }
    }
    ops
}

#[cfg(test)]
mod tests;
