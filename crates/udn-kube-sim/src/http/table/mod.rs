//! `meta.k8s.io/v1` Table output (what `kubectl get` asks for) and PartialObjectMetadata
//! output: the server renders the columns, as the real server does, from the CRD's
//! `additionalPrinterColumns` or the built-in printers of the core types.

mod builtin;
mod jsonpath;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::resource::ResourceType;

use super::query::IncludeObject;
use jsonpath::JsonPath;

/// Computes one cell from an object and the current time.
type Cell = Box<dyn Fn(&Value, Timestamp) -> Value + Send + Sync>;

/// One column: its definition and how a cell is computed from an object.
pub(crate) struct Column {
    name: String,
    kind: String,
    format: String,
    description: String,
    priority: u32,
    cell: Cell,
}

impl Column {
    /// A column computed by `cell`.
    pub(crate) fn new(
        name: &str,
        kind: &str,
        priority: u32,
        cell: impl Fn(&Value, Timestamp) -> Value + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.to_owned(),
            kind: kind.to_owned(),
            format: String::new(),
            description: String::new(),
            priority,
            cell: Box::new(cell),
        }
    }

    /// The `Name` column every table starts with.
    pub(crate) fn name() -> Self {
        Self {
            format: "name".to_owned(),
            description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
                .to_owned(),
            ..Self::new("Name", "string", 0, |o, _| {
                json!(text(o, &["metadata", "name"]).unwrap_or_default())
            })
        }
    }

    /// The `Age` column (creation time as a human duration).
    pub(crate) fn age() -> Self {
        Self {
            description: "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
                .to_owned(),
            ..Self::new("Age", "string", 0, |o, now| {
                json!(age(text(o, &["metadata", "creationTimestamp"]), now))
            })
        }
    }

    fn definition(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.kind,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// The string at `path` in `object`.
pub(crate) fn text<'a>(object: &'a Value, path: &[&str]) -> Option<&'a str> {
    field(object, path).and_then(Value::as_str)
}

/// The value at `path` in `object`.
pub(crate) fn field<'a>(object: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(object, |node, key| node.get(*key))
}

/// How long ago `timestamp` (RFC 3339) was, as `kubectl` shows ages; `<unknown>` when
/// absent or unparsable.
pub(crate) fn age(timestamp: Option<&str>, now: Timestamp) -> String {
    match timestamp.and_then(|t| t.parse::<Timestamp>().ok()) {
        Some(then) => human_duration(now.as_second() - then.as_second()),
        None => "<unknown>".to_owned(),
    }
}

/// Kubernetes' `duration.HumanDuration` of a number of seconds.
pub(crate) fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    let seconds = seconds.max(0);
    let (minutes, hours) = (seconds / 60, seconds / 3600);
    let days = hours / 24;
    let with_rest = |big: i64, big_unit: &str, small: i64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        with_rest(minutes, "m", seconds % 60, "s")
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        with_rest(hours, "h", minutes % 60, "m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        with_rest(days, "d", hours % 24, "h")
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        with_rest(days / 365, "y", days % 365, "d")
    } else {
        format!("{}y", days / 365)
    }
}

/// The columns of a resource type: the CRD's printer columns (or `Age` when it declares
/// none), or the built-in printer of a core type.
fn columns(rt: &ResourceType) -> Vec<Column> {
    let custom = !rt.validators.is_empty() || !rt.printer_columns.is_empty();
    if !custom {
        return builtin::columns(&rt.group, &rt.plural);
    }
    let mut columns = vec![Column::name()];
    if rt.printer_columns.is_empty() {
        columns.push(Column {
            kind: "date".to_owned(),
            ..Column::age()
        });
    }
    columns.extend(rt.printer_columns.iter().filter_map(custom_column));
    columns
}

/// A CRD `additionalPrinterColumns` entry; `date` cells are ages, as on the real server.
fn custom_column(spec: &Value) -> Option<Column> {
    let string = |key: &str, default: &str| {
        spec.get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_owned()
    };
    let name = spec.get("name")?.as_str()?.to_owned();
    let kind = string("type", "string");
    let cell_kind = kind.clone();
    let priority = spec
        .get("priority")
        .and_then(Value::as_u64)
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or(0);
    let path = JsonPath::parse(spec.get("jsonPath")?.as_str()?)?;
    Some(Column {
        name,
        kind,
        format: string("format", ""),
        description: string("description", ""),
        priority,
        cell: Box::new(move |object, now| {
            let Some(value) = path.find(object).first().copied() else {
                return Value::Null;
            };
            match (cell_kind.as_str(), value) {
                ("date", Value::String(t)) => json!(age(Some(t), now)),
                ("string", Value::String(s)) => json!(s),
                ("string", other) => json!(other.to_string()),
                (_, other) => other.clone(),
            }
        }),
    })
}

/// A Table of `value` (one object or a `<Kind>List`). `headers: false` leaves out the
/// column definitions (watch events after the first).
pub(crate) fn table(
    rt: &ResourceType,
    value: &Value,
    include: IncludeObject,
    headers: bool,
) -> Value {
    let now = Timestamp::now();
    let columns = columns(rt);
    let is_list = value.get("items").is_some_and(Value::is_array);
    let objects: Vec<&Value> = if is_list {
        value
            .get("items")
            .and_then(Value::as_array)
            .map(|items| items.iter().collect())
            .unwrap_or_default()
    } else {
        vec![value]
    };
    let rows: Vec<Value> = objects
        .into_iter()
        .map(|object| {
            let cells: Vec<Value> = columns.iter().map(|c| (c.cell)(object, now)).collect();
            let mut row = Map::new();
            row.insert("cells".to_owned(), Value::Array(cells));
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => {
                    row.insert("object".to_owned(), partial_metadata(object));
                }
                IncludeObject::Object => {
                    row.insert("object".to_owned(), object.clone());
                }
            }
            Value::Object(row)
        })
        .collect();
    let definitions: Vec<Value> = if headers {
        columns.iter().map(Column::definition).collect()
    } else {
        Vec::new()
    };
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata(value),
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

fn list_metadata(value: &Value) -> Value {
    let mut metadata = Map::new();
    for key in ["resourceVersion", "continue", "remainingItemCount"] {
        if let Some(v) = field(value, &["metadata", key]) {
            metadata.insert(key.to_owned(), v.clone());
        }
    }
    Value::Object(metadata)
}

/// `meta.k8s.io/v1` PartialObjectMetadata of one object.
pub(crate) fn partial_metadata(object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// PartialObjectMetadata(List) of one object or a list.
pub(crate) fn partial_metadata_of(value: &Value) -> Value {
    match value.get("items").and_then(Value::as_array) {
        Some(items) => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": list_metadata(value),
            "items": items.iter().map(partial_metadata).collect::<Vec<_>>(),
        }),
        None => partial_metadata(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_kubernetes() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (125, "2m5s"),
            (180, "3m"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (8 * 3600 + 60, "8h"),
            (50 * 3600, "2d2h"),
            (9 * 86400, "9d"),
            (3 * 365 * 86400 + 86400, "3y1d"),
            (9 * 365 * 86400, "9y"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(human_duration(seconds), expected, "{seconds}s");
        }
    }
}
