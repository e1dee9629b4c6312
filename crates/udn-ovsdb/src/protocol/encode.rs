//! Direct JSON encoding of values and operations (serde [`Serialize`]): exactly the text of
//! `to_json().to_string()`, written straight into the output without building a
//! `serde_json::Value` tree first. A transaction of many thousand operations is encoded this way.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, SerializeTuple, Serializer};

use super::operation::{Condition, Mutation, Operation};
use super::value::{Atom, Uuid, Value};

impl Serialize for Uuid {
    /// The canonical 8-4-4-4-12 text.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = self.hyphenated();
        match std::str::from_utf8(&text) {
            Ok(text) => serializer.serialize_str(text),
            Err(_) => serializer.serialize_str(&self.to_string()),
        }
    }
}

/// A two-element array `[tag, item]`.
fn tagged<S: Serializer, T: Serialize + ?Sized>(
    serializer: S,
    tag: &str,
    item: &T,
) -> Result<S::Ok, S::Error> {
    let mut tuple = serializer.serialize_tuple(2)?;
    tuple.serialize_element(tag)?;
    tuple.serialize_element(item)?;
    tuple.end()
}

impl Serialize for Atom {
    /// As [`Atom::to_json`]: non-finite reals as `null`, UUIDs as `["uuid", ...]`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Integer(i) => serializer.serialize_i64(*i),
            Self::Real(r) if r.is_finite() => serializer.serialize_f64(*r),
            Self::Real(_) => serializer.serialize_unit(),
            Self::Boolean(b) => serializer.serialize_bool(*b),
            Self::String(s) => serializer.serialize_str(s),
            Self::Uuid(u) => tagged(serializer, "uuid", u),
            Self::NamedUuid(n) => tagged(serializer, "named-uuid", n.as_str()),
        }
    }
}

/// A map's pairs as `[[key, value], ...]`.
struct Pairs<'a>(&'a [(Atom, Atom)]);

impl Serialize for Pairs<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (key, value) in self.0 {
            seq.serialize_element(&(key, value))?;
        }
        seq.end()
    }
}

impl Serialize for Value {
    /// As [`Value::to_json`]: sets always in the `["set", [...]]` form.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Atom(atom) => atom.serialize(serializer),
            Self::Set(atoms) => tagged(serializer, "set", atoms.as_slice()),
            Self::Map(pairs) => tagged(serializer, "map", &Pairs(pairs)),
        }
    }
}

impl Serialize for Condition {
    /// `[column, function, value]`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (self.column.as_str(), self.function.as_str(), &self.value).serialize(serializer)
    }
}

impl Serialize for Mutation {
    /// `[column, mutator, value]`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (self.column.as_str(), self.mutator.as_str(), &self.value).serialize(serializer)
    }
}

impl Serialize for Operation {
    /// As [`Operation::to_json`], members in the same order.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self {
            Self::Insert {
                table,
                row,
                uuid_name,
                uuid,
            } => {
                map.serialize_entry("op", "insert")?;
                map.serialize_entry("table", table)?;
                map.serialize_entry("row", row)?;
                if let Some(name) = uuid_name {
                    map.serialize_entry("uuid-name", name)?;
                }
                if let Some(uuid) = uuid {
                    map.serialize_entry("uuid", &uuid.to_string())?;
                }
            }
            Self::Select {
                table,
                where_,
                columns,
            } => {
                map.serialize_entry("op", "select")?;
                map.serialize_entry("table", table)?;
                map.serialize_entry("where", where_)?;
                if let Some(columns) = columns {
                    map.serialize_entry("columns", columns)?;
                }
            }
            Self::Update { table, where_, row } => {
                map.serialize_entry("op", "update")?;
                map.serialize_entry("table", table)?;
                map.serialize_entry("where", where_)?;
                map.serialize_entry("row", row)?;
            }
            Self::Mutate {
                table,
                where_,
                mutations,
            } => {
                map.serialize_entry("op", "mutate")?;
                map.serialize_entry("table", table)?;
                map.serialize_entry("where", where_)?;
                map.serialize_entry("mutations", mutations)?;
            }
            Self::Delete { table, where_ } => {
                map.serialize_entry("op", "delete")?;
                map.serialize_entry("table", table)?;
                map.serialize_entry("where", where_)?;
            }
            Self::Wait {
                table,
                where_,
                columns,
                until,
                rows,
                timeout_ms,
            } => {
                map.serialize_entry("op", "wait")?;
                if let Some(timeout) = timeout_ms {
                    map.serialize_entry("timeout", timeout)?;
                }
                map.serialize_entry("table", table)?;
                map.serialize_entry("where", where_)?;
                map.serialize_entry("columns", columns)?;
                map.serialize_entry("until", until.as_str())?;
                map.serialize_entry("rows", rows)?;
            }
            Self::Assert { lock } => {
                map.serialize_entry("op", "assert")?;
                map.serialize_entry("lock", lock)?;
            }
            Self::Comment { comment } => {
                map.serialize_entry("op", "comment")?;
                map.serialize_entry("comment", comment)?;
            }
        }
        map.end()
    }
}

/// The parameters of a `transact` request, `[database, operation...]`, encoded from borrowed
/// operations.
#[derive(Debug, Clone, Copy)]
pub struct TransactParams<'a> {
    /// The database name.
    pub database: &'a str,
    /// The operations, in order.
    pub operations: &'a [Operation],
}

impl Serialize for TransactParams<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.operations.len() + 1))?;
        seq.serialize_element(self.database)?;
        for operation in self.operations {
            seq.serialize_element(operation)?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::protocol::{ConditionFunction, Mutator, Row, WaitUntil};

    fn text<T: Serialize>(value: &T) -> String {
        serde_json::to_string(value).unwrap()
    }

    #[test]
    fn atoms_encode_as_their_json_trees_do() {
        let u = Uuid::parse("6E64754B-83cb-4415-bd01-8c04d103af02").unwrap();
        for atom in [
            Atom::Integer(i64::MIN),
            Atom::Real(1.0),
            Atom::Real(-0.125),
            Atom::Real(f64::NAN),
            Atom::Real(f64::INFINITY),
            Atom::Boolean(false),
            Atom::String("q\"\\\u{1}\u{7f}é".into()),
            Atom::Uuid(u),
            Atom::NamedUuid("row_0".into()),
        ] {
            assert_eq!(text(&atom), atom.to_json().to_string(), "{atom:?}");
        }
        assert_eq!(
            text(&Atom::Uuid(u)),
            r#"["uuid","6e64754b-83cb-4415-bd01-8c04d103af02"]"#
        );
    }

    #[test]
    fn operations_encode_as_their_json_trees_do() {
        let value = Value::Map(vec![(Atom::String("k".into()), Atom::Integer(1))]);
        let row: Row = [("c".to_owned(), value)].into();
        let cond = Condition {
            column: "_uuid".into(),
            function: ConditionFunction::Equal,
            value: Value::Atom(Atom::Uuid(Uuid::from_u128(7))),
        };
        let ops = vec![
            Operation::Insert {
                table: "T".into(),
                row: row.clone(),
                uuid_name: Some("n".into()),
                uuid: None,
            },
            Operation::Insert {
                table: "T".into(),
                row: row.clone(),
                uuid_name: None,
                uuid: Some(Uuid::from_u128(9)),
            },
            Operation::Select {
                table: "T".into(),
                where_: vec![cond.clone()],
                columns: Some(vec!["c".into()]),
            },
            Operation::Update {
                table: "T".into(),
                where_: vec![],
                row: row.clone(),
            },
            Operation::Mutate {
                table: "T".into(),
                where_: vec![cond.clone()],
                mutations: vec![Mutation {
                    column: "c".into(),
                    mutator: Mutator::Delete,
                    value: Value::Set(vec![Atom::Real(2.5)]),
                }],
            },
            Operation::Delete {
                table: "T".into(),
                where_: vec![cond.clone()],
            },
            Operation::Wait {
                table: "T".into(),
                where_: vec![cond],
                columns: vec!["c".into()],
                until: WaitUntil::NotEqual,
                rows: vec![row],
                timeout_ms: Some(0),
            },
            Operation::Assert { lock: "l".into() },
            Operation::Comment {
                comment: "x".into(),
            },
        ];
        for op in &ops {
            assert_eq!(text(op), op.to_json().to_string(), "{op:?}");
        }
        let params = TransactParams {
            database: "OVN_Northbound",
            operations: &ops,
        };
        let mut tree = vec![serde_json::json!("OVN_Northbound")];
        tree.extend(ops.iter().map(Operation::to_json));
        assert_eq!(text(&params), serde_json::Value::Array(tree).to_string());
    }
}
