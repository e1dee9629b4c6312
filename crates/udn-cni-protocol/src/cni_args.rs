//! `CNI_ARGS`: `K=V;K=V` pairs, parsed exactly as upstream's server (`gatherCNIArgs`).

use std::collections::BTreeMap;

/// Pod namespace key kubelet's runtimes put in `CNI_ARGS`.
pub const K8S_POD_NAMESPACE: &str = "K8S_POD_NAMESPACE";
/// Pod name key.
pub const K8S_POD_NAME: &str = "K8S_POD_NAME";
/// Pod UID key (containerd 1.5+, CRI-O 1.20+).
pub const K8S_POD_UID: &str = "K8S_POD_UID";
/// Sandbox (infra) container ID key.
pub const K8S_POD_INFRA_CONTAINER_ID: &str = "K8S_POD_INFRA_CONTAINER_ID";

/// A `CNI_ARGS` part that is not exactly one `K=V`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CNI_ARG '{part}'")]
pub struct CniArgsError {
    /// The offending part as it appeared between semicolons.
    pub part: String,
}

/// The parsed pairs. Keys and values are trimmed of whitespace; a repeated key keeps its
/// last value (a Go map).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CniArgs {
    pairs: BTreeMap<String, String>,
}

impl CniArgs {
    /// Splits on `;`, then each part on `=`; any part that does not split into exactly two
    /// pieces fails with upstream's text. So an empty string, a trailing `;` and
    /// `A=B=C` are all errors, as upstream.
    pub fn parse(text: &str) -> Result<CniArgs, CniArgsError> {
        let mut pairs = BTreeMap::new();
        for part in text.split(';') {
            let mut pieces = part.split('=');
            match (pieces.next(), pieces.next(), pieces.next()) {
                (Some(key), Some(value), None) => {
                    pairs.insert(key.trim().to_owned(), value.trim().to_owned());
                }
                _ => {
                    return Err(CniArgsError {
                        part: part.to_owned(),
                    });
                }
            }
        }
        Ok(CniArgs { pairs })
    }

    /// The value of `key`, if present (possibly empty).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.get(key).map(String::as_str)
    }

    /// Every pair, ordered by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn kubelet_args_parse() {
        let args = CniArgs::parse(
            "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1",
        )
        .unwrap();
        assert_eq!(args.get(K8S_POD_NAMESPACE), Some("ns"));
        assert_eq!(args.get(K8S_POD_NAME), Some("p"));
        assert_eq!(args.get(K8S_POD_UID), Some("u-1"));
        assert_eq!(args.get(K8S_POD_INFRA_CONTAINER_ID), Some("abc"));
        assert_eq!(args.get("IgnoreUnknown"), Some("1"));
        assert_eq!(args.get("missing"), None);
    }

    #[test]
    fn whitespace_is_trimmed_and_last_value_wins() {
        let args = CniArgs::parse(" A = 1 ;A=2;B=").unwrap();
        assert_eq!(args.get("A"), Some("2"));
        assert_eq!(args.get("B"), Some(""));
    }

    #[test]
    fn malformed_parts_use_upstreams_text() {
        for (input, part) in [
            ("", ""),
            ("A=1;", ""),
            ("A=1;B", "B"),
            ("A=1=2", "A=1=2"),
            (";A=1", ""),
        ] {
            let err = CniArgs::parse(input).unwrap_err();
            assert_eq!(err.part, part, "{input:?}");
            assert_eq!(err.to_string(), format!("invalid CNI_ARG '{part}'"));
        }
    }

    proptest! {
        #[test]
        fn joined_pairs_parse_back(pairs in proptest::collection::btree_map("[A-Za-z_][A-Za-z0-9_]{0,8}", "[A-Za-z0-9/._-]{0,8}", 1..6)) {
            let text: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let args = CniArgs::parse(&text.join(";")).unwrap();
            let back: BTreeMap<String, String> = args.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
            prop_assert_eq!(back, pairs);
        }
    }
}
