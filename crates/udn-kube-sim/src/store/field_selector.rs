//! Field selectors (`metadata.name=x,spec.nodeName!=n`): parsing as apimachinery's
//! `fields.ParseSelector`, the fields each type supports, and matching.

use serde_json::Value;

use super::registry::{Builtin, TypeEntry};
use crate::error::ApiError;

/// One term: `field=value` (or `==`) or `field!=value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Term {
    field: String,
    value: String,
    equal: bool,
}

/// A parsed field selector, checked against the type's supported fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct FieldSelector {
    terms: Vec<Term>,
    /// Selectable fields of a custom type: (label, path).
    custom: Vec<(String, String)>,
    builtin: Option<Builtin>,
    namespaced: bool,
}

fn split_terms(selector: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (index, ch) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if ch == '\\' {
            in_slash = true;
        } else if ch == ',' {
            terms.push(selector.get(start..index).unwrap_or_default());
            start = index + 1;
        }
    }
    terms.push(selector.get(start..).unwrap_or_default());
    terms
}

fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    for (index, _) in term.char_indices() {
        let rest = term.get(index..).unwrap_or_default();
        for op in ["!=", "==", "="] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((term.get(..index).unwrap_or_default(), op, value));
            }
        }
    }
    None
}

fn unescape(value: &str) -> Result<String, String> {
    if !value.contains(['\\', ',', '=']) {
        return Ok(value.to_owned());
    }
    let mut out = String::new();
    let mut in_slash = false;
    for ch in value.chars() {
        if in_slash {
            match ch {
                '\\' | ',' | '=' => out.push(ch),
                other => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    ));
                }
            }
            in_slash = false;
            continue;
        }
        match ch {
            '\\' => in_slash = true,
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(ch)
                ));
            }
            other => out.push(other),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_owned());
    }
    Ok(out)
}

/// The field labels a built-in type supports besides `metadata.name` (and
/// `metadata.namespace` when namespaced); `None` for types with the default conversion.
fn builtin_fields(builtin: Builtin) -> Option<&'static [&'static str]> {
    Some(match builtin {
        Builtin::Pod => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        Builtin::Namespace => &["status.phase"],
        Builtin::Node => &["spec.unschedulable"],
        Builtin::Service => &["spec.clusterIP", "spec.type"],
        Builtin::Event | Builtin::EventsV1 => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        Builtin::EndpointSlice | Builtin::Lease | Builtin::ConfigMap | Builtin::Crd => {
            return None;
        }
    })
}

impl FieldSelector {
    /// Parse `selector` for objects of `entry`; unknown fields are the server's 400.
    pub(super) fn parse(entry: &TypeEntry, selector: &str) -> Result<Self, ApiError> {
        let mut parts = split_terms(selector);
        parts.sort_unstable();
        let mut terms = Vec::new();
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let Some((field, op, value)) = split_term(part) else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{selector}'; can't understand '{part}'"
                )));
            };
            let value = unescape(value).map_err(ApiError::bad_request)?;
            terms.push(Term {
                field: field.to_owned(),
                value,
                equal: op != "!=",
            });
        }
        let namespaced = entry.rt.namespaced;
        for term in &terms {
            let field = term.field.as_str();
            let supported = match entry.builtin() {
                None => {
                    field == "metadata.name"
                        || (namespaced && field == "metadata.namespace")
                        || entry.selectable.iter().any(|(label, _)| label == field)
                }
                Some(builtin) => match builtin_fields(builtin) {
                    None => {
                        if field != "metadata.name" && field != "metadata.namespace" {
                            return Err(ApiError::bad_request(format!(
                                "{field:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                            )));
                        }
                        true
                    }
                    Some(fields) => {
                        field == "metadata.name"
                            || (namespaced && field == "metadata.namespace")
                            || fields.contains(&field)
                    }
                },
            };
            if !supported {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
        }
        Ok(Self {
            terms,
            custom: entry.selectable.clone(),
            builtin: entry.builtin(),
            namespaced,
        })
    }

    pub(super) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether `obj` satisfies every term.
    pub(super) fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|term| {
            let value = self.field_value(obj, &term.field);
            (value == term.value) == term.equal
        })
    }

    fn field_value(&self, obj: &Value, field: &str) -> String {
        let path = match (self.builtin, field) {
            (_, "metadata.namespace") if !self.namespaced => return String::new(),
            (Some(Builtin::Event), "source") => {
                let component = render(obj.pointer("/source/component"));
                return if component.is_empty() {
                    render(obj.get("reportingComponent"))
                } else {
                    component
                };
            }
            (Some(Builtin::Event), "reportingComponent") => "reportingComponent".to_owned(),
            (None, f) => self
                .custom
                .iter()
                .find(|(label, _)| label == f)
                .map_or_else(|| f.to_owned(), |(_, path)| path.clone()),
            (_, f) => f.to_owned(),
        };
        let pointer = format!("/{}", path.replace('.', "/"));
        let value = obj.pointer(&pointer);
        match (value, field) {
            (None, "spec.hostNetwork" | "spec.unschedulable") => "false".to_owned(),
            _ => render(value),
        }
    }
}

/// A field value as a selector compares it: strings as they are, other scalars in JSON.
fn render(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_split_on_unescaped_commas() {
        assert_eq!(split_terms("a=b\\,c,d=e"), vec!["a=b\\,c", "d=e"]);
        assert_eq!(split_term("a!=b"), Some(("a", "!=", "b")));
        assert_eq!(split_term("a==b"), Some(("a", "==", "b")));
        assert_eq!(unescape("b\\,c").unwrap(), "b,c");
        assert_eq!(
            unescape("b\\x").unwrap_err(),
            "invalid field selector: invalid escape sequence: \\x"
        );
    }
}
