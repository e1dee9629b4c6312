//! [`CrdValidator`]: one CRD version's schema, applied to objects as the apiserver's
//! custom resource handler applies it on create and update.

use serde_json::Value;

use crate::error::{FieldError, FieldErrorKind, FieldErrors, SchemaError, invalid_message};
use crate::schema::Node;
use crate::{cel, listtype, prune, structural};

/// The detail of the error the apiserver adds when schema errors keep it from running the
/// CEL rules.
pub const CEL_SKIPPED_MESSAGE: &str = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// Validates, prunes and defaults objects of one version of one CRD.
#[derive(Debug)]
pub struct CrdValidator {
    crd_name: String,
    group: String,
    kind: String,
    version: String,
    root: Node,
}

impl CrdValidator {
    /// Load `version` of `crd` (a `CustomResourceDefinition` as JSON). Fails when the
    /// version or its schema is missing, a node is malformed, a pattern or a CEL rule does
    /// not compile (the apiserver refuses such a CRD).
    pub fn new(crd: &Value, version: &str) -> Result<Self, SchemaError> {
        let text = |pointer: &str| {
            crd.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let crd_name = text("/metadata/name");
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let Some(entry) = versions
            .iter()
            .find(|entry| entry.get("name").and_then(Value::as_str) == Some(version))
        else {
            return Err(SchemaError::VersionNotFound {
                crd: crd_name,
                version: version.to_owned(),
            });
        };
        let Some(schema) = entry.pointer("/schema/openAPIV3Schema") else {
            return Err(SchemaError::MissingSchema {
                crd: crd_name,
                version: version.to_owned(),
            });
        };
        let root = Node::parse(schema, "openAPIV3Schema")?;
        Ok(Self {
            group: text("/spec/group"),
            kind: text("/spec/names/kind"),
            crd_name,
            version: version.to_owned(),
            root,
        })
    }

    /// `metadata.name` of the CRD.
    pub fn crd_name(&self) -> &str {
        &self.crd_name
    }

    /// API group of the resource.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// Kind of the resource.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The version this validator checks.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Prune unknown fields and apply defaults, as the apiserver does when it decodes an
    /// object (also to stored objects when it reads them).
    pub fn normalize(&self, obj: &Value) -> Value {
        let mut value = obj.clone();
        prune::prune(&mut value, &self.root, true);
        prune::apply_defaults(&mut value, &self.root);
        value
    }

    /// Validate `obj` for a create (`old` = `None`) or an update of `old`. Returns the
    /// pruned, defaulted object, or every field error in the apiserver's order: schema
    /// errors, duplicate list entries, then CEL rule errors (or, when a schema error
    /// blocks them, the `<nil>` note that the rules were not checked).
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Result<Value, FieldErrors> {
        let value = self.normalize(obj);
        let old = old.map(|old| self.normalize(old));
        let old = old.as_ref();
        let mut errors = Vec::new();
        structural::validate(&value, old, &self.root, "", &mut errors);
        let old_list_errors = old.is_some_and(|old| {
            let mut old_errors = Vec::new();
            listtype::validate(old, &self.root, "", &mut old_errors);
            !old_errors.is_empty()
        });
        if !old_list_errors {
            listtype::validate(&value, &self.root, "", &mut errors);
        }
        if errors.iter().any(|error| error.kind.blocks_cel()) {
            errors.push(FieldError::new(
                "<nil>",
                FieldErrorKind::Invalid,
                Some("null".to_owned()),
                CEL_SKIPPED_MESSAGE,
            ));
        } else {
            cel::validate(&value, old, &self.root, "", &mut errors);
        }
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(FieldErrors(errors))
        }
    }

    /// The message of the 422 the apiserver returns for `errors` on the object `name`.
    pub fn invalid_message(&self, name: &str, errors: &FieldErrors) -> String {
        invalid_message(&self.kind, &self.group, name, errors)
    }
}
