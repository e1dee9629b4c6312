//! JSON to protobuf: an object written by its field table as the Go type's `Marshal`
//! writes it (fields in number order, map entries by key). Members the table does not
//! know are not written, as the real server would have dropped them when decoding.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::schema::{Field, Kind, Message, Shape};
use super::time;
use super::wire::{put_bytes_field, put_fixed64_field, put_varint_field};

/// A JSON value that does not fit its field's type.
#[derive(Debug)]
pub(crate) struct Unencodable {
    /// The JSON path of the value (`spec.ports[0].port`).
    pub(crate) path: String,
    /// What the field wants.
    pub(crate) why: &'static str,
}

impl Unencodable {
    fn new(why: &'static str) -> Self {
        Self {
            path: String::new(),
            why,
        }
    }

    fn within(mut self, segment: &str) -> Self {
        self.path = if self.path.is_empty() {
            segment.to_owned()
        } else if self.path.starts_with('[') {
            format!("{segment}{}", self.path)
        } else {
            format!("{segment}.{}", self.path)
        };
        self
    }
}

/// Writes `object` as a message of type `message`.
pub(super) fn message(
    object: &Map<String, Value>,
    message: &Message,
    out: &mut Vec<u8>,
) -> Result<(), Unencodable> {
    for field in message.fields {
        self::field(object, field, out).map_err(|e| match field.shape {
            Shape::Inline => e,
            _ => e.within(field.json),
        })?;
    }
    Ok(())
}

fn field(object: &Map<String, Value>, field: &Field, out: &mut Vec<u8>) -> Result<(), Unencodable> {
    if let (Shape::Inline, Kind::Message(inner)) = (field.shape, field.kind) {
        let mut bytes = Vec::new();
        self::message(object, inner, &mut bytes)?;
        if !bytes.is_empty() {
            put_bytes_field(out, field.number, &bytes);
        }
        return Ok(());
    }
    let Some(value) = object.get(field.json).filter(|v| !v.is_null()) else {
        return Ok(());
    };
    match field.shape {
        Shape::Single { .. } | Shape::Inline => single(field.number, field.kind, value, out),
        Shape::Repeated => {
            let Value::Array(items) = value else {
                return Err(Unencodable::new("expected a list"));
            };
            for (index, item) in items.iter().enumerate() {
                single(field.number, field.kind, item, out)
                    .map_err(|e| e.within(&format!("[{index}]")))?;
            }
            Ok(())
        }
        Shape::Map(key_kind) => {
            let Value::Object(map) = value else {
                return Err(Unencodable::new("expected an object"));
            };
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                let mut entry = Vec::new();
                map_key(key_kind, key, &mut entry)?;
                if let Some(item) = map.get(key) {
                    single(2, field.kind, item, &mut entry)
                        .map_err(|e| e.within(&format!("[{key}]")))?;
                }
                put_bytes_field(out, field.number, &entry);
            }
            Ok(())
        }
    }
}

fn map_key(kind: Kind, key: &str, out: &mut Vec<u8>) -> Result<(), Unencodable> {
    match kind {
        Kind::String => {
            put_bytes_field(out, 1, key.as_bytes());
            Ok(())
        }
        Kind::Int32 | Kind::Int64 => {
            let n: i64 = key
                .parse()
                .map_err(|_| Unencodable::new("expected an integer map key"))?;
            put_varint_field(out, 1, n.cast_unsigned());
            Ok(())
        }
        _ => Err(Unencodable::new("unsupported map key type")),
    }
}

fn integer(value: &Value) -> Result<i64, Unencodable> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .ok_or_else(|| Unencodable::new("expected an integer")),
        _ => Err(Unencodable::new("expected an integer")),
    }
}

fn string(value: &Value) -> Result<&str, Unencodable> {
    value
        .as_str()
        .ok_or_else(|| Unencodable::new("expected a string"))
}

/// One value of `kind` as field `number`.
fn single(number: u32, kind: Kind, value: &Value, out: &mut Vec<u8>) -> Result<(), Unencodable> {
    match kind {
        Kind::String => put_bytes_field(out, number, string(value)?.as_bytes()),
        Kind::Bytes => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(string(value)?)
                .map_err(|_| Unencodable::new("expected base64"))?;
            put_bytes_field(out, number, &bytes);
        }
        Kind::Bool => {
            let flag = value
                .as_bool()
                .ok_or_else(|| Unencodable::new("expected a bool"))?;
            put_varint_field(out, number, u64::from(flag));
        }
        Kind::Int32 | Kind::Int64 => put_varint_field(out, number, integer(value)?.cast_unsigned()),
        Kind::Float64 => {
            let f = value
                .as_f64()
                .ok_or_else(|| Unencodable::new("expected a number"))?;
            put_fixed64_field(out, number, f.to_bits());
        }
        Kind::Message(inner) => {
            let Value::Object(object) = value else {
                return Err(Unencodable::new("expected an object"));
            };
            let mut bytes = Vec::new();
            message(object, inner, &mut bytes)?;
            put_bytes_field(out, number, &bytes);
        }
        Kind::Time | Kind::MicroTime => {
            let micro = matches!(kind, Kind::MicroTime);
            let (seconds, nanos) = time::parse(string(value)?, micro)
                .ok_or_else(|| Unencodable::new("expected an RFC 3339 time"))?;
            let mut bytes = Vec::new();
            put_varint_field(&mut bytes, 1, seconds.cast_unsigned());
            put_varint_field(&mut bytes, 2, i64::from(nanos).cast_unsigned());
            put_bytes_field(out, number, &bytes);
        }
        Kind::Quantity => {
            let text = match value {
                Value::String(text) => text.clone(),
                // A number where a quantity belongs reads as that quantity in Go.
                Value::Number(n) => n.to_string(),
                _ => return Err(Unencodable::new("expected a quantity")),
            };
            let mut bytes = Vec::new();
            put_bytes_field(&mut bytes, 1, text.as_bytes());
            put_bytes_field(out, number, &bytes);
        }
        Kind::IntOrString => {
            let mut bytes = Vec::new();
            match value {
                Value::String(text) => {
                    put_varint_field(&mut bytes, 1, 1);
                    put_varint_field(&mut bytes, 2, 0);
                    put_bytes_field(&mut bytes, 3, text.as_bytes());
                }
                other => {
                    put_varint_field(&mut bytes, 1, 0);
                    put_varint_field(&mut bytes, 2, integer(other)?.cast_unsigned());
                    put_bytes_field(&mut bytes, 3, b"");
                }
            }
            put_bytes_field(out, number, &bytes);
        }
        Kind::RawJson => {
            let raw = serde_json::to_vec(value).map_err(|_| Unencodable::new("expected JSON"))?;
            let mut bytes = Vec::new();
            put_bytes_field(&mut bytes, 1, &raw);
            put_bytes_field(out, number, &bytes);
        }
        Kind::SchemaOrArray(schema) | Kind::SchemaOrStringArray(schema) => {
            let mut bytes = Vec::new();
            match value {
                Value::Array(items) => {
                    for (index, item) in items.iter().enumerate() {
                        let item_kind = match kind {
                            Kind::SchemaOrArray(_) => Kind::Message(schema),
                            _ => Kind::String,
                        };
                        single(2, item_kind, item, &mut bytes)
                            .map_err(|e| e.within(&format!("[{index}]")))?;
                    }
                }
                other => single(1, Kind::Message(schema), other, &mut bytes)?,
            }
            put_bytes_field(out, number, &bytes);
        }
        Kind::SchemaOrBool(schema) => {
            let mut bytes = Vec::new();
            match value {
                Value::Bool(flag) => put_varint_field(&mut bytes, 1, u64::from(*flag)),
                other => {
                    put_varint_field(&mut bytes, 1, 1);
                    single(2, Kind::Message(schema), other, &mut bytes)?;
                }
            }
            put_bytes_field(out, number, &bytes);
        }
    }
    Ok(())
}
