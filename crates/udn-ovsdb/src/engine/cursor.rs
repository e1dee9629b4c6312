//! Lookups of many keys in a map sorted by column name (a row, a table's columns), asked in
//! increasing order: one pass instead of a search per key (rows are many and their column
//! names are separate allocations, so each comparison is likely a cache miss).

use std::cmp::Ordering;
use std::collections::{BTreeMap, btree_map};
use std::iter::Peekable;

/// Finds keys of a map sorted by column name, asked in increasing order, in one pass.
pub(crate) struct Cursor<'a, T> {
    entries: Option<Peekable<btree_map::Iter<'a, String, T>>>,
}

impl<'a, T> Cursor<'a, T> {
    pub(crate) fn new(map: impl Into<Option<&'a BTreeMap<String, T>>>) -> Self {
        Self {
            entries: map.into().map(|m| m.iter().peekable()),
        }
    }

    pub(crate) fn seek(&mut self, key: &str) -> Option<&'a T> {
        let entries = self.entries.as_mut()?;
        while let Some(&(k, v)) = entries.peek() {
            match k.as_str().cmp(key) {
                Ordering::Less => {
                    entries.next();
                }
                Ordering::Equal => return Some(v),
                Ordering::Greater => return None,
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeks_in_increasing_order_find_present_keys_only() {
        let map: BTreeMap<String, u32> = [("a", 1), ("c", 3), ("e", 5)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        let mut cursor = Cursor::new(&map);
        assert_eq!(cursor.seek("a"), Some(&1));
        assert_eq!(cursor.seek("b"), None);
        assert_eq!(cursor.seek("c"), Some(&3));
        assert_eq!(cursor.seek("c"), Some(&3));
        assert_eq!(cursor.seek("f"), None);
        let mut empty: Cursor<'_, u32> = Cursor::new(None);
        assert_eq!(empty.seek("a"), None);
    }
}
