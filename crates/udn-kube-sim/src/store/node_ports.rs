//! Service node ports: the default range (`--service-node-port-range` 30000-32767), which
//! ports the stored Services hold, and one create's or update's allocations on top of
//! that, as kube-apiserver's `portallocator` and its `PortAllocationOperation`.
//!
//! The "held" set is an index the state keeps on every stored write (insert, replace,
//! remove, snapshot restore), so a freed port is free again as soon as the Service that
//! held it is deleted or stored without it, with no bitmap to repair. Allocation is
//! deterministic where the real allocator is random: the lowest free port above the
//! static band, then the lowest free port in the band.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// First port of the range.
pub(super) const FIRST: i64 = 30000;
/// Last port of the range.
pub(super) const LAST: i64 = 32767;

/// Size of the static band at the bottom of the range (KEP-3668, GA in 1.29): dynamic
/// allocation takes these only once the rest of the range is used, leaving them to users
/// who pick their own node port. `min(max(16, size / 32), 128)`, 86 for the default range.
const fn static_band() -> i64 {
    let step = (LAST - FIRST + 1) / 32;
    if step < 16 {
        16
    } else if step > 128 {
        128
    } else {
        step
    }
}

/// Last port of the static band.
const BAND_LAST: i64 = FIRST + static_band() - 1;

/// Why a port could not be allocated; the texts are the allocator's errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum NodePortError {
    /// `ErrNotInRange`.
    #[error("provided port is not in the valid range. The range of valid ports is {FIRST}-{LAST}")]
    NotInRange,
    /// `ErrAllocated`.
    #[error("provided port is already allocated")]
    Allocated,
    /// `ErrFull`.
    #[error("range is full")]
    Full,
}

/// The node ports a stored Service holds: every port's `nodePort` and its
/// `healthCheckNodePort` (zero or absent is none), each once.
pub(super) fn held_by(service: &Value) -> BTreeSet<i64> {
    let mut held: BTreeSet<i64> = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|port| number(port.get("nodePort")))
        .collect();
    held.insert(number(service.pointer("/spec/healthCheckNodePort")));
    held.remove(&0);
    held
}

/// An integer field, 0 when absent, null or not an integer (Go's zero value).
pub(super) fn number(value: Option<&Value>) -> i64 {
    value.and_then(Value::as_i64).unwrap_or(0)
}

/// How many stored Services hold each node port. A count rather than an owner because a
/// snapshot may bring two Services holding the same port; the port is free once neither
/// does.
#[derive(Debug, Default)]
pub(super) struct NodePortIndex {
    holders: BTreeMap<i64, usize>,
}

impl NodePortIndex {
    /// A Service was stored.
    pub(super) fn add(&mut self, service: &Value) {
        for port in held_by(service) {
            *self.holders.entry(port).or_default() += 1;
        }
    }

    /// A stored Service went (or is about to be replaced).
    pub(super) fn remove(&mut self, service: &Value) {
        for port in held_by(service) {
            if let Some(count) = self.holders.get_mut(&port) {
                *count -= 1;
                if *count == 0 {
                    self.holders.remove(&port);
                }
            }
        }
    }

    /// Whether a stored Service holds the port.
    pub(super) fn is_held(&self, port: i64) -> bool {
        self.holders.contains_key(&port)
    }
}

/// The allocations of one create or update: checked against the stored Services and
/// against each other. Nothing is written to the index; the stored result is.
#[derive(Debug)]
pub(super) struct NodePortOp<'a> {
    index: &'a NodePortIndex,
    taken: BTreeSet<i64>,
}

impl<'a> NodePortOp<'a> {
    pub(super) fn new(index: &'a NodePortIndex) -> Self {
        Self {
            index,
            taken: BTreeSet::new(),
        }
    }

    fn is_free(&self, port: i64) -> bool {
        !self.index.is_held(port) && !self.taken.contains(&port)
    }

    /// Take a port the user asked for.
    pub(super) fn allocate(&mut self, port: i64) -> Result<(), NodePortError> {
        if !(FIRST..=LAST).contains(&port) {
            return Err(NodePortError::NotInRange);
        }
        if !self.is_free(port) {
            return Err(NodePortError::Allocated);
        }
        self.taken.insert(port);
        Ok(())
    }

    /// Take the lowest free port above the static band, else the lowest free one in it.
    pub(super) fn allocate_next(&mut self) -> Result<i64, NodePortError> {
        let port = (BAND_LAST + 1..=LAST)
            .chain(FIRST..=BAND_LAST)
            .find(|port| self.is_free(*port))
            .ok_or(NodePortError::Full)?;
        self.taken.insert(port);
        Ok(port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_static_band_is_the_lowest_86_ports() {
        assert_eq!(BAND_LAST, 30085);
    }

    #[test]
    fn dynamic_ports_start_above_the_band_and_skip_held_ones() {
        let mut index = NodePortIndex::default();
        index.add(&json!({"spec": {"ports": [{"nodePort": 30086}, {"nodePort": 30088}]}}));
        let mut op = NodePortOp::new(&index);
        assert_eq!(op.allocate_next(), Ok(30087));
        assert_eq!(op.allocate_next(), Ok(30089));
        assert_eq!(op.allocate(30087), Err(NodePortError::Allocated));
        assert_eq!(op.allocate(30088), Err(NodePortError::Allocated));
        assert_eq!(op.allocate(30000), Ok(()));
        assert_eq!(op.allocate(29999), Err(NodePortError::NotInRange));
        assert_eq!(op.allocate(32768), Err(NodePortError::NotInRange));
    }

    #[test]
    fn the_band_is_used_last_and_a_full_range_says_so() {
        let mut index = NodePortIndex::default();
        let above: Vec<Value> = (BAND_LAST + 1..=LAST)
            .map(|port| json!({"nodePort": port}))
            .collect();
        index.add(&json!({"spec": {"ports": above, "healthCheckNodePort": 30000}}));
        let mut op = NodePortOp::new(&index);
        assert_eq!(op.allocate_next(), Ok(30001));
        for _ in 30002..=BAND_LAST {
            assert!(op.allocate_next().is_ok());
        }
        assert_eq!(op.allocate_next(), Err(NodePortError::Full));
        assert_eq!(NodePortError::Full.to_string(), "range is full");
    }

    #[test]
    fn ports_are_free_once_every_holder_is_gone() {
        let service = json!({"spec": {"ports": [{"nodePort": 30100}, {"nodePort": 30100}]}});
        let mut index = NodePortIndex::default();
        index.add(&service);
        index.add(&service);
        index.remove(&service);
        assert!(index.is_held(30100));
        index.remove(&service);
        assert!(!index.is_held(30100));
        assert_eq!(
            NodePortError::NotInRange.to_string(),
            "provided port is not in the valid range. The range of valid ports is 30000-32767"
        );
    }
}
