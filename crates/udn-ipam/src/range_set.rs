//! A set of integers kept as disjoint inclusive ranges, so that blocks of millions of addresses
//! (excluded subnets, a /8 worth of offsets) cost one entry and "first free value from here" is
//! one lookup per blocking range.

use std::collections::BTreeMap;

/// Disjoint, non-adjacent inclusive ranges `start -> end`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RangeSet {
    ranges: BTreeMap<u128, u128>,
    len: u128,
}

impl RangeSet {
    /// An empty set.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Number of values in the set (saturating).
    pub(crate) fn len(&self) -> u128 {
        self.len
    }

    /// The range holding `value`, if any.
    fn range_of(&self, value: u128) -> Option<(u128, u128)> {
        self.ranges
            .range(..=value)
            .next_back()
            .filter(|(_, end)| **end >= value)
            .map(|(start, end)| (*start, *end))
    }

    /// Whether `value` is in the set.
    pub(crate) fn contains(&self, value: u128) -> bool {
        self.range_of(value).is_some()
    }

    /// Adds every value of `lo..=hi` (no-op when `lo > hi`).
    pub(crate) fn insert_range(&mut self, lo: u128, hi: u128) {
        if lo > hi {
            return;
        }
        let mut new_lo = lo;
        let mut new_hi = hi;
        // A range starting at or before `lo` that reaches `lo - 1` or beyond is merged.
        if let Some((start, end)) = self.ranges.range(..=lo).next_back().map(|(s, e)| (*s, *e))
            && end.saturating_add(1) >= lo
        {
            new_lo = start;
            new_hi = new_hi.max(end);
            self.take(start, end);
        }
        // Ranges starting inside `new_lo..=hi + 1` are merged too.
        let upper = new_hi.saturating_add(1);
        let later: Vec<(u128, u128)> = self
            .ranges
            .range(new_lo..=upper)
            .map(|(s, e)| (*s, *e))
            .collect();
        for (start, end) in later {
            new_hi = new_hi.max(end);
            self.take(start, end);
        }
        self.ranges.insert(new_lo, new_hi);
        self.len = self.len.saturating_add((new_hi - new_lo).saturating_add(1));
    }

    fn take(&mut self, start: u128, end: u128) {
        self.ranges.remove(&start);
        self.len = self.len.saturating_sub((end - start).saturating_add(1));
    }

    /// Adds `value`; returns false when it was already present.
    pub(crate) fn insert(&mut self, value: u128) -> bool {
        if self.contains(value) {
            return false;
        }
        self.insert_range(value, value);
        true
    }

    /// Removes `value`; returns false when it was absent.
    pub(crate) fn remove(&mut self, value: u128) -> bool {
        let Some((start, end)) = self.range_of(value) else {
            return false;
        };
        self.take(start, end);
        if start < value {
            self.insert_range(start, value - 1);
        }
        if value < end {
            self.insert_range(value + 1, end);
        }
        true
    }

    /// The smallest value `>= from` that is not in the set (`None` past `u128::MAX`).
    pub(crate) fn next_absent(&self, from: u128) -> Option<u128> {
        match self.range_of(from) {
            Some((_, end)) => end.checked_add(1),
            None => Some(from),
        }
    }
}

/// The first value of `lo..=hi` that none of `sets` holds and `skip` does not reject.
pub(crate) fn first_free(
    lo: u128,
    hi: u128,
    sets: &[&RangeSet],
    skip: impl Fn(u128) -> bool,
) -> Option<u128> {
    let mut candidate = lo;
    loop {
        if candidate > hi {
            return None;
        }
        let mut moved = false;
        for set in sets {
            let next = set.next_absent(candidate)?;
            if next != candidate {
                candidate = next;
                moved = true;
            }
        }
        if moved {
            continue;
        }
        if skip(candidate) {
            candidate = candidate.checked_add(1)?;
            continue;
        }
        return Some(candidate);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn merges_adjacent_and_overlapping() {
        let mut set = RangeSet::new();
        set.insert_range(10, 20);
        set.insert_range(21, 25);
        set.insert_range(5, 9);
        assert_eq!(set.ranges.len(), 1);
        assert_eq!(set.len(), 21);
        set.insert_range(0, 100);
        assert_eq!(set.len(), 101);
        assert_eq!(set.next_absent(0), Some(101));
    }

    #[test]
    fn remove_splits() {
        let mut set = RangeSet::new();
        set.insert_range(0, 9);
        assert!(set.remove(5));
        assert!(!set.remove(5));
        assert_eq!(set.len(), 9);
        assert_eq!(set.next_absent(0), Some(5));
        assert_eq!(set.next_absent(6), Some(10));
    }

    #[test]
    fn extremes_do_not_overflow() {
        let mut set = RangeSet::new();
        set.insert_range(u128::MAX - 1, u128::MAX);
        assert_eq!(set.next_absent(u128::MAX), None);
        set.insert_range(0, u128::MAX);
        assert_eq!(set.len(), u128::MAX);
        assert!(set.remove(7));
        assert_eq!(set.next_absent(0), Some(7));
    }

    #[test]
    fn first_free_honours_all_sets_and_skip() {
        let mut a = RangeSet::new();
        a.insert_range(0, 3);
        let mut b = RangeSet::new();
        b.insert_range(4, 6);
        assert_eq!(first_free(0, 100, &[&a, &b], |_| false), Some(7));
        assert_eq!(first_free(0, 100, &[&a, &b], |v| v == 7), Some(8));
        assert_eq!(first_free(0, 6, &[&a, &b], |_| false), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn behaves_like_a_btreeset(ops in prop::collection::vec((any::<bool>(), 0u128..64, 0u128..8), 1..80)) {
            let mut set = RangeSet::new();
            let mut model = BTreeSet::new();
            for (add, start, width) in ops {
                if add {
                    set.insert_range(start, start + width);
                    model.extend(start..=start + width);
                } else {
                    prop_assert_eq!(set.remove(start), model.remove(&start));
                }
                prop_assert_eq!(set.len(), model.len() as u128);
                for v in 0u128..80 {
                    prop_assert_eq!(set.contains(v), model.contains(&v));
                    let expected = (v..).find(|x| !model.contains(x));
                    prop_assert_eq!(set.next_absent(v), expected);
                }
                // Ranges stay disjoint and non-adjacent.
                let mut previous_end: Option<u128> = None;
                for (start, end) in &set.ranges {
                    prop_assert!(start <= end);
                    if let Some(p) = previous_end {
                        prop_assert!(*start > p + 1);
                    }
                    previous_end = Some(*end);
                }
            }
        }
    }
}
