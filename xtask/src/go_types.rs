//! Just enough of a Go parser to read Kubernetes API type definitions: the `type`
//! declarations of a package (structs with their fields and tags, named basic, slice and
//! map types) and each file's imports. Everything else (functions, constants, variables,
//! methods) is skipped by bracket matching.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, bail};

/// A Go type expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GoType {
    /// `T` or `pkg.T` (`qualifier` is the import alias, empty for the same package).
    Named {
        /// The import alias (`metav1`), empty for a type of the same package.
        qualifier: String,
        /// The type name.
        name: String,
    },
    /// `*T`.
    Pointer(Box<GoType>),
    /// `[]T`.
    Slice(Box<GoType>),
    /// `map[K]V`.
    Map(Box<GoType>, Box<GoType>),
    /// `struct { ... }`.
    Struct(Vec<GoField>),
    /// Anything else (interfaces, functions, channels, arrays).
    Other,
}

/// One field of a struct; an embedded field has `name == None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoField {
    /// The field name, `None` for an embedded type.
    pub name: Option<String>,
    /// The field's type.
    pub ty: GoType,
    /// The raw struct tag (without the back quotes).
    pub tag: String,
}

impl GoField {
    /// The value of `key` in the struct tag (`json`, `protobuf`).
    pub fn tag_value(&self, key: &str) -> Option<&str> {
        let mut rest = self.tag.trim();
        while !rest.is_empty() {
            let (name, after) = rest.split_once(':')?;
            let after = after.strip_prefix('"')?;
            let end = after.find('"')?;
            if name.trim() == key {
                return Some(&after[..end]);
            }
            rest = after[end + 1..].trim_start();
        }
        None
    }
}

/// One declared type and the imports of the file that declares it.
#[derive(Clone, Debug)]
pub struct GoTypeDecl {
    /// The declared type (underlying expression).
    pub ty: GoType,
    /// Import alias -> package path, of the declaring file.
    pub imports: BTreeMap<String, String>,
}

/// The type declarations of one package directory (tests and generated code excluded).
pub fn parse_package(dir: &Path) -> anyhow::Result<BTreeMap<String, GoTypeDecl>> {
    let mut types = BTreeMap::new();
    let mut entries: Vec<_> = fs::read_dir(dir)
        .with_context(|| format!("read {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".go")
                && !name.ends_with("_test.go")
                && !name.starts_with("zz_generated")
                && !name.ends_with(".pb.go")
        })
        .collect();
    entries.sort();
    for path in entries {
        let source =
            fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        let file = parse_file(&source).with_context(|| format!("parse {}", path.display()))?;
        for (name, ty) in file.types {
            types.insert(
                name,
                GoTypeDecl {
                    ty,
                    imports: file.imports.clone(),
                },
            );
        }
    }
    Ok(types)
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// A string literal; for raw (back-quoted) strings the content.
    Str(String),
    Punct(char),
    /// An automatically inserted or explicit `;`.
    Semi,
}

fn lex(source: &str) -> anyhow::Result<Vec<Token>> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let ends_statement = |tokens: &[Token]| {
        matches!(
            tokens.last(),
            Some(Token::Ident(_) | Token::Str(_) | Token::Punct(')' | ']' | '}'))
        )
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                if ends_statement(&tokens) {
                    tokens.push(Token::Semi);
                }
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                let mut newline = false;
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    newline |= chars[i] == '\n';
                    i += 1;
                }
                i += 2;
                if newline && ends_statement(&tokens) {
                    tokens.push(Token::Semi);
                }
            }
            '`' => {
                let start = i + 1;
                i = start;
                while i < chars.len() && chars[i] != '`' {
                    i += 1;
                }
                tokens.push(Token::Str(
                    chars[start..i.min(chars.len())].iter().collect(),
                ));
                i += 1;
            }
            '"' | '\'' => {
                let quote = c;
                let start = i + 1;
                i = start;
                while i < chars.len() && chars[i] != quote {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                tokens.push(Token::Str(
                    chars[start..i.min(chars.len())].iter().collect(),
                ));
                i += 1;
            }
            c if c.is_alphanumeric() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                // A number like `1.5` lexes as idents and a `.`; harmless for type reading.
                tokens.push(Token::Ident(chars[start..i].iter().collect()));
            }
            ';' => {
                tokens.push(Token::Semi);
                i += 1;
            }
            other => {
                tokens.push(Token::Punct(other));
                i += 1;
            }
        }
    }
    if ends_statement(&tokens) {
        tokens.push(Token::Semi);
    }
    Ok(tokens)
}

struct File {
    imports: BTreeMap<String, String>,
    types: Vec<(String, GoType)>,
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

fn parse_file(source: &str) -> anyhow::Result<File> {
    let mut parser = Parser {
        tokens: lex(source)?,
        at: 0,
    };
    let mut file = File {
        imports: BTreeMap::new(),
        types: Vec::new(),
    };
    while let Some(token) = parser.peek().cloned() {
        match token {
            Token::Ident(word) if word == "import" => {
                parser.at += 1;
                parser.imports(&mut file.imports)?;
            }
            Token::Ident(word) if word == "type" => {
                parser.at += 1;
                if parser.eat(&Token::Punct('(')) {
                    while !parser.eat(&Token::Punct(')')) {
                        if parser.eat(&Token::Semi) {
                            continue;
                        }
                        file.types.push(parser.type_spec()?);
                    }
                } else {
                    file.types.push(parser.type_spec()?);
                }
            }
            _ => parser.skip_statement(),
        }
    }
    Ok(file)
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn eat(&mut self, token: &Token) -> bool {
        if self.peek() == Some(token) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> anyhow::Result<String> {
        match self.next() {
            Some(Token::Ident(name)) => Ok(name),
            other => bail!("expected an identifier, found {other:?}"),
        }
    }

    /// Skips to the end of the current top-level statement.
    fn skip_statement(&mut self) {
        let mut depth = 0usize;
        while let Some(token) = self.next() {
            match token {
                Token::Punct('(' | '[' | '{') => depth += 1,
                Token::Punct(')' | ']' | '}') => depth = depth.saturating_sub(1),
                Token::Semi if depth == 0 => return,
                _ => {}
            }
        }
    }

    fn imports(&mut self, out: &mut BTreeMap<String, String>) -> anyhow::Result<()> {
        let grouped = self.eat(&Token::Punct('('));
        loop {
            if grouped && self.eat(&Token::Punct(')')) {
                self.eat(&Token::Semi);
                return Ok(());
            }
            if self.eat(&Token::Semi) {
                continue;
            }
            let alias = match self.peek() {
                Some(Token::Ident(alias)) => {
                    let alias = alias.clone();
                    self.at += 1;
                    Some(alias)
                }
                Some(Token::Punct('.' | '_')) => {
                    self.at += 1;
                    Some("_".to_owned())
                }
                _ => None,
            };
            let Some(Token::Str(path)) = self.next() else {
                bail!("expected an import path");
            };
            let alias =
                alias.unwrap_or_else(|| path.rsplit('/').next().unwrap_or(&path).to_owned());
            out.insert(alias, path);
            if !grouped {
                self.eat(&Token::Semi);
                return Ok(());
            }
        }
    }

    fn type_spec(&mut self) -> anyhow::Result<(String, GoType)> {
        let name = self.ident()?;
        if self.peek() == Some(&Token::Punct('[')) && self.is_type_parameter_list() {
            // A generic type: not an API type; skip it.
            self.skip_statement();
            return Ok((name, GoType::Other));
        }
        self.eat(&Token::Punct('='));
        let ty = self.type_expr()?;
        if !self.eat(&Token::Semi) && self.peek() != Some(&Token::Punct(')')) {
            bail!("type {name}: unexpected {:?}", self.peek());
        }
        Ok((name, ty))
    }

    /// Whether the `[` after a type name opens type parameters (`[T any]`) rather than an
    /// array or slice type (`[]T`, `[4]T`).
    fn is_type_parameter_list(&self) -> bool {
        matches!(
            (self.tokens.get(self.at + 1), self.tokens.get(self.at + 2)),
            (Some(Token::Ident(_)), Some(Token::Ident(_)))
        )
    }

    fn type_expr(&mut self) -> anyhow::Result<GoType> {
        match self.next() {
            Some(Token::Punct('*')) => Ok(GoType::Pointer(Box::new(self.type_expr()?))),
            Some(Token::Punct('[')) => {
                if self.eat(&Token::Punct(']')) {
                    return Ok(GoType::Slice(Box::new(self.type_expr()?)));
                }
                while !self.eat(&Token::Punct(']')) {
                    self.next().context("unterminated array length")?;
                }
                self.type_expr()?;
                Ok(GoType::Other)
            }
            Some(Token::Ident(word)) if word == "map" => {
                if !self.eat(&Token::Punct('[')) {
                    bail!("expected [ after map");
                }
                let key = self.type_expr()?;
                if !self.eat(&Token::Punct(']')) {
                    bail!("expected ] in map type");
                }
                let value = self.type_expr()?;
                Ok(GoType::Map(Box::new(key), Box::new(value)))
            }
            Some(Token::Ident(word)) if word == "struct" => self.struct_body(),
            Some(Token::Ident(word)) if matches!(word.as_str(), "interface" | "func" | "chan") => {
                self.skip_type_tail();
                Ok(GoType::Other)
            }
            Some(Token::Ident(first)) => {
                if self.eat(&Token::Punct('.')) {
                    let name = self.ident()?;
                    Ok(GoType::Named {
                        qualifier: first,
                        name,
                    })
                } else {
                    Ok(GoType::Named {
                        qualifier: String::new(),
                        name: first,
                    })
                }
            }
            other => bail!("expected a type, found {other:?}"),
        }
    }

    /// Skips the rest of an interface, func or chan type.
    fn skip_type_tail(&mut self) {
        let mut depth = 0usize;
        while let Some(token) = self.peek() {
            match token {
                Token::Punct('(' | '[' | '{') => depth += 1,
                Token::Punct(')' | ']' | '}') if depth == 0 => return,
                Token::Punct(')' | ']' | '}') => depth -= 1,
                Token::Semi | Token::Str(_) if depth == 0 => return,
                _ => {}
            }
            self.at += 1;
        }
    }

    fn struct_body(&mut self) -> anyhow::Result<GoType> {
        if !self.eat(&Token::Punct('{')) {
            bail!("expected {{ after struct");
        }
        let mut fields = Vec::new();
        loop {
            if self.eat(&Token::Punct('}')) {
                return Ok(GoType::Struct(fields));
            }
            if self.eat(&Token::Semi) {
                continue;
            }
            fields.extend(self.field_decl()?);
        }
    }

    fn field_decl(&mut self) -> anyhow::Result<Vec<GoField>> {
        // Embedded: `T`, `*T`, `pkg.T` followed by a tag, `;` or `}`.
        let start = self.at;
        let mut names = Vec::new();
        if let Some(Token::Ident(first)) = self.peek().cloned() {
            self.at += 1;
            let embedded = matches!(
                self.peek(),
                Some(Token::Str(_) | Token::Semi | Token::Punct('}' | '.'))
            );
            if embedded {
                self.at = start;
            } else {
                names.push(first);
                while self.eat(&Token::Punct(',')) {
                    names.push(self.ident()?);
                }
            }
        }
        let ty = self.type_expr()?;
        let tag = match self.peek() {
            Some(Token::Str(tag)) => {
                let tag = tag.clone();
                self.at += 1;
                tag
            }
            _ => String::new(),
        };
        if names.is_empty() {
            return Ok(vec![GoField {
                name: None,
                ty,
                tag,
            }]);
        }
        Ok(names
            .into_iter()
            .map(|name| GoField {
                name: Some(name),
                ty: ty.clone(),
                tag: tag.clone(),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_structs_tags_and_imports() -> anyhow::Result<()> {
        let source = r#"
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A comment with a `quote` and "string".
type Protocol string

const x = "a // b"

func (p Protocol) String() string { if true { return "}" }; return string(p) }

type ServicePort struct {
	metav1.TypeMeta `json:",inline"`
	// The name.
	Name, Alias string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	TargetPort *intstr.IntOrString `json:"targetPort,omitempty" protobuf:"bytes,4,opt,name=targetPort"`
	Labels map[string][]byte
	/* block
	comment */
	Inner struct{ A int32 }
}
"#;
        let file = parse_file(source)?;
        assert_eq!(
            file.imports["intstr"],
            "k8s.io/apimachinery/pkg/util/intstr"
        );
        assert_eq!(
            file.imports["metav1"],
            "k8s.io/apimachinery/pkg/apis/meta/v1"
        );
        let types: BTreeMap<_, _> = file.types.into_iter().collect();
        assert_eq!(
            types["Protocol"],
            GoType::Named {
                qualifier: String::new(),
                name: "string".into()
            }
        );
        let GoType::Struct(fields) = &types["ServicePort"] else {
            bail!("not a struct");
        };
        assert_eq!(fields.len(), 6);
        assert_eq!(fields[0].name, None);
        assert_eq!(fields[0].tag_value("json"), Some(",inline"));
        assert_eq!(fields[1].name.as_deref(), Some("Name"));
        assert_eq!(fields[2].name.as_deref(), Some("Alias"));
        assert_eq!(
            fields[2].tag_value("protobuf"),
            Some("bytes,1,opt,name=name")
        );
        assert!(matches!(&fields[3].ty, GoType::Pointer(_)));
        assert!(matches!(&fields[4].ty, GoType::Map(_, v) if matches!(**v, GoType::Slice(_))));
        assert!(matches!(&fields[5].ty, GoType::Struct(inner) if inner.len() == 1));
        Ok(())
    }
}
