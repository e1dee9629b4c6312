//! Field errors in the shape of apimachinery's `field.Error`, and the errors of loading a
//! CRD schema.

use std::fmt;

/// What is wrong with a field; mirrors apimachinery's `field.ErrorType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FieldErrorKind {
    /// `FieldValueRequired`: a required field is missing.
    Required,
    /// `FieldValueInvalid`: the value breaks a bound, pattern or CEL rule.
    Invalid,
    /// `FieldValueNotSupported`: the value is not one of the enum values.
    NotSupported,
    /// `FieldValueTooLong`: a string exceeds `maxLength`.
    TooLong,
    /// `FieldValueTooMany`: a list or object exceeds `maxItems` / `maxProperties`.
    TooMany,
    /// `FieldValueForbidden`: a CEL rule with reason `FieldValueForbidden` failed.
    Forbidden,
    /// `FieldValueDuplicate`: a set or map list holds the same element or key twice.
    Duplicate,
    /// `FieldValueTypeInvalid`: the value has the wrong JSON type or string format.
    TypeInvalid,
    /// `InternalError`: the validator could not evaluate something.
    Internal,
}

impl FieldErrorKind {
    /// The apimachinery type name (`FieldValueInvalid`, ...), as in a `StatusCause`.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Forbidden => "FieldValueForbidden",
            Self::Duplicate => "FieldValueDuplicate",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::Internal => "InternalError",
        }
    }

    /// The human text apimachinery prints for the type (`Invalid value`, ...).
    pub fn text(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Forbidden => "Forbidden",
            Self::Duplicate => "Duplicate value",
            Self::Internal => "Internal error",
        }
    }

    /// Whether the apiserver skips every CEL rule when an error of this kind is present
    /// (`hasBlockingErr` in the custom resource strategy).
    pub fn blocks_cel(self) -> bool {
        matches!(
            self,
            Self::NotSupported | Self::Required | Self::TooLong | Self::TooMany | Self::TypeInvalid
        )
    }

    /// Whether apimachinery prints the bad value for this kind.
    fn shows_value(self) -> bool {
        !matches!(
            self,
            Self::Required | Self::Forbidden | Self::TooLong | Self::Internal
        )
    }
}

/// One field error, displayed exactly as apimachinery's `field.Error.Error()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The field, e.g. `spec.layer3.subnets[0].cidr`; `<nil>` for errors about no field.
    pub path: String,
    /// The error type.
    pub kind: FieldErrorKind,
    /// The bad value as the apiserver renders it (`"Layer4"`, `100`, `null`, JSON for
    /// objects); `None` when the error type does not show a value.
    pub value: Option<String>,
    /// The detail after the value, e.g. the CEL rule message.
    pub message: String,
}

impl FieldError {
    /// An error of `kind` at `path` with an already rendered value and a detail.
    pub fn new(
        path: impl Into<String>,
        kind: FieldErrorKind,
        value: Option<String>,
        message: impl Into<String>,
    ) -> Self {
        let value = if kind.shows_value() { value } else { None };
        Self {
            path: path.into(),
            kind,
            value,
            message: message.into(),
        }
    }

    /// The text after `<path>: `, as apimachinery's `ErrorBody()`.
    pub fn body(&self) -> String {
        let mut out = self.kind.text().to_owned();
        if let Some(value) = &self.value {
            out.push_str(": ");
            out.push_str(value);
        }
        if !self.message.is_empty() {
            out.push_str(": ");
            out.push_str(&self.message);
        }
        out
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.body())
    }
}

impl std::error::Error for FieldError {}

/// The errors of one validation, in the order the apiserver reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldErrors(pub Vec<FieldError>);

impl FieldErrors {
    /// Whether there is no error.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of errors.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The errors as a slice.
    pub fn as_slice(&self) -> &[FieldError] {
        &self.0
    }

    /// Iterate over the errors.
    pub fn iter(&self) -> std::slice::Iter<'_, FieldError> {
        self.0.iter()
    }

    /// The aggregate text apimachinery builds from an error list: one message alone,
    /// several in brackets joined by `, `, duplicates dropped.
    pub fn aggregate(&self) -> String {
        let mut seen: Vec<String> = Vec::new();
        for error in &self.0 {
            let text = error.to_string();
            if !seen.contains(&text) {
                seen.push(text);
            }
        }
        match seen.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        }
    }
}

impl fmt::Display for FieldErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.aggregate())
    }
}

impl std::error::Error for FieldErrors {}

impl<'a> IntoIterator for &'a FieldErrors {
    type Item = &'a FieldError;
    type IntoIter = std::slice::Iter<'a, FieldError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// The message of the apiserver's 422 `Invalid` status for a custom resource:
/// `UserDefinedNetwork.k8s.ovn.org "name" is invalid: <aggregate>`.
pub fn invalid_message(kind: &str, group: &str, name: &str, errors: &FieldErrors) -> String {
    let qualified = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    let quoted_name = crate::go_format::quote(name);
    if errors.is_empty() {
        format!("{qualified} {quoted_name} is invalid")
    } else {
        format!("{qualified} {quoted_name} is invalid: {errors}")
    }
}

/// Why a CRD schema could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The CRD has no `spec.versions` entry with this name.
    #[error("CRD {crd} has no version {version:?}")]
    VersionNotFound {
        /// `metadata.name` of the CRD.
        crd: String,
        /// The version asked for.
        version: String,
    },
    /// The version has no `schema.openAPIV3Schema`.
    #[error("version {version:?} of CRD {crd} has no openAPIV3Schema")]
    MissingSchema {
        /// `metadata.name` of the CRD.
        crd: String,
        /// The version.
        version: String,
    },
    /// A schema node is malformed.
    #[error("schema node {path}: {reason}")]
    InvalidNode {
        /// Where in the schema (`properties.spec.properties.topology`).
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A `pattern` is not a valid regular expression.
    #[error("schema node {path}: pattern {pattern:?} does not compile")]
    InvalidPattern {
        /// Where in the schema.
        path: String,
        /// The pattern.
        pattern: String,
        /// The regex error.
        #[source]
        source: regex::Error,
    },
    /// A CEL rule or its messageExpression does not compile.
    #[error("schema node {path}: CEL rule {rule:?} does not compile: {reason}")]
    CelCompile {
        /// Where in the schema.
        path: String,
        /// The rule text.
        rule: String,
        /// The compiler's complaint.
        reason: String,
    },
}
