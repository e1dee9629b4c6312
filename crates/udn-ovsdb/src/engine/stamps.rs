//! Ownership stamps in `external_ids`: what the engine writes on every row it creates, and
//! how it recognises its own rows.

use crate::protocol::{Atom, Row, Value};

/// The controller that owns a row.
pub const OWNER_CONTROLLER_KEY: &str = "k8s.ovn.org/owner-controller";
/// The owner type of the unit that owns a row.
pub const OWNER_TYPE_KEY: &str = "k8s.ovn.org/owner-type";
/// The name of the unit that owns a row.
pub const OWNER_KEY: &str = "k8s.ovn.org/owner";
/// The row id, unique per controller and table.
pub const ID_KEY: &str = "k8s.ovn.org/id";

/// The `external_ids` keys the engine looks rows up by; a replica serving the engine should
/// index them (the controller key lets a plan find its units no longer desired among its
/// own rows).
pub const INDEXED_KEYS: [&str; 4] = [OWNER_CONTROLLER_KEY, OWNER_TYPE_KEY, OWNER_KEY, ID_KEY];

/// The column holding the stamps.
pub(crate) const EXTERNAL_IDS: &str = "external_ids";

/// Whether `key` is one of the engine's stamp keys (callers may not set them).
pub(crate) fn is_stamp_key(key: &str) -> bool {
    matches!(
        key,
        OWNER_CONTROLLER_KEY | OWNER_TYPE_KEY | OWNER_KEY | ID_KEY
    )
}

/// The ownership a row's stamps claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamps<'r> {
    /// `k8s.ovn.org/owner-type`.
    pub(crate) owner_type: Option<&'r str>,
    /// `k8s.ovn.org/owner`.
    pub(crate) owner: Option<&'r str>,
    /// `k8s.ovn.org/id`.
    pub(crate) id: Option<&'r str>,
}

/// The stamps of `row` when `controller` owns it (one pass over `external_ids`).
pub(crate) fn owned_by<'r>(row: &'r Row, controller: &str) -> Option<Stamps<'r>> {
    let Some(Value::Map(pairs)) = row.get(EXTERNAL_IDS) else {
        return None;
    };
    let mut stamps = Stamps {
        owner_type: None,
        owner: None,
        id: None,
    };
    let mut ours = false;
    for (key, value) in pairs {
        let (Atom::String(key), Atom::String(value)) = (key, value) else {
            continue;
        };
        match key.as_str() {
            OWNER_CONTROLLER_KEY if value != controller => return None,
            OWNER_CONTROLLER_KEY => ours = true,
            OWNER_TYPE_KEY => stamps.owner_type = Some(value),
            OWNER_KEY => stamps.owner = Some(value),
            ID_KEY => stamps.id = Some(value),
            _ => {}
        }
    }
    ours.then_some(stamps)
}

/// The stamps of one row the engine writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamp<'a> {
    pub(crate) controller: &'a str,
    pub(crate) owner_type: &'a str,
    pub(crate) owner: &'a str,
    pub(crate) id: &'a str,
}

impl Stamp<'_> {
    /// The stamp pairs, sorted by key.
    fn pairs(&self) -> [(&str, &str); 4] {
        [
            (ID_KEY, self.id),
            (OWNER_KEY, self.owner),
            (OWNER_CONTROLLER_KEY, self.controller),
            (OWNER_TYPE_KEY, self.owner_type),
        ]
    }

    /// Adds the stamps to `external_ids` of `columns` (created when absent), keeping the map
    /// canonical. The caller's map holds no stamp keys (checked when planning).
    pub(crate) fn apply(&self, columns: &mut Row) {
        let external_ids = columns
            .entry(EXTERNAL_IDS.to_owned())
            .or_insert_with(|| Value::Map(Vec::new()));
        if let Value::Map(pairs) = external_ids {
            for (key, value) in self.pairs() {
                let at = pairs.partition_point(|(k, _)| match k {
                    Atom::String(k) => k.as_str() < key,
                    _ => true,
                });
                pairs.insert(
                    at,
                    (Atom::String(key.to_owned()), Atom::String(value.to_owned())),
                );
            }
        }
    }

    /// Whether `have` (a canonical `external_ids` value) is exactly `caller` (canonical
    /// pairs without stamp keys) plus these stamps; compares without building the map.
    pub(crate) fn holds(&self, have: Option<&Value>, caller: &[(Atom, Atom)]) -> bool {
        let Some(Value::Map(have)) = have else {
            return false;
        };
        if have.len() != caller.len() + 4 {
            return false;
        }
        let mut caller = caller.iter().peekable();
        let mut stamps = self.pairs().into_iter().peekable();
        have.iter().all(|(k, v)| {
            let (Atom::String(k), Atom::String(v)) = (k, v) else {
                return false;
            };
            let from_caller = match (caller.peek(), stamps.peek()) {
                (Some((Atom::String(ck), _)), Some((sk, _))) => ck.as_str() < *sk,
                (Some(_), None) => true,
                _ => false,
            };
            if from_caller {
                matches!(caller.next(), Some((Atom::String(ck), Atom::String(cv))) if ck == k && cv == v)
            } else {
                matches!(stamps.next(), Some((sk, sv)) if sk == k && sv == v)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Atom {
        Atom::String(text.to_owned())
    }

    #[test]
    fn stamps_keep_the_map_sorted_and_are_read_back() {
        let caller = vec![
            (s("k8s.ovn.org/network"), s("net1")),
            (s("k8s.ovn.org/topology"), s("layer3")),
            (s("zzz"), s("last")),
        ];
        let stamp = Stamp {
            controller: "ctl",
            owner_type: "Network",
            owner: "net1",
            id: "net1_switch",
        };
        let mut row = Row::from([(EXTERNAL_IDS.to_owned(), Value::Map(caller.clone()))]);
        stamp.apply(&mut row);
        let Some(Value::Map(pairs)) = row.get(EXTERNAL_IDS) else {
            panic!("no map")
        };
        let keys: Vec<&Atom> = pairs.iter().map(|(k, _)| k).collect();
        let mut sorted = keys.clone();
        sorted.sort_by(|a, b| crate::schema::atom_cmp(a, b));
        assert_eq!(keys, sorted);
        assert_eq!(keys.len(), 7);
        assert!(stamp.holds(row.get(EXTERNAL_IDS), &caller));
        assert!(!stamp.holds(row.get(EXTERNAL_IDS), &caller[..2]));
        let other = Stamp { id: "x", ..stamp };
        assert!(!other.holds(row.get(EXTERNAL_IDS), &caller));
        assert!(!stamp.holds(None, &[]));
        assert_eq!(
            owned_by(&row, "ctl"),
            Some(Stamps {
                owner_type: Some("Network"),
                owner: Some("net1"),
                id: Some("net1_switch"),
            })
        );
        assert_eq!(owned_by(&row, "other"), None);
        assert!(is_stamp_key(ID_KEY) && !is_stamp_key("k8s.ovn.org/network"));
        // Stamps alone (no caller keys).
        let mut bare = Row::new();
        stamp.apply(&mut bare);
        assert!(stamp.holds(bare.get(EXTERNAL_IDS), &[]));
    }
}
