//! JSON bytes as Go's `encoding/json` writes them, so that what we send and print is
//! byte-for-byte what upstream's shim and server would.
//!
//! serde_json and Go agree on structure; they differ in three places this formatter fixes:
//! Go escapes `<`, `>`, `&`, U+2028 and U+2029 inside strings (`\u003c` ...), writes
//! integral floats without a fraction (`2`, not `2.0`) and switches to exponent form
//! only below 1e-6 or from 1e21 on (`1e-7`, `1e+21`). Indented output uses Go's
//! `MarshalIndent(v, "", "    ")` layout, which serde_json's pretty printer already matches.

use std::io;

use serde::{Deserialize, Serialize};
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

/// `json.Marshal(v)`: compact, no trailing newline.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, GoFormatter(CompactFormatter));
    value.serialize(&mut ser)?;
    Ok(out)
}

/// `json.MarshalIndent(v, "", "    ")`: what the CNI library prints for results and errors
/// (no trailing newline).
pub fn to_vec_indented<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(512);
    let formatter = GoFormatter(PrettyFormatter::with_indent(b"    "));
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut ser)?;
    Ok(out)
}

/// `json.NewEncoder(w).Encode(v)`: compact with a trailing newline (the server's CNI
/// error bodies and the VERSION answer).
pub fn to_vec_line<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = to_vec(value)?;
    out.push(b'\n');
    Ok(out)
}

/// Go decodes `null` into a map or slice as "leave it empty"; serde needs telling.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + serde::Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Wraps serde_json's compact or pretty layout and changes only string and float output.
struct GoFormatter<F>(F);

impl<F: Formatter> Formatter for GoFormatter<F> {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(go_float(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        writer.write_all(go_float(f64::from(value)).as_bytes())
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some(pos) = rest.find(['<', '>', '&', '\u{2028}', '\u{2029}']) {
            writer.write_all(&rest.as_bytes()[..pos])?;
            let ch = rest[pos..].chars().next().unwrap_or('\0');
            write!(writer, "\\u{:04x}", u32::from(ch))?;
            rest = &rest[pos + ch.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// Go's float64 encoding: shortest round-trip digits, plain decimal for 1e-6 <= |v| < 1e21,
/// exponent form (with a two-digit-minimum exponent trimmed back to one digit) outside.
/// Non-finite values cannot be encoded by Go; serde_json writes `null` for them, and so
/// do we.
fn go_float(value: f64) -> String {
    if !value.is_finite() {
        return "null".to_owned();
    }
    let abs = value.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust's `{:e}` already gives the shortest mantissa and a bare exponent ("1e-7",
        // "1.5e21"); Go writes the sign of a positive exponent ("1e+21").
        let text = format!("{value:e}");
        match text.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => text,
        }
    } else {
        // Display never uses an exponent and prints the shortest round-trip digits,
        // which is Go's 'f' format with precision -1 (integral values print as "2").
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_html_characters_like_go() {
        let out = to_vec(&json!({"a": "<b>&c\u{2028}\u{2029}é\n\t\u{1}\"\\"})).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":"\u003cb\u003e\u0026c\u2028\u2029é\n\t\u0001\"\\"}"#
        );
    }

    #[test]
    fn floats_like_go() {
        let cases = [
            (0.42, "0.42"),
            (2.0, "2"),
            (0.0, "0"),
            (-1.5, "-1.5"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (1.2345e-7, "1.2345e-7"),
            (1e21, "1e+21"),
            (123456789.125, "123456789.125"),
            (1e20, "100000000000000000000"),
        ];
        for (value, want) in cases {
            assert_eq!(
                String::from_utf8(to_vec(&value).unwrap()).unwrap(),
                want,
                "{value}"
            );
        }
    }

    #[test]
    fn indented_layout_matches_marshal_indent() {
        let out = to_vec_indented(&json!({"a": [1, {"b": []}], "c": {}})).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n    \"a\": [\n        1,\n        {\n            \"b\": []\n        }\n    ],\n    \"c\": {}\n}"
        );
    }

    #[test]
    fn line_form_ends_with_newline() {
        assert_eq!(to_vec_line(&json!({"x": 1})).unwrap(), b"{\"x\":1}\n");
    }
}
