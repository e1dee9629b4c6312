//! `metav1.LabelSelector` matching, as `metav1.LabelSelectorAsSelector` + `Matches`.
//!
//! Used wherever a selector picks objects: a CUDN's `namespaceSelector`, and the list
//! `labelSelector` of the test API server (which parses the string form into the same
//! requirements).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// One requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// `key in (values)` / `key=value`.
    In(String, BTreeSet<String>),
    /// `key notin (values)` / `key!=value` (also true when the key is absent).
    NotIn(String, BTreeSet<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

impl Requirement {
    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
            Self::NotIn(key, values) => labels.get(key).is_none_or(|v| !values.contains(v)),
            Self::Exists(key) => labels.contains_key(key),
            Self::DoesNotExist(key) => !labels.contains_key(key),
        }
    }
}

/// A parsed selector: all requirements must hold. Empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector(pub Vec<Requirement>);

impl Selector {
    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| r.matches(labels))
    }
}

/// Why a `LabelSelector` is not a valid selector (messages as upstream's apimachinery).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// An operator other than In, NotIn, Exists, DoesNotExist.
    #[error("{operator:?} is not a valid label selector operator")]
    UnknownOperator {
        /// The operator as given.
        operator: String,
    },
    /// In/NotIn without values.
    #[error(
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    )]
    EmptyValues,
    /// Exists/DoesNotExist with values.
    #[error(
        "values: Invalid value: {values:?}: values set must be empty for exists and does not exist"
    )]
    UnexpectedValues {
        /// The values given.
        values: Vec<String>,
    },
}

/// Convert a `LabelSelector` (matchLabels + matchExpressions) into requirements.
pub fn label_selector(selector: &LabelSelector) -> Result<Selector, SelectorError> {
    let mut requirements = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        requirements.push(Requirement::In(
            key.clone(),
            BTreeSet::from([value.clone()]),
        ));
    }
    for expr in selector.match_expressions.iter().flatten() {
        let values: Vec<String> = expr.values.clone().unwrap_or_default();
        let key = expr.key.clone();
        let requirement = match expr.operator.as_str() {
            "In" | "NotIn" => {
                if values.is_empty() {
                    return Err(SelectorError::EmptyValues);
                }
                let set = values.into_iter().collect();
                if expr.operator == "In" {
                    Requirement::In(key, set)
                } else {
                    Requirement::NotIn(key, set)
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    return Err(SelectorError::UnexpectedValues { values });
                }
                if expr.operator == "Exists" {
                    Requirement::Exists(key)
                } else {
                    Requirement::DoesNotExist(key)
                }
            }
            other => {
                return Err(SelectorError::UnknownOperator {
                    operator: other.to_owned(),
                });
            }
        };
        requirements.push(requirement);
    }
    Ok(Selector(requirements))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).to_owned()).collect()),
        }
    }

    #[test]
    fn empty_selector_matches_everything() {
        let selector = label_selector(&LabelSelector::default()).unwrap();
        assert!(selector.matches(&labels(&[])));
        assert!(selector.matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn match_labels_and_expressions_all_hold() {
        let selector = label_selector(&LabelSelector {
            match_labels: Some(BTreeMap::from([("tenant".to_owned(), "berlin".to_owned())])),
            match_expressions: Some(vec![
                expr("env", "In", &["prod", "dev"]),
                expr("legacy", "DoesNotExist", &[]),
                expr("tier", "NotIn", &["db"]),
                expr("team", "Exists", &[]),
            ]),
        })
        .unwrap();
        assert!(selector.matches(&labels(&[
            ("tenant", "berlin"),
            ("env", "dev"),
            ("team", "x")
        ])));
        assert!(!selector.matches(&labels(&[
            ("tenant", "munich"),
            ("env", "dev"),
            ("team", "x")
        ])));
        assert!(!selector.matches(&labels(&[
            ("tenant", "berlin"),
            ("env", "qa"),
            ("team", "x")
        ])));
        assert!(!selector.matches(&labels(&[
            ("tenant", "berlin"),
            ("env", "dev"),
            ("team", "x"),
            ("legacy", "")
        ])));
        assert!(!selector.matches(&labels(&[
            ("tenant", "berlin"),
            ("env", "dev"),
            ("team", "x"),
            ("tier", "db")
        ])));
        assert!(!selector.matches(&labels(&[("tenant", "berlin"), ("env", "dev")])));
    }

    #[test]
    fn invalid_selectors_are_errors() {
        let with = |e| LabelSelector {
            match_expressions: Some(vec![e]),
            ..Default::default()
        };
        assert_eq!(
            label_selector(&with(expr("a", "In", &[]))),
            Err(SelectorError::EmptyValues)
        );
        assert!(matches!(
            label_selector(&with(expr("a", "Exists", &["x"]))),
            Err(SelectorError::UnexpectedValues { .. })
        ));
        assert_eq!(
            label_selector(&with(expr("a", "Like", &["x"])))
                .unwrap_err()
                .to_string(),
            "\"Like\" is not a valid label selector operator"
        );
    }
}
