//! CustomResourceDefinitions: checking one, turning it into a served type with a schema
//! validator per version, and the status the naming and establishing controllers write.

use std::sync::Arc;

use serde_json::{Value, json};
use udn_schema::{CrdValidator, FieldError, FieldErrorKind, FieldErrors};

use super::registry::{Flavor, TypeEntry};
use crate::error::ApiError;
use crate::patch::SchemaHints;
use crate::resource::{ResourceKey, ResourceType};

/// The finalizer the server keeps on a CRD until its objects are deleted.
pub(super) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

const CRD_GROUP: &str = "apiextensions.k8s.io";
const CRD_KIND: &str = "CustomResourceDefinition";

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The key of the type a CRD serves (from its spec).
pub(super) fn served_key(crd: &Value) -> Option<ResourceKey> {
    let group = text(crd, "/spec/group");
    let plural = text(crd, "/spec/names/plural");
    (!plural.is_empty()).then(|| ResourceKey {
        group: group.to_owned(),
        plural: plural.to_owned(),
    })
}

/// The 422 for a CRD's field errors.
pub(super) fn invalid_crd(name: &str, errors: FieldErrors) -> ApiError {
    super::validate::invalid(CRD_GROUP, CRD_KIND, name, &errors)
}

/// Check a CRD and build its served type (validators for every served version).
pub(super) fn type_from_crd(crd: &Value) -> Result<TypeEntry, ApiError> {
    let name = text(crd, "/metadata/name");
    let group = text(crd, "/spec/group");
    let plural = text(crd, "/spec/names/plural");
    let kind = text(crd, "/spec/names/kind");
    let scope = text(crd, "/spec/scope");
    let mut errors = Vec::new();
    let mut required = |path: &str, value: &str| {
        if value.is_empty() {
            errors.push(FieldError::new(path, FieldErrorKind::Required, None, ""));
        }
    };
    required("spec.group", group);
    required("spec.names.plural", plural);
    required("spec.names.kind", kind);
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        errors.push(FieldError::new(
            "metadata.name",
            FieldErrorKind::Invalid,
            Some(format!("{name:?}")),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if scope != "Namespaced" && scope != "Cluster" {
        let (kind, value) = if scope.is_empty() {
            (FieldErrorKind::Required, None)
        } else {
            (FieldErrorKind::NotSupported, Some(format!("{scope:?}")))
        };
        let message = if scope.is_empty() {
            ""
        } else {
            "supported values: \"Cluster\", \"Namespaced\""
        };
        errors.push(FieldError::new("spec.scope", kind, value, message));
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage_count = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if versions.is_empty() {
        errors.push(FieldError::new(
            "spec.versions",
            FieldErrorKind::Invalid,
            Some("null".to_owned()),
            "must have exactly one version marked as storage version",
        ));
    } else if storage_count != 1 {
        errors.push(FieldError::new(
            "spec.versions",
            FieldErrorKind::Invalid,
            None,
            "must have exactly one version marked as storage version",
        ));
    }
    let mut served = Vec::new();
    let mut validators = Vec::new();
    let mut status_subresource = false;
    let mut printer_columns = Vec::new();
    let mut apply_hints = None;
    for (index, version) in versions.iter().enumerate() {
        let version_name = text(version, "/name");
        let storage = version.get("storage").and_then(Value::as_bool) == Some(true);
        if version.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let path = format!("spec.versions[{index}].schema.openAPIV3Schema");
        if version.pointer("/schema/openAPIV3Schema").is_none() {
            errors.push(FieldError::new(
                path,
                FieldErrorKind::Required,
                None,
                "schemas are required",
            ));
            continue;
        }
        match CrdValidator::new(crd, version_name) {
            Ok(validator) => validators.push((version_name.to_owned(), Arc::new(validator))),
            Err(error) => errors.push(FieldError::new(
                path,
                FieldErrorKind::Invalid,
                None,
                error.to_string(),
            )),
        }
        if storage {
            served.insert(0, version_name.to_owned());
            status_subresource = version.pointer("/subresources/status").is_some();
            apply_hints = version
                .pointer("/schema/openAPIV3Schema")
                .map(SchemaHints::from_open_api_v3);
            printer_columns = version
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
        } else {
            served.push(version_name.to_owned());
        }
    }
    if !errors.is_empty() {
        return Err(invalid_crd(name, FieldErrors(errors)));
    }
    let names = |field: &str| -> Vec<String> {
        super::meta::string_list(crd.pointer(&format!("/spec/names/{field}")))
    };
    let singular = match text(crd, "/spec/names/singular") {
        "" => kind.to_lowercase(),
        singular => singular.to_owned(),
    };
    let list_kind = match text(crd, "/spec/names/listKind") {
        "" => format!("{kind}List"),
        list_kind => list_kind.to_owned(),
    };
    let selectable = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("selectableFields"))
        .and_then(Value::as_array)
        .map(|fields| {
            fields
                .iter()
                .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                .map(|path| {
                    let path = path.trim_start_matches('.');
                    (path.to_owned(), path.to_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(TypeEntry {
        rt: ResourceType {
            group: group.to_owned(),
            versions: served,
            kind: kind.to_owned(),
            list_kind,
            plural: plural.to_owned(),
            singular,
            short_names: names("shortNames"),
            categories: names("categories"),
            namespaced: scope == "Namespaced",
            status_subresource,
            validators,
            printer_columns,
        },
        flavor: Flavor::Custom {
            crd_name: name.to_owned(),
        },
        selectable,
        apply_hints,
    })
}

/// The status the apiserver's controllers give an accepted CRD: accepted names, the
/// NamesAccepted and Established conditions, and the stored versions.
pub(super) fn established_status(crd: &Value, entry: &TypeEntry, now: &str) -> Value {
    let old = crd.get("status");
    let mut stored: Vec<String> =
        super::meta::string_list(old.and_then(|s| s.get("storedVersions")));
    if let Some(storage) = entry.rt.versions.first()
        && !stored.contains(storage)
    {
        stored.push(storage.clone());
    }
    let condition = |kind: &str, reason: &str, message: &str| {
        let since = old
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|conds| {
                conds
                    .iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
            })
            .and_then(|c| c.get("lastTransitionTime"))
            .and_then(Value::as_str)
            .unwrap_or(now)
            .to_owned();
        json!({
            "type": kind,
            "status": "True",
            "lastTransitionTime": since,
            "reason": reason,
            "message": message,
        })
    };
    let mut accepted = json!({
        "plural": entry.rt.plural,
        "singular": entry.rt.singular,
        "kind": entry.rt.kind,
        "listKind": entry.rt.list_kind,
    });
    if !entry.rt.short_names.is_empty() {
        accepted["shortNames"] = json!(entry.rt.short_names);
    }
    if !entry.rt.categories.is_empty() {
        accepted["categories"] = json!(entry.rt.categories);
    }
    json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": accepted,
        "storedVersions": stored,
    })
}

/// Mark a CRD's status as terminating (its objects are being deleted).
pub(super) fn set_terminating(crd: &mut Value, now: &str) {
    let Some(map) = crd.as_object_mut() else {
        return;
    };
    let status = map.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = status
        .as_object_mut()
        .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
    let Some(Value::Array(conditions)) = conditions else {
        return;
    };
    conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some("Terminating"));
    conditions.push(json!({
        "type": "Terminating",
        "status": "True",
        "lastTransitionTime": now,
        "reason": "InstanceDeletionPending",
        "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    }));
}
