//! The string form of label selectors (`a=b,c!=d,e in (f,g),h notin (i),j,!k,l>5`), parsed
//! as apimachinery's `labels.Parse` does, with its error messages, into
//! [`udn_api::selector::Requirement`]s (plus the numeric `>`/`<` requirements, which the
//! `LabelSelector` API type cannot express).

use std::collections::{BTreeMap, BTreeSet};

use udn_api::selector::{Requirement, Selector};

/// A numeric requirement: the label is present and its integer value is greater (or
/// less) than the bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Numeric {
    key: String,
    greater: bool,
    bound: i64,
}

/// A parsed label selector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct LabelSelector {
    set: Selector,
    numeric: Vec<Numeric>,
}

impl LabelSelector {
    /// Whether `labels` satisfy every requirement.
    pub(super) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.set.matches(labels)
            && self.numeric.iter().all(|n| {
                labels
                    .get(&n.key)
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|v| if n.greater { v > n.bound } else { v < n.bound })
            })
    }

    /// Whether the selector has no requirement (matches everything).
    pub(super) fn is_empty(&self) -> bool {
        self.set.0.is_empty() && self.numeric.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
    Error,
}

fn keyword(text: &str) -> Option<Token> {
    Some(match text {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(ch: u8) -> bool {
    matches!(ch, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(ch: u8) -> bool {
    matches!(ch, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn lex(input: &str) -> Vec<(Token, String)> {
    let bytes = input.as_bytes();
    let mut pos = 0;
    let mut items = Vec::new();
    loop {
        while bytes.get(pos).is_some_and(|b| is_whitespace(*b)) {
            pos += 1;
        }
        let Some(&first) = bytes.get(pos) else {
            items.push((Token::End, String::new()));
            return items;
        };
        if is_special(first) {
            let mut buffer = String::new();
            let mut last: Option<(Token, String)> = None;
            while let Some(&ch) = bytes.get(pos) {
                if !is_special(ch) {
                    break;
                }
                buffer.push(char::from(ch));
                if let Some(token) = keyword(&buffer) {
                    last = Some((token, buffer.clone()));
                } else if last.is_some() {
                    break;
                }
                pos += 1;
            }
            match last {
                Some(item) => items.push(item),
                None => {
                    items.push((
                        Token::Error,
                        format!("error expected: keyword found '{buffer}'"),
                    ));
                }
            }
        } else {
            let start = pos;
            while bytes
                .get(pos)
                .is_some_and(|b| !is_special(*b) && !is_whitespace(*b))
            {
                pos += 1;
            }
            let text = input.get(start..pos).unwrap_or_default().to_owned();
            let token = keyword(&text).unwrap_or(Token::Identifier);
            items.push((token, text));
        }
    }
}

/// In a values context `in` and `notin` are plain identifiers.
fn as_value(token: &Token) -> Token {
    match token {
        Token::In | Token::NotIn => Token::Identifier,
        other => other.clone(),
    }
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

enum Operator {
    In,
    NotIn,
    Equals,
    NotEquals,
    GreaterThan,
    LessThan,
    Exists,
    DoesNotExist,
}

impl Parser {
    fn lookahead(&self, values: bool) -> (Token, String) {
        let (token, literal) = self
            .items
            .get(self.position)
            .cloned()
            .unwrap_or((Token::End, String::new()));
        if values {
            (as_value(&token), literal)
        } else {
            (token, literal)
        }
    }

    fn consume(&mut self, values: bool) -> (Token, String) {
        let item = self.lookahead(values);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Parsed>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(true);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(true);
                    match token {
                        Token::End => return Ok(requirements),
                        Token::Comma => {
                            let (next, next_literal) = self.lookahead(true);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{next_literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::End => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Parsed, String> {
        let (key, inferred) = self.key_and_inferred_operator()?;
        if let Some(operator) = inferred {
            return build(key, operator, Vec::new());
        }
        let operator = self.operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.values()?,
            _ => self.exact_value()?,
        };
        build(key, operator, values)
    }

    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let (mut token, mut literal) = self.consume(true);
        let mut negated = false;
        if token == Token::DoesNotExist {
            negated = true;
            (token, literal) = self.consume(true);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let key_errors = label_key_errors(&literal);
        if !key_errors.is_empty() {
            return Err(format!(
                ": Invalid value: {literal:?}: {}",
                key_errors.join("; ")
            ));
        }
        let (next, _) = self.lookahead(true);
        let operator = if negated {
            Some(Operator::DoesNotExist)
        } else if next == Token::End || next == Token::Comma {
            Some(Operator::Exists)
        } else {
            None
        };
        Ok((literal, operator))
    }

    fn operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(false);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals | Token::DoubleEquals => Operator::Equals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn values(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.consume(true);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(true);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.identifiers()?;
                let (token, _) = self.consume(true);
                if token != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values.into_iter().collect())
            }
            Token::ClosedPar => {
                self.consume(true);
                Ok(vec![String::new()])
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    fn identifiers(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            let (token, literal) = self.consume(true);
            match token {
                Token::Identifier => {
                    set.insert(literal);
                    let (next, next_literal) = self.lookahead(true);
                    match next {
                        Token::Comma => {}
                        Token::ClosedPar => return Ok(set),
                        _ => {
                            return Err(format!("found '{next_literal}', expected: ',' or ')'"));
                        }
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (next, _) = self.lookahead(true);
                    if next == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if next == Token::Comma {
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        let (token, _) = self.lookahead(true);
        if token == Token::End || token == Token::Comma {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.consume(true);
        if token == Token::Identifier {
            Ok(vec![literal])
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}

enum Parsed {
    Set(Requirement),
    Numeric(Numeric),
}

fn build(key: String, operator: Operator, values: Vec<String>) -> Result<Parsed, String> {
    let mut errors = Vec::new();
    for (index, value) in values.iter().enumerate() {
        let value_errors = label_value_errors(value);
        if !value_errors.is_empty() {
            errors.push(format!(
                "values[{index}][{key}]: Invalid value: {value:?}: {}",
                value_errors.join("; ")
            ));
        }
    }
    let numeric = |greater: bool, errors: &mut Vec<String>| {
        let bound = values.first().and_then(|v| v.parse::<i64>().ok());
        if bound.is_none() {
            let value = values.first().cloned().unwrap_or_default();
            errors.push(format!(
                "values[0]: Invalid value: {value:?}: for 'Gt', 'Lt' operators, the value must be an integer"
            ));
        }
        bound.map(|bound| Numeric {
            key: key.clone(),
            greater,
            bound,
        })
    };
    let set = |values: &[String]| values.iter().cloned().collect::<BTreeSet<_>>();
    let parsed = match operator {
        Operator::In | Operator::Equals => {
            Some(Parsed::Set(Requirement::In(key.clone(), set(&values))))
        }
        Operator::NotIn | Operator::NotEquals => {
            Some(Parsed::Set(Requirement::NotIn(key.clone(), set(&values))))
        }
        Operator::Exists => Some(Parsed::Set(Requirement::Exists(key.clone()))),
        Operator::DoesNotExist => Some(Parsed::Set(Requirement::DoesNotExist(key.clone()))),
        Operator::GreaterThan => numeric(true, &mut errors).map(Parsed::Numeric),
        Operator::LessThan => numeric(false, &mut errors).map(Parsed::Numeric),
    };
    match (parsed, errors.as_slice()) {
        (Some(parsed), []) => Ok(parsed),
        (_, [one]) => Err(one.clone()),
        (_, many) => Err(format!("[{}]", many.join(", "))),
    }
}

const LABEL_KEY_FORMAT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn is_name_part(text: &str) -> bool {
    let bytes = text.as_bytes();
    let alnum = |b: &u8| b.is_ascii_alphanumeric();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            alnum(first)
                && alnum(last)
                && bytes
                    .iter()
                    .all(|b| alnum(b) || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

fn is_subdomain(text: &str) -> bool {
    text.split('.').all(|label| {
        let bytes = label.as_bytes();
        let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                alnum(first) && alnum(last) && bytes.iter().all(|b| alnum(b) || *b == b'-')
            }
            _ => false,
        }
    })
}

fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    let examples: String = examples
        .iter()
        .map(|e| format!("'{e}', "))
        .collect::<Vec<_>>()
        .join("or ");
    format!("{message} (e.g. {examples}regex used for validation is '{format}')")
}

/// apimachinery's `IsLabelKey` messages.
fn label_key_errors(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let mut errors = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > 253 {
                    errors.push("prefix part must be no more than 253 bytes".to_owned());
                }
                if !is_subdomain(prefix) {
                    errors.push(format!("prefix part {SUBDOMAIN_MESSAGE}"));
                }
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    LABEL_KEY_MESSAGE,
                    LABEL_KEY_FORMAT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 bytes".to_owned());
    }
    if !is_name_part(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MESSAGE,
                LABEL_KEY_FORMAT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// apimachinery's `IsLabelValue` messages.
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 bytes".to_owned());
    }
    if !value.is_empty() && !is_name_part(value) {
        errors.push(regex_error(
            LABEL_VALUE_MESSAGE,
            &format!("({LABEL_KEY_FORMAT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// Parse the string form of a label selector.
pub(super) fn parse(input: &str) -> Result<LabelSelector, String> {
    let mut parser = Parser {
        items: lex(input),
        position: 0,
    };
    let mut selector = LabelSelector::default();
    for parsed in parser.parse()? {
        match parsed {
            Parsed::Set(requirement) => selector.set.0.push(requirement),
            Parsed::Numeric(numeric) => selector.numeric.push(numeric),
        }
    }
    Ok(selector)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn parses_every_operator() {
        let selector = parse("a=b, c==d,e!=f,g in (h, i),j notin (k),l,!m,n>5,o<3").unwrap();
        let good = labels(&[
            ("a", "b"),
            ("c", "d"),
            ("e", "x"),
            ("g", "i"),
            ("j", "z"),
            ("l", ""),
            ("n", "6"),
            ("o", "2"),
        ]);
        assert!(selector.matches(&good));
        for (key, value) in [
            ("a", "x"),
            ("e", "f"),
            ("g", "x"),
            ("j", "k"),
            ("n", "5"),
            ("o", "3"),
        ] {
            let mut bad = good.clone();
            bad.insert(key.to_owned(), value.to_owned());
            assert!(!selector.matches(&bad), "{key}={value}");
        }
        let mut bad = good.clone();
        bad.insert("m".to_owned(), String::new());
        assert!(!selector.matches(&bad));
        let mut bad = good;
        bad.remove("l");
        assert!(!selector.matches(&bad));
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn in_and_notin_are_values_inside_parentheses() {
        let selector = parse("x in (in,notin)").unwrap();
        assert!(selector.matches(&labels(&[("x", "notin")])));
        let empty = parse("x in ()").unwrap();
        assert!(empty.matches(&labels(&[("x", "")])));
    }

    #[test]
    fn errors_read_as_apimachinery() {
        assert_eq!(
            parse("a=b,").unwrap_err(),
            "found '', expected: identifier after ','"
        );
        assert_eq!(
            parse("a b").unwrap_err(),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            parse("a in b").unwrap_err(),
            "unable to parse requirement: found 'b' expected: '('"
        );
        assert_eq!(
            parse(",a").unwrap_err(),
            "found ',', expected: !, identifier, or 'end of string'"
        );
        assert!(
            parse("-a=b")
                .unwrap_err()
                .starts_with("unable to parse requirement: : Invalid value: \"-a\": name part must consist of alphanumeric characters")
        );
        assert!(
            parse("a=-b")
                .unwrap_err()
                .starts_with("unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be an empty string")
        );
        assert_eq!(
            parse("a>x").unwrap_err(),
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }
}
