//! `transact` results decoded straight from their JSON text. Successful results are decoded in
//! one pass; anything else (an operation's or the commit's error, malformed results) goes to
//! [`decode_transact_result`], whose errors carry the server's message.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::decode_update::from_slice_seed;
use super::operation::{OperationResult, TransactError, decode_transact_result};
use super::value::{Atom, Row, Value};

/// [`decode_transact_result`] from the JSON text of the `result`.
pub fn decode_transact_result_slice(
    operations: usize,
    result: &[u8],
) -> Result<Vec<OperationResult>, TransactError> {
    if let Ok(results) = from_slice_seed(result, Results { operations }) {
        return Ok(results);
    }
    let json = serde_json::from_slice(result).map_err(|e| TransactError::Json {
        reason: e.to_string(),
    })?;
    decode_transact_result(operations, &json)
}

/// The one-pass decoder fails with this when it leaves the input to the tree decoder.
fn unsupported<E: de::Error>() -> E {
    E::custom("left to the tree decoder")
}

/// The result array of a transaction of `operations` operations that succeeded.
struct Results {
    operations: usize,
}

impl<'de> DeserializeSeed<'de> for Results {
    type Value = Vec<OperationResult>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Results {
    type Value = Vec<OperationResult>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of operation results")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(self.operations);
        let mut index = 0;
        while let Some(item) = seq.next_element_seed(Item)? {
            // Null elements (after a failed operation) have no result; results past the
            // operations (none on success) are ignored.
            if let Some(result) = item
                && index < self.operations
            {
                out.push(result);
            }
            index += 1;
        }
        if out.len() < self.operations {
            return Err(unsupported());
        }
        Ok(out)
    }
}

/// One element of the result array: `null` or a successful operation's object.
struct Item;

impl<'de> DeserializeSeed<'de> for Item {
    type Value = Option<OperationResult>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

#[derive(Debug, Clone, Copy)]
enum ResultKey {
    Error,
    Uuid,
    Rows,
    Count,
    Other,
}

struct ResultKeyVisitor;

impl Visitor<'_> for ResultKeyVisitor {
    type Value = ResultKey;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<ResultKey, E> {
        Ok(match key {
            "error" => ResultKey::Error,
            "uuid" => ResultKey::Uuid,
            "rows" => ResultKey::Rows,
            "count" => ResultKey::Count,
            _ => ResultKey::Other,
        })
    }
}

impl<'de> de::Deserialize<'de> for ResultKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(ResultKeyVisitor)
    }
}

impl<'de> Visitor<'de> for Item {
    type Value = Option<OperationResult>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null or an operation result object")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let (mut uuid, mut rows, mut count) = (None, None, None);
        while let Some(key) = map.next_key::<ResultKey>()? {
            match key {
                ResultKey::Error => return Err(unsupported()),
                ResultKey::Uuid => uuid = Some(map.next_value::<Value>()?),
                ResultKey::Rows => rows = Some(map.next_value::<Vec<Row>>()?),
                ResultKey::Count => count = Some(map.next_value::<u64>()?),
                ResultKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        // The same precedence as the tree decoder: uuid, rows, count.
        Ok(Some(match (uuid, rows, count) {
            (Some(Value::Atom(Atom::Uuid(u))), _, _) => OperationResult::Inserted(u),
            (Some(_), _, _) => return Err(unsupported()),
            (None, Some(rows), _) => OperationResult::Rows(rows),
            (None, None, Some(count)) => OperationResult::Count(count),
            (None, None, None) => OperationResult::Empty,
        }))
    }
}
