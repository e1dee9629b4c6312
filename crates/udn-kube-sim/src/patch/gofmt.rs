//! Go's `fmt` rendering of decoded JSON values (`%v`, `%q`) and Go type names, so that
//! error messages built from patch contents read as the real server's do.

use serde_json::{Map, Number, Value};

/// The dynamic Go type a JSON value decodes into (`interface{}` with ints preserved, as
/// the server decodes strategic merge patches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GoType {
    /// JSON null (a nil interface).
    Nil,
    /// `bool`.
    Bool,
    /// `int64`.
    Int,
    /// `float64`.
    Float,
    /// `string`.
    String,
    /// `[]interface {}`.
    Slice,
    /// `map[string]interface {}`.
    Map,
}

impl GoType {
    /// The Go type of `value`.
    pub(crate) fn of(value: &Value) -> Self {
        match value {
            Value::Null => Self::Nil,
            Value::Bool(_) => Self::Bool,
            Value::Number(n) if n.is_i64() => Self::Int,
            Value::Number(_) => Self::Float,
            Value::String(_) => Self::String,
            Value::Array(_) => Self::Slice,
            Value::Object(_) => Self::Map,
        }
    }

    /// `reflect.Type.String()` (`%!s(<nil>)` for nil, as `%s` prints a nil type).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Nil => "%!s(<nil>)",
            Self::Bool => "bool",
            Self::Int => "int64",
            Self::Float => "float64",
            Self::String => "string",
            Self::Slice => "[]interface {}",
            Self::Map => "map[string]interface {}",
        }
    }
}

/// The JSON kind word of `encoding/json` errors (`cannot unmarshal array into ...`).
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `fmt.Sprintf("%v", v)` of a decoded JSON value (maps print sorted by key).
pub(crate) fn value(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => write_map(out, map),
    }
}

fn write_map(out: &mut String, map: &Map<String, Value>) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push_str("map[");
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(key);
        out.push(':');
        if let Some(item) = map.get(key) {
            write_value(out, item);
        }
    }
    out.push(']');
}

/// `%v` of a JSON number as Go decodes it (int64 when integral and in range, float64
/// otherwise; floats use `%e` form outside the exponent range [-4, 21)).
pub(crate) fn number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    float(f)
}

fn float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..21).contains(&exponent) {
        format!("{f}")
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    }
}

pub(crate) use udn_api::go_text::{is_print, quote};

/// `value.ToString` of structured-merge-diff (used in field paths of conflict messages).
pub(crate) fn smd_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(smd_value).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", smd_value(v)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_print_as_go_prints_them() {
        assert_eq!(
            value(&json!({"b": [1, 2.5, "x"], "a": null, "c": true})),
            "map[a:<nil> b:[1 2.5 x] c:true]"
        );
        assert_eq!(value(&json!(1e21)), "1e+21");
        assert_eq!(value(&json!(0.00001)), "1e-05");
        assert_eq!(value(&json!(123456.5)), "123456.5");
        assert_eq!(quote("a\"b\n\u{1}é"), "\"a\\\"b\\n\\x01é\"");
        assert_eq!(smd_value(&json!("nginx")), "\"nginx\"");
        assert_eq!(GoType::of(&json!(1)).name(), "int64");
        assert_eq!(GoType::of(&json!(1.5)).name(), "float64");
    }
}
