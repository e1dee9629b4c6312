//! How Go renders values in apimachinery error messages: `%q` for strings, `%v` for
//! numbers, `json.Marshal` for everything else.

use serde_json::{Number, Value};

/// Go `strconv.Quote` (the `%q` verb).
pub(crate) use udn_api::go_text::quote;

/// Go `%v` of a `float64`: the shortest digits, in exponent form when the decimal
/// exponent is below -4 or at least 6 (`1e+06`, `1.6777215e+07`).
pub(crate) fn float(value: f64) -> String {
    let (mantissa, exponent) = split_exponent(value);
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        format!("{value}")
    }
}

/// `value` in shortest scientific form, split into mantissa text and decimal exponent.
fn split_exponent(value: f64) -> (String, i32) {
    let scientific = format!("{value:e}");
    match scientific.split_once('e') {
        Some((mantissa, exponent)) => (mantissa.to_owned(), exponent.parse().unwrap_or(0)),
        None => (scientific, 0),
    }
}

/// Go `%v` of a JSON number as the apiserver decodes it (int64 when integral, else float64).
pub(crate) fn number(value: &Number) -> String {
    if let Some(int) = value.as_i64() {
        int.to_string()
    } else if let Some(uint) = value.as_u64() {
        float(uint as f64)
    } else {
        float(value.as_f64().unwrap_or(f64::NAN))
    }
}

/// A field error's bad value as `field.Error.ErrorBody` prints it.
pub(crate) fn bad_value(value: &Value) -> String {
    match value {
        Value::String(text) => quote(text),
        Value::Number(number) => self::number(number),
        Value::Bool(flag) => flag.to_string(),
        Value::Null => "null".to_owned(),
        Value::Array(_) | Value::Object(_) => json(value),
    }
}

/// Go `json.Marshal` of a decoded JSON value: object keys sorted, HTML characters escaped.
pub(crate) fn json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&json_number(number)),
        Value::String(text) => write_json_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(key, out);
                out.push(':');
                if let Some(item) = map.get(key) {
                    write_json(item, out);
                }
            }
            out.push('}');
        }
    }
}

/// Go's JSON encoding of a float64: plain decimal unless tiny or huge (`1e+21`, `1e-7`).
fn json_number(number: &Number) -> String {
    if number.is_i64() || number.is_u64() {
        return number.to_string();
    }
    let value = number.as_f64().unwrap_or(f64::NAN);
    let abs = value.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (mantissa, exponent) = split_exponent(value);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{}", exponent.abs())
    } else {
        format!("{value}")
    }
}

fn write_json_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn floats_print_like_go_percent_v() {
        assert_eq!(float(576.0), "576");
        assert_eq!(float(123_456.0), "123456");
        assert_eq!(float(1_000_000.0), "1e+06");
        assert_eq!(float(16_777_215.0), "1.6777215e+07");
        assert_eq!(float(0.5), "0.5");
        assert_eq!(float(0.00001), "1e-05");
        assert_eq!(float(-2.5), "-2.5");
    }

    #[test]
    fn strings_quote_like_go() {
        assert_eq!(quote("Layer4"), "\"Layer4\"");
        assert_eq!(quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(quote("\u{1}"), "\"\\x01\"");
        assert_eq!(quote("ü"), "\"ü\"");
    }

    #[test]
    fn composite_values_marshal_like_go_json() {
        let value = json!({"type": "Ready", "a": [1, 2.5, "<x>"], "b": null});
        assert_eq!(
            bad_value(&value),
            r#"{"a":[1,2.5,"\u003cx\u003e"],"b":null,"type":"Ready"}"#
        );
        assert_eq!(bad_value(&json!(1e21)), "1e+21");
        assert_eq!(json(&json!(1e21)), "1e+21");
        assert_eq!(json(&json!(1_000_000.5)), "1000000.5");
        assert_eq!(bad_value(&json!(null)), "null");
    }
}
