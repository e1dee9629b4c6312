//! Errors of schema parsing and value checking.

/// A schema that cannot be read, or a value that does not fit its column type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaError {
    /// The schema JSON is malformed.
    #[error("invalid schema at {at}: {reason}")]
    Invalid {
        /// Where: `schema`, `table T`, `column T.C`.
        at: String,
        /// What is wrong.
        reason: String,
    },
    /// A value does not fit a column type.
    #[error("value {value} does not fit type {ty}: {reason}")]
    Mismatch {
        /// The value, as JSON.
        value: String,
        /// The type, as the schema spells it.
        ty: String,
        /// Why.
        reason: String,
    },
}
