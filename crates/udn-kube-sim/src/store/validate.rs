//! Validation on create and update: object names, the CRD schema of custom resources, and
//! the 422 Invalid errors built from field errors.

use serde_json::Value;
use udn_schema::{FieldError, FieldErrorKind, FieldErrors, validate_object_name};

use super::registry::{Builtin, TypeEntry};
use super::{meta, service_validation};
use crate::error::{ApiError, StatusCause};

/// 422 Invalid: `<Kind>[.<group>] "<name>" is invalid: <errors>`, one cause per error.
pub(super) fn invalid(group: &str, kind: &str, name: &str, errors: &FieldErrors) -> ApiError {
    let causes = errors
        .iter()
        .map(|error| StatusCause {
            reason: error.kind.reason().to_owned(),
            message: error.body(),
            field: error.path.clone(),
        })
        .collect();
    ApiError::invalid(
        group,
        kind,
        name,
        udn_schema::invalid_message(kind, group, name, errors),
        causes,
    )
}

const DNS1035_MAX: usize = 63;
const DNS1035_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric \
characters or '-', start with an alphabetic character, and end with an alphanumeric character \
(e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn is_dns1035(name: &str) -> bool {
    let bytes = name.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_lowercase()
                && alnum(last)
                && bytes.iter().all(|b| alnum(b) || *b == b'-')
        }
        _ => false,
    }
}

/// `metadata.name` rules of the type: DNS-1123 label for namespaces, DNS-1035 label for
/// services, DNS-1123 subdomain otherwise.
pub(super) fn name_errors(entry: &TypeEntry, name: &str) -> Vec<FieldError> {
    if entry.is(Builtin::Service) && !name.is_empty() {
        let mut errors = Vec::new();
        let quoted = || Some(format!("{name:?}"));
        if name.len() > DNS1035_MAX {
            errors.push(FieldError::new(
                "metadata.name",
                FieldErrorKind::Invalid,
                quoted(),
                format!("must be no more than {DNS1035_MAX} characters"),
            ));
        }
        if !is_dns1035(name) {
            errors.push(FieldError::new(
                "metadata.name",
                FieldErrorKind::Invalid,
                quoted(),
                DNS1035_MESSAGE,
            ));
        }
        return errors;
    }
    let subdomain = !entry.is(Builtin::Namespace);
    validate_object_name(name, subdomain)
        .err()
        .map(|errors| errors.0)
        .unwrap_or_default()
}

/// Validate an object about to be stored: `metadata_errors` found by the caller come
/// first, then the name rules (`check_name`), the Service rules of
/// [`service_validation`], then for custom resources their CRD's schema
/// and CEL rules (with `old` for updates); custom resources come back pruned and defaulted.
pub(super) fn check(
    entry: &TypeEntry,
    obj: Value,
    old: Option<&Value>,
    check_name: bool,
    metadata_errors: Vec<FieldError>,
) -> Result<Value, ApiError> {
    let name = meta::meta_str(&obj, "name").to_owned();
    let mut errors = metadata_errors;
    if check_name {
        errors.extend(name_errors(entry, &name));
    }
    if entry.is(Builtin::Service) {
        errors.extend(service_validation::service_errors(&obj, old));
    }
    let mut obj = obj;
    if entry.is_custom() {
        let version = meta_version(&obj);
        let validator = entry
            .rt
            .validators
            .iter()
            .find(|(v, _)| Some(v.as_str()) == version.as_deref())
            .or_else(|| entry.rt.validators.first())
            .map(|(_, validator)| validator);
        if let Some(validator) = validator {
            match validator.validate(&obj, old) {
                Ok(valid) => obj = valid,
                Err(schema_errors) => errors.extend(schema_errors.0),
            }
        }
    }
    if errors.is_empty() {
        Ok(obj)
    } else {
        Err(invalid(
            &entry.rt.group,
            &entry.rt.kind,
            &name,
            &FieldErrors(errors),
        ))
    }
}

/// The version part of the object's `apiVersion`.
fn meta_version(obj: &Value) -> Option<String> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str)?;
    Some(
        api_version
            .rsplit_once('/')
            .map_or(api_version, |(_, v)| v)
            .to_owned(),
    )
}

/// `metadata.finalizers: Forbidden: no new finalizers can be added if the object is being
/// deleted, found new finalizers []string{...}`.
pub(super) fn new_finalizer_errors(new: &Value, old: &Value) -> Vec<FieldError> {
    if !meta::is_deleting(old) {
        return Vec::new();
    }
    let old_finalizers = meta::finalizers(old);
    let added: Vec<String> = meta::finalizers(new)
        .into_iter()
        .filter(|f| !old_finalizers.contains(f))
        .collect();
    if added.is_empty() {
        return Vec::new();
    }
    let list = added
        .iter()
        .map(|f| format!("{f:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    vec![FieldError::new(
        "metadata.finalizers",
        FieldErrorKind::Forbidden,
        None,
        format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}"
        ),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1035_names() {
        assert!(is_dns1035("web-1"));
        assert!(!is_dns1035("1web"));
        assert!(!is_dns1035("web-"));
        assert!(!is_dns1035("a.b"));
    }
}
