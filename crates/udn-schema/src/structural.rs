//! OpenAPI value validation as kube-openapi's `SchemaValidator` runs it for a custom
//! resource: per node the type, string, format, number, list, enum and object checks in
//! that order, errors converted to `field.Error`s the way the apiextensions apiserver
//! converts them. On update, a node's own errors are dropped when its value equals the
//! correlated old value (CRD validation ratcheting).

use serde_json::{Map, Number, Value};

use crate::correlate;
use crate::error::{FieldError, FieldErrorKind};
use crate::format;
use crate::go_format;
use crate::schema::{Additional, Bound, Node};

/// Validate `value` (at kube-openapi path `path`, `""` for the root) against `node`.
pub(crate) fn validate(
    value: &Value,
    old: Option<&Value>,
    node: &Node,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let mut check = Check {
        path,
        node,
        ratchet: old.is_some_and(|old| old == value),
        out,
    };
    check.run(value, old);
}

struct Check<'a> {
    path: &'a str,
    node: &'a Node,
    /// The value equals its correlated old value: this node's own errors are ratcheted.
    ratchet: bool,
    out: &'a mut Vec<FieldError>,
}

impl Check<'_> {
    fn run(&mut self, value: &Value, old: Option<&Value>) {
        if value.is_null() {
            self.check_type(value);
            self.check_enum(value);
            return;
        }
        self.check_type(value);
        if let Value::String(text) = value {
            self.check_string(text);
            self.check_format(text);
        }
        if let Value::Number(number) = value {
            self.check_number(number);
        }
        if let Value::Array(items) = value {
            self.check_list(items, old);
        }
        self.check_enum(value);
        if let Value::Object(object) = value {
            self.check_object(object, old);
        }
    }

    /// Record an error of this node (dropped when ratcheted).
    fn own(&mut self, kind: FieldErrorKind, value: Option<String>, message: String) {
        if !self.ratchet {
            self.out
                .push(FieldError::new(field_path(self.path), kind, value, message));
        }
    }

    /// A plain (non-field) kube-openapi error: reported at `<nil>` with an empty value.
    fn own_unplaced(&mut self, message: String) {
        if !self.ratchet {
            self.out.push(FieldError::new(
                "<nil>",
                FieldErrorKind::Invalid,
                Some(go_format::quote("")),
                message,
            ));
        }
    }

    fn in_body(&self) -> String {
        format!("{} in body", self.path)
    }

    fn check_type(&mut self, value: &Value) {
        let node = self.node;
        let types = node_types(node);
        if types.is_empty() && node.format.is_none() {
            return;
        }
        let (actual, _) = json_type(value);
        if value.is_null() {
            if !types.is_empty() && !node.nullable {
                self.type_error(&types.join(","), "null");
            }
            return;
        }
        let integral = value.as_f64().is_some_and(|f| f.fract() == 0.0);
        let float_int = actual == "number" && integral && types.contains(&"integer");
        let int_float = actual == "integer" && types.contains(&"number");
        let numeric_type = types.contains(&"number") || types.contains(&"integer");
        if !numeric_type && node.format.is_some() && (value.is_string() || value.is_array()) {
            return;
        }
        if !(types.contains(&actual) || float_int || int_float) {
            self.type_error(&types.join(","), actual);
        }
    }

    fn type_error(&mut self, expected: &str, actual: &str) {
        let message = format!(
            "{} must be of type {expected}: {}",
            self.in_body(),
            go_format::quote(actual)
        );
        self.own(
            FieldErrorKind::TypeInvalid,
            Some(go_format::quote(actual)),
            message,
        );
    }

    fn check_string(&mut self, text: &str) {
        let node = self.node;
        let length = text.chars().count() as u64;
        if let Some(max) = node.max_length
            && length > max
        {
            let unit = if max == 1 { "byte" } else { "bytes" };
            self.own(
                FieldErrorKind::TooLong,
                None,
                format!("may not be more than {max} {unit}"),
            );
            return;
        }
        if let Some(min) = node.min_length
            && length < min
        {
            let message = format!("{} should be at least {min} chars long", self.in_body());
            self.own(
                FieldErrorKind::Invalid,
                Some(go_format::quote(text)),
                message,
            );
            return;
        }
        if let Some((source, regex)) = &node.pattern
            && !regex.is_match(text)
        {
            let message = format!("{} should match '{source}'", self.in_body());
            self.own(
                FieldErrorKind::Invalid,
                Some(go_format::quote(text)),
                message,
            );
        }
    }

    fn check_format(&mut self, text: &str) {
        let Some(name) = &self.node.format else {
            return;
        };
        if format::check(name, text) == Some(false) {
            let message = format!(
                "{} must be of type {name}: {}",
                self.in_body(),
                go_format::quote(text)
            );
            self.own(
                FieldErrorKind::TypeInvalid,
                Some(go_format::quote(text)),
                message,
            );
        }
    }

    fn check_number(&mut self, number: &Number) {
        let node = self.node;
        let data = Numeric::from(number);
        let (type_name, format) = range_type(node);
        if let Some(message) = range_error(&data.text(), type_name, format, "Checked", self.path) {
            self.own_unplaced(message);
        }
        if let Some(factor) = node.multiple_of {
            self.check_multiple_of(data, factor, type_name, format);
        }
        if let Some(bound) = node.minimum {
            self.check_bound(data, bound, false, type_name, format);
        }
        if let Some(bound) = node.maximum {
            self.check_bound(data, bound, true, type_name, format);
        }
    }

    fn check_multiple_of(&mut self, data: Numeric, factor: f64, type_name: &str, format: &str) {
        let boundary = range_error(
            &float_text(factor),
            type_name,
            format,
            "MultipleOf",
            self.path,
        );
        let failed = match (data, boundary.is_none()) {
            (Numeric::Int(value), true) => {
                let factor = factor as i64;
                (factor > 0 && value % factor != 0).then(|| factor.to_string())
            }
            _ => {
                let value = data.as_f64();
                let ratio = if factor < 1.0 {
                    1.0 / factor * value
                } else {
                    value / factor
                };
                (factor > 0.0 && ratio.fract() != 0.0).then(|| go_format::float(factor))
            }
        };
        if let Some(message) = boundary {
            self.own_unplaced(message);
        }
        if factor <= 0.0 {
            let message = format!(
                "factor MultipleOf declared for {} must be positive: {}",
                self.path,
                go_format::float(factor)
            );
            self.own(
                FieldErrorKind::Invalid,
                Some(go_format::float(factor)),
                message,
            );
        } else if let Some(shown) = failed {
            let message = format!("{} should be a multiple of {shown}", self.in_body());
            self.own(FieldErrorKind::Invalid, Some(data.render()), message);
        }
    }

    fn check_bound(
        &mut self,
        data: Numeric,
        bound: Bound,
        upper: bool,
        type_name: &str,
        format: &str,
    ) {
        let prefix = if upper {
            "Maximum boundary"
        } else {
            "Minimum boundary"
        };
        let boundary = range_error(
            &float_text(bound.value),
            type_name,
            format,
            prefix,
            self.path,
        );
        let (broken, shown) = match (data, boundary.is_none()) {
            (Numeric::Int(value), true) => {
                let limit = bound.value as i64;
                let broken = match (upper, bound.exclusive) {
                    (true, false) => value > limit,
                    (true, true) => value >= limit,
                    (false, false) => value < limit,
                    (false, true) => value <= limit,
                };
                (broken, limit.to_string())
            }
            _ => {
                let value = data.as_f64();
                let limit = bound.value;
                let broken = match (upper, bound.exclusive) {
                    (true, false) => value > limit,
                    (true, true) => value >= limit,
                    (false, false) => value < limit,
                    (false, true) => value <= limit,
                };
                (broken, go_format::float(limit))
            }
        };
        if let Some(message) = boundary {
            self.own_unplaced(message);
        }
        if broken {
            let relation = match (upper, bound.exclusive) {
                (true, false) => "less than or equal to",
                (true, true) => "less than",
                (false, false) => "greater than or equal to",
                (false, true) => "greater than",
            };
            let message = format!("{} should be {relation} {shown}", self.in_body());
            self.own(FieldErrorKind::Invalid, Some(data.render()), message);
        }
    }

    fn check_list(&mut self, items: &[Value], old: Option<&Value>) {
        let node = self.node;
        if let Some(item_node) = &node.items {
            for (index, item) in items.iter().enumerate() {
                let item_old = correlate::old_item(old, node, item);
                let item_path = format!("{}[{index}]", self.path);
                validate(item, item_old, item_node, &item_path, self.out);
            }
        }
        let size = items.len() as u64;
        if let Some(min) = node.min_items
            && size < min
        {
            let message = format!("{} should have at least {min} items", self.in_body());
            self.own(FieldErrorKind::Invalid, Some(size.to_string()), message);
        }
        if let Some(max) = node.max_items
            && size > max
        {
            self.own(
                FieldErrorKind::TooMany,
                Some(size.to_string()),
                too_many(max),
            );
        }
    }

    fn check_enum(&mut self, value: &Value) {
        let Some(allowed) = &self.node.enum_values else {
            return;
        };
        if allowed.is_empty() || allowed.iter().any(|candidate| same(candidate, value)) {
            return;
        }
        let supported: Vec<String> = allowed
            .iter()
            .map(|candidate| match candidate {
                Value::String(text) => go_format::quote(text),
                other => go_format::quote(&go_format::json(other)),
            })
            .collect();
        let message = format!("supported values: {}", supported.join(", "));
        self.own(
            FieldErrorKind::NotSupported,
            Some(go_format::bad_value(value)),
            message,
        );
    }

    fn check_object(&mut self, object: &Map<String, Value>, old: Option<&Value>) {
        let node = self.node;
        let size = object.len() as u64;
        if let Some(min) = node.min_properties
            && size < min
        {
            let message = format!("{} should have at least {min} properties", self.in_body());
            self.own(FieldErrorKind::Invalid, Some(size.to_string()), message);
        }
        if let Some(max) = node.max_properties
            && size > max
        {
            self.own(
                FieldErrorKind::TooMany,
                Some(size.to_string()),
                too_many(max),
            );
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
                    let child_path = format!("{}.{key}", self.path);
                    validate(child, child_old, value_node, &child_path, self.out);
                }
            }
        }
        for (name, child_node) in &node.properties {
            if let Some(child) = object.get(name) {
                let child_old = correlate::old_property(old, name);
                let child_path = if self.path.is_empty() {
                    name.clone()
                } else {
                    format!("{}.{name}", self.path)
                };
                validate(child, child_old, child_node, &child_path, self.out);
            }
        }
        for name in &node.required {
            if !object.contains_key(name) {
                let required_path = format!("{}.{name}", self.path);
                if !self.ratchet {
                    self.out.push(FieldError::new(
                        field_path(&required_path),
                        FieldErrorKind::Required,
                        None,
                        "",
                    ));
                }
            }
        }
    }
}

/// The field path apimachinery prints for a kube-openapi path.
fn field_path(path: &str) -> String {
    let trimmed = path.trim_start_matches('.');
    if trimmed.is_empty() {
        "<nil>".to_owned()
    } else {
        trimmed.to_owned()
    }
}

fn too_many(max: u64) -> String {
    let unit = if max == 1 { "item" } else { "items" };
    format!("must have at most {max} {unit}")
}

/// The declared types of a node; int-or-string nodes accept both.
fn node_types(node: &Node) -> Vec<&str> {
    if node.int_or_string {
        return vec!["integer", "string"];
    }
    node.type_name.as_deref().into_iter().collect()
}

/// JSON type and numeric format of a decoded value, as kube-openapi infers them.
fn json_type(value: &Value) -> (&'static str, &'static str) {
    match value {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(number) if number.is_i64() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    }
}

/// Equality as kube-openapi's enum check sees it: numbers compare by value.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// A JSON number as the apiserver decodes it: int64 when it fits, float64 otherwise.
#[derive(Clone, Copy, Debug)]
enum Numeric {
    Int(i64),
    Float(f64),
}

impl Numeric {
    fn from(number: &Number) -> Self {
        match number.as_i64() {
            Some(int) => Self::Int(int),
            None => Self::Float(number.as_f64().unwrap_or(f64::NAN)),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Self::Int(int) => int as f64,
            Self::Float(float) => float,
        }
    }

    /// The value as Go's `%v` prints it in a field error.
    fn render(self) -> String {
        match self {
            Self::Int(int) => int.to_string(),
            Self::Float(float) => go_format::float(float),
        }
    }

    /// The value as `swag.FormatInt64` / `swag.FormatFloat64` spell it.
    fn text(self) -> String {
        match self {
            Self::Int(int) => int.to_string(),
            Self::Float(float) => float_text(float),
        }
    }
}

/// `strconv.FormatFloat(f, 'f', -1, 64)`.
fn float_text(value: f64) -> String {
    format!("{value}")
}

/// The type and format kube-openapi's number validator range-checks against: only a single
/// `integer` type with format int32/int64, or a single `number` type with float/double.
fn range_type(node: &Node) -> (&'static str, &'static str) {
    if node.int_or_string {
        return ("", "");
    }
    match (node.type_name.as_deref(), node.format.as_deref()) {
        (Some("integer"), Some("int32")) => ("integer", "int32"),
        (Some("integer"), Some("int64")) => ("integer", "int64"),
        (Some("integer"), _) => ("integer", ""),
        (Some("number"), Some("float")) => ("number", "float"),
        (Some("number"), Some("double")) => ("number", "double"),
        (Some("number"), _) => ("number", ""),
        _ => ("", ""),
    }
}

/// kube-openapi's `IsValueValidAgainstRange`: whether `text` parses as the numeric type.
fn range_error(
    text: &str,
    type_name: &str,
    format: &str,
    prefix: &str,
    path: &str,
) -> Option<String> {
    let fits = match (type_name, format) {
        ("integer", "int32") => text.parse::<i32>().is_ok(),
        ("integer", _) => text.parse::<i64>().is_ok(),
        (_, "float") => text
            .parse::<f64>()
            .is_ok_and(|f| f.is_finite() && f.abs() <= f64::from(f32::MAX)),
        _ => true,
    };
    if fits {
        return None;
    }
    let type_name = if type_name.is_empty() {
        "number"
    } else {
        type_name
    };
    Some(if format.is_empty() {
        format!("{prefix} value must be of type {type_name} (default format) in {path}")
    } else {
        format!("{prefix} value must be of type {type_name} with format {format} in {path}")
    })
}
