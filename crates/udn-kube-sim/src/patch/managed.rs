//! `metadata.managedFields`: which manager owns which fields, as the server's field
//! manager (`k8s.io/apimachinery/pkg/util/managedfields`) keeps it.
//!
//! A manager is identified by its name, operation (`Apply`/`Update`), subresource and,
//! for `Update` only, apiVersion. Entries are written sorted as the server sorts them
//! (operation, time, manager, apiVersion, subresource) with `fieldsType: FieldsV1`.
//! Ownership of `apiVersion`, `kind` and the server-set metadata (`name`, `namespace`,
//! `uid`, `resourceVersion`, `generation`, `creationTimestamp`, `managedFields`, ...) is
//! never recorded. Fields the write path resets are not recorded either: `status` for the
//! main resource of a kind that has one, `spec` for the status subresource.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::PatchContext;
use super::fields::compare::compare;
use super::fields::{FieldSet, PathElement, fieldsv1};
use super::schema::TypeSchema;
use crate::options::Subresource;

/// The server's `DefaultMaxUpdateManagers`.
const MAX_UPDATE_MANAGERS: usize = 10;
/// The bucket older `Update` managers are merged into beyond the cap.
const ANCIENT_CHANGES: &str = "ancient-changes";

/// `Apply` or `Update`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Update => "Update",
        }
    }
}

/// The identity of a manager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ManagerId {
    /// `manager`.
    pub(crate) manager: String,
    /// `operation`.
    pub(crate) operation: Operation,
    /// `apiVersion` (part of the identity for `Update` only).
    pub(crate) api_version: String,
    /// `subresource` (`""` for the main resource).
    pub(crate) subresource: String,
}

impl ManagerId {
    /// The identity of `manager` writing through `ctx`.
    pub(crate) fn new(manager: &str, operation: Operation, ctx: &PatchContext<'_>) -> Self {
        Self {
            manager: manager.to_owned(),
            operation,
            api_version: ctx.api_version.to_owned(),
            subresource: match ctx.subresource {
                Subresource::Main => String::new(),
                Subresource::Status => "status".to_owned(),
            },
        }
    }

    /// The server's identifier: the JSON of the entry without time and fields.
    pub(crate) fn key(&self) -> String {
        let mut map = Map::new();
        map.insert("manager".to_owned(), json!(self.manager));
        map.insert("operation".to_owned(), json!(self.operation.as_str()));
        if self.operation == Operation::Update {
            map.insert("apiVersion".to_owned(), json!(self.api_version));
        }
        if !self.subresource.is_empty() {
            map.insert("subresource".to_owned(), json!(self.subresource));
        }
        Value::Object(map).to_string()
    }

    /// How conflict messages name the manager (`"m"`, `"m" with subresource "status"`,
    /// `"m" using v1`).
    pub(crate) fn display(&self) -> String {
        let mut out = super::gofmt::quote(&self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(
                " with subresource {}",
                super::gofmt::quote(&self.subresource)
            ));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }
}

/// One manager's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ManagerEntry {
    /// Who.
    pub(crate) id: ManagerId,
    /// The owned fields.
    pub(crate) set: FieldSet,
    /// When it last changed something (RFC 3339, seconds).
    pub(crate) time: Option<String>,
}

/// All managers of an object, by identifier.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Managed(pub(crate) BTreeMap<String, ManagerEntry>);

/// Why `managedFields` does not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ManagedError {
    /// Not a list of objects.
    #[error("managedFields must be a list of objects")]
    NotAList,
    /// Bad operation.
    #[error("operation must be `Apply` or `Update`")]
    Operation,
    /// Empty apiVersion.
    #[error("apiVersion must not be empty")]
    ApiVersion,
    /// No fieldsType.
    #[error("missing fieldsType in managed fields entry {index}")]
    MissingFieldsType {
        /// Entry index.
        index: usize,
    },
    /// Unknown fieldsType.
    #[error("invalid fieldsType {fields_type:?} in managed fields entry {index}")]
    FieldsType {
        /// The value.
        fields_type: String,
        /// Entry index.
        index: usize,
    },
    /// Bad fieldsV1.
    #[error("error decoding set of managed fields entry {index}")]
    Fields {
        /// Entry index.
        index: usize,
        /// Why.
        #[source]
        source: fieldsv1::FieldsError,
    },
}

impl Managed {
    /// Decode `metadata.managedFields` of `object` (absent: no managers).
    pub(crate) fn decode(object: &Value) -> Result<Self, ManagedError> {
        let entries = match object.get("metadata").and_then(|m| m.get("managedFields")) {
            None | Some(Value::Null) => return Ok(Self::default()),
            Some(Value::Array(entries)) => entries,
            Some(_) => return Err(ManagedError::NotAList),
        };
        let mut managed = Self::default();
        for (index, entry) in entries.iter().enumerate() {
            let entry = decode_entry(index, entry)?;
            managed.0.insert(entry.id.key(), entry);
        }
        Ok(managed)
    }

    /// Write the managers into `object`'s metadata (removing `managedFields` when none).
    pub(crate) fn encode_into(&self, object: &mut Value) {
        let Value::Object(map) = object else {
            return;
        };
        if self.0.is_empty() {
            if let Some(Value::Object(metadata)) = map.get_mut("metadata") {
                metadata.shift_remove("managedFields");
            }
            return;
        }
        let metadata = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !metadata.is_object() {
            *metadata = Value::Object(Map::new());
        }
        let Value::Object(metadata) = metadata else {
            return;
        };
        let mut entries: Vec<&ManagerEntry> = self.0.values().collect();
        entries.sort_by(|a, b| {
            (a.id.operation, seconds(a.time.as_deref()), &a.id.manager)
                .cmp(&(b.id.operation, seconds(b.time.as_deref()), &b.id.manager))
                .then_with(|| a.id.api_version.cmp(&b.id.api_version))
                .then_with(|| a.id.subresource.cmp(&b.id.subresource))
        });
        let encoded: Vec<Value> = entries.into_iter().map(encode_entry).collect();
        metadata.insert("managedFields".to_owned(), Value::Array(encoded));
    }

    /// Drop managers that own nothing.
    pub(crate) fn drop_empty(&mut self) {
        self.0.retain(|_, entry| !entry.set.is_empty());
    }
}

fn decode_entry(index: usize, entry: &Value) -> Result<ManagerEntry, ManagedError> {
    let Value::Object(entry) = entry else {
        return Err(ManagedError::NotAList);
    };
    let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("");
    let operation = match text("operation") {
        "Apply" => Operation::Apply,
        "Update" => Operation::Update,
        _ => return Err(ManagedError::Operation),
    };
    if text("apiVersion").is_empty() {
        return Err(ManagedError::ApiVersion);
    }
    match text("fieldsType") {
        "FieldsV1" => {}
        "" => return Err(ManagedError::MissingFieldsType { index }),
        other => {
            return Err(ManagedError::FieldsType {
                fields_type: other.to_owned(),
                index,
            });
        }
    }
    let set = match entry.get("fieldsV1") {
        None | Some(Value::Null) => FieldSet::new(),
        Some(fields) => {
            fieldsv1::decode(fields).map_err(|source| ManagedError::Fields { index, source })?
        }
    };
    Ok(ManagerEntry {
        id: ManagerId {
            manager: text("manager").to_owned(),
            operation,
            api_version: text("apiVersion").to_owned(),
            subresource: text("subresource").to_owned(),
        },
        set,
        time: entry.get("time").and_then(Value::as_str).map(str::to_owned),
    })
}

fn encode_entry(entry: &ManagerEntry) -> Value {
    let mut map = Map::new();
    map.insert("manager".to_owned(), json!(entry.id.manager));
    map.insert("operation".to_owned(), json!(entry.id.operation.as_str()));
    map.insert("apiVersion".to_owned(), json!(entry.id.api_version));
    if let Some(time) = &entry.time {
        map.insert("time".to_owned(), json!(time));
    }
    map.insert("fieldsType".to_owned(), json!("FieldsV1"));
    map.insert("fieldsV1".to_owned(), fieldsv1::encode(&entry.set));
    if !entry.id.subresource.is_empty() {
        map.insert("subresource".to_owned(), json!(entry.id.subresource));
    }
    Value::Object(map)
}

fn seconds(time: Option<&str>) -> i64 {
    time.and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or(0, jiff::Timestamp::as_second)
}

/// `ctx.now` in the `metav1.Time` form (RFC 3339, whole seconds, UTC).
pub(crate) fn now(ctx: &PatchContext<'_>) -> String {
    ctx.now.parse::<jiff::Timestamp>().map_or_else(
        |_| ctx.now.to_owned(),
        |t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    )
}

/// Fields no manager ever owns (`stripMetaManager`).
pub(crate) fn strip_meta(set: &mut FieldSet) {
    const TOP: &[&str] = &["apiVersion", "kind", "metadata"];
    const META: &[&str] = &[
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ];
    set.retain(|path| match path.as_slice() {
        [PathElement::Field(top)] => !TOP.contains(&top.as_str()),
        [PathElement::Field(top), PathElement::Field(field)] => {
            !(top == "metadata" && META.contains(&field.as_str()))
        }
        _ => true,
    });
}

/// The top-level field whose contents the write path resets, and so no manager owns.
pub(crate) fn reset_field(ctx: &PatchContext<'_>, schema: &TypeSchema<'_>) -> Option<&'static str> {
    match ctx.subresource {
        Subresource::Main => schema.has_status().then_some("status"),
        Subresource::Status => Some("spec"),
    }
}

/// Whether `path` survives the reset filter.
pub(crate) fn outside(reset: Option<&str>, path: &[PathElement]) -> bool {
    match (reset, path.first()) {
        (Some(reset), Some(PathElement::Field(top))) => top != reset,
        _ => true,
    }
}

/// A copy of `object` without `metadata.managedFields`.
pub(crate) fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(Value::Object(metadata)) = copy.get_mut("metadata") {
        metadata.shift_remove("managedFields");
    }
    copy
}

/// Record a non-apply write of `updated` (over `current`, `None` for a create) by
/// `ctx.field_manager` as an `Update` manager: it takes over every field it added or
/// changed, other managers lose those and every removed field. Without a field manager
/// the object's `managedFields` are left as they are.
pub(crate) fn record_update(
    current: Option<&Value>,
    updated: &mut Value,
    ctx: &PatchContext<'_>,
    schema: &TypeSchema<'_>,
) {
    let Some(manager) = ctx.field_manager.filter(|m| !m.is_empty()) else {
        return;
    };
    let zero = schema.zero_object();
    let live = current.unwrap_or(&zero);
    let mut managed = managers_for_update(live, updated, ctx);
    let live_plain = without_managed_fields(live);
    let new_plain = without_managed_fields(updated);
    let mut comparison = compare(&live_plain, &new_plain, schema);
    let reset = reset_field(ctx, schema);
    comparison.retain(|path| outside(reset, path));
    let mut changed = comparison.changed();
    strip_meta(&mut changed);
    let id = ManagerId::new(manager, Operation::Update, ctx);
    let key = id.key();
    for (other, entry) in &mut managed.0 {
        let mut set = entry.set.difference(&comparison.removed);
        if *other != key {
            set = set.difference(&changed);
        }
        entry.set = set;
    }
    if !changed.is_empty() {
        let entry = managed.0.entry(key).or_insert_with(|| ManagerEntry {
            id: id.clone(),
            set: FieldSet::new(),
            time: None,
        });
        entry.set = entry.set.union(&changed);
        entry.id = id;
        entry.time = Some(now(ctx));
    }
    managed.drop_empty();
    cap_update_managers(&mut managed);
    managed.encode_into(updated);
}

/// The managers an update starts from: those of the written object when it carries
/// valid ones (a client may rewrite `managedFields`; `[]` or `[{}]` resets them), else
/// the live object's. The status subresource always uses the live object's.
fn managers_for_update(live: &Value, updated: &Value, ctx: &PatchContext<'_>) -> Managed {
    let live_managed = || Managed::decode(live).unwrap_or_default();
    if ctx.subresource == Subresource::Status {
        return live_managed();
    }
    match updated.get("metadata").and_then(|m| m.get("managedFields")) {
        Some(Value::Array(entries)) if entries.is_empty() => return Managed::default(),
        Some(Value::Array(entries))
            if entries.len() == 1 && entries.first() == Some(&json!({})) =>
        {
            return Managed::default();
        }
        _ => {}
    }
    match Managed::decode(updated) {
        Ok(managed) if !managed.0.is_empty() => managed,
        _ => live_managed(),
    }
}

/// Merge the oldest `Update` managers into `ancient-changes` buckets (one per apiVersion)
/// while there are more than ten (`capManagersManager`).
fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<(i64, String)> = managed
        .0
        .iter()
        .filter(|(_, e)| e.id.operation == Operation::Update)
        .map(|(key, e)| (seconds(e.time.as_deref()), key.clone()))
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort();
    let mut length = updaters.len();
    let mut first_per_version: BTreeMap<String, String> = BTreeMap::new();
    for (_, key) in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managed.0.get(&key).cloned() else {
            continue;
        };
        let version = entry.id.api_version.clone();
        let bucket_id = ManagerId {
            manager: ANCIENT_CHANGES.to_owned(),
            operation: Operation::Update,
            api_version: version.clone(),
            subresource: String::new(),
        };
        let bucket_key = bucket_id.key();
        let Some(first) = first_per_version.get(&version).cloned() else {
            first_per_version.insert(version, key);
            continue;
        };
        if !managed.0.contains_key(&bucket_key)
            && let Some(mut moved) = managed.0.remove(&first)
        {
            moved.id = bucket_id.clone();
            managed.0.insert(bucket_key.clone(), moved);
        }
        if let Some(bucket) = managed.0.get_mut(&bucket_key) {
            bucket.set = entry.set.union(&bucket.set);
            bucket.time.clone_from(&entry.time);
        }
        managed.0.remove(&key);
        length -= 1;
    }
}
