//! Change versions per value of one `external_ids` key (the engine's owner name): whatever
//! happens to a row carrying the value (inserted, any column modified, deleted, the pair
//! added or removed), the value gets a new version. A reader that saw version `v` of a value
//! and sees `v` again knows that no such row changed in between, without reading them.
//!
//! Versions come from one process-wide counter, so a version is never handed out twice:
//! not after [`Versions::clear`] (a full resync) and not by another replica (the client
//! replaces its replica on a full resync). Values never seen since the last clear share the
//! replica's `base` version, drawn at construction and at every clear.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::index::string_pairs;
use crate::protocol::Value;

/// The next version to hand out, for every replica of the process.
static NEXT_VERSION: AtomicU64 = AtomicU64::new(1);

/// A version never handed out before.
fn next_version() -> u64 {
    NEXT_VERSION.fetch_add(1, Ordering::Relaxed)
}

/// The versions of the values of one `external_ids` key.
#[derive(Debug)]
pub(crate) struct Versions {
    /// The versioned key; `None`: nothing is versioned.
    key: Option<String>,
    /// Values touched since the last clear, with their version.
    touched: HashMap<String, u64>,
    /// The version of every other value.
    base: u64,
}

/// The version stamped on the values one update touches, drawn when first needed (one per
/// [`crate::replica::Replica::apply`] call).
#[derive(Debug, Default)]
pub(crate) struct Stamp(Option<u64>);

impl Stamp {
    fn get(&mut self) -> u64 {
        *self.0.get_or_insert_with(next_version)
    }
}

impl Versions {
    pub(crate) fn new(key: Option<&str>) -> Self {
        Self {
            key: key.map(str::to_owned),
            touched: HashMap::new(),
            base: next_version(),
        }
    }

    pub(crate) fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// Forgets every value: all of them get one new version.
    pub(crate) fn clear(&mut self) {
        self.touched.clear();
        self.base = next_version();
    }

    /// The version of `value` of `key`; `None` when `key` is not the versioned key.
    pub(crate) fn get(&self, key: &str, value: &str) -> Option<u64> {
        (self.key.as_deref() == Some(key))
            .then(|| self.touched.get(value).copied().unwrap_or(self.base))
    }

    /// Gives the versioned values in `external_ids` (a row's value before or after a change)
    /// the version `stamp`.
    pub(crate) fn touch(&mut self, external_ids: Option<&Value>, stamp: &mut Stamp) {
        let (Some(key), Some(external_ids)) = (self.key.as_deref(), external_ids) else {
            return;
        };
        for (k, value) in string_pairs(external_ids) {
            if k != key {
                continue;
            }
            let version = stamp.get();
            if let Some(slot) = self.touched.get_mut(value) {
                *slot = version;
            } else {
                self.touched.insert(value.to_owned(), version);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Atom;

    fn ids(pairs: &[(&str, &str)]) -> Value {
        Value::Map(
            pairs
                .iter()
                .map(|(k, v)| (Atom::String((*k).into()), Atom::String((*v).into())))
                .collect(),
        )
    }

    #[test]
    fn touched_values_move_once_per_stamp_and_never_repeat() {
        let mut versions = Versions::new(Some("owner"));
        let base = versions.get("owner", "a");
        assert_eq!(versions.get("owner", "b"), base);
        assert_eq!(versions.get("other", "a"), None);
        let mut stamp = Stamp::default();
        versions.touch(Some(&ids(&[("owner", "a"), ("x", "b")])), &mut stamp);
        versions.touch(Some(&ids(&[("owner", "c")])), &mut stamp);
        let a = versions.get("owner", "a");
        assert_ne!(a, base);
        assert_eq!(versions.get("owner", "c"), a, "one stamp per update");
        assert_eq!(
            versions.get("owner", "b"),
            base,
            "only the versioned key counts"
        );
        versions.clear();
        let cleared = versions.get("owner", "a");
        assert!(cleared > a && cleared > base);
        assert_eq!(versions.get("owner", "c"), cleared);
        let other = Versions::new(Some("owner"));
        assert_ne!(
            other.get("owner", "a"),
            cleared,
            "another replica never repeats"
        );
        let mut unversioned = Versions::new(None);
        unversioned.touch(Some(&ids(&[("owner", "a")])), &mut Stamp::default());
        assert_eq!(unversioned.get("owner", "a"), None);
    }
}
