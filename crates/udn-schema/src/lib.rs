//! Validate custom resources against one CRD version the way kube-apiserver does, without
//! an apiserver: prune unknown fields, apply defaults, check the structural OpenAPI schema
//! (types, formats, enums, bounds, lengths, patterns, item and property counts, required
//! fields), the uniqueness of `set`/`map` lists, and the `x-kubernetes-validations` CEL
//! rules (through `kube-cel`), with transition rules and ratcheting on update.
//!
//! Errors are [`FieldError`]s that display exactly as apimachinery's `field.Error`, e.g.
//! `spec.topology: Unsupported value: "Layer4": supported values: "Layer2", "Layer3"`, and
//! [`invalid_message`] builds the message of the apiserver's 422 response.
//!
//! ```
//! use serde_json::json;
//! use udn_schema::CrdValidator;
//!
//! let crd = json!({
//!     "metadata": {"name": "widgets.example.com"},
//!     "spec": {
//!         "group": "example.com",
//!         "names": {"kind": "Widget"},
//!         "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
//!             "type": "object",
//!             "properties": {"spec": {
//!                 "type": "object",
//!                 "properties": {"size": {"type": "integer", "maximum": 10}},
//!             }},
//!         }}}],
//!     },
//! });
//! let validator = CrdValidator::new(&crd, "v1")?;
//! let errors = validator
//!     .validate(&json!({"spec": {"size": 11}}), None)
//!     .unwrap_err();
//! assert_eq!(
//!     validator.invalid_message("w", &errors),
//!     "Widget.example.com \"w\" is invalid: spec.size: Invalid value: 11: \
//!      spec.size in body should be less than or equal to 10",
//! );
//! # Ok::<(), udn_schema::SchemaError>(())
//! ```
//!
//! Known differences from the apiserver:
//! - `metadata` is neither validated nor pruned (names and namespaces are checked
//!   elsewhere);
//! - `allOf`/`anyOf`/`oneOf`/`not` value validations are not checked;
//! - the `email` and `uri` formats are approximations of Go's parsers;
//! - CEL runs on `kube-cel`: the text of a runtime error (`... evaluating rule: <message>`)
//!   is cel-go's only for missing keys, bad indexes and division by zero; `==` on `set` and
//!   `map` lists compares in order; `optionalOldSelf` binds `oldSelf` to `null` rather than
//!   an optional; there is no cost budget.

mod cel;
mod correlate;
mod error;
mod format;
mod go_format;
mod listtype;
mod object_name;
mod prune;
mod schema;
mod structural;
mod validator;

pub use error::{FieldError, FieldErrorKind, FieldErrors, SchemaError, invalid_message};
pub use object_name::validate_object_name;
pub use validator::{CEL_SKIPPED_MESSAGE, CrdValidator};
