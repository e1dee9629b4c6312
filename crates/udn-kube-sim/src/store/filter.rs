//! The label and field selectors of a list, watch or deletecollection, together.

use serde_json::Value;

use super::field_selector::FieldSelector;
use super::label_selector::{self, LabelSelector};
use super::meta;
use super::registry::TypeEntry;
use crate::error::ApiError;
use crate::options::ListOptions;

/// Which objects a request selects.
#[derive(Clone, Debug, Default)]
pub(super) struct Filter {
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    /// The selectors of `opts` for objects of `entry`; a bad selector is a 400.
    pub(super) fn new(entry: &TypeEntry, opts: &ListOptions) -> Result<Self, ApiError> {
        let labels = match opts.label_selector.as_deref() {
            None | Some("") => LabelSelector::default(),
            Some(text) => label_selector::parse(text).map_err(ApiError::bad_request)?,
        };
        let fields = match opts.field_selector.as_deref() {
            None | Some("") => FieldSelector::default(),
            Some(text) => FieldSelector::parse(entry, text)?,
        };
        Ok(Self { labels, fields })
    }

    /// Whether the filter selects everything.
    pub(super) fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    pub(super) fn matches(&self, obj: &Value) -> bool {
        (self.labels.is_empty() || self.labels.matches(&meta::labels(obj)))
            && (self.fields.is_empty() || self.fields.matches(obj))
    }
}
