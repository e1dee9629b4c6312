//! Monitor requests: the three methods ovsdb-server may offer, best first.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json, json};

use crate::protocol::{Condition, Uuid};

/// The monitor id the client uses; notifications for other ids are ignored.
pub(crate) const MONITOR_ID: &str = "udn";

/// A monitor method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MonitorMethod {
    /// `monitor_cond_since` (update3; can resume from the last transaction id).
    CondSince,
    /// `monitor_cond` (update2 diffs).
    Cond,
    /// RFC 7047 `monitor` (update with old/new rows).
    Plain,
}

impl MonitorMethod {
    /// Best first.
    pub(crate) const PREFERENCE: [Self; 3] = [Self::CondSince, Self::Cond, Self::Plain];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CondSince => "monitor_cond_since",
            Self::Cond => "monitor_cond",
            Self::Plain => "monitor",
        }
    }

    /// The request parameters monitoring `columns` (table -> columns) of `database`, the
    /// rows of a table in `conditions` restricted to those matching (not with plain
    /// `monitor`, which has no `where`). `since` is the last transaction id the replica
    /// reflects (`monitor_cond_since` only).
    pub(crate) fn params(
        self,
        database: &str,
        columns: &BTreeMap<String, Vec<String>>,
        conditions: &BTreeMap<String, Vec<Condition>>,
        since: Option<Uuid>,
    ) -> Vec<Json> {
        let requests: Map<String, Json> = columns
            .iter()
            .map(|(table, columns)| {
                let mut request = Map::new();
                request.insert("columns".to_owned(), json!(columns));
                if let Some(wanted) = conditions.get(table).filter(|c| !c.is_empty())
                    && self != Self::Plain
                {
                    let clauses: Vec<Json> = wanted.iter().map(Condition::to_json).collect();
                    request.insert("where".to_owned(), Json::Array(clauses));
                }
                (table.clone(), json!([Json::Object(request)]))
            })
            .collect();
        let mut params = vec![json!(database), json!(MONITOR_ID), Json::Object(requests)];
        if self == Self::CondSince {
            let since = since.unwrap_or(Uuid::from_u128(0));
            params.push(json!(since.to_string()));
        }
        params
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn params_per_method() {
        let columns = BTreeMap::from([("Logical_Switch".to_owned(), vec!["name".to_owned()])]);
        let reqs = json!({"Logical_Switch": [{"columns": ["name"]}]});
        assert_eq!(
            MonitorMethod::CondSince.params("NB", &columns, &BTreeMap::new(), None),
            vec![
                json!("NB"),
                json!("udn"),
                reqs.clone(),
                json!("00000000-0000-0000-0000-000000000000")
            ]
        );
        assert_eq!(
            MonitorMethod::Cond.params("NB", &columns, &BTreeMap::new(), Some(Uuid::from_u128(1))),
            vec![json!("NB"), json!("udn"), reqs.clone()]
        );
        assert_eq!(
            MonitorMethod::Plain.params("NB", &columns, &BTreeMap::new(), None),
            vec![json!("NB"), json!("udn"), reqs]
        );
    }

    #[test]
    fn conditions_become_a_where_except_for_plain_monitor() {
        use crate::protocol::{Atom, ConditionFunction, Value};
        let columns = BTreeMap::from([
            ("Port_Binding".to_owned(), vec!["type".to_owned()]),
            ("Chassis".to_owned(), vec!["name".to_owned()]),
        ]);
        let conditions = BTreeMap::from([(
            "Port_Binding".to_owned(),
            vec![Condition {
                column: "type".into(),
                function: ConditionFunction::Equal,
                value: Value::Atom(Atom::String("remote".into())),
            }],
        )]);
        let filtered = json!({
            "Port_Binding": [{"columns": ["type"], "where": [["type", "==", "remote"]]}],
            "Chassis": [{"columns": ["name"]}],
        });
        assert_eq!(
            MonitorMethod::Cond.params("SB", &columns, &conditions, None)[2],
            filtered
        );
        assert_eq!(
            MonitorMethod::CondSince.params("SB", &columns, &conditions, None)[2],
            filtered
        );
        assert_eq!(
            MonitorMethod::Plain.params("SB", &columns, &conditions, None)[2],
            json!({
                "Port_Binding": [{"columns": ["type"]}],
                "Chassis": [{"columns": ["name"]}],
            })
        );
    }
}
