//! Monitor replies and update notifications decoded straight from their JSON text.
//!
//! The initial contents of a big database and the updates of a busy one are tens of megabytes:
//! these decoders build the [`TableUpdates`] directly instead of parsing a `serde_json::Value`
//! tree and converting it. They accept exactly what the tree decoders ([`TableUpdates::from_v2_json`]
//! and friends) accept and give the same values; input they do not take in one pass (anything
//! malformed, and oddities such as a row UUID given twice) is handed to the tree decoder, so
//! errors are the tree decoder's, naming what is wrong.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value as Json;

use super::decode_value::{OptionalRowSeed, RowSeed, Scratch};
use super::update::{MonitorSinceReply, MonitorUpdate, RowUpdate, TableUpdates, UpdateError};
use super::value::Uuid;

/// Runs `seed` over the whole of `bytes` (trailing whitespace only).
/// Text that is valid UTF-8 as a whole is read as a `str`, which spares the parser checking
/// every string.
pub(super) fn from_slice_seed<'de, S: DeserializeSeed<'de>>(
    bytes: &'de [u8],
    seed: S,
) -> Result<S::Value, serde_json::Error> {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            let mut deserializer = serde_json::Deserializer::from_str(text);
            let value = seed.deserialize(&mut deserializer)?;
            deserializer.end()?;
            Ok(value)
        }
        Err(_) => {
            let mut deserializer = serde_json::Deserializer::from_slice(bytes);
            let value = seed.deserialize(&mut deserializer)?;
            deserializer.end()?;
            Ok(value)
        }
    }
}

/// Parses `bytes` as a JSON tree for the tree decoders.
fn tree(what: &'static str, bytes: &[u8]) -> Result<Json, UpdateError> {
    serde_json::from_slice(bytes).map_err(|e| UpdateError::Json {
        what,
        reason: e.to_string(),
    })
}

/// RFC 7047 `<table-updates>` or `<table-updates2>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    V1,
    V2,
}

impl TableUpdates {
    /// [`TableUpdates::from_v1_json`] from the JSON text.
    pub fn from_v1_slice(bytes: &[u8]) -> Result<Self, UpdateError> {
        from_slice_seed(bytes, Tables(Form::V1, &mut Scratch::default()))
            .or_else(|_| Self::from_v1_json(&tree("table-updates", bytes)?))
    }

    /// [`TableUpdates::from_v2_json`] from the JSON text.
    pub fn from_v2_slice(bytes: &[u8]) -> Result<Self, UpdateError> {
        from_slice_seed(bytes, Tables(Form::V2, &mut Scratch::default()))
            .or_else(|_| Self::from_v2_json(&tree("table-updates2", bytes)?))
    }
}

impl MonitorUpdate {
    /// [`MonitorUpdate::from_notification`] from the JSON text of the parameters (an array).
    pub fn from_notification_slice(
        method: &str,
        params: &[u8],
    ) -> Result<Option<Self>, UpdateError> {
        let (form, with_txn) = match method {
            "update" => (Form::V1, false),
            "update2" => (Form::V2, false),
            "update3" => (Form::V2, true),
            _ => return Ok(None),
        };
        let scratch = &mut Scratch::default();
        let seed = Notification {
            form,
            with_txn,
            scratch,
        };
        if let Ok(update) = from_slice_seed(params, seed) {
            return Ok(Some(update));
        }
        match tree("update notification", params)? {
            Json::Array(params) => Self::from_notification(method, &params),
            other => Err(UpdateError::Malformed {
                what: "update notification",
                json: other.to_string(),
                reason: "parameters must be an array",
            }),
        }
    }
}

impl MonitorSinceReply {
    /// [`MonitorSinceReply::from_json`] from the JSON text.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, UpdateError> {
        from_slice_seed(bytes, SinceReply(&mut Scratch::default()))
            .or_else(|_| Self::from_json(&tree("monitor_cond_since reply", bytes)?))
    }
}

/// The one-pass decoders fail with this when they leave the input to the tree decoders.
fn unsupported<E: de::Error>() -> E {
    E::custom("left to the tree decoder")
}

/// A string key compared without allocating.
struct Key<F>(F);

impl<'de, T, F: FnOnce(&str) -> T> DeserializeSeed<'de> for Key<F> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<T, F: FnOnce(&str) -> T> Visitor<'_> for Key<F> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<T, E> {
        Ok((self.0)(key))
    }
}

/// `<table-updates>`: table name -> rows.
struct Tables<'s>(Form, &'s mut Scratch);

impl<'de> DeserializeSeed<'de> for Tables<'_> {
    type Value = TableUpdates;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<TableUpdates, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Tables<'_> {
    type Value = TableUpdates;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of table names to row updates")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<TableUpdates, M::Error> {
        let mut out = TableUpdates::default();
        while let Some(table) = map.next_key::<String>()? {
            let rows = map.next_value_seed(Rows(self.0, &mut *self.1))?;
            // A table named twice: the later one wins, as in a parsed object.
            out.tables.insert(table, rows);
        }
        Ok(out)
    }
}

/// One table's updates: row UUID -> row update.
struct Rows<'s>(Form, &'s mut Scratch);

impl<'de> DeserializeSeed<'de> for Rows<'_> {
    type Value = BTreeMap<Uuid, RowUpdate>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Rows<'_> {
    type Value = BTreeMap<Uuid, RowUpdate>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of row UUIDs to row updates")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut rows = BTreeMap::new();
        while let Some(uuid) = map.next_key::<Uuid>()? {
            let update = match self.0 {
                Form::V1 => map.next_value_seed(RowUpdateV1(&mut *self.1))?,
                Form::V2 => map.next_value_seed(RowUpdateV2(&mut *self.1))?,
            };
            // The same UUID twice (perhaps spelled in another case): which one wins depends on
            // key order the tree decoder sees; leave it that.
            if rows.insert(uuid, update).is_some() {
                return Err(unsupported());
            }
        }
        Ok(rows)
    }
}

/// `<row-update>`: `{"old": ..., "new": ...}` (either may be absent or null).
struct RowUpdateV1<'s>(&'s mut Scratch);

#[derive(Debug, Clone, Copy)]
enum V1Key {
    Old,
    New,
    Other,
}

impl<'de> DeserializeSeed<'de> for RowUpdateV1<'_> {
    type Value = RowUpdate;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RowUpdate, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowUpdateV1<'_> {
    type Value = RowUpdate;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a row update object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<RowUpdate, M::Error> {
        let (mut old, mut new) = (None, None);
        let key = |k: &str| match k {
            "old" => V1Key::Old,
            "new" => V1Key::New,
            _ => V1Key::Other,
        };
        while let Some(k) = map.next_key_seed(Key(key))? {
            match k {
                V1Key::Old => old = map.next_value_seed(OptionalRowSeed(&mut *self.0))?,
                V1Key::New => new = map.next_value_seed(OptionalRowSeed(&mut *self.0))?,
                V1Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match (old, new) {
            (None, Some(new)) => Ok(RowUpdate::Insert(new)),
            (Some(_), None) => Ok(RowUpdate::Delete),
            (Some(_), Some(new)) => Ok(RowUpdate::Replace(new)),
            (None, None) => Err(unsupported()),
        }
    }
}

/// `<row-update2>`: exactly one of `initial`, `insert`, `modify`, `delete`.
struct RowUpdateV2<'s>(&'s mut Scratch);

#[derive(Debug, Clone, Copy)]
enum V2Key {
    Insert,
    Modify,
    Delete,
    Other,
}

impl<'de> DeserializeSeed<'de> for RowUpdateV2<'_> {
    type Value = RowUpdate;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RowUpdate, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowUpdateV2<'_> {
    type Value = RowUpdate;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a row update2 object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<RowUpdate, M::Error> {
        let key = |k: &str| match k {
            "initial" | "insert" => V2Key::Insert,
            "modify" => V2Key::Modify,
            "delete" => V2Key::Delete,
            _ => V2Key::Other,
        };
        let update = match map.next_key_seed(Key(key))? {
            Some(V2Key::Insert) => RowUpdate::Insert(map.next_value_seed(RowSeed(self.0))?),
            Some(V2Key::Modify) => RowUpdate::Modify(map.next_value_seed(RowSeed(self.0))?),
            Some(V2Key::Delete) => {
                map.next_value::<IgnoredAny>()?;
                RowUpdate::Delete
            }
            Some(V2Key::Other) | None => return Err(unsupported()),
        };
        // More than one key (even the same one twice) is the tree decoder's to judge.
        if map.next_key::<IgnoredAny>()?.is_some() {
            return Err(unsupported());
        }
        Ok(update)
    }
}

/// The parameters of `update` / `update2` (`[id, updates]`) or `update3`
/// (`[id, last-txn-id, updates]`).
struct Notification<'s> {
    form: Form,
    with_txn: bool,
    scratch: &'s mut Scratch,
}

impl<'de> DeserializeSeed<'de> for Notification<'_> {
    type Value = MonitorUpdate;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<MonitorUpdate, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Notification<'_> {
    type Value = MonitorUpdate;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("update notification parameters")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MonitorUpdate, A::Error> {
        let monitor_id = seq.next_element::<Json>()?.ok_or_else(unsupported)?;
        let last_txn_id = if self.with_txn {
            Some(seq.next_element::<Uuid>()?.ok_or_else(unsupported)?)
        } else {
            None
        };
        let updates = seq
            .next_element_seed(Tables(self.form, self.scratch))?
            .ok_or_else(unsupported)?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(unsupported());
        }
        Ok(MonitorUpdate {
            monitor_id,
            last_txn_id,
            updates,
        })
    }
}

/// The `monitor_cond_since` reply: `[found, last-txn-id, table-updates2]`.
struct SinceReply<'s>(&'s mut Scratch);

impl<'de> DeserializeSeed<'de> for SinceReply<'_> {
    type Value = MonitorSinceReply;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for SinceReply<'_> {
    type Value = MonitorSinceReply;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[found, last-txn-id, table-updates2]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MonitorSinceReply, A::Error> {
        let found = seq.next_element::<bool>()?.ok_or_else(unsupported)?;
        let last_txn_id = seq.next_element::<Uuid>()?.ok_or_else(unsupported)?;
        let updates = seq
            .next_element_seed(Tables(Form::V2, self.0))?
            .ok_or_else(unsupported)?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(unsupported());
        }
        Ok(MonitorSinceReply {
            found,
            last_txn_id,
            updates,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    const A: &str = "6e64754b-83cb-4415-bd01-8c04d103af02";
    const A_UPPER: &str = "6E64754B-83CB-4415-BD01-8C04D103AF02";
    const B: &str = "11f0c19a-8d56-4f88-bf43-639440f64b7d";

    /// The one-pass and tree decoders agree on `text`, which the one-pass decoder handles
    /// itself exactly when `one_pass` says so.
    fn agree(text: &str, one_pass: bool) {
        let tree: Json = serde_json::from_str(text).unwrap();
        let bytes = text.as_bytes();
        assert_eq!(
            TableUpdates::from_v2_slice(bytes),
            TableUpdates::from_v2_json(&tree),
            "{text}"
        );
        assert_eq!(
            TableUpdates::from_v1_slice(bytes),
            TableUpdates::from_v1_json(&tree),
            "{text}"
        );
        let handled = from_slice_seed(bytes, Tables(Form::V2, &mut Scratch::default())).is_ok()
            || from_slice_seed(bytes, Tables(Form::V1, &mut Scratch::default())).is_ok();
        assert_eq!(handled, one_pass, "{text}");
    }

    #[test]
    fn oddities_go_to_the_tree_decoder_and_agree() {
        let row =
            r#"{"name":"a","ports":["set",[["uuid","11f0c19a-8d56-4f88-bf43-639440f64b7d"]]]}"#;
        agree(&format!(r#"{{"T":{{"{A}":{{"insert":{row}}}}}}}"#), true);
        agree(
            &format!(r#"{{"T":{{"{A}":{{"new":{row},"old":null}}}}}}"#),
            true,
        );
        // A table given twice: the later one counts.
        agree(
            &format!(r#"{{"T":{{"{A}":{{"delete":null}}}},"T":{{"{B}":{{"insert":{{}}}}}}}}"#),
            true,
        );
        // The same row twice, in two spellings: which one wins is the tree decoder's call.
        agree(
            &format!(r#"{{"T":{{"{A}":{{"insert":{{}}}},"{A_UPPER}":{{"delete":null}}}}}}"#),
            false,
        );
        // The same key twice in a row update2 is one key to the tree decoder.
        agree(
            &format!(r#"{{"T":{{"{A}":{{"insert":{{"n":1}},"insert":{{"n":2}}}}}}}}"#),
            false,
        );
        // A later column replaces an earlier one, even an undecodable one.
        agree(
            &format!(r#"{{"T":{{"{A}":{{"insert":{{"n":{{}},"n":2}}}}}}}}"#),
            false,
        );
        agree(
            &format!(r#"{{"T":{{"{A}":{{"insert":{{"n":1,"n":2}}}}}}}}"#),
            true,
        );
        agree(
            &format!(r#"{{"T":{{"{A}":{{"initial":{{}},"x":1}}}}}}"#),
            false,
        );
        agree(
            &format!(r#"{{"T":{{"{A}":{{"old":null,"new":null}}}}}}"#),
            false,
        );
    }

    #[test]
    fn invalid_json_is_an_error_naming_the_element() {
        let err = TableUpdates::from_v2_slice(b"{\"T\":").unwrap_err();
        assert!(
            matches!(
                &err,
                UpdateError::Json {
                    what: "table-updates2",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with("table-updates2 is not valid JSON: ")
        );
        assert!(matches!(
            MonitorUpdate::from_notification_slice("update2", b"{}"),
            Err(UpdateError::Malformed {
                reason: "parameters must be an array",
                ..
            })
        ));
        assert_eq!(
            MonitorUpdate::from_notification_slice("locked", b"not even JSON"),
            Ok(None)
        );
    }
}
