//! Monitor notifications and monitor replies (RFC 7047 §4.1.5-4.1.6 and the `update2`/`update3`
//! extensions of ovsdb-server(7)): `<table-updates>` decoded into schema-free [`TableUpdates`].
//!
//! Values are kept exactly as [`Value::from_json`](super::Value::from_json) reads them; the replica normalizes them with
//! the column types of the server's schema.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};

use super::value::{Row, Uuid, ValueError, row_from_json};

/// Errors decoding a monitor reply or an update notification.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UpdateError {
    /// The JSON does not have the shape the protocol defines.
    #[error("malformed {what} {json}: {reason}")]
    Malformed {
        /// Which element was being decoded, e.g. `table-updates2`.
        what: &'static str,
        /// The offending JSON, rendered.
        json: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A row key is not a UUID.
    #[error("table {table:?}: row key is not a UUID")]
    RowUuid {
        /// Table name.
        table: String,
        /// The underlying error.
        #[source]
        source: ValueError,
    },
    /// A row's contents cannot be decoded.
    #[error("table {table:?} row {uuid}: undecodable row")]
    Row {
        /// Table name.
        table: String,
        /// Row UUID.
        uuid: Uuid,
        /// The underlying error.
        #[source]
        source: ValueError,
    },
    /// The text is not valid JSON (the `*_slice` decoders).
    #[error("{what} is not valid JSON: {reason}")]
    Json {
        /// Which element was being decoded, e.g. `table-updates2`.
        what: &'static str,
        /// The parser's explanation.
        reason: String,
    },
    /// The last transaction id of `update3` / `monitor_cond_since` is not a UUID.
    #[error("last transaction id is not a UUID")]
    TxnId {
        /// The underlying error.
        #[source]
        source: ValueError,
    },
}

/// One row change of a monitor notification, schema-free (values as [`crate::protocol::Value::from_json`]
/// gives them).
#[derive(Debug, Clone, PartialEq)]
pub enum RowUpdate {
    /// `initial` / `insert` (update2/3), or v1 `{new}` without `old`: the full row (update2 omits
    /// columns holding their default value).
    Insert(Row),
    /// update2/3 `modify`: a per-column diff. Sets: the elements to toggle; maps: pairs whose key
    /// is absent are added, pairs equal to an existing pair are removed, pairs with an existing
    /// key and another value replace it; scalars: the new value.
    Modify(Row),
    /// v1 `{old, new}`: new values of the columns given, which overwrite the old ones.
    Replace(Row),
    /// The row was deleted.
    Delete,
}

/// The changes of one notification or monitor reply: table -> row UUID -> change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableUpdates {
    /// Table name -> row UUID -> change.
    pub tables: BTreeMap<String, BTreeMap<Uuid, RowUpdate>>,
}

impl TableUpdates {
    /// Number of row changes over all tables.
    pub fn len(&self) -> usize {
        self.tables.values().map(BTreeMap::len).sum()
    }

    /// Whether there are no row changes.
    pub fn is_empty(&self) -> bool {
        self.tables.values().all(BTreeMap::is_empty)
    }

    /// Decodes RFC 7047 `<table-updates>` (the `monitor` reply and `update` notifications).
    pub fn from_v1_json(json: &Json) -> Result<Self, UpdateError> {
        decode_tables(json, "table-updates", decode_row_update_v1)
    }

    /// Decodes `<table-updates2>` (the `monitor_cond` reply, `update2` and `update3`).
    pub fn from_v2_json(json: &Json) -> Result<Self, UpdateError> {
        decode_tables(json, "table-updates2", decode_row_update_v2)
    }
}

/// An update notification from a monitor.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorUpdate {
    /// The monitor id the client chose in its monitor request.
    pub monitor_id: Json,
    /// The transaction id this update brings the client to (`update3` only).
    pub last_txn_id: Option<Uuid>,
    /// The row changes.
    pub updates: TableUpdates,
}

impl MonitorUpdate {
    /// Decodes the parameters of an `update` (`[id, table-updates]`), `update2`
    /// (`[id, table-updates2]`) or `update3` (`[id, last-txn-id, table-updates2]`) notification.
    /// Returns `Ok(None)` for other methods.
    pub fn from_notification(method: &str, params: &[Json]) -> Result<Option<Self>, UpdateError> {
        let malformed = |reason| UpdateError::Malformed {
            what: "update notification",
            json: Json::Array(params.to_vec()).to_string(),
            reason,
        };
        let update = match (method, params) {
            ("update", [id, updates]) => Self {
                monitor_id: id.clone(),
                last_txn_id: None,
                updates: TableUpdates::from_v1_json(updates)?,
            },
            ("update2", [id, updates]) => Self {
                monitor_id: id.clone(),
                last_txn_id: None,
                updates: TableUpdates::from_v2_json(updates)?,
            },
            ("update3", [id, txn, updates]) => Self {
                monitor_id: id.clone(),
                last_txn_id: Some(decode_txn_id(txn)?),
                updates: TableUpdates::from_v2_json(updates)?,
            },
            ("update" | "update2", _) => {
                return Err(malformed("expected [monitor-id, table-updates]"));
            }
            ("update3", _) => {
                return Err(malformed(
                    "expected [monitor-id, last-txn-id, table-updates2]",
                ));
            }
            _ => return Ok(None),
        };
        Ok(Some(update))
    }
}

/// The reply to `monitor_cond_since`: `[found, last-txn-id, table-updates2]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorSinceReply {
    /// Whether the server found the requested transaction id: if so, `updates` holds only the
    /// changes since it; otherwise `updates` holds the whole contents.
    pub found: bool,
    /// The id of the server's latest transaction.
    pub last_txn_id: Uuid,
    /// The row changes.
    pub updates: TableUpdates,
}

impl MonitorSinceReply {
    /// Decodes the `result` of a `monitor_cond_since` request.
    pub fn from_json(json: &Json) -> Result<Self, UpdateError> {
        match json {
            Json::Array(items) => match items.as_slice() {
                [Json::Bool(found), txn, updates] => Ok(Self {
                    found: *found,
                    last_txn_id: decode_txn_id(txn)?,
                    updates: TableUpdates::from_v2_json(updates)?,
                }),
                _ => Err(since_malformed(json)),
            },
            _ => Err(since_malformed(json)),
        }
    }
}

fn since_malformed(json: &Json) -> UpdateError {
    UpdateError::Malformed {
        what: "monitor_cond_since reply",
        json: json.to_string(),
        reason: "expected [found (boolean), last-txn-id, table-updates2]",
    }
}

fn decode_txn_id(json: &Json) -> Result<Uuid, UpdateError> {
    let Json::String(text) = json else {
        return Err(UpdateError::Malformed {
            what: "last-txn-id",
            json: json.to_string(),
            reason: "expected a UUID string",
        });
    };
    Uuid::parse(text).map_err(|source| UpdateError::TxnId { source })
}

type RowDecoder = fn(&str, Uuid, &Json) -> Result<RowUpdate, UpdateError>;

fn decode_tables(
    json: &Json,
    what: &'static str,
    decode_row: RowDecoder,
) -> Result<TableUpdates, UpdateError> {
    let Json::Object(tables) = json else {
        return Err(UpdateError::Malformed {
            what,
            json: json.to_string(),
            reason: "expected an object of table names to row updates",
        });
    };
    let mut out = TableUpdates::default();
    for (table, rows) in tables {
        let Json::Object(rows) = rows else {
            return Err(UpdateError::Malformed {
                what,
                json: rows.to_string(),
                reason: "a table's updates must be an object of row UUIDs to row updates",
            });
        };
        let entry = out.tables.entry(table.clone()).or_default();
        for (key, update) in rows {
            let uuid = Uuid::parse(key).map_err(|source| UpdateError::RowUuid {
                table: table.clone(),
                source,
            })?;
            entry.insert(uuid, decode_row(table, uuid, update)?);
        }
    }
    Ok(out)
}

fn row_of(table: &str, uuid: Uuid, json: &Json) -> Result<Row, UpdateError> {
    row_from_json(json).map_err(|source| UpdateError::Row {
        table: table.to_owned(),
        uuid,
        source,
    })
}

fn row_update_object<'a>(
    what: &'static str,
    json: &'a Json,
) -> Result<&'a Map<String, Json>, UpdateError> {
    match json {
        Json::Object(o) => Ok(o),
        _ => Err(UpdateError::Malformed {
            what,
            json: json.to_string(),
            reason: "a row update must be an object",
        }),
    }
}

fn decode_row_update_v1(table: &str, uuid: Uuid, json: &Json) -> Result<RowUpdate, UpdateError> {
    let o = row_update_object("row-update", json)?;
    let present = |k: &str| o.get(k).filter(|v| !v.is_null());
    match (present("old"), present("new")) {
        (None, Some(new)) => Ok(RowUpdate::Insert(row_of(table, uuid, new)?)),
        (Some(old), None) => {
            row_of(table, uuid, old)?;
            Ok(RowUpdate::Delete)
        }
        (Some(old), Some(new)) => {
            row_of(table, uuid, old)?;
            Ok(RowUpdate::Replace(row_of(table, uuid, new)?))
        }
        (None, None) => Err(UpdateError::Malformed {
            what: "row-update",
            json: json.to_string(),
            reason: "needs \"old\", \"new\" or both",
        }),
    }
}

fn decode_row_update_v2(table: &str, uuid: Uuid, json: &Json) -> Result<RowUpdate, UpdateError> {
    let o = row_update_object("row-update2", json)?;
    let mut entries = o.iter();
    let (Some((kind, body)), None) = (entries.next(), entries.next()) else {
        return Err(UpdateError::Malformed {
            what: "row-update2",
            json: json.to_string(),
            reason: "needs exactly one of \"initial\", \"insert\", \"modify\", \"delete\"",
        });
    };
    match kind.as_str() {
        "initial" | "insert" => Ok(RowUpdate::Insert(row_of(table, uuid, body)?)),
        "modify" => Ok(RowUpdate::Modify(row_of(table, uuid, body)?)),
        "delete" => Ok(RowUpdate::Delete),
        _ => Err(UpdateError::Malformed {
            what: "row-update2",
            json: json.to_string(),
            reason: "the key must be \"initial\", \"insert\", \"modify\" or \"delete\"",
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;

    use super::*;
    use crate::protocol::{Atom, Value};

    const A: &str = "6e64754b-83cb-4415-bd01-8c04d103af02";
    const B: &str = "11f0c19a-8d56-4f88-bf43-639440f64b7d";

    fn u(s: &str) -> Uuid {
        Uuid::parse(s).unwrap()
    }

    fn row(pairs: &[(&str, Value)]) -> Row {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    fn s(text: &str) -> Value {
        Value::Atom(Atom::String(text.to_owned()))
    }

    #[test]
    fn v2_kinds_decode() {
        let j = json!({"Logical_Switch": {
            A: {"initial": {"name": "a"}},
            B: {"modify": {"ports": ["set", []]}},
        }, "ACL": {A: {"delete": null}, B: {"insert": {}}}});
        let t = TableUpdates::from_v2_json(&j).unwrap();
        assert_eq!(t.len(), 4);
        let ls = &t.tables["Logical_Switch"];
        assert_eq!(ls[&u(A)], RowUpdate::Insert(row(&[("name", s("a"))])));
        assert_eq!(
            ls[&u(B)],
            RowUpdate::Modify(row(&[("ports", Value::Set(vec![]))]))
        );
        assert_eq!(t.tables["ACL"][&u(A)], RowUpdate::Delete);
        assert_eq!(t.tables["ACL"][&u(B)], RowUpdate::Insert(Row::new()));
    }

    #[test]
    fn v1_old_new_decode() {
        let j = json!({"Logical_Switch": {
            A: {"new": {"name": "a"}},
            B: {"old": {"name": "b"}, "new": {"name": "c"}},
        }, "ACL": {A: {"old": {"priority": 1}}}});
        let t = TableUpdates::from_v1_json(&j).unwrap();
        let ls = &t.tables["Logical_Switch"];
        assert_eq!(ls[&u(A)], RowUpdate::Insert(row(&[("name", s("a"))])));
        assert_eq!(ls[&u(B)], RowUpdate::Replace(row(&[("name", s("c"))])));
        assert_eq!(t.tables["ACL"][&u(A)], RowUpdate::Delete);
    }

    #[test]
    fn notifications_decode_per_method() {
        let u3 = MonitorUpdate::from_notification(
            "update3",
            &[
                json!("udn"),
                json!(B),
                json!({"Logical_Switch": {A: {"delete": null}}}),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(u3.monitor_id, json!("udn"));
        assert_eq!(u3.last_txn_id, Some(u(B)));
        assert_eq!(u3.updates.len(), 1);
        let u1 = MonitorUpdate::from_notification("update", &[json!(null), json!({})])
            .unwrap()
            .unwrap();
        assert!(u1.updates.is_empty());
        assert_eq!(
            MonitorUpdate::from_notification("locked", &[json!("l")]),
            Ok(None)
        );
        assert!(matches!(
            MonitorUpdate::from_notification("update2", &[json!("udn")]),
            Err(UpdateError::Malformed { reason, .. }) if reason.contains("monitor-id")
        ));
        assert!(matches!(
            MonitorUpdate::from_notification("update3", &[json!("udn"), json!("x"), json!({})]),
            Err(UpdateError::TxnId { .. })
        ));
    }

    #[test]
    fn since_reply_decodes() {
        let r = MonitorSinceReply::from_json(&json!([false, A, {"NB_Global": {}}])).unwrap();
        assert!(!r.found);
        assert_eq!(r.last_txn_id, u(A));
        assert!(r.updates.is_empty());
        assert!(MonitorSinceReply::from_json(&json!([1, A, {}])).is_err());
        assert!(MonitorSinceReply::from_json(&json!({})).is_err());
    }

    #[test]
    fn malformed_inputs_are_errors() {
        for bad in [
            json!([]),
            json!({"T": []}),
            json!({"T": {"not-a-uuid": {"insert": {}}}}),
            json!({"T": {A: []}}),
            json!({"T": {A: {}}}),
            json!({"T": {A: {"insert": {}, "delete": null}}}),
            json!({"T": {A: {"upsert": {}}}}),
            json!({"T": {A: {"insert": []}}}),
            json!({"T": {A: {"modify": {"c": ["set", 1]}}}}),
        ] {
            assert!(TableUpdates::from_v2_json(&bad).is_err(), "{bad}");
        }
        for bad in [
            json!({"T": {A: {}}}),
            json!({"T": {A: {"old": null, "new": null}}}),
            json!({"T": {A: {"new": 3}}}),
            json!({"T": {A: {"old": {"c": ["map", [1]]}}}}),
        ] {
            assert!(TableUpdates::from_v1_json(&bad).is_err(), "{bad}");
        }
        let err = TableUpdates::from_v2_json(&json!({"T": {A: {"insert": {"c": {}}}}}))
            .unwrap_err()
            .to_string();
        assert_eq!(err, format!("table \"T\" row {A}: undecodable row"));
    }
}
