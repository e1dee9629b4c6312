//! A transaction: operations on one table, rendered as `nft -f -` text (one command per line,
//! in the order given), which nft applies atomically: all or nothing.

use std::fmt::Write as _;

use super::error::NftError;
use super::object::{
    Chain, Element, KeyType, Map, Object, Rule, RulePosition, Set, SetFlag, Table, TableId,
};

/// What an operation does to its object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// `add`: create, or do nothing if it exists (rules: append).
    Add,
    /// `create`: create, fail if it exists.
    Create,
    /// `insert`: prepend a rule.
    Insert,
    /// `replace`: replace the rule with a handle.
    Replace,
    /// `flush`: empty a table, chain, set or map.
    Flush,
    /// `delete`: delete, fail if it does not exist.
    Delete,
    /// `destroy`: delete if it exists (nft 1.0.8 and later only; older nft rejects it, so
    /// code that must run there uses add-then-delete).
    Destroy,
}

impl Verb {
    /// The nft spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Add => "add",
            Self::Create => "create",
            Self::Insert => "insert",
            Self::Replace => "replace",
            Self::Flush => "flush",
            Self::Delete => "delete",
            Self::Destroy => "destroy",
        }
    }
}

/// One operation of a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    /// What is done.
    pub verb: Verb,
    /// To what.
    pub object: Object,
}

/// Operations on one table, applied together or not at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transaction {
    table: TableId,
    operations: Vec<Operation>,
}

/// The longest comment nft stores.
const MAX_COMMENT_LEN: usize = 128;

impl Transaction {
    /// An empty transaction on `table`.
    pub fn new(table: TableId) -> Self {
        Self {
            table,
            operations: Vec::new(),
        }
    }

    /// The table it works on.
    pub fn table(&self) -> &TableId {
        &self.table
    }

    /// Its operations, in order.
    pub fn operations(&self) -> &[Operation] {
        &self.operations
    }

    /// How many operations it has.
    pub fn len(&self) -> usize {
        self.operations.len()
    }

    /// Whether it has no operation (running it is a no-op).
    pub fn is_empty(&self) -> bool {
        self.operations.is_empty()
    }

    /// Appends `verb object`.
    pub fn push(&mut self, verb: Verb, object: impl Into<Object>) -> &mut Self {
        self.operations.push(Operation {
            verb,
            object: object.into(),
        });
        self
    }

    /// `add`.
    pub fn add(&mut self, object: impl Into<Object>) -> &mut Self {
        self.push(Verb::Add, object)
    }

    /// `create`.
    pub fn create(&mut self, object: impl Into<Object>) -> &mut Self {
        self.push(Verb::Create, object)
    }

    /// `insert` (rules).
    pub fn insert(&mut self, rule: Rule) -> &mut Self {
        self.push(Verb::Insert, rule)
    }

    /// `replace` (rules with a handle).
    pub fn replace(&mut self, rule: Rule) -> &mut Self {
        self.push(Verb::Replace, rule)
    }

    /// `flush`.
    pub fn flush(&mut self, object: impl Into<Object>) -> &mut Self {
        self.push(Verb::Flush, object)
    }

    /// `delete`.
    pub fn delete(&mut self, object: impl Into<Object>) -> &mut Self {
        self.push(Verb::Delete, object)
    }

    /// `destroy` (nft 1.0.8 and later).
    pub fn destroy(&mut self, object: impl Into<Object>) -> &mut Self {
        self.push(Verb::Destroy, object)
    }

    /// Deletes `object` whether or not it exists, on any nft version: `add` then `delete` in
    /// the same transaction (upstream's idiom; `destroy` needs nft 1.0.8).
    pub fn add_then_delete(&mut self, object: impl Into<Object>) -> &mut Self {
        let object = object.into();
        self.push(Verb::Add, object.clone());
        self.push(Verb::Delete, object)
    }

    /// Appends every operation of `other` (which must be on the same table).
    pub fn extend(&mut self, other: Transaction) -> Result<&mut Self, NftError> {
        if other.table != self.table {
            return Err(NftError::Invalid {
                verb: "merge",
                kind: "table",
                name: other.table.to_string(),
                reason: format!("the transaction is on table {}", self.table),
            });
        }
        self.operations.extend(other.operations);
        Ok(self)
    }

    /// The `nft -f -` text: one command per line, in order. Fails on the first operation
    /// that is not valid.
    pub fn render(&self) -> Result<String, NftError> {
        validate_name("table", "table", &self.table.name)?;
        let mut out = String::new();
        for operation in &self.operations {
            render_operation(&self.table, operation, &mut out)?;
            out.push('\n');
        }
        Ok(out)
    }
}

fn invalid(verb: Verb, kind: &'static str, name: &str, reason: impl Into<String>) -> NftError {
    NftError::Invalid {
        verb: verb.as_str(),
        kind,
        name: name.to_owned(),
        reason: reason.into(),
    }
}

/// nft identifiers: a letter or `_`, then letters, digits, `_`, `-`, `.`, `/`.
fn validate_name(verb: &'static str, kind: &'static str, name: &str) -> Result<(), NftError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c)) {
        return Ok(());
    }
    Err(NftError::Invalid {
        verb,
        kind,
        name: name.to_owned(),
        reason: "not an nft name (a letter or _, then letters, digits, _ - . /)".to_owned(),
    })
}

fn validate_comment(
    verb: Verb,
    kind: &'static str,
    name: &str,
    comment: &str,
) -> Result<(), NftError> {
    if comment.contains(['"', '\n', '\r']) {
        return Err(invalid(
            verb,
            kind,
            name,
            "the comment has a double quote or a line break",
        ));
    }
    if comment.len() > MAX_COMMENT_LEN {
        return Err(invalid(
            verb,
            kind,
            name,
            format!("the comment is longer than {MAX_COMMENT_LEN} bytes"),
        ));
    }
    Ok(())
}

/// Free text that goes into the command line as is: a line break or `;` would start another
/// command.
fn validate_text(
    verb: Verb,
    kind: &'static str,
    name: &str,
    what: &str,
    text: &str,
) -> Result<(), NftError> {
    if text.trim().is_empty() {
        return Err(invalid(verb, kind, name, format!("the {what} is empty")));
    }
    if text.contains(['\n', '\r', ';']) {
        return Err(invalid(
            verb,
            kind,
            name,
            format!("the {what} has a line break or ';'"),
        ));
    }
    Ok(())
}

fn render_operation(
    table: &TableId,
    operation: &Operation,
    out: &mut String,
) -> Result<(), NftError> {
    let verb = operation.verb;
    let kind = operation.object.kind();
    let allowed = match &operation.object {
        Object::Table(_) | Object::Chain(_) | Object::Set(_) | Object::Map(_) => matches!(
            verb,
            Verb::Add | Verb::Create | Verb::Flush | Verb::Delete | Verb::Destroy
        ),
        Object::Rule(_) => matches!(
            verb,
            Verb::Add | Verb::Insert | Verb::Replace | Verb::Delete | Verb::Destroy
        ),
        Object::Element(_) => {
            matches!(
                verb,
                Verb::Add | Verb::Create | Verb::Delete | Verb::Destroy
            )
        }
    };
    if !allowed {
        return Err(invalid(
            verb,
            kind,
            operation.object.name(),
            format!("nft has no `{}` for {kind}s", verb.as_str()),
        ));
    }
    let creates = matches!(verb, Verb::Add | Verb::Create);
    match &operation.object {
        Object::Table(t) => render_table(verb, creates, table, t, out),
        Object::Chain(chain) => render_chain(verb, creates, table, chain, out),
        Object::Rule(rule) => render_rule(verb, table, rule, out),
        Object::Set(set) => render_set(verb, creates, table, set, out),
        Object::Map(map) => render_map(verb, creates, table, map, out),
        Object::Element(element) => render_element(verb, creates, table, element, out),
    }
}

fn render_table(
    verb: Verb,
    creates: bool,
    table: &TableId,
    object: &Table,
    out: &mut String,
) -> Result<(), NftError> {
    let _ = write!(out, "{} table {table}", verb.as_str());
    if let (true, Some(comment)) = (creates, &object.comment) {
        validate_comment(verb, "table", &table.name, comment)?;
        let _ = write!(out, " {{ comment \"{comment}\" ; }}");
    }
    Ok(())
}

fn render_chain(
    verb: Verb,
    creates: bool,
    table: &TableId,
    chain: &Chain,
    out: &mut String,
) -> Result<(), NftError> {
    validate_name(verb.as_str(), "chain", &chain.name)?;
    let _ = write!(out, "{} chain {table} {}", verb.as_str(), chain.name);
    if !creates || (chain.base.is_none() && chain.comment.is_none()) {
        return Ok(());
    }
    out.push_str(" {");
    if let Some(base) = &chain.base {
        let _ = write!(
            out,
            " type {} hook {}",
            base.kind.as_str(),
            base.hook.as_str()
        );
        if let Some(device) = &base.device {
            validate_comment(verb, "chain", &chain.name, device)?;
            let _ = write!(out, " device \"{device}\"");
        }
        let _ = write!(out, " priority {} ;", base.priority.0);
        if let Some(policy) = base.policy {
            let _ = write!(out, " policy {} ;", policy.as_str());
        }
    }
    if let Some(comment) = &chain.comment {
        validate_comment(verb, "chain", &chain.name, comment)?;
        let _ = write!(out, " comment \"{comment}\" ;");
    }
    out.push_str(" }");
    Ok(())
}

fn render_rule(verb: Verb, table: &TableId, rule: &Rule, out: &mut String) -> Result<(), NftError> {
    validate_name(verb.as_str(), "rule", &rule.chain)?;
    let needs_handle = matches!(verb, Verb::Replace | Verb::Delete | Verb::Destroy);
    if needs_handle && !matches!(rule.position, Some(RulePosition::Handle(_))) {
        return Err(invalid(verb, "rule", &rule.chain, "a handle is required"));
    }
    let _ = write!(out, "{} rule {table} {}", verb.as_str(), rule.chain);
    match rule.position {
        Some(RulePosition::Index(index)) => {
            let _ = write!(out, " index {index}");
        }
        Some(RulePosition::Handle(handle)) => {
            let _ = write!(out, " handle {handle}");
        }
        None => {}
    }
    if matches!(verb, Verb::Delete | Verb::Destroy) {
        return Ok(());
    }
    validate_text(verb, "rule", &rule.chain, "rule", &rule.rule)?;
    let _ = write!(out, " {}", rule.rule);
    if let Some(comment) = &rule.comment {
        validate_comment(verb, "rule", &rule.chain, comment)?;
        let _ = write!(out, " comment \"{comment}\"");
    }
    Ok(())
}

fn render_flags(flags: &[SetFlag], out: &mut String) {
    if flags.is_empty() {
        return;
    }
    let names: Vec<&str> = flags.iter().map(|flag| flag.as_str()).collect();
    let _ = write!(out, " flags {} ;", names.join(","));
}

fn render_key_type(
    verb: Verb,
    kind: &'static str,
    name: &str,
    key: &KeyType,
) -> Result<(), NftError> {
    validate_text(verb, kind, name, "type", key.text())
}

fn render_set(
    verb: Verb,
    creates: bool,
    table: &TableId,
    set: &Set,
    out: &mut String,
) -> Result<(), NftError> {
    validate_name(verb.as_str(), "set", &set.name)?;
    let _ = write!(out, "{} set {table} {}", verb.as_str(), set.name);
    if !creates {
        return Ok(());
    }
    render_key_type(verb, "set", &set.name, &set.key)?;
    let _ = write!(out, " {{ {} {} ;", set.key.keyword(), set.key.text());
    render_flags(&set.flags, out);
    if let Some(comment) = &set.comment {
        validate_comment(verb, "set", &set.name, comment)?;
        let _ = write!(out, " comment \"{comment}\" ;");
    }
    out.push_str(" }");
    Ok(())
}

fn render_map(
    verb: Verb,
    creates: bool,
    table: &TableId,
    map: &Map,
    out: &mut String,
) -> Result<(), NftError> {
    validate_name(verb.as_str(), "map", &map.name)?;
    let _ = write!(out, "{} map {table} {}", verb.as_str(), map.name);
    if !creates {
        return Ok(());
    }
    if map.key.keyword() != map.value.keyword() {
        return Err(invalid(
            verb,
            "map",
            &map.name,
            "key and value must both be `type` or both `typeof`",
        ));
    }
    render_key_type(verb, "map", &map.name, &map.key)?;
    render_key_type(verb, "map", &map.name, &map.value)?;
    let _ = write!(
        out,
        " {{ {} {} : {} ;",
        map.key.keyword(),
        map.key.text(),
        map.value.text()
    );
    render_flags(&map.flags, out);
    if let Some(comment) = &map.comment {
        validate_comment(verb, "map", &map.name, comment)?;
        let _ = write!(out, " comment \"{comment}\" ;");
    }
    out.push_str(" }");
    Ok(())
}

fn render_parts(verb: Verb, name: &str, what: &str, parts: &[String]) -> Result<String, NftError> {
    if parts.is_empty() {
        return Err(invalid(
            verb,
            "element",
            name,
            format!("the {what} is empty"),
        ));
    }
    for part in parts {
        validate_text(verb, "element", name, what, part)?;
        if part.contains(['{', '}', ',']) {
            return Err(invalid(
                verb,
                "element",
                name,
                format!("the {what} part {part:?} has '{{', '}}' or ','"),
            ));
        }
    }
    Ok(parts.join(" . "))
}

fn render_element(
    verb: Verb,
    creates: bool,
    table: &TableId,
    element: &Element,
    out: &mut String,
) -> Result<(), NftError> {
    validate_name(verb.as_str(), "element", &element.container)?;
    let key = render_parts(verb, &element.container, "key", &element.key)?;
    let _ = write!(
        out,
        "{} element {table} {} {{ {key}",
        verb.as_str(),
        element.container
    );
    if let (true, Some(comment)) = (creates, &element.comment) {
        validate_comment(verb, "element", &element.container, comment)?;
        let _ = write!(out, " comment \"{comment}\"");
    }
    if let (true, Some(value)) = (creates, &element.value) {
        let value = render_parts(verb, &element.container, "value", value)?;
        let _ = write!(out, " : {value}");
    }
    out.push_str(" }");
    Ok(())
}
