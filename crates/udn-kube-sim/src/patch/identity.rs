//! What the server checks on every patched object before it is stored: that it decodes
//! as an object of the resource's kind, and that its name and namespace are the URL's
//! (`handlers/patch.go` `applyPatch`, `checkName`,
//! `rest.EnsureObjectNamespaceMatchesRequestNamespace`).

use serde_json::{Map, Value};

use super::PatchContext;
use super::errors;
use super::gofmt;
use super::schema::TypeSchema;
use crate::error::ApiError;

/// The Go type the JSON serializer decodes apiVersion and kind into.
const FIND_KIND_TYPE: &str = "struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }";

/// Decode the result of a JSON or merge patch as an object of the kind: it must be an
/// object whose `apiVersion` and `kind` are the resource's. Built-in kinds get missing
/// ones filled in (the typed decoder defaults them); custom resources need them.
pub(super) fn decode_patched(
    patched: Value,
    ctx: &PatchContext<'_>,
    schema: &TypeSchema<'_>,
) -> Result<Value, ApiError> {
    if let Some(detail) = decode_problem(&patched, ctx, schema) {
        let rendered = serde_json::to_string(&patched).unwrap_or_default();
        return Err(errors::invalid_patched_object(&rendered, &detail));
    }
    let mut patched = patched;
    set_type_meta(&mut patched, ctx);
    Ok(patched)
}

/// Why `patched` does not decode as an object of the kind, in the decoder's words.
fn decode_problem(
    patched: &Value,
    ctx: &PatchContext<'_>,
    schema: &TypeSchema<'_>,
) -> Option<String> {
    let Value::Object(map) = patched else {
        return Some(format!(
            "couldn't get version/kind; json parse error: {}",
            errors::unmarshal_message(gofmt::json_kind(patched), FIND_KIND_TYPE)
        ));
    };
    let (api_version, kind) = match (string_field(map, "apiVersion"), string_field(map, "kind")) {
        (Err((field, value)), _) | (_, Err((field, value))) => {
            return Some(format!(
                "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{field} of type string",
                gofmt::json_kind(value),
            ));
        }
        (Ok(api_version), Ok(kind)) => (api_version, kind),
    };
    let rendered = || serde_json::to_string(patched).unwrap_or_default();
    if !schema.builtin() && kind.is_empty() {
        return Some(format!("Object 'Kind' is missing in '{}'", rendered()));
    }
    if !schema.builtin() && api_version.is_empty() {
        return Some(format!(
            "Object 'apiVersion' is missing in '{}'",
            rendered()
        ));
    }
    let kind = if kind.is_empty() { ctx.kind } else { kind };
    let api_version = if api_version.is_empty() {
        ctx.api_version
    } else {
        api_version
    };
    if kind != ctx.kind || api_version != ctx.api_version {
        return Some(format!(
            "no kind {} is registered for version {}",
            gofmt::quote(kind),
            gofmt::quote(api_version)
        ));
    }
    metadata_shape(map).err().map(|bad| {
        format!(
            "json: cannot unmarshal {} into Go struct field {}.{} of type {}",
            gofmt::json_kind(bad.value),
            ctx.kind,
            bad.field,
            bad.go_type
        )
    })
}

/// Set `apiVersion` and `kind` to the resource's (what decoding into the typed object
/// does for a strategic merge patch), keeping them first in the object.
pub(super) fn set_type_meta(object: &mut Value, ctx: &PatchContext<'_>) {
    let Value::Object(map) = object else {
        return;
    };
    let mut out = Map::with_capacity(map.len() + 2);
    out.insert(
        "apiVersion".to_owned(),
        Value::String(ctx.api_version.to_owned()),
    );
    out.insert("kind".to_owned(), Value::String(ctx.kind.to_owned()));
    for (key, value) in std::mem::take(map) {
        if key != "apiVersion" && key != "kind" {
            out.insert(key, value);
        }
    }
    *map = out;
}

fn string_field<'a>(
    map: &'a Map<String, Value>,
    field: &'static str,
) -> Result<&'a str, (&'static str, &'a Value)> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err((field, other)),
    }
}

/// A metadata field of the wrong JSON type.
#[derive(Debug)]
pub(super) struct BadField<'a> {
    /// Path below the object (`metadata`, `metadata.name`).
    pub(super) field: &'static str,
    /// The Go type it decodes into.
    pub(super) go_type: &'static str,
    /// The offending value.
    pub(super) value: &'a Value,
}

/// `metadata` must be an object and its name, namespace and uid strings.
pub(super) fn metadata_shape(map: &Map<String, Value>) -> Result<(), BadField<'_>> {
    let metadata = match map.get("metadata") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(metadata)) => metadata,
        Some(other) => {
            return Err(BadField {
                field: "metadata",
                go_type: "v1.ObjectMeta",
                value: other,
            });
        }
    };
    for (key, field) in [
        ("name", "metadata.name"),
        ("namespace", "metadata.namespace"),
        ("uid", "metadata.uid"),
    ] {
        match metadata.get(key) {
            None | Some(Value::Null | Value::String(_)) => {}
            Some(other) => {
                return Err(BadField {
                    field,
                    go_type: "string",
                    value: other,
                });
            }
        }
    }
    Ok(())
}

/// `metadata.<field>` as a string (`""` when absent).
pub(super) fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Make the namespace the request's (set when empty, cleared for cluster-scoped
/// resources) and check the name is the URL's.
pub(super) fn check_name_and_namespace(
    object: &mut Value,
    ctx: &PatchContext<'_>,
) -> Result<(), ApiError> {
    let request_namespace = ctx.namespace.unwrap_or("");
    let object_namespace = meta_str(object, "namespace").to_owned();
    if object_namespace != request_namespace {
        if object_namespace.is_empty() {
            set_meta(object, "namespace", Some(request_namespace));
        } else if request_namespace.is_empty() {
            set_meta(object, "namespace", None);
        } else {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    let name = meta_str(object, "name");
    if name != ctx.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            ctx.name
        )));
    }
    Ok(())
}

fn set_meta(object: &mut Value, field: &str, value: Option<&str>) {
    let Value::Object(map) = object else {
        return;
    };
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if metadata.is_null() {
        *metadata = Value::Object(Map::new());
    }
    if let Value::Object(metadata) = metadata {
        match value {
            Some(value) => {
                metadata.insert(field.to_owned(), Value::String(value.to_owned()));
            }
            None => {
                metadata.shift_remove(field);
            }
        }
    }
}
