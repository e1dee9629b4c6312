//! `CNI_COMMAND` values.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A CNI command. The spec's six plus upstream server's `UPDATE` (a server no-op); any
/// other text is kept as [`Command::Other`] so a server can answer upstream's
/// `unsupported CNI command <text>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Command {
    /// `ADD`: attach the container.
    Add,
    /// `DEL`: detach the container (best effort, repeatable).
    Del,
    /// `CHECK`: verify an attachment.
    Check,
    /// `STATUS`: is the plugin ready for ADD (CNI 1.1).
    Status,
    /// `GC`: remove stale resources (CNI 1.1).
    Gc,
    /// `VERSION`: which spec versions the plugin speaks.
    Version,
    /// `UPDATE`: known to upstream's server (a no-op), not part of the spec.
    Update,
    /// Anything else, verbatim.
    Other(String),
}

impl Command {
    /// The command for a `CNI_COMMAND` value (case-sensitive, as the CNI library).
    pub fn parse(text: &str) -> Command {
        match text {
            "ADD" => Command::Add,
            "DEL" => Command::Del,
            "CHECK" => Command::Check,
            "STATUS" => Command::Status,
            "GC" => Command::Gc,
            "VERSION" => Command::Version,
            "UPDATE" => Command::Update,
            other => Command::Other(other.to_owned()),
        }
    }

    /// The `CNI_COMMAND` text.
    pub fn as_str(&self) -> &str {
        match self {
            Command::Add => "ADD",
            Command::Del => "DEL",
            Command::Check => "CHECK",
            Command::Status => "STATUS",
            Command::Gc => "GC",
            Command::Version => "VERSION",
            Command::Update => "UPDATE",
            Command::Other(text) => text,
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Command {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|text| Command::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        for text in [
            "ADD", "DEL", "CHECK", "STATUS", "GC", "VERSION", "UPDATE", "add", "FOO",
        ] {
            assert_eq!(Command::parse(text).as_str(), text);
        }
        assert_eq!(Command::parse("add"), Command::Other("add".into()));
    }
}
