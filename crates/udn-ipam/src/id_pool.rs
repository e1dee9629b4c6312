//! The round-robin ID bitmap upstream uses for network IDs, tunnel keys and pod tunnel IDs
//! (`allocator/bitmap` with `roundRobinScanStrategy`, `allocator/id`), and the name -> ID
//! bookkeeping on top of it.

use std::collections::BTreeMap;

use crate::range_set::{RangeSet, first_free};

/// Errors of the named ID allocators (network IDs, pod tunnel IDs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Every ID of the pool is taken.
    #[error("failed to allocate the id for the resource {name}: all {size} {pool} ids are in use")]
    Exhausted {
        /// Which pool ("network", "pod tunnel").
        pool: &'static str,
        /// The resource that asked.
        name: String,
        /// Pool size.
        size: u32,
    },
    /// The resource already holds another ID.
    #[error(
        "can't reserve id {requested} for the resource {name}. It is already allocated with a different id {existing}"
    )]
    NameHasDifferentId {
        /// The resource.
        name: String,
        /// The ID asked for.
        requested: u32,
        /// The ID it holds.
        existing: u32,
    },
    /// The ID belongs to another resource.
    #[error("id {id} is already reserved by another resource ({holder}), requested by {name}")]
    IdTaken {
        /// The ID asked for.
        id: u32,
        /// The resource that asked.
        name: String,
        /// The resource that holds it.
        holder: String,
    },
    /// The ID is outside the pool.
    #[error("can't reserve id {id} for the resource {name}: {pool} ids are 0..{size}")]
    OutOfRange {
        /// Which pool.
        pool: &'static str,
        /// The ID asked for.
        id: u32,
        /// The resource that asked.
        name: String,
        /// Pool size (IDs are `0..size`).
        size: u32,
    },
}

/// IDs `0..size` handed out round-robin: a scan starts just after the last ID handed out and
/// wraps; reserving a given ID does not move the cursor. Allocation only hands out IDs from
/// `floor` up; IDs below it can still be reserved (values kept from an older layout).
#[derive(Debug, Clone)]
pub(crate) struct RoundRobinPool {
    size: u32,
    floor: u32,
    used: RangeSet,
    next: u32,
}

impl RoundRobinPool {
    pub(crate) fn new(size: u32) -> Self {
        Self::with_floor(size, 0)
    }

    /// A pool of `0..size` whose allocations start at `floor`.
    pub(crate) fn with_floor(size: u32, floor: u32) -> Self {
        Self {
            size,
            floor,
            used: RangeSet::new(),
            next: floor,
        }
    }

    pub(crate) fn size(&self) -> u32 {
        self.size
    }

    /// Number of IDs taken.
    pub(crate) fn used(&self) -> u32 {
        u32::try_from(self.used.len()).unwrap_or(u32::MAX)
    }

    /// The next free ID from the cursor (wrapping), or `None` when all are taken.
    pub(crate) fn allocate_next(&mut self) -> Option<u32> {
        self.allocate_next_skipping(|_| false)
    }

    /// The next free ID from the cursor (wrapping) that `skip` does not reject.
    pub(crate) fn allocate_next_skipping(&mut self, skip: impl Fn(u32) -> bool) -> Option<u32> {
        let last = u128::from(self.size.checked_sub(1)?);
        let floor = u128::from(self.floor);
        let next = u128::from(self.next.max(self.floor));
        let skip = |value: u128| u32::try_from(value).map_or(true, &skip);
        let found = first_free(next, last, &[&self.used], skip).or_else(|| {
            next.checked_sub(1)
                .and_then(|hi| first_free(floor, hi, &[&self.used], skip))
        })?;
        let id = u32::try_from(found).ok()?;
        self.used.insert(found);
        self.next = if id + 1 >= self.size {
            self.floor
        } else {
            id + 1
        };
        Some(id)
    }

    /// Whether `id` is taken.
    #[cfg(test)]
    pub(crate) fn is_used(&self, id: u32) -> bool {
        self.used.contains(u128::from(id))
    }

    /// Takes `id`; false when it is taken or outside the pool.
    pub(crate) fn reserve(&mut self, id: u32) -> bool {
        id < self.size && self.used.insert(u128::from(id))
    }

    pub(crate) fn release(&mut self, id: u32) {
        self.used.remove(u128::from(id));
    }
}

/// A round-robin pool where each resource name holds at most one ID (upstream `idAllocator`).
#[derive(Debug, Clone)]
pub(crate) struct NamedIds {
    pool_name: &'static str,
    pool: RoundRobinPool,
    by_name: BTreeMap<String, u32>,
    by_id: BTreeMap<u32, String>,
}

impl NamedIds {
    pub(crate) fn new(pool_name: &'static str, size: u32) -> Self {
        Self {
            pool_name,
            pool: RoundRobinPool::new(size),
            by_name: BTreeMap::new(),
            by_id: BTreeMap::new(),
        }
    }

    pub(crate) fn size(&self) -> u32 {
        self.pool.size()
    }

    pub(crate) fn used(&self) -> u32 {
        self.pool.used()
    }

    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    pub(crate) fn name_of(&self, id: u32) -> Option<&str> {
        self.by_id.get(&id).map(String::as_str)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.by_name.iter().map(|(name, id)| (name.as_str(), *id))
    }

    /// The ID of `name`, allocating the next free one when it has none.
    pub(crate) fn allocate(&mut self, name: &str) -> Result<u32, IdError> {
        self.allocate_skipping(name, |_| false)
    }

    /// The ID of `name`, allocating the next free one that `skip` does not reject when it
    /// has none.
    pub(crate) fn allocate_skipping(
        &mut self,
        name: &str,
        skip: impl Fn(u32) -> bool,
    ) -> Result<u32, IdError> {
        if let Some(id) = self.get(name) {
            return Ok(id);
        }
        let id = self
            .pool
            .allocate_next_skipping(skip)
            .ok_or_else(|| IdError::Exhausted {
                pool: self.pool_name,
                name: name.to_owned(),
                size: self.pool.size(),
            })?;
        self.record(name, id);
        Ok(id)
    }

    /// Gives `id` to `name`; idempotent for the same pair.
    pub(crate) fn reserve(&mut self, name: &str, id: u32) -> Result<(), IdError> {
        if let Some(existing) = self.get(name) {
            if existing == id {
                return Ok(());
            }
            return Err(IdError::NameHasDifferentId {
                name: name.to_owned(),
                requested: id,
                existing,
            });
        }
        if id >= self.pool.size() {
            return Err(IdError::OutOfRange {
                pool: self.pool_name,
                id,
                name: name.to_owned(),
                size: self.pool.size(),
            });
        }
        if !self.pool.reserve(id) {
            return Err(IdError::IdTaken {
                id,
                name: name.to_owned(),
                holder: self.name_of(id).unwrap_or_default().to_owned(),
            });
        }
        self.record(name, id);
        Ok(())
    }

    /// Frees the ID of `name`, returning it.
    pub(crate) fn release(&mut self, name: &str) -> Option<u32> {
        let id = self.by_name.remove(name)?;
        self.by_id.remove(&id);
        self.pool.release(id);
        Some(id)
    }

    fn record(&mut self, name: &str, id: u32) {
        self.by_name.insert(name.to_owned(), id);
        self.by_id.insert(id, name.to_owned());
    }

    #[cfg(test)]
    pub(crate) fn is_used(&self, id: u32) -> bool {
        self.pool.is_used(id)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn round_robin_continues_after_the_last_allocation_and_wraps() {
        let mut pool = RoundRobinPool::new(4);
        assert_eq!(pool.allocate_next(), Some(0));
        assert_eq!(pool.allocate_next(), Some(1));
        pool.release(0);
        // 0 is free again but the scan starts after 1.
        assert_eq!(pool.allocate_next(), Some(2));
        assert_eq!(pool.allocate_next(), Some(3));
        assert_eq!(pool.allocate_next(), Some(0));
        assert_eq!(pool.allocate_next(), None);
        assert_eq!(pool.used(), 4);
    }

    #[test]
    fn reserve_does_not_move_the_cursor() {
        let mut pool = RoundRobinPool::new(8);
        assert!(pool.reserve(0));
        assert!(!pool.reserve(0));
        assert!(pool.reserve(5));
        assert!(!pool.reserve(8));
        assert_eq!(pool.allocate_next(), Some(1));
        assert_eq!(pool.allocate_next(), Some(2));
    }

    #[test]
    fn floor_bounds_allocation_not_reservation() {
        let mut pool = RoundRobinPool::with_floor(6, 3);
        assert!(pool.reserve(1));
        assert_eq!(pool.allocate_next(), Some(3));
        assert_eq!(pool.allocate_next(), Some(4));
        assert_eq!(pool.allocate_next(), Some(5));
        // Wraps to the floor, never below it.
        pool.release(3);
        assert_eq!(pool.allocate_next(), Some(3));
        assert_eq!(pool.allocate_next(), None);
        assert!(pool.is_used(1) && !pool.is_used(0));
    }

    #[test]
    fn skipped_ids_are_passed_over_and_stay_free() {
        let mut pool = RoundRobinPool::new(5);
        assert_eq!(pool.allocate_next_skipping(|id| id < 2), Some(2));
        assert_eq!(pool.allocate_next_skipping(|id| id == 3), Some(4));
        // Wraps past the skipped ones.
        assert_eq!(pool.allocate_next_skipping(|id| id == 0), Some(1));
        assert_eq!(pool.allocate_next_skipping(|_| true), None);
        assert_eq!(pool.used(), 3);
        // The skipped 3 was left free.
        assert_eq!(pool.allocate_next(), Some(3));
    }

    #[test]
    fn empty_pool_never_allocates() {
        let mut pool = RoundRobinPool::new(0);
        assert_eq!(pool.allocate_next(), None);
        assert!(!pool.reserve(0));
    }

    #[test]
    fn named_errors() {
        let mut ids = NamedIds::new("test", 3);
        ids.reserve("a", 1).unwrap();
        ids.reserve("a", 1).unwrap();
        assert_eq!(
            ids.reserve("a", 2).unwrap_err().to_string(),
            "can't reserve id 2 for the resource a. It is already allocated with a different id 1"
        );
        assert_eq!(
            ids.reserve("b", 1).unwrap_err().to_string(),
            "id 1 is already reserved by another resource (a), requested by b"
        );
        assert_eq!(
            ids.reserve("b", 3).unwrap_err().to_string(),
            "can't reserve id 3 for the resource b: test ids are 0..3"
        );
        assert_eq!(ids.allocate("b").unwrap(), 0);
        assert_eq!(ids.allocate("c").unwrap(), 2);
        assert_eq!(
            ids.allocate("d").unwrap_err().to_string(),
            "failed to allocate the id for the resource d: all 3 test ids are in use"
        );
        assert_eq!(ids.release("a"), Some(1));
        assert_eq!(ids.release("a"), None);
        assert_eq!(ids.allocate("d").unwrap(), 1);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Allocate(u8),
        Release(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u8..24).prop_map(Op::Allocate),
            1 => (0u8..24).prop_map(Op::Release),
        ]
    }

    fn check_unique(ids: &NamedIds) -> Result<(), TestCaseError> {
        let mut seen = BTreeSet::new();
        for (_, id) in ids.iter() {
            prop_assert!(id < ids.size());
            prop_assert!(seen.insert(id), "id {} handed out twice", id);
            prop_assert!(ids.is_used(id));
        }
        prop_assert_eq!(seen.len() as u32, ids.used());
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn named_ids_never_duplicate(size in 1u32..16, ops in prop::collection::vec(op(), 1..80)) {
            let mut ids = NamedIds::new("test", size);
            for op in ops {
                match op {
                    Op::Allocate(n) => {
                        let name = format!("n{n}");
                        let before = ids.get(&name);
                        match ids.allocate(&name) {
                            Ok(id) => {
                                if let Some(b) = before {
                                    prop_assert_eq!(b, id);
                                }
                            }
                            Err(IdError::Exhausted { .. }) => prop_assert_eq!(ids.used(), size),
                            Err(e) => prop_assert!(false, "unexpected error {}", e),
                        }
                    }
                    Op::Release(n) => {
                        ids.release(&format!("n{n}"));
                    }
                }
                check_unique(&ids)?;
            }
        }

        #[test]
        fn named_ids_restore_then_continue(
            size in 1u32..16,
            ops in prop::collection::vec(op(), 1..60),
            order in prop::collection::vec(any::<u64>(), 24),
            more in 0u8..24,
        ) {
            let mut ids = NamedIds::new("test", size);
            for op in ops {
                match op {
                    Op::Allocate(n) => { let _ = ids.allocate(&format!("n{n}")); }
                    Op::Release(n) => { ids.release(&format!("n{n}")); }
                }
            }
            let mut assigned: Vec<(String, u32)> =
                ids.iter().map(|(n, i)| (n.to_owned(), i)).collect();
            assigned.sort_by_key(|(name, _)| order[name[1..].parse::<usize>().unwrap_or(0) % 24]);
            let mut restored = NamedIds::new("test", size);
            for (name, id) in &assigned {
                restored.reserve(name, *id).unwrap();
            }
            let before: BTreeMap<String, u32> = assigned.into_iter().collect();
            for n in 0..more {
                let name = format!("x{n}");
                match restored.allocate(&name) {
                    Ok(id) => prop_assert!(!before.values().any(|v| *v == id)),
                    Err(IdError::Exhausted { .. }) => prop_assert_eq!(restored.used(), size),
                    Err(e) => prop_assert!(false, "unexpected error {}", e),
                }
                check_unique(&restored)?;
            }
        }
    }
}
