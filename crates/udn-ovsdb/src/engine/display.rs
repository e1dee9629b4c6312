//! The dry-run view of a plan: per changed unit (sorted by unit), one line per operation
//! with its table, row and columns.

use std::collections::BTreeMap;
use std::fmt;

use super::desired::UnitKey;
use super::plan::{OpInfo, Plan, Released};
use crate::protocol::{Atom, Condition, Mutation, Mutator, Operation, Value};

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut lines: BTreeMap<&UnitKey, Vec<String>> = BTreeMap::new();
        for group in &self.groups {
            for (op, info) in group.ops.iter().zip(&group.info) {
                if let Some(key) = self.units.get(info.unit as usize) {
                    lines.entry(key).or_default().push(op_line(op, info));
                }
            }
            for released in &group.released {
                if let Some(key) = self.units.get(released.unit as usize) {
                    lines.entry(key).or_default().push(released_line(released));
                }
            }
        }
        let ops = self.op_count();
        if lines.is_empty() {
            return writeln!(f, "plan: no changes ({} units)", self.units.len());
        }
        writeln!(
            f,
            "plan: {ops} operations in {} of {} units",
            lines.len(),
            self.units.len()
        )?;
        for (key, unit_lines) in lines {
            writeln!(f, "unit {key}:")?;
            for line in unit_lines {
                writeln!(f, "  {line}")?;
            }
        }
        Ok(())
    }
}

fn target(table: &str, id: Option<&str>, where_: &[Condition]) -> String {
    match id {
        Some(id) => format!("{table} id={id:?}"),
        None => match where_.first().map(|c| &c.value) {
            Some(Value::Atom(Atom::Uuid(uuid))) => format!("{table} {uuid}"),
            _ => table.to_owned(),
        },
    }
}

pub(crate) fn op_line(op: &Operation, info: &OpInfo) -> String {
    let id = info.id.as_deref();
    match op {
        Operation::Insert {
            table,
            row,
            uuid_name,
            uuid,
        } => {
            let columns: Vec<&str> = row.keys().map(String::as_str).collect();
            let name = match uuid {
                Some(uuid) => format!("{} ({uuid})", uuid_name.as_deref().unwrap_or("-")),
                None => uuid_name.as_deref().unwrap_or("-").to_owned(),
            };
            format!(
                "insert {} as {name}: {}",
                target(table, id, &[]),
                columns.join(", ")
            )
        }
        Operation::Update { table, where_, row } => {
            let columns: Vec<&str> = row.keys().map(String::as_str).collect();
            format!(
                "update {}: {}",
                target(table, id, where_),
                columns.join(", ")
            )
        }
        Operation::Mutate {
            table,
            where_,
            mutations,
        } => {
            let parts: Vec<String> = mutations.iter().map(mutation_text).collect();
            format!("mutate {}: {}", target(table, id, where_), parts.join(", "))
        }
        Operation::Delete { table, where_ } => format!("delete {}", target(table, id, where_)),
        other => format!("{}", other.to_json()),
    }
}

fn mutation_text(mutation: &Mutation) -> String {
    let count = match &mutation.value {
        Value::Set(atoms) => atoms.len(),
        Value::Map(pairs) => pairs.len(),
        Value::Atom(_) => 1,
    };
    let verb = match mutation.mutator {
        Mutator::Insert => "insert",
        Mutator::Delete => "delete",
        other => other.as_str(),
    };
    format!("{} {verb} {count}", mutation.column)
}

fn released_line(released: &Released) -> String {
    let what = match &released.id {
        Some(id) => format!("{} id={id:?}", released.table),
        None => format!("{} {}", released.table, released.uuid),
    };
    format!("release {what} (garbage collected once unreferenced)")
}
