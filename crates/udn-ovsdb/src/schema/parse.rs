//! Reading an `.ovsschema` / `get_schema` reply (RFC 7047 §3.2) into [`DbSchema`].

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};

use super::error::SchemaError;
use super::types::{
    AtomicType, BaseType, ColumnSchema, ColumnType, DbSchema, RefType, TableSchema,
};
use crate::protocol::{Atom, Value};

impl DbSchema {
    /// Parses a schema from its JSON form.
    pub fn parse(json: &Json) -> Result<Self, SchemaError> {
        let object = as_object(json, "schema")?;
        let name = string_field(object, "name", "schema")?;
        let version = string_field(object, "version", "schema")?;
        let tables = as_object(field(object, "tables", "schema")?, "schema tables")?
            .iter()
            .map(|(table, json)| parse_table(table, json).map(|t| (table.clone(), t)))
            .collect::<Result<BTreeMap<_, _>, _>>()?;
        Ok(Self {
            name,
            version,
            tables,
        })
    }

    /// Parses a schema from JSON text (a vendored `.ovsschema` file).
    pub fn from_text(text: &str) -> Result<Self, SchemaError> {
        let json: Json = serde_json::from_str(text).map_err(|err| SchemaError::Invalid {
            at: "schema".to_owned(),
            reason: format!("not JSON: {err}"),
        })?;
        Self::parse(&json)
    }
}

fn invalid(at: &str, reason: impl Into<String>) -> SchemaError {
    SchemaError::Invalid {
        at: at.to_owned(),
        reason: reason.into(),
    }
}

fn as_object<'a>(json: &'a Json, at: &str) -> Result<&'a Map<String, Json>, SchemaError> {
    json.as_object()
        .ok_or_else(|| invalid(at, "expected a JSON object"))
}

fn field<'a>(object: &'a Map<String, Json>, key: &str, at: &str) -> Result<&'a Json, SchemaError> {
    object
        .get(key)
        .ok_or_else(|| invalid(at, format!("missing {key:?}")))
}

fn string_field(object: &Map<String, Json>, key: &str, at: &str) -> Result<String, SchemaError> {
    field(object, key, at)?
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| invalid(at, format!("{key:?} must be a string")))
}

fn parse_table(name: &str, json: &Json) -> Result<TableSchema, SchemaError> {
    let at = format!("table {name}");
    let object = as_object(json, &at)?;
    let columns = as_object(field(object, "columns", &at)?, &at)?
        .iter()
        .map(|(column, json)| {
            parse_column(&format!("column {name}.{column}"), json).map(|c| (column.clone(), c))
        })
        .collect::<Result<BTreeMap<_, _>, _>>()?;
    let is_root = match object.get("isRoot") {
        None => false,
        Some(Json::Bool(b)) => *b,
        Some(_) => return Err(invalid(&at, "\"isRoot\" must be a boolean")),
    };
    let indexes = match object.get("indexes") {
        None => Vec::new(),
        Some(Json::Array(indexes)) => indexes
            .iter()
            .map(|index| {
                index
                    .as_array()
                    .and_then(|cols| {
                        cols.iter()
                            .map(|c| c.as_str().map(str::to_owned))
                            .collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| invalid(&at, "indexes must be arrays of column names"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(invalid(&at, "\"indexes\" must be an array")),
    };
    Ok(TableSchema {
        columns,
        is_root,
        indexes,
    })
}

fn parse_column(at: &str, json: &Json) -> Result<ColumnSchema, SchemaError> {
    let object = as_object(json, at)?;
    let flag = |key: &str, default: bool| match object.get(key) {
        None => Ok(default),
        Some(Json::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid(at, format!("{key:?} must be a boolean"))),
    };
    Ok(ColumnSchema {
        ty: parse_type(at, field(object, "type", at)?)?,
        ephemeral: flag("ephemeral", false)?,
        mutable: flag("mutable", true)?,
    })
}

fn parse_type(at: &str, json: &Json) -> Result<ColumnType, SchemaError> {
    if let Json::String(_) = json {
        return Ok(ColumnType {
            key: parse_base(at, json)?,
            value: None,
            min: 1,
            max: Some(1),
        });
    }
    let object = as_object(json, at)?;
    let key = parse_base(at, field(object, "key", at)?)?;
    let value = object.get("value").map(|v| parse_base(at, v)).transpose()?;
    let min = match object.get("min") {
        None => 1,
        Some(json) => json
            .as_u64()
            .filter(|m| *m <= 1)
            .ok_or_else(|| invalid(at, "\"min\" must be 0 or 1"))?,
    };
    let max =
        match object.get("max") {
            None => Some(1),
            Some(Json::String(s)) if s == "unlimited" => None,
            Some(json) => Some(json.as_u64().filter(|m| *m >= 1 && *m >= min).ok_or_else(
                || invalid(at, "\"max\" must be a positive integer or \"unlimited\""),
            )?),
        };
    Ok(ColumnType {
        key,
        value,
        min,
        max,
    })
}

fn parse_atomic(at: &str, json: &Json) -> Result<AtomicType, SchemaError> {
    match json.as_str() {
        Some("integer") => Ok(AtomicType::Integer),
        Some("real") => Ok(AtomicType::Real),
        Some("boolean") => Ok(AtomicType::Boolean),
        Some("string") => Ok(AtomicType::String),
        Some("uuid") => Ok(AtomicType::Uuid),
        _ => Err(invalid(
            at,
            format!("unknown atomic type {json}: expected integer, real, boolean, string or uuid"),
        )),
    }
}

fn parse_base(at: &str, json: &Json) -> Result<BaseType, SchemaError> {
    if let Json::String(_) = json {
        return Ok(BaseType {
            atomic: parse_atomic(at, json)?,
            ref_table: None,
            ref_type: RefType::Strong,
            enum_values: None,
        });
    }
    let object = as_object(json, at)?;
    let atomic = parse_atomic(at, field(object, "type", at)?)?;
    let ref_table = match object.get("refTable") {
        None => None,
        Some(Json::String(t)) => Some(t.clone()),
        Some(_) => return Err(invalid(at, "\"refTable\" must be a string")),
    };
    let ref_type = match object.get("refType").and_then(Json::as_str) {
        None | Some("strong") => RefType::Strong,
        Some("weak") => RefType::Weak,
        Some(other) => {
            return Err(invalid(
                at,
                format!("unknown refType {other:?}: expected strong or weak"),
            ));
        }
    };
    let enum_values = object
        .get("enum")
        .map(|json| {
            Value::from_json(json)
                .map(|value| match value {
                    Value::Atom(atom) => vec![atom],
                    Value::Set(atoms) => atoms,
                    Value::Map(pairs) => pairs.into_iter().map(|(k, _)| k).collect(),
                })
                .map_err(|err| invalid(at, format!("invalid enum: {err}")))
        })
        .transpose()?;
    Ok(BaseType {
        atomic,
        ref_table,
        ref_type,
        enum_values,
    })
}

/// The atoms a schema enum allows (for tests and generated code).
pub fn enum_strings(base: &BaseType) -> Vec<String> {
    base.enum_values
        .iter()
        .flatten()
        .filter_map(|atom| match atom {
            Atom::String(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}
