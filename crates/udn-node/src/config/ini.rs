//! The config file format of upstream's `--config-file` (Go's gcfg, git-config-like):
//! `[section]` headers, `name = value` lines, `;` and `#` comments, double-quoted values
//! with `\"`, `\\`, `\n`, `\t` escapes, and a bare `name` meaning `true`. Section and
//! variable names are case-insensitive, as gcfg's.

use std::collections::BTreeMap;

/// A parsed file: section -> variable -> values (a variable may repeat; gcfg keeps the last
/// for single-valued fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IniFile {
    sections: BTreeMap<String, BTreeMap<String, Vec<Entry>>>,
}

/// One `name = value` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The value (unquoted, unescaped); `true` for a bare name.
    pub value: String,
    /// The line it came from (1-based).
    pub line: usize,
}

/// Why a config file does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct IniError {
    /// The line (1-based).
    pub line: usize,
    /// Why.
    pub reason: String,
}

impl IniFile {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Self, IniError> {
        let mut file = Self::default();
        let mut section: Option<String> = None;
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let err = |reason: String| IniError { line, reason };
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with(';') || trimmed.starts_with('#') {
                continue;
            }
            if let Some(rest) = trimmed.strip_prefix('[') {
                let (header, after) = rest
                    .split_once(']')
                    .ok_or_else(|| err("section header without ']'".to_owned()))?;
                if !strip_comment(after).trim().is_empty() {
                    return Err(err(format!("unexpected text after [{header}]")));
                }
                let name = header.trim();
                if name.contains(char::is_whitespace) || name.contains('"') {
                    return Err(err(format!(
                        "[{name}]: subsections are not used by ovnkube's config"
                    )));
                }
                if name.is_empty() || !name.chars().all(is_name_char) {
                    return Err(err(format!("[{name}]: invalid section name")));
                }
                let name = name.to_ascii_lowercase();
                file.sections.entry(name.clone()).or_default();
                section = Some(name);
                continue;
            }
            let Some(current) = &section else {
                return Err(err("variable outside of any [section]".to_owned()));
            };
            let (name, value) = match trimmed.split_once('=') {
                Some((name, value)) => (name.trim(), parse_value(value).map_err(err)?),
                None => (strip_comment(trimmed).trim(), "true".to_owned()),
            };
            if name.is_empty() || !name.chars().all(is_name_char) {
                return Err(err(format!("{name:?}: invalid variable name")));
            }
            file.sections
                .entry(current.clone())
                .or_default()
                .entry(name.to_ascii_lowercase())
                .or_default()
                .push(Entry { value, line });
        }
        Ok(file)
    }

    /// The last value of `section.name`, if set.
    pub fn get(&self, section: &str, name: &str) -> Option<&Entry> {
        self.sections
            .get(&section.to_ascii_lowercase())?
            .get(&name.to_ascii_lowercase())?
            .last()
    }

    /// Every `(section, name, last entry)`, sorted.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str, &Entry)> {
        self.sections.iter().flat_map(|(section, vars)| {
            vars.iter().filter_map(move |(name, entries)| {
                entries
                    .last()
                    .map(|entry| (section.as_str(), name.as_str(), entry))
            })
        })
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'
}

/// Drops a trailing `;` / `#` comment of unquoted text.
fn strip_comment(text: &str) -> &str {
    text.find([';', '#']).map_or(text, |at| &text[..at])
}

/// A value: unquoted text up to a comment (trimmed), or double-quoted parts with escapes.
fn parse_value(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = text.trim().chars().peekable();
    let mut quoted = false;
    // Whitespace outside quotes is kept only between words (gcfg collapses nothing else).
    let mut pending_space = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push_str(&pending_space);
                pending_space.clear();
                quoted = !quoted;
            }
            '\\' => {
                let escaped = chars
                    .next()
                    .ok_or_else(|| "value ends with a lone backslash".to_owned())?;
                out.push_str(&pending_space);
                pending_space.clear();
                out.push(match escaped {
                    '"' => '"',
                    '\\' => '\\',
                    'n' => '\n',
                    't' => '\t',
                    'b' => '\u{8}',
                    other => return Err(format!("unknown escape \\{other}")),
                });
            }
            ';' | '#' if !quoted => break,
            c if c.is_whitespace() && !quoted => pending_space.push(c),
            c => {
                out.push_str(&pending_space);
                pending_space.clear();
                out.push(c);
            }
        }
    }
    if quoted {
        return Err("unterminated quoted value".to_owned());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn reads_upstreams_config_shape() {
        let file = IniFile::parse(
            "; ovnkube config\n[default]\nmtu=1400\ncluster-subnets = \"10.244.0.0/16/24\"\n\n\
             [Kubernetes]\nkubeconfig = /etc/kube.conf # the node's\n[gateway]\nmode=shared\n\
             nodeport\n[ovnkubenode]\nkubelet-cgroup-path = \"system.slice/kubelet.service\"\n",
        )
        .unwrap();
        assert_eq!(file.get("default", "MTU").unwrap().value, "1400");
        assert_eq!(
            file.get("default", "cluster-subnets").unwrap().value,
            "10.244.0.0/16/24"
        );
        assert_eq!(
            file.get("kubernetes", "kubeconfig").unwrap().value,
            "/etc/kube.conf"
        );
        assert_eq!(file.get("gateway", "nodeport").unwrap().value, "true");
        assert_eq!(
            file.get("ovnkubenode", "kubelet-cgroup-path")
                .unwrap()
                .value,
            "system.slice/kubelet.service"
        );
        assert_eq!(file.get("gateway", "mode").unwrap().line, 9);
        assert_eq!(file.entries().count(), 6);
    }

    #[test]
    fn last_value_wins_and_escapes_unquote() {
        let file =
            IniFile::parse("[default]\nmtu=1400\nmtu=9000\nname=\"a \\\"b\\\" ; c\"\n").unwrap();
        assert_eq!(file.get("default", "mtu").unwrap().value, "9000");
        assert_eq!(file.get("default", "name").unwrap().value, "a \"b\" ; c");
    }

    #[test]
    fn errors_name_the_line_and_reason() {
        let cases = [
            ("mtu=1\n", 1, "outside of any [section]"),
            ("[default\n", 1, "without ']'"),
            ("[default]\nx=\"open\n", 2, "unterminated"),
            ("[gateway \"x\"]\n", 1, "subsections"),
            ("[default]\nbad name=1\n", 2, "invalid variable name"),
            ("[default]\nx=a\\q\n", 2, "unknown escape"),
        ];
        for (text, line, reason) in cases {
            let error = IniFile::parse(text).unwrap_err();
            assert_eq!(error.line, line, "{text:?}");
            assert!(error.reason.contains(reason), "{text:?}: {error}");
        }
    }
}
