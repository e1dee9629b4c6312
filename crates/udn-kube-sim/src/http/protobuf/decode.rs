//! Protobuf to JSON: a message read by its field table into the JSON object Go's encoder
//! would print for the same Go value.
//!
//! Go clients write every non-pointer field, zero or not. A zero value is dropped when the
//! field's JSON tag has `omitempty` (Go's JSON would omit it too) and kept otherwise; a
//! pointer field on the wire is always a value (`ready: false` of an endpoint differs from
//! no `ready`). Zero times (`null` in Go's JSON), empty int-or-strings and empty raw JSON
//! are dropped.

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use super::Malformed;
use super::schema::{Field, Kind, Message, Shape};
use super::time;
use super::wire::{Reader, Wire};

/// The JSON object of `bytes`, a message of type `message`.
pub(super) fn message(bytes: &[u8], message: &Message) -> Result<Map<String, Value>, Malformed> {
    let mut out = Map::new();
    fill(bytes, message, &mut out)?;
    Ok(out)
}

/// Adds the fields of `bytes` to `out` (an inlined struct adds to its parent's object).
fn fill(bytes: &[u8], message: &Message, out: &mut Map<String, Value>) -> Result<(), Malformed> {
    for item in Reader(bytes) {
        let (number, wire) = item?;
        let Some(field) = message.field(number) else {
            continue;
        };
        self::field(field, wire, out).map_err(|e| e.at(message, field))?;
    }
    Ok(())
}

/// Adds one occurrence of `field` to `out`.
fn field(field: &Field, wire: Wire<'_>, out: &mut Map<String, Value>) -> Result<(), Malformed> {
    match field.shape {
        Shape::Inline => {
            let (Kind::Message(inner), Wire::Bytes(bytes)) = (field.kind, wire) else {
                return Err(Malformed::new("an inlined struct is not a message"));
            };
            fill(bytes, inner, out)?;
        }
        Shape::Single { pointer, omitempty } => {
            let Some(value) = value(field.kind, wire)?.filter(|v| !v.is_null()) else {
                return Ok(());
            };
            if !pointer && omitempty && is_zero(field.kind, &value) {
                out.remove(field.json);
            } else {
                out.insert(field.json.to_owned(), value);
            }
        }
        Shape::Repeated => repeated(field, wire, out)?,
        Shape::Map(key_kind) => {
            let Wire::Bytes(entry) = wire else {
                return Err(Malformed::new("a map entry is not a message"));
            };
            let (key, value) = map_entry(entry, key_kind, field.kind)?;
            let map = out
                .entry(field.json)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(map) = map {
                map.insert(key, value);
            }
        }
    }
    Ok(())
}

fn repeated(field: &Field, wire: Wire<'_>, out: &mut Map<String, Value>) -> Result<(), Malformed> {
    let list = out
        .entry(field.json)
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(items) = list else {
        return Ok(());
    };
    match (field.kind, wire) {
        // A packed list of numbers.
        (Kind::Int32 | Kind::Int64 | Kind::Bool, Wire::Bytes(bytes)) => {
            let mut reader = Reader(bytes);
            while !reader.0.is_empty() {
                let n = reader.varint()?;
                if let Some(item) = value(field.kind, Wire::Varint(n))? {
                    items.push(item);
                }
            }
        }
        (kind, wire) => {
            // An element with no JSON form of its own (an empty int-or-string) still holds
            // its place in the list, as the Go slice does.
            items.push(value(kind, wire)?.unwrap_or_else(|| zero_element(kind)));
        }
    }
    Ok(())
}

fn zero_element(kind: Kind) -> Value {
    match kind {
        Kind::IntOrString => Value::from(0),
        _ => Value::Null,
    }
}

fn map_entry(entry: &[u8], key_kind: Kind, value_kind: Kind) -> Result<(String, Value), Malformed> {
    let (mut key, mut val) = (String::new(), None);
    for item in Reader(entry) {
        match item? {
            (1, wire) => {
                key = match value(key_kind, wire)? {
                    Some(Value::String(text)) => text,
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
            }
            (2, wire) => val = value(value_kind, wire)?,
            _ => {}
        }
    }
    let val = match val {
        Some(v) => v,
        None => empty_value(value_kind)?,
    };
    Ok((key, val))
}

/// The value of a map entry that has none on the wire (a zero value).
fn empty_value(kind: Kind) -> Result<Value, Malformed> {
    Ok(match kind {
        Kind::String => Value::String(String::new()),
        Kind::Bytes => Value::String(String::new()),
        Kind::Quantity => Value::String("0".to_owned()),
        _ => value(kind, Wire::Bytes(&[]))?.unwrap_or(Value::Null),
    })
}

/// Whether Go's `omitempty` drops this value.
fn is_zero(kind: Kind, value: &Value) -> bool {
    match (kind, value) {
        (Kind::String | Kind::Bytes, Value::String(s)) => s.is_empty(),
        (Kind::Bool, Value::Bool(b)) => !b,
        (Kind::Int32 | Kind::Int64, Value::Number(n)) => n.as_i64() == Some(0),
        (Kind::Float64, Value::Number(n)) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

fn utf8(bytes: &[u8]) -> Result<String, Malformed> {
    String::from_utf8(bytes.to_vec()).map_err(|_| Malformed::new("a string is not UTF-8"))
}

/// One value of `kind`; `None` when it has no JSON form (zero time, empty raw JSON).
fn value(kind: Kind, wire: Wire<'_>) -> Result<Option<Value>, Malformed> {
    let value = match (kind, wire) {
        (Kind::String, Wire::Bytes(b)) => Value::String(utf8(b)?),
        (Kind::Bytes, Wire::Bytes(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Kind::Bool, Wire::Varint(n)) => Value::Bool(n != 0),
        (Kind::Int32, Wire::Varint(n)) => Value::from(i64::from(n as u32 as i32)),
        (Kind::Int64, Wire::Varint(n)) => Value::from(n.cast_signed()),
        (Kind::Float64, Wire::Fixed64(bits)) => Number::from_f64(f64::from_bits(bits))
            .map(Value::Number)
            .ok_or_else(|| Malformed::new("a double is not finite"))?,
        (Kind::Message(inner), Wire::Bytes(b)) => Value::Object(message(b, inner)?),
        (Kind::Time | Kind::MicroTime, Wire::Bytes(b)) => {
            return timestamp(b, matches!(kind, Kind::MicroTime));
        }
        (Kind::Quantity, Wire::Bytes(b)) => {
            let text = single_string(b)?;
            return Ok((!text.is_empty()).then_some(Value::String(text)));
        }
        (Kind::IntOrString, Wire::Bytes(b)) => return int_or_string(b),
        (Kind::RawJson, Wire::Bytes(b)) => return raw_json(b),
        (Kind::SchemaOrArray(schema), Wire::Bytes(b)) => schema_or(b, schema, Or::Array)?,
        (Kind::SchemaOrBool(schema), Wire::Bytes(b)) => schema_or(b, schema, Or::Bool)?,
        (Kind::SchemaOrStringArray(schema), Wire::Bytes(b)) => {
            schema_or(b, schema, Or::StringArray)?
        }
        _ => return Err(Malformed::new("a field has an unexpected wire type")),
    };
    Ok(Some(value))
}

/// The string field 1 of a message (`Quantity{string}`).
fn single_string(bytes: &[u8]) -> Result<String, Malformed> {
    let mut text = String::new();
    for item in Reader(bytes) {
        if let (1, Wire::Bytes(b)) = item? {
            text = utf8(b)?;
        }
    }
    Ok(text)
}

fn timestamp(bytes: &[u8], micro: bool) -> Result<Option<Value>, Malformed> {
    if bytes.is_empty() {
        // Go's zero time marshals as no bytes.
        return Ok(None);
    }
    let (mut seconds, mut nanos) = (0i64, 0i32);
    for item in Reader(bytes) {
        match item? {
            (1, Wire::Varint(s)) => seconds = s.cast_signed(),
            (2, Wire::Varint(n)) => nanos = n as u32 as i32,
            _ => {}
        }
    }
    Ok(time::format(seconds, nanos, micro).map(Value::String))
}

fn int_or_string(bytes: &[u8]) -> Result<Option<Value>, Malformed> {
    let (mut is_string, mut int, mut string) = (false, 0i64, String::new());
    for item in Reader(bytes) {
        match item? {
            (1, Wire::Varint(t)) => is_string = t == 1,
            (2, Wire::Varint(i)) => int = i64::from(i as u32 as i32),
            (3, Wire::Bytes(s)) => string = utf8(s)?,
            _ => {}
        }
    }
    Ok(match (is_string, int) {
        (true, _) if string.is_empty() => None,
        (true, _) => Some(Value::String(string)),
        (false, 0) => None,
        (false, int) => Some(Value::from(int)),
    })
}

fn raw_json(bytes: &[u8]) -> Result<Option<Value>, Malformed> {
    let mut raw: &[u8] = &[];
    for item in Reader(bytes) {
        if let (1, Wire::Bytes(b)) = item? {
            raw = b;
        }
    }
    if raw.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(raw)
        .map(Some)
        .map_err(|_| Malformed::new("an embedded JSON value is not JSON"))
}

#[derive(Clone, Copy)]
enum Or {
    Array,
    Bool,
    StringArray,
}

/// `JSONSchemaPropsOr{Array,Bool,StringArray}` as their `MarshalJSON` prints them: the
/// list (or bool) when set, the schema otherwise.
fn schema_or(bytes: &[u8], schema: &Message, or: Or) -> Result<Value, Malformed> {
    let (mut single, mut list, mut allows) = (None, Vec::new(), false);
    for item in Reader(bytes) {
        match (or, item?) {
            (Or::Bool, (1, Wire::Varint(b))) => allows = b != 0,
            (Or::Bool, (2, Wire::Bytes(b)))
            | (Or::Array | Or::StringArray, (1, Wire::Bytes(b))) => {
                single = Some(Value::Object(message(b, schema)?));
            }
            (Or::Array, (2, Wire::Bytes(b))) => list.push(Value::Object(message(b, schema)?)),
            (Or::StringArray, (2, Wire::Bytes(b))) => list.push(Value::String(utf8(b)?)),
            _ => {}
        }
    }
    Ok(match or {
        Or::Bool => single.unwrap_or(Value::Bool(allows)),
        Or::Array | Or::StringArray if !list.is_empty() => Value::Array(list),
        Or::Array | Or::StringArray => single.unwrap_or(Value::Null),
    })
}
