//! OVSDB values (RFC 7047 §5.1): atoms, sets, maps and rows, with exact JSON encoding.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value as Json;

/// Errors decoding an OVSDB value from JSON.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// A UUID string is not in the 8-4-4-4-12 hexadecimal form.
    #[error("invalid UUID {value:?}: expected 36 characters in 8-4-4-4-12 hexadecimal form")]
    InvalidUuid {
        /// The rejected text.
        value: String,
    },
    /// A JSON text cannot be read as an OVSDB atom.
    #[error("invalid atom {json}: {reason}")]
    InvalidAtom {
        /// The rejected JSON, rendered.
        json: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A JSON text cannot be read as an OVSDB value.
    #[error("invalid value {json}: {reason}")]
    InvalidValue {
        /// The rejected JSON, rendered.
        json: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A row is not a JSON object.
    #[error("invalid row {json}: expected a JSON object of column names to values")]
    InvalidRow {
        /// The rejected JSON, rendered.
        json: String,
    },
    /// A column of a row holds an invalid value.
    #[error("invalid value in column {column:?}: {source}")]
    Column {
        /// The column name.
        column: String,
        /// The underlying error.
        #[source]
        source: Box<ValueError>,
    },
}

/// A UUID, held as 128 bits (rows are many, so the replica keeps them compact); displayed in
/// the canonical lower-case 8-4-4-4-12 form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Uuid(u128);

impl Uuid {
    /// Parses and validates a UUID in 8-4-4-4-12 hexadecimal form (either case).
    pub fn parse(text: &str) -> Result<Self, ValueError> {
        let invalid = || ValueError::InvalidUuid {
            value: text.to_owned(),
        };
        let bytes = text.as_bytes();
        let hyphens = [8, 13, 18, 23].map(|i| bytes.get(i).copied());
        if bytes.len() != 36 || hyphens != [Some(b'-'); 4] {
            return Err(invalid());
        }
        let groups = [0..8, 9..13, 14..18, 19..23, 24..36].map(|range| bytes.get(range));
        let mut bits: u128 = 0;
        let mut bad: u8 = 0;
        for group in groups {
            for &b in group.unwrap_or_default() {
                let value = HEX_VALUES[usize::from(b)];
                bad |= value;
                bits = (bits << 4) | u128::from(value & 0x0f);
            }
        }
        if bad & 0xf0 != 0 {
            return Err(invalid());
        }
        Ok(Self(bits))
    }

    /// Builds a UUID from its 128 bits.
    pub const fn from_u128(bits: u128) -> Self {
        Self(bits)
    }

    /// The 128 bits.
    pub const fn as_u128(self) -> u128 {
        self.0
    }

    /// The canonical text, lower-case 8-4-4-4-12, without allocating.
    pub(crate) fn hyphenated(self) -> [u8; 36] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [b'-'; 36];
        let mut bits = self.0;
        // Fill from the last digit backwards, skipping the hyphens.
        for (index, slot) in out.iter_mut().enumerate().rev() {
            if matches!(index, 8 | 13 | 18 | 23) {
                continue;
            }
            *slot = HEX.get((bits & 0xf) as usize).copied().unwrap_or(b'0');
            bits >>= 4;
        }
        out
    }
}

/// The value of each byte as a hexadecimal digit, or `0xff`.
const HEX_VALUES: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.hyphenated();
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

/// An OVSDB atom (RFC 7047 §5.1 `<atom>`).
#[derive(Debug, Clone, PartialEq)]
pub enum Atom {
    /// `<integer>`.
    Integer(i64),
    /// `<real>`.
    Real(f64),
    /// `<boolean>`.
    Boolean(bool),
    /// `<string>`.
    String(String),
    /// `["uuid", "<uuid>"]`.
    Uuid(Uuid),
    /// `["named-uuid", "<id>"]`: a row inserted earlier in the same transaction.
    NamedUuid(String),
}

impl Atom {
    /// Encodes the atom as RFC 7047 JSON. Non-finite reals (not representable in JSON) encode as `null`.
    pub fn to_json(&self) -> Json {
        match self {
            Self::Integer(i) => Json::from(*i),
            Self::Real(r) => serde_json::Number::from_f64(*r).map_or(Json::Null, Json::Number),
            Self::Boolean(b) => Json::Bool(*b),
            Self::String(s) => Json::String(s.clone()),
            Self::Uuid(u) => Json::Array(vec![Json::from("uuid"), Json::from(u.to_string())]),
            Self::NamedUuid(n) => {
                Json::Array(vec![Json::from("named-uuid"), Json::from(n.as_str())])
            }
        }
    }

    /// Decodes an atom. JSON integers that fit `i64` decode as [`Atom::Integer`], other numbers as
    /// [`Atom::Real`].
    pub fn from_json(json: &Json) -> Result<Self, ValueError> {
        let invalid = |reason| ValueError::InvalidAtom {
            json: json.to_string(),
            reason,
        };
        match json {
            Json::Bool(b) => Ok(Self::Boolean(*b)),
            Json::String(s) => Ok(Self::String(s.clone())),
            Json::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => Ok(Self::Integer(i)),
                (None, Some(r)) => Ok(Self::Real(r)),
                (None, None) => Err(invalid("number is neither a 64-bit integer nor a real")),
            },
            Json::Array(items) => match items.as_slice() {
                [Json::String(tag), Json::String(text)] if tag == "uuid" => {
                    Uuid::parse(text).map(Self::Uuid)
                }
                [Json::String(tag), Json::String(text)] if tag == "named-uuid" => {
                    Ok(Self::NamedUuid(text.clone()))
                }
                _ => Err(invalid(
                    "arrays are atoms only as [\"uuid\", <string>] or [\"named-uuid\", <string>]",
                )),
            },
            Json::Null => Err(invalid("null is not an atom")),
            Json::Object(_) => Err(invalid("an object is not an atom")),
        }
    }
}

/// An OVSDB value (RFC 7047 §5.1 `<value>`): an atom, a set of atoms or a map of atom pairs.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A single atom.
    Atom(Atom),
    /// `["set", [<atom>...]]`.
    Set(Vec<Atom>),
    /// `["map", [[<atom>, <atom>]...]]`.
    Map(Vec<(Atom, Atom)>),
}

impl Value {
    /// Encodes the value. Sets always encode in the `["set", [...]]` form, never bare.
    pub fn to_json(&self) -> Json {
        match self {
            Self::Atom(a) => a.to_json(),
            Self::Set(atoms) => Json::Array(vec![
                Json::from("set"),
                Json::Array(atoms.iter().map(Atom::to_json).collect()),
            ]),
            Self::Map(pairs) => Json::Array(vec![
                Json::from("map"),
                Json::Array(
                    pairs
                        .iter()
                        .map(|(k, v)| Json::Array(vec![k.to_json(), v.to_json()]))
                        .collect(),
                ),
            ]),
        }
    }

    /// Decodes a value. A bare atom decodes as [`Value::Atom`] (which a set column reads as a
    /// one-element set, see [`Value::into_set`]).
    pub fn from_json(json: &Json) -> Result<Self, ValueError> {
        let invalid = |reason| ValueError::InvalidValue {
            json: json.to_string(),
            reason,
        };
        if let Json::Array(items) = json {
            match items.as_slice() {
                [Json::String(tag), Json::Array(members)] if tag == "set" => {
                    return members
                        .iter()
                        .map(Atom::from_json)
                        .collect::<Result<_, _>>()
                        .map(Self::Set);
                }
                [Json::String(tag), Json::Array(pairs)] if tag == "map" => {
                    return pairs
                        .iter()
                        .map(|pair| match pair {
                            Json::Array(kv) => match kv.as_slice() {
                                [k, v] => Ok((Atom::from_json(k)?, Atom::from_json(v)?)),
                                _ => Err(invalid("map pairs must be 2-element arrays")),
                            },
                            _ => Err(invalid("map pairs must be 2-element arrays")),
                        })
                        .collect::<Result<_, _>>()
                        .map(Self::Map);
                }
                [Json::String(tag), _] if tag == "set" || tag == "map" => {
                    return Err(invalid("set and map contents must be arrays"));
                }
                _ => {}
            }
        }
        Atom::from_json(json).map(Self::Atom)
    }

    /// Views the value as a set: a bare atom is a one-element set; a map is not a set.
    pub fn into_set(self) -> Option<Vec<Atom>> {
        match self {
            Self::Atom(a) => Some(vec![a]),
            Self::Set(s) => Some(s),
            Self::Map(_) => None,
        }
    }
}

impl From<Atom> for Value {
    fn from(atom: Atom) -> Self {
        Self::Atom(atom)
    }
}

/// A table row: column name to value.
pub type Row = BTreeMap<String, Value>;

/// Encodes a row as a JSON object.
pub fn row_to_json(row: &Row) -> Json {
    Json::Object(row.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
}

/// Decodes a row from a JSON object.
pub fn row_from_json(json: &Json) -> Result<Row, ValueError> {
    let Json::Object(map) = json else {
        return Err(ValueError::InvalidRow {
            json: json.to_string(),
        });
    };
    map.iter()
        .map(|(column, v)| {
            Value::from_json(v)
                .map(|value| (column.clone(), value))
                .map_err(|e| ValueError::Column {
                    column: column.clone(),
                    source: Box::new(e),
                })
        })
        .collect()
}
