//! CNI specification versions: the ones this plugin speaks, the VERSION answer and the
//! comparison rule of the CNI library.
//!
//! Supported: 0.4.0, 1.0.0 and 1.1.0. The CNI 1.1 spec obliges a plugin to nothing about
//! older versions (its VERSION example merely lists them), and 0.3.x lacks CHECK and
//! prevResult on DEL, so 0.3.0/0.3.1 (and 0.1/0.2) are refused with code 1. Upstream's
//! plugin, built on the CNI library's `version.All`, also accepts 0.1.0 to 0.3.1.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::errors::{CniError, ErrorCode};

/// A CNI spec version this plugin supports; results are printed in exactly this version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CniVersion {
    /// 0.4.0: CHECK exists; results carry `ips[].version`.
    V0_4_0,
    /// 1.0.0: no `version` in ips; interfaces may carry `mtu`, `socketPath`, `pciID`.
    V1_0_0,
    /// 1.1.0: adds STATUS and GC; result types unchanged from 1.0.0.
    V1_1_0,
}

/// Every supported version, oldest first (the order of the VERSION answer).
pub const SUPPORTED_VERSIONS: [CniVersion; 3] =
    [CniVersion::V0_4_0, CniVersion::V1_0_0, CniVersion::V1_1_0];

impl CniVersion {
    /// The newest version, used where no input version applies (VERSION answers, errors
    /// before the config is read).
    pub const CURRENT: CniVersion = CniVersion::V1_1_0;

    /// The version string (`"1.1.0"`).
    pub fn as_str(self) -> &'static str {
        match self {
            CniVersion::V0_4_0 => "0.4.0",
            CniVersion::V1_0_0 => "1.0.0",
            CniVersion::V1_1_0 => "1.1.0",
        }
    }

    /// The supported version equal to `text`, compared as the CNI library does: exact
    /// string match (`"1.1"` is not `"1.1.0"`).
    pub fn parse(text: &str) -> Option<CniVersion> {
        SUPPORTED_VERSIONS.into_iter().find(|v| v.as_str() == text)
    }

    /// Resolves a config's `cniVersion` to a supported version, or the CNI error the CNI
    /// library gives (code 1, `incompatible CNI versions`, details naming both sides).
    pub fn negotiate(config_version: &str) -> Result<CniVersion, CniError> {
        CniVersion::parse(config_version).ok_or_else(|| {
            CniError::new(ErrorCode::IncompatibleVersion, "incompatible CNI versions")
                .with_details(incompatible_details(config_version))
        })
    }
}

impl fmt::Display for CniVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for CniVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CniVersion {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        CniVersion::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(incompatible_details(&text)))
    }
}

/// The CNI library's wording: `config is "0.3.1", plugin supports ["0.4.0" "1.0.0" "1.1.0"]`
/// (Go's `%q` of a string slice).
fn incompatible_details(config_version: &str) -> String {
    let supported: Vec<String> = SUPPORTED_VERSIONS
        .iter()
        .map(|v| format!("\"{}\"", v.as_str()))
        .collect();
    format!(
        "config is {}, plugin supports [{}]",
        go_quote(config_version),
        supported.join(" ")
    )
}

/// Go's `%q` for the strings that appear here (escapes quotes, backslashes and controls).
fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The VERSION answer: `{"cniVersion":"1.1.0","supportedVersions":["0.4.0","1.0.0","1.1.0"]}`.
///
/// Like the CNI library, `cniVersion` is always the newest version and stdin is not read
/// (the spec says "the value of cniVersion specified on input"; a runtime asking VERSION
/// has no config yet, and libcni decodes the answer by `supportedVersions` alone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionInfo {
    /// The version of this answer's format.
    #[serde(rename = "cniVersion")]
    pub cni_version: String,
    /// Every version a config may name.
    #[serde(rename = "supportedVersions")]
    pub supported_versions: Vec<String>,
}

impl VersionInfo {
    /// This plugin's answer.
    pub fn ours() -> VersionInfo {
        VersionInfo {
            cni_version: CniVersion::CURRENT.as_str().to_owned(),
            supported_versions: SUPPORTED_VERSIONS
                .iter()
                .map(|v| v.as_str().to_owned())
                .collect(),
        }
    }
}

/// A version as the CNI library parses it for ordering (`version.ParseVersion`): up to
/// three dot-separated integers, missing parts are 0, and the empty string is 0.1.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SpecVersion {
    /// Major part.
    pub major: u64,
    /// Minor part.
    pub minor: u64,
    /// Micro (patch) part.
    pub micro: u64,
}

/// A version string the CNI library's parser rejects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid version {version:?}: {reason}")]
pub struct SpecVersionError {
    /// The text as given.
    pub version: String,
    /// Which part is wrong.
    pub reason: &'static str,
}

impl FromStr for SpecVersion {
    type Err = SpecVersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.is_empty() {
            return Ok(SpecVersion {
                major: 0,
                minor: 1,
                micro: 0,
            });
        }
        let err = |reason| SpecVersionError {
            version: text.to_owned(),
            reason,
        };
        let parts: Vec<&str> = text.split('.').collect();
        if parts.len() > 3 {
            return Err(err("too many parts"));
        }
        let number = |index: usize, reason| match parts.get(index) {
            None => Ok(0),
            Some(part) => part.parse::<u64>().map_err(|_| err(reason)),
        };
        Ok(SpecVersion {
            major: number(0, "major part is not a number")?,
            minor: number(1, "minor part is not a number")?,
            micro: number(2, "micro part is not a number")?,
        })
    }
}

impl SpecVersion {
    /// `version.GreaterThanOrEqualTo(a, b)`.
    pub fn at_least(self, other: SpecVersion) -> bool {
        self.cmp(&other) != Ordering::Less
    }
}

impl From<CniVersion> for SpecVersion {
    fn from(version: CniVersion) -> Self {
        match version {
            CniVersion::V0_4_0 => SpecVersion {
                major: 0,
                minor: 4,
                micro: 0,
            },
            CniVersion::V1_0_0 => SpecVersion {
                major: 1,
                minor: 0,
                micro: 0,
            },
            CniVersion::V1_1_0 => SpecVersion {
                major: 1,
                minor: 1,
                micro: 0,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::go_json;

    #[test]
    fn version_answer_bytes() {
        assert_eq!(
            go_json::to_vec_line(&VersionInfo::ours()).unwrap(),
            b"{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n"
        );
    }

    #[test]
    fn negotiate_accepts_exactly_the_supported_strings() {
        assert_eq!(CniVersion::negotiate("0.4.0").unwrap(), CniVersion::V0_4_0);
        assert_eq!(CniVersion::negotiate("1.0.0").unwrap(), CniVersion::V1_0_0);
        assert_eq!(CniVersion::negotiate("1.1.0").unwrap(), CniVersion::V1_1_0);
        for refused in ["0.3.1", "0.3.0", "1.1", "1.2.0", "", "v1.1.0"] {
            let err = CniVersion::negotiate(refused).unwrap_err();
            assert_eq!(err.code, ErrorCode::IncompatibleVersion);
            assert_eq!(err.msg, "incompatible CNI versions");
        }
    }

    #[test]
    fn incompatible_details_name_both_sides() {
        let err = CniVersion::negotiate("0.3.1").unwrap_err();
        assert_eq!(
            err.details.as_deref(),
            Some(r#"config is "0.3.1", plugin supports ["0.4.0" "1.0.0" "1.1.0"]"#)
        );
        assert_eq!(
            err.to_string(),
            r#"incompatible CNI versions; config is "0.3.1", plugin supports ["0.4.0" "1.0.0" "1.1.0"]"#
        );
    }

    #[test]
    fn spec_version_parses_like_the_cni_library() {
        let v = |s: &str| s.parse::<SpecVersion>().unwrap();
        assert_eq!(
            v(""),
            SpecVersion {
                major: 0,
                minor: 1,
                micro: 0
            }
        );
        assert_eq!(
            v("1"),
            SpecVersion {
                major: 1,
                minor: 0,
                micro: 0
            }
        );
        assert_eq!(
            v("0.4"),
            SpecVersion {
                major: 0,
                minor: 4,
                micro: 0
            }
        );
        assert!(v("1.1.0").at_least(v("0.4.0")));
        assert!(v("1.1.0").at_least(v("1.1.0")));
        assert!(!v("1.0.0").at_least(v("1.1.0")));
        assert!(v("10.0.0").at_least(v("9.9.9")));
        assert!("1.2.3.4".parse::<SpecVersion>().is_err());
        assert!("a.1".parse::<SpecVersion>().is_err());
        assert!("1.x".parse::<SpecVersion>().is_err());
    }

    #[test]
    fn serde_round_trip() {
        let json = serde_json::to_string(&CniVersion::V1_0_0).unwrap();
        assert_eq!(json, "\"1.0.0\"");
        assert_eq!(
            serde_json::from_str::<CniVersion>(&json).unwrap(),
            CniVersion::V1_0_0
        );
        assert!(serde_json::from_str::<CniVersion>("\"0.3.1\"").is_err());
    }
}
