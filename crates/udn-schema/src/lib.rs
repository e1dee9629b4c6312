//! CRD schema validation.
