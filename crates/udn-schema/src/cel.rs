//! `x-kubernetes-validations` evaluation as the apiserver's CEL validator walks an object:
//! every node's rules see `self` (and `oldSelf` for transition rules, only when the node
//! has a correlated old value), errors carry the node's field path (or the rule's
//! `fieldPath`), and on update errors of non-transition rules are ratcheted away when the
//! node is unchanged.

use kube_cel::cel::ExecutionError;
use kube_cel::{ErrorKind, ValidationError};
use serde_json::Value;

use crate::correlate;
use crate::error::{FieldError, FieldErrorKind};
use crate::go_format;
use crate::schema::{Additional, Node, NodeRules, RuleInfo};

/// Evaluate every rule under `value`; `path` is the apimachinery field path (`""` = root).
pub(crate) fn validate(
    value: &Value,
    old: Option<&Value>,
    node: &Node,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    if value.is_null() {
        return;
    }
    if let Some(rules) = &node.rules {
        evaluate(rules, value, old, node, path, out);
    }
    match value {
        Value::Object(object) => {
            for (name, child_node) in &node.properties {
                if let Some(child) = object.get(name) {
                    let child_old = correlate::old_property(old, name);
                    let child_path = join(path, name);
                    validate(child, child_old, child_node, &child_path, out);
                }
            }
            if let Some(Additional::Schema(value_node)) = &node.additional {
                let mut keys: Vec<&String> = object
                    .keys()
                    .filter(|key| !node.properties.contains_key(*key))
                    .collect();
                keys.sort();
                for key in keys {
                    if let Some(child) = object.get(key) {
                        let child_old = correlate::old_property(old, key);
                        let child_path = format!("{path}[{key}]");
                        validate(child, child_old, value_node, &child_path, out);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = &node.items {
                for (index, item) in items.iter().enumerate() {
                    let item_old = correlate::old_item(old, node, item);
                    let item_path = format!("{path}[{index}]");
                    validate(item, item_old, item_node, &item_path, out);
                }
            }
        }
        _ => {}
    }
}

fn evaluate(
    rules: &NodeRules,
    value: &Value,
    old: Option<&Value>,
    node: &Node,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let Err(errors) = kube_cel::validate_compiled(&rules.compiled, value, old) else {
        return;
    };
    let unchanged = old.is_some_and(|old| old == value);
    for error in errors {
        let info = rules.info.get(&error.rule);
        if unchanged && !info.is_some_and(|info| info.transition) {
            continue;
        }
        out.push(field_error(&error, info, node, value, path));
    }
}

/// The apiserver's field error for a failed or broken rule of the node holding `value`.
fn field_error(
    error: &ValidationError,
    info: Option<&RuleInfo>,
    node: &Node,
    value: &Value,
    path: &str,
) -> FieldError {
    // Only a failed rule is reported at its `fieldPath`; a rule that could not be
    // evaluated is reported at the node that holds it.
    let relative = match error.kind {
        ErrorKind::ValidationFailure => error.field_path.trim_start_matches('.'),
        _ => "",
    };
    let field = match (path.is_empty(), relative.is_empty()) {
        (true, true) => "<nil>".to_owned(),
        (true, false) => relative.to_owned(),
        (false, true) => path.to_owned(),
        (false, false) => format!("{path}.{relative}"),
    };
    // A rule that could not be evaluated names the node's schema type as its value.
    let type_value = Some(go_format::quote(node.type_label()));
    // A failed rule echoes the node's value (`self`, also when the rule reports at a
    // `fieldPath` or with a `messageExpression`), except for objects and arrays, whose
    // value is omitted (validation.go `validateExpressions`, Kubernetes 1.35 on).
    let self_value = match node.type_label() {
        "object" | "array" => None,
        _ => Some(go_format::bad_value(value)),
    };
    match error.kind {
        ErrorKind::ValidationFailure => match error.reason.as_deref() {
            Some("FieldValueForbidden") => FieldError::new(
                field,
                FieldErrorKind::Forbidden,
                None,
                error.message.clone(),
            ),
            Some("FieldValueRequired") => {
                FieldError::new(field, FieldErrorKind::Required, None, error.message.clone())
            }
            Some("FieldValueDuplicate") => {
                FieldError::new(field, FieldErrorKind::Duplicate, self_value, "")
            }
            _ => FieldError::new(
                field,
                FieldErrorKind::Invalid,
                self_value,
                error.message.clone(),
            ),
        },
        ErrorKind::EvaluationError => {
            let cause = std::error::Error::source(error)
                .and_then(|source| source.downcast_ref::<ExecutionError>())
                .map_or_else(|| error.message.clone(), go_error_text);
            FieldError::new(
                field,
                FieldErrorKind::Invalid,
                type_value,
                format!("{cause} evaluating rule: {}", rule_label(error, info)),
            )
        }
        _ => FieldError::new(field, FieldErrorKind::Internal, None, error.message.clone()),
    }
}

/// The rule's message, or its expression when it has none (`ruleErrorString`).
fn rule_label<'a>(error: &'a ValidationError, info: Option<&'a RuleInfo>) -> &'a str {
    match info.and_then(|info| info.message.as_deref()) {
        Some(message) if !message.trim().is_empty() => message.trim(),
        _ => error.rule.trim(),
    }
}

/// cel-go's wording for the runtime errors both evaluators share.
fn go_error_text(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::NoSuchOverload => "no such overload".to_owned(),
        ExecutionError::IndexOutOfBounds(index) => format!("index out of bounds: {index:?}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        other => other.to_string(),
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}
