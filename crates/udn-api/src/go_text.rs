//! Go's text renderings that upstream's messages contain, so ours read the same: `%q`
//! (`strconv.Quote`) and `unicode.IsPrint`. Shared by every crate that reproduces an
//! upstream or apiserver message.

use std::fmt::Write as _;

/// Go `%q` of a string (`strconv.Quote`): double-quoted, Go escapes, non-printable
/// characters as `\x`, `\u` or `\U` escapes.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_print(c) => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Go `unicode.IsPrint`: graphic characters and the ASCII space.
pub fn is_print(c: char) -> bool {
    c == ' ' || !(c.is_control() || c.is_whitespace() || is_format(c))
}

/// Unicode format characters (category Cf) Go treats as non-printable.
fn is_format(c: char) -> bool {
    matches!(c as u32, 0xad | 0x600..=0x605 | 0x200b..=0x200f | 0x2028..=0x202e | 0x2060..=0x206f | 0xfeff | 0xfff9..=0xfffb | 0x110bd | 0x1d173..=0x1d17a | 0xe0001 | 0xe0020..=0xe007f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_go() {
        assert_eq!(quote("plain"), "\"plain\"");
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(quote("\n\t\u{7}"), "\"\\n\\t\\a\"");
        assert_eq!(quote("\u{1}\u{7f}"), "\"\\x01\\x7f\"");
        assert_eq!(quote("\u{ad}é"), "\"\\u00adé\"");
        assert_eq!(quote("\u{e0001}"), "\"\\U000e0001\"");
    }
}
