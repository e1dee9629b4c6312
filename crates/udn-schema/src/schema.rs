//! The structural schema of one CRD version, parsed once into a tree of [`Node`]s.

use std::collections::BTreeMap;

use kube_cel::CompiledSchema;
use regex::Regex;
use serde_json::{Map, Value};

use crate::error::SchemaError;

/// `x-kubernetes-list-type` of an array node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ListType {
    /// Replaced as a whole; items are not correlated with old items.
    Atomic,
    /// Scalar items that must be unique; correlated by value.
    Set,
    /// Object items unique by these keys; correlated by key.
    Map(Vec<String>),
}

/// `additionalProperties` of an object node.
#[derive(Debug)]
pub(crate) enum Additional {
    /// `additionalProperties: false` (unknown keys are pruned).
    Deny,
    /// `additionalProperties: true` (keys kept, values unchecked).
    Any,
    /// A map: every key's value follows this schema.
    Schema(Box<Node>),
}

/// An inclusive or exclusive numeric bound.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bound {
    pub(crate) value: f64,
    pub(crate) exclusive: bool,
}

/// The CEL rules of one node, compiled over the node's subtree (rules of descendants
/// stripped so that each node only evaluates its own).
#[derive(Debug)]
pub(crate) struct NodeRules {
    pub(crate) compiled: CompiledSchema,
    /// Per rule text: what the evaluator needs besides the program.
    pub(crate) info: BTreeMap<String, RuleInfo>,
}

/// Facts about one rule of a node.
#[derive(Debug)]
pub(crate) struct RuleInfo {
    /// The rule reads `oldSelf` (a transition rule).
    pub(crate) transition: bool,
    /// The static `message`, if any.
    pub(crate) message: Option<String>,
}

/// One node of a structural schema.
#[derive(Debug, Default)]
pub(crate) struct Node {
    /// The `type` keyword (`object`, `array`, `string`, `integer`, `number`, `boolean`).
    pub(crate) type_name: Option<String>,
    pub(crate) format: Option<String>,
    pub(crate) nullable: bool,
    pub(crate) int_or_string: bool,
    pub(crate) enum_values: Option<Vec<Value>>,
    pub(crate) minimum: Option<Bound>,
    pub(crate) maximum: Option<Bound>,
    pub(crate) multiple_of: Option<f64>,
    pub(crate) min_length: Option<u64>,
    pub(crate) max_length: Option<u64>,
    pub(crate) pattern: Option<(String, Regex)>,
    pub(crate) min_items: Option<u64>,
    pub(crate) max_items: Option<u64>,
    pub(crate) min_properties: Option<u64>,
    pub(crate) max_properties: Option<u64>,
    pub(crate) required: Vec<String>,
    pub(crate) properties: BTreeMap<String, Node>,
    pub(crate) items: Option<Box<Node>>,
    pub(crate) additional: Option<Additional>,
    pub(crate) preserve_unknown_fields: bool,
    pub(crate) embedded_resource: bool,
    pub(crate) list_type: Option<ListType>,
    pub(crate) default: Option<Value>,
    pub(crate) rules: Option<NodeRules>,
}

impl Node {
    /// Parse the schema tree rooted at `schema`; `path` names the node in errors.
    pub(crate) fn parse(schema: &Value, path: &str) -> Result<Self, SchemaError> {
        let Some(object) = schema.as_object() else {
            return Err(invalid(path, "is not an object"));
        };
        let mut node = Self {
            type_name: string_field(object, "type", path)?,
            format: string_field(object, "format", path)?,
            nullable: flag(object, "nullable"),
            int_or_string: flag(object, "x-kubernetes-int-or-string"),
            enum_values: object.get("enum").and_then(Value::as_array).cloned(),
            minimum: bound(object, "minimum", "exclusiveMinimum", path)?,
            maximum: bound(object, "maximum", "exclusiveMaximum", path)?,
            multiple_of: number_field(object, "multipleOf", path)?,
            min_length: count(object, "minLength", path)?,
            max_length: count(object, "maxLength", path)?,
            pattern: pattern(object, path)?,
            min_items: count(object, "minItems", path)?,
            max_items: count(object, "maxItems", path)?,
            min_properties: count(object, "minProperties", path)?,
            max_properties: count(object, "maxProperties", path)?,
            required: string_list(object, "required", path)?,
            preserve_unknown_fields: flag(object, "x-kubernetes-preserve-unknown-fields"),
            embedded_resource: flag(object, "x-kubernetes-embedded-resource"),
            list_type: list_type(object, path)?,
            default: object.get("default").cloned(),
            ..Self::default()
        };
        if let Some(properties) = object.get("properties") {
            let Some(properties) = properties.as_object() else {
                return Err(invalid(path, "properties is not an object"));
            };
            for (name, child) in properties {
                let child_path = format!("{path}.properties.{name}");
                node.properties
                    .insert(name.clone(), Self::parse(child, &child_path)?);
            }
        }
        if let Some(items) = object.get("items") {
            node.items = Some(Box::new(Self::parse(items, &format!("{path}.items"))?));
        }
        node.additional = match object.get("additionalProperties") {
            None => None,
            Some(Value::Bool(false)) => Some(Additional::Deny),
            Some(Value::Bool(true)) => Some(Additional::Any),
            Some(child) => Some(Additional::Schema(Box::new(Self::parse(
                child,
                &format!("{path}.additionalProperties"),
            )?))),
        };
        node.rules = compile_rules(schema, path)?;
        Ok(node)
    }

    /// The type name the apiserver reports as the bad value of a failed CEL rule.
    pub(crate) fn type_label(&self) -> &str {
        self.type_name.as_deref().unwrap_or("")
    }

    /// Whether unknown fields under this object are kept.
    pub(crate) fn keeps_unknown_fields(&self) -> bool {
        self.preserve_unknown_fields || matches!(self.additional, Some(Additional::Any))
    }
}

fn invalid(path: &str, reason: &str) -> SchemaError {
    SchemaError::InvalidNode {
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}

fn flag(object: &Map<String, Value>, key: &str) -> bool {
    object.get(key).and_then(Value::as_bool) == Some(true)
}

fn string_field(
    object: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, SchemaError> {
    match object.get(key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(invalid(path, &format!("{key} is not a string"))),
    }
}

fn number_field(
    object: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<f64>, SchemaError> {
    match object.get(key) {
        None => Ok(None),
        Some(value) => value
            .as_f64()
            .map(Some)
            .ok_or_else(|| invalid(path, &format!("{key} is not a number"))),
    }
}

fn count(object: &Map<String, Value>, key: &str, path: &str) -> Result<Option<u64>, SchemaError> {
    match object.get(key) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(|| invalid(path, &format!("{key} is not a non-negative integer"))),
    }
}

fn bound(
    object: &Map<String, Value>,
    key: &str,
    exclusive_key: &str,
    path: &str,
) -> Result<Option<Bound>, SchemaError> {
    Ok(number_field(object, key, path)?.map(|value| Bound {
        value,
        exclusive: flag(object, exclusive_key),
    }))
}

fn string_list(
    object: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Vec<String>, SchemaError> {
    match object.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| invalid(path, &format!("{key} holds a non-string")))
            })
            .collect(),
        Some(_) => Err(invalid(path, &format!("{key} is not a list"))),
    }
}

fn pattern(
    object: &Map<String, Value>,
    path: &str,
) -> Result<Option<(String, Regex)>, SchemaError> {
    let Some(source) = string_field(object, "pattern", path)? else {
        return Ok(None);
    };
    let regex = Regex::new(&source).map_err(|source_error| SchemaError::InvalidPattern {
        path: path.to_owned(),
        pattern: source.clone(),
        source: source_error,
    })?;
    Ok(Some((source, regex)))
}

fn list_type(object: &Map<String, Value>, path: &str) -> Result<Option<ListType>, SchemaError> {
    match string_field(object, "x-kubernetes-list-type", path)?.as_deref() {
        None => Ok(None),
        Some("atomic") => Ok(Some(ListType::Atomic)),
        Some("set") => Ok(Some(ListType::Set)),
        Some("map") => {
            let keys = string_list(object, "x-kubernetes-list-map-keys", path)?;
            if keys.is_empty() {
                return Err(invalid(
                    path,
                    "list type map without x-kubernetes-list-map-keys",
                ));
            }
            Ok(Some(ListType::Map(keys)))
        }
        Some(other) => Err(invalid(
            path,
            &format!("unknown x-kubernetes-list-type {other:?}"),
        )),
    }
}

/// Compile the rules of this node over a copy of its subtree without descendant rules.
fn compile_rules(schema: &Value, path: &str) -> Result<Option<NodeRules>, SchemaError> {
    let has_rules = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|rules| !rules.is_empty());
    if !has_rules {
        return Ok(None);
    }
    let mut own = schema.clone();
    for_each_subschema(&mut own, &mut strip_rules);
    let compiled = kube_cel::compile_schema(&own);
    let mut info = BTreeMap::new();
    for result in &compiled.validations {
        match result {
            Ok(rule) => {
                info.insert(
                    rule.rule.rule.clone(),
                    RuleInfo {
                        transition: rule.is_transition_rule,
                        message: rule.rule.message.clone(),
                    },
                );
            }
            Err(error) => {
                return Err(SchemaError::CelCompile {
                    path: path.to_owned(),
                    rule: compile_error_rule(error),
                    reason: error.to_string(),
                });
            }
        }
    }
    Ok(Some(NodeRules { compiled, info }))
}

fn compile_error_rule(error: &kube_cel::CompilationError) -> String {
    match error {
        kube_cel::CompilationError::Parse { rule, .. }
        | kube_cel::CompilationError::MessageExpressionParse { rule, .. } => rule.clone(),
        _ => String::new(),
    }
}

/// Remove `x-kubernetes-validations` from `schema` and every schema below it.
fn strip_rules(schema: &mut Value) {
    if let Value::Object(object) = schema {
        object.remove("x-kubernetes-validations");
    }
    for_each_subschema(schema, &mut strip_rules);
}

/// Call `visit` on each direct subschema of `schema` (properties, items,
/// additionalProperties, allOf/anyOf/oneOf, not).
fn for_each_subschema(schema: &mut Value, visit: &mut impl FnMut(&mut Value)) {
    let Value::Object(object) = schema else {
        return;
    };
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties.values_mut().for_each(&mut *visit);
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child @ Value::Object(_)) = object.get_mut(key) {
            visit(child);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = object.get_mut(key) {
            branches.iter_mut().for_each(&mut *visit);
        }
    }
}
