//! The nftables objects a transaction adds, flushes or deletes: tables, chains, rules, sets,
//! maps and their elements. Objects name only themselves; the family and table come from the
//! [`Transaction`](super::Transaction) they are put in (one table per transaction, as
//! knftables binds an interface to one table).

use std::fmt;

/// An address family of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// `ip`.
    Ip,
    /// `ip6`.
    Ip6,
    /// `inet` (IPv4 and IPv6).
    Inet,
    /// `arp`.
    Arp,
    /// `bridge`.
    Bridge,
    /// `netdev`.
    Netdev,
}

impl Family {
    /// The nft spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ip => "ip",
            Self::Ip6 => "ip6",
            Self::Inet => "inet",
            Self::Arp => "arp",
            Self::Bridge => "bridge",
            Self::Netdev => "netdev",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The table a transaction works on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableId {
    /// Its family.
    pub family: Family,
    /// Its name.
    pub name: String,
}

impl TableId {
    /// `family name`.
    pub fn new(family: Family, name: impl Into<String>) -> Self {
        Self {
            family,
            name: name.into(),
        }
    }
}

impl fmt::Display for TableId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.family, self.name)
    }
}

/// The transaction's table itself (add / create / flush / delete / destroy).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// `comment "..."` (add / create only).
    pub comment: Option<String>,
}

/// The type of a base chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainType {
    /// `filter`.
    Filter,
    /// `nat`.
    Nat,
    /// `route`.
    Route,
}

impl ChainType {
    /// The nft spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Filter => "filter",
            Self::Nat => "nat",
            Self::Route => "route",
        }
    }
}

/// The hook a base chain is attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// `prerouting`.
    Prerouting,
    /// `input`.
    Input,
    /// `forward`.
    Forward,
    /// `output`.
    Output,
    /// `postrouting`.
    Postrouting,
    /// `ingress` (netdev, inet).
    Ingress,
    /// `egress` (netdev).
    Egress,
}

impl Hook {
    /// The nft spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prerouting => "prerouting",
            Self::Input => "input",
            Self::Forward => "forward",
            Self::Output => "output",
            Self::Postrouting => "postrouting",
            Self::Ingress => "ingress",
            Self::Egress => "egress",
        }
    }
}

/// A base chain's priority. Always written as a number: older nft versions refuse some named
/// priorities in some hooks (knftables does the same). The named constants are the values of
/// the ip, ip6 and inet families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Priority(pub i32);

impl Priority {
    /// `raw`.
    pub const RAW: Self = Self(-300);
    /// `mangle`.
    pub const MANGLE: Self = Self(-150);
    /// `dstnat`.
    pub const DSTNAT: Self = Self(-100);
    /// `filter`.
    pub const FILTER: Self = Self(0);
    /// `security`.
    pub const SECURITY: Self = Self(50);
    /// `srcnat`.
    pub const SRCNAT: Self = Self(100);

    /// This priority moved by `offset` (`filter + 10`).
    pub fn offset(self, offset: i32) -> Self {
        Self(self.0.saturating_add(offset))
    }
}

/// A base chain's policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `accept`.
    Accept,
    /// `drop`.
    Drop,
}

impl Policy {
    /// The nft spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Drop => "drop",
        }
    }
}

/// What makes a chain a base chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseChain {
    /// `type`.
    pub kind: ChainType,
    /// `hook`.
    pub hook: Hook,
    /// `priority`.
    pub priority: Priority,
    /// `device "..."` (netdev ingress/egress).
    pub device: Option<String>,
    /// `policy`; `None` leaves nft's default (accept).
    pub policy: Option<Policy>,
}

impl BaseChain {
    /// A base chain of `kind` at `hook` and `priority`, no device, default policy.
    pub fn new(kind: ChainType, hook: Hook, priority: Priority) -> Self {
        Self {
            kind,
            hook,
            priority,
            device: None,
            policy: None,
        }
    }
}

/// A chain. For flush and delete only the name matters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    /// Its name.
    pub name: String,
    /// `Some` for a base chain.
    pub base: Option<BaseChain>,
    /// `comment "..."` (add / create only).
    pub comment: Option<String>,
}

impl Chain {
    /// A regular chain (or a chain named for flush / delete).
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            base: None,
            comment: None,
        }
    }

    /// A base chain.
    pub fn base(name: impl Into<String>, base: BaseChain) -> Self {
        Self {
            name: name.into(),
            base: Some(base),
            comment: None,
        }
    }

    /// This chain with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }
}

/// Where a rule goes, or which rule an operation means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RulePosition {
    /// `index N`: after (add) or before (insert) the rule at that position.
    Index(u32),
    /// `handle N`: after (add) or before (insert) that rule, or the rule replaced / deleted.
    Handle(u64),
}

/// A rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The chain it is in.
    pub chain: String,
    /// The rule text (`ip daddr @set drop`); empty for delete.
    pub rule: String,
    /// `comment "..."`.
    pub comment: Option<String>,
    /// Required for replace and delete.
    pub position: Option<RulePosition>,
}

impl Rule {
    /// `rule` appended to (or, inserted, prepended to) `chain`.
    pub fn new(chain: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            chain: chain.into(),
            rule: rule.into(),
            comment: None,
            position: None,
        }
    }

    /// The rule with handle `handle` (for replace, delete).
    pub fn with_handle(chain: impl Into<String>, handle: u64) -> Self {
        Self {
            chain: chain.into(),
            rule: String::new(),
            comment: None,
            position: Some(RulePosition::Handle(handle)),
        }
    }

    /// This rule at `position`.
    pub fn at(mut self, position: RulePosition) -> Self {
        self.position = Some(position);
        self
    }

    /// This rule with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }
}

/// How a set's keys (or a map's keys and values) are typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyType {
    /// `type ipv4_addr . inet_proto . inet_service`.
    Type(String),
    /// `typeof ip daddr . tcp dport`.
    TypeOf(String),
}

impl KeyType {
    pub(crate) fn keyword(&self) -> &'static str {
        match self {
            Self::Type(_) => "type",
            Self::TypeOf(_) => "typeof",
        }
    }

    pub(crate) fn text(&self) -> &str {
        match self {
            Self::Type(text) | Self::TypeOf(text) => text,
        }
    }
}

/// A set or map flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetFlag {
    /// `constant`.
    Constant,
    /// `interval`.
    Interval,
    /// `timeout`.
    Timeout,
    /// `dynamic`.
    Dynamic,
}

impl SetFlag {
    /// The nft spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Constant => "constant",
            Self::Interval => "interval",
            Self::Timeout => "timeout",
            Self::Dynamic => "dynamic",
        }
    }
}

/// A named set. For flush and delete only the name matters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Set {
    /// Its name.
    pub name: String,
    /// Its key type (add / create).
    pub key: KeyType,
    /// `flags ...`.
    pub flags: Vec<SetFlag>,
    /// `comment "..."`.
    pub comment: Option<String>,
}

impl Set {
    /// A set of `type` keys.
    pub fn new(name: impl Into<String>, key_type: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            key: KeyType::Type(key_type.into()),
            flags: Vec::new(),
            comment: None,
        }
    }

    /// This set with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }

    /// This set with flags.
    pub fn with_flags(mut self, flags: impl IntoIterator<Item = SetFlag>) -> Self {
        self.flags = flags.into_iter().collect();
        self
    }
}

/// A named map. For flush and delete only the name matters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Map {
    /// Its name.
    pub name: String,
    /// Its key type.
    pub key: KeyType,
    /// Its value type (the same kind, `type` or `typeof`, as the key).
    pub value: KeyType,
    /// `flags ...`.
    pub flags: Vec<SetFlag>,
    /// `comment "..."`.
    pub comment: Option<String>,
}

impl Map {
    /// A map of `type key : value`.
    pub fn new(
        name: impl Into<String>,
        key_type: impl Into<String>,
        value_type: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            key: KeyType::Type(key_type.into()),
            value: KeyType::Type(value_type.into()),
            flags: Vec::new(),
            comment: None,
        }
    }

    /// This map with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }
}

/// An element of a set (no value) or a map (a value).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Element {
    /// The set or map it is in.
    pub container: String,
    /// The key, one part per concatenated field (`["10.0.0.1", "tcp", "80"]`).
    pub key: Vec<String>,
    /// A map element's value parts; `None` in a set.
    pub value: Option<Vec<String>>,
    /// `comment "..."`.
    pub comment: Option<String>,
}

impl Element {
    /// A set element.
    pub fn set(container: impl Into<String>, key: Vec<String>) -> Self {
        Self {
            container: container.into(),
            key,
            value: None,
            comment: None,
        }
    }

    /// A map element.
    pub fn map(container: impl Into<String>, key: Vec<String>, value: Vec<String>) -> Self {
        Self {
            container: container.into(),
            key,
            value: Some(value),
            comment: None,
        }
    }
}

/// Any object a transaction operates on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Object {
    /// The table.
    Table(Table),
    /// A chain.
    Chain(Chain),
    /// A rule.
    Rule(Rule),
    /// A set.
    Set(Set),
    /// A map.
    Map(Map),
    /// A set or map element.
    Element(Element),
}

impl Object {
    /// Its name (a rule's or element's: its chain's, set's or map's; the table's: empty).
    pub fn name(&self) -> &str {
        match self {
            Self::Table(_) => "",
            Self::Chain(chain) => &chain.name,
            Self::Rule(rule) => &rule.chain,
            Self::Set(set) => &set.name,
            Self::Map(map) => &map.name,
            Self::Element(element) => &element.container,
        }
    }

    /// The object kind as nft spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Table(_) => "table",
            Self::Chain(_) => "chain",
            Self::Rule(_) => "rule",
            Self::Set(_) => "set",
            Self::Map(_) => "map",
            Self::Element(_) => "element",
        }
    }
}

macro_rules! into_object {
    ($($ty:ident),*) => {$(
        impl From<$ty> for Object {
            fn from(object: $ty) -> Self {
                Self::$ty(object)
            }
        }
    )*};
}

into_object!(Table, Chain, Rule, Set, Map, Element);
