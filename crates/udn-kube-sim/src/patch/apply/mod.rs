//! Server-side apply (`application/apply-patch+yaml`), after structured-merge-diff's
//! `Updater.Apply` and the server's field manager chain:
//!
//! 1. The body (YAML or JSON) must be an object whose `apiVersion` and `kind` are the
//!    resource's (`400 invalid object type: <group>/<version>, Kind=<kind>`) and that has
//!    no `metadata.managedFields` (`400 metadata.managedFields must be nil`). Its lists
//!    must have their key fields and no duplicate keys (`500 failed to create typed patch
//!    object (...)`, as the server answers).
//! 2. An existing object without managers first gets a `before-first-apply` `Update`
//!    manager owning all its fields.
//! 3. The configuration is merged into the live object ([`merge`]); the applier's new
//!    field set is the configuration's fields.
//! 4. Fields the applier owned before, no longer applies and nobody else owns are removed.
//! 5. Every field another manager owns that the result adds or changes is a conflict:
//!    `409 Apply failed with N conflict(s) ...` unless `force`, which takes the fields
//!    from them. Removed fields leave every manager.
//! 6. The applier's entry (`operation: Apply`, `subresource: status` on `/status`) gets the
//!    time of the write when the object changed.
//!
//! Not modelled: the `kubectl.kubernetes.io/last-applied-configuration` upgrade path
//! (client-side to server-side apply), per-version conversion of managers, `+structType=
//! atomic`/`+mapType=atomic` objects (all objects are granular here).

mod merge;

use serde_json::{Map, Value};

use super::PatchContext;
use super::errors;
use super::fields::compare::compare;
use super::fields::from_value::field_set;
use super::fields::remove::remove;
use super::fields::{FieldSet, path_display};
use super::identity;
use super::managed::{
    self, Managed, ManagerEntry, ManagerId, Operation, outside, reset_field, strip_meta,
    without_managed_fields,
};
use super::schema::TypeSchema;
use crate::error::ApiError;

/// The manager that owns an object's fields from before its first apply.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// Apply configuration `body` to `current` (`None`: create).
pub(super) fn apply(
    current: Option<&Value>,
    body: &[u8],
    ctx: &PatchContext<'_>,
    schema: &TypeSchema<'_>,
) -> Result<Value, ApiError> {
    let config = decode_config(body)?;
    check_config(&config, ctx)?;
    let config_set = config_fields(&config, ctx, schema)?;
    let base = current
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let live = without_managed_fields(&base);
    let mut managed = live_managers(&base, current.is_some(), ctx, schema)?;

    let id = ManagerId::new(ctx.field_manager.unwrap_or_default(), Operation::Apply, ctx);
    let key = id.key();
    let previous = managed.0.get(&key).cloned();
    managed.0.insert(
        key.clone(),
        ManagerEntry {
            id,
            set: config_set,
            time: previous.as_ref().and_then(|p| p.time.clone()),
        },
    );
    let mut merged = merge::merge(&live, &config, schema);
    if let Some(previous) = &previous {
        prune(&mut merged, &previous.set, &managed, schema);
    }
    settle_ownership(&live, &merged, &mut managed, &key, ctx, schema)?;
    if merged != live
        && let Some(entry) = managed.0.get_mut(&key)
    {
        entry.time = Some(managed::now(ctx));
    }
    managed.drop_empty();
    if current.is_none() {
        check_new_uid(&merged, ctx)?;
    }
    identity::set_type_meta(&mut merged, ctx);
    identity::check_name_and_namespace(&mut merged, ctx)?;
    managed.encode_into(&mut merged);
    Ok(merged)
}

/// The fields the configuration sets, as the applier will own them.
fn config_fields(
    config: &Value,
    ctx: &PatchContext<'_>,
    schema: &TypeSchema<'_>,
) -> Result<FieldSet, ApiError> {
    let mut set = field_set(config, schema).map_err(|e| {
        errors::unknown(format!(
            "failed to create typed patch object ({}): {e}",
            gvk_nn(config)
        ))
    })?;
    let reset = reset_field(ctx, schema);
    set.retain(|path| outside(reset, path));
    strip_meta(&mut set);
    Ok(set)
}

/// The live object's managers; an existing object without any gets
/// `before-first-apply`.
fn live_managers(
    base: &Value,
    exists: bool,
    ctx: &PatchContext<'_>,
    schema: &TypeSchema<'_>,
) -> Result<Managed, ApiError> {
    let managed = Managed::decode(base).map_err(|e| {
        errors::unknown(format!(
            "failed to decode managed fields: {}",
            error_chain(&e)
        ))
    })?;
    if managed.0.is_empty() && exists {
        return Ok(before_first_apply(
            &without_managed_fields(base),
            ctx,
            schema,
        ));
    }
    Ok(managed)
}

/// The body as an object: JSON, or else YAML.
fn decode_config(body: &[u8]) -> Result<Value, ApiError> {
    let value = match serde_json::from_slice::<Value>(body) {
        Ok(value) => value,
        Err(_) => {
            let text = std::str::from_utf8(body)
                .map_err(|e| ApiError::bad_request(format!("error encoding patch: {e}")))?;
            if text.trim().is_empty() {
                Value::Null
            } else {
                serde_saphyr::from_str::<Value>(text)
                    .map_err(|e| ApiError::bad_request(format!("error encoding patch: {e}")))?
            }
        }
    };
    match value {
        Value::Null => Ok(Value::Object(Map::new())),
        Value::Object(_) => Ok(value),
        other => Err(ApiError::bad_request(format!(
            "error decoding patch: {}",
            errors::unmarshal_message(super::gofmt::json_kind(&other), "map[string]interface {}")
        ))),
    }
}

/// The configuration's group, version and kind as the server prints a GVK
/// (`<group>/<version>, Kind=<kind>`).
fn gvk(config: &Value) -> String {
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version) = match api_version.matches('/').count() {
        0 => ("", api_version),
        1 => api_version.split_once('/').unwrap_or(("", "")),
        _ => ("", ""),
    };
    format!("{group}/{version}, Kind={kind}")
}

/// `<namespace>/<name>; <gvk>` as the server names an object in apply errors.
fn gvk_nn(config: &Value) -> String {
    format!(
        "{}/{}; {}",
        identity::meta_str(config, "namespace"),
        identity::meta_str(config, "name"),
        gvk(config)
    )
}

fn check_config(config: &Value, ctx: &PatchContext<'_>) -> Result<(), ApiError> {
    let api_version = config.get("apiVersion").and_then(Value::as_str);
    let kind = config.get("kind").and_then(Value::as_str);
    if api_version != Some(ctx.api_version) || kind != Some(ctx.kind) {
        return Err(ApiError::bad_request(format!(
            "invalid object type: {}",
            gvk(config)
        )));
    }
    let metadata = config.get("metadata");
    if metadata
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|f| !f.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    if let Value::Object(map) = config
        && let Err(bad) = identity::metadata_shape(map)
    {
        return Err(errors::unknown(format!(
            "failed to create typed patch object ({}): .{}: expected {}, got {}",
            gvk_nn(config),
            bad.field,
            if bad.go_type == "string" {
                "string"
            } else {
                "map"
            },
            super::gofmt::json_kind(bad.value)
        )));
    }
    Ok(())
}

/// The `before-first-apply` manager of an object that has none: it owns every field.
fn before_first_apply(live: &Value, ctx: &PatchContext<'_>, schema: &TypeSchema<'_>) -> Managed {
    let reset = reset_field(ctx, schema);
    let mut comparison = compare(&schema.zero_object(), live, schema);
    comparison.retain(|path| outside(reset, path));
    let mut set = comparison.changed();
    strip_meta(&mut set);
    let mut managed = Managed::default();
    if !set.is_empty() {
        let id = ManagerId::new(BEFORE_FIRST_APPLY, Operation::Update, ctx);
        managed.0.insert(
            id.key(),
            ManagerEntry {
                id,
                set,
                time: Some(managed::now(ctx)),
            },
        );
    }
    managed
}

/// Remove what the applier owned before and nobody owns now (the applier's new set
/// included), unless something owned lies below it.
fn prune(merged: &mut Value, previous: &FieldSet, managed: &Managed, schema: &TypeSchema<'_>) {
    let owned = managed
        .0
        .values()
        .fold(FieldSet::new(), |acc, entry| acc.union(&entry.set));
    let mut gone = previous.difference(&owned);
    gone.retain(|path| !owned.has_prefix(path));
    remove(merged, &gone, schema);
}

/// Conflicts with, and removals from, the other managers for the change from `live` to
/// `merged`.
fn settle_ownership(
    live: &Value,
    merged: &Value,
    managed: &mut Managed,
    applier: &str,
    ctx: &PatchContext<'_>,
    schema: &TypeSchema<'_>,
) -> Result<(), ApiError> {
    let reset = reset_field(ctx, schema);
    let mut comparison = compare(live, merged, schema);
    comparison.retain(|path| outside(reset, path));
    let changed = comparison.changed();
    let mut conflicts: Vec<errors::Conflict> = Vec::new();
    for (key, entry) in &managed.0 {
        if key == applier {
            continue;
        }
        for path in entry.set.intersection(&changed).iter() {
            conflicts.push(errors::Conflict {
                manager: entry.id.display(),
                manager_id: key.clone(),
                path: path_display(path),
            });
        }
    }
    if !conflicts.is_empty() && !ctx.force {
        return Err(errors::apply_conflict(&conflicts));
    }
    for (key, entry) in &mut managed.0 {
        if key == applier {
            continue;
        }
        entry.set = entry
            .set
            .difference(&changed)
            .difference(&comparison.removed);
    }
    Ok(())
}

/// A created object may not name a uid (there is no object it could be).
fn check_new_uid(merged: &Value, ctx: &PatchContext<'_>) -> Result<(), ApiError> {
    let uid = identity::meta_str(merged, "uid");
    if uid.is_empty() {
        return Ok(());
    }
    Err(ApiError::conflict_with(
        ctx.group,
        ctx.plural,
        ctx.name,
        &format!(
            "uid mismatch: the provided object specified uid {uid}, and no existing object was found"
        ),
    ))
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
