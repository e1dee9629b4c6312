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
/// index them.
pub const INDEXED_KEYS: [&str; 3] = [OWNER_TYPE_KEY, OWNER_KEY, ID_KEY];

/// The column holding the stamps.
pub(crate) const EXTERNAL_IDS: &str = "external_ids";

/// Whether `key` is one of the engine's stamp keys (callers may not set them).
pub(crate) fn is_stamp_key(key: &str) -> bool {
    matches!(
        key,
        OWNER_CONTROLLER_KEY | OWNER_TYPE_KEY | OWNER_KEY | ID_KEY
    )
}

/// The value of `key` in a row's `external_ids` (canonical map: sorted by key).
pub(crate) fn external_id<'r>(row: &'r Row, key: &str) -> Option<&'r str> {
    let Some(Value::Map(pairs)) = row.get(EXTERNAL_IDS) else {
        return None;
    };
    let index = pairs
        .binary_search_by(|(k, _)| match k {
            Atom::String(k) => k.as_str().cmp(key),
            // Canonical maps of strings only hold strings; other atoms sort apart.
            _ => std::cmp::Ordering::Less,
        })
        .ok()?;
    match pairs.get(index) {
        Some((_, Atom::String(v))) => Some(v.as_str()),
        _ => None,
    }
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

/// The stamps of `row` when `controller` owns it.
pub(crate) fn owned_by<'r>(row: &'r Row, controller: &str) -> Option<Stamps<'r>> {
    (external_id(row, OWNER_CONTROLLER_KEY)? == controller).then(|| Stamps {
        owner_type: external_id(row, OWNER_TYPE_KEY),
        owner: external_id(row, OWNER_KEY),
        id: external_id(row, ID_KEY),
    })
}

/// Adds the four stamps to a canonical string map (sorted by key, no stamp keys present),
/// keeping it canonical.
pub(crate) fn stamp(
    pairs: &mut Vec<(Atom, Atom)>,
    controller: &str,
    owner_type: &str,
    owner: &str,
    id: &str,
) {
    for (key, value) in [
        (OWNER_CONTROLLER_KEY, controller),
        (OWNER_TYPE_KEY, owner_type),
        (OWNER_KEY, owner),
        (ID_KEY, id),
    ] {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Atom {
        Atom::String(text.to_owned())
    }

    #[test]
    fn stamps_keep_the_map_sorted_and_are_read_back() {
        let mut pairs = vec![
            (s("k8s.ovn.org/network"), s("net1")),
            (s("k8s.ovn.org/topology"), s("layer3")),
            (s("zzz"), s("last")),
        ];
        stamp(&mut pairs, "ctl", "Network", "net1", "net1_switch");
        let keys: Vec<&Atom> = pairs.iter().map(|(k, _)| k).collect();
        let mut sorted = keys.clone();
        sorted.sort_by(|a, b| crate::schema::atom_cmp(a, b));
        assert_eq!(keys, sorted);
        let row = Row::from([(EXTERNAL_IDS.to_owned(), Value::Map(pairs))]);
        assert_eq!(external_id(&row, "zzz"), Some("last"));
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
    }
}
