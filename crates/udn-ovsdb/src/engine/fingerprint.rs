//! A unit's fingerprint: a keyed 128-bit hash of everything the planner reads from a desired
//! unit, as given: its key, and every row's table, id, row owner type, columns with their
//! values (reals by their bits) and reference targets, plus the controller. Everything is streamed as 64-bit
//! words (strings length-prefixed, values tagged, so that different contents do not run
//! into each other); each word, bound to its position, goes through a folded 64x64->128-bit
//! multiplication with keys random per engine, into two 64-bit lanes. The multiplications
//! are independent of each other (only a rotate and an xor chain the words), so hashing
//! runs at the speed of reading the unit's rows; nothing is allocated. SipHash, fed the same
//! many small pieces, took about twice as long.

use std::hash::{BuildHasher, RandomState};

use super::desired::{DesiredUnit, RowRef};
use crate::protocol::{Atom, Row, Value};

/// The keys of an engine's fingerprints (random, odd multipliers).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FingerprintKeys([u64; 4]);

impl Default for FingerprintKeys {
    fn default() -> Self {
        let random = RandomState::new();
        Self([0u64, 1, 2, 3].map(|i| random.hash_one(i) | 1))
    }
}

/// The streaming state: two lanes and the position key of the next word.
struct Lanes {
    a: u64,
    b: u64,
    position: u64,
    keys: [u64; 4],
}

fn fold(x: u64, k: u64) -> u64 {
    let product = u128::from(x) * u128::from(k);
    // Truncation intended: the low and high halves are folded together.
    #[allow(clippy::cast_possible_truncation)]
    let (low, high) = (product as u64, (product >> 64) as u64);
    low ^ high
}

impl Lanes {
    #[inline]
    fn word(&mut self, w: u64) {
        let [k0, k1, _, k3] = self.keys;
        // Distinct for every position (k3 is odd): equal words in other places differ.
        self.position = self.position.wrapping_add(k3);
        self.a = self.a.rotate_left(23) ^ fold(w ^ self.position, k0);
        self.b = self.b.rotate_left(41) ^ fold(w.wrapping_add(self.position), k1);
    }

    /// A tag and a length in one word.
    #[inline]
    fn tagged(&mut self, tag: u8, len: usize) {
        self.word((u64::from(tag) << 56) ^ len as u64);
    }

    fn text(&mut self, text: &str) {
        let bytes = text.as_bytes();
        self.word(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.word(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            if let Some(head) = word.get_mut(..rest.len()) {
                head.copy_from_slice(rest);
            }
            self.word(u64::from_le_bytes(word));
        }
    }

    fn uuid(&mut self, bits: u128) {
        // Truncation intended: the two halves.
        #[allow(clippy::cast_possible_truncation)]
        let (low, high) = (bits as u64, (bits >> 64) as u64);
        self.word(low);
        self.word(high);
    }

    fn columns(&mut self, columns: &Row) {
        self.tagged(0, columns.len());
        for (column, value) in columns {
            self.text(column);
            match value {
                Value::Atom(a) => {
                    self.tagged(1, 1);
                    self.atom(a);
                }
                Value::Set(atoms) => {
                    self.tagged(2, atoms.len());
                    atoms.iter().for_each(|a| self.atom(a));
                }
                Value::Map(pairs) => {
                    self.tagged(3, pairs.len());
                    for (k, v) in pairs {
                        self.atom(k);
                        self.atom(v);
                    }
                }
            }
        }
    }

    fn atom(&mut self, atom: &Atom) {
        match atom {
            Atom::Integer(i) => {
                self.tagged(4, 0);
                self.word(u64::from_ne_bytes(i.to_ne_bytes()));
            }
            Atom::Real(r) => {
                self.tagged(5, 0);
                self.word(r.to_bits());
            }
            Atom::Boolean(b) => self.tagged(6, usize::from(*b)),
            Atom::String(s) => {
                self.tagged(7, 0);
                self.text(s);
            }
            Atom::Uuid(u) => {
                self.tagged(8, 0);
                self.uuid(u.as_u128());
            }
            Atom::NamedUuid(n) => {
                self.tagged(9, 0);
                self.text(n);
            }
        }
    }

    /// Both lanes mixed once more, with each other.
    fn finish(self) -> u128 {
        let [k0, k1, k2, _] = self.keys;
        let a = fold(self.a ^ k2, k1);
        let b = fold(self.b ^ a, k0);
        (u128::from(a) << 64) | u128::from(b)
    }
}

/// The fingerprint of `unit` as planned by `controller`, hashed with `keys`.
pub(crate) fn fingerprint(keys: &FingerprintKeys, controller: &str, unit: &DesiredUnit) -> u128 {
    let mut h = Lanes {
        a: keys.0[2],
        b: keys.0[1],
        position: 0,
        keys: keys.0,
    };
    h.text(controller);
    h.text(&unit.key.owner_type);
    h.text(&unit.key.name);
    h.tagged(10, unit.rows.len());
    for row in &unit.rows {
        h.text(&row.table);
        h.text(&row.id);
        match &row.owner_type {
            Some(owner_type) => {
                h.tagged(15, 1);
                h.text(owner_type);
            }
            None => h.tagged(15, 0),
        }
        h.columns(&row.columns);
        h.tagged(11, row.refs.len());
        for (column, targets) in &row.refs {
            h.text(column);
            h.tagged(12, targets.len());
            for target in targets {
                match target {
                    RowRef::Desired { table, id } => {
                        h.tagged(13, 0);
                        h.text(table);
                        h.text(id);
                    }
                    // The same row either way: a unit planned while the row was ahead is
                    // converged once it exists.
                    RowRef::Existing(uuid) | RowRef::Ahead(uuid) => {
                        h.tagged(14, 0);
                        h.uuid(uuid.as_u128());
                    }
                }
            }
        }
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{DesiredRow, UnitKey};
    use crate::protocol::Uuid;

    fn unit(edit: impl FnOnce(DesiredRow) -> DesiredRow) -> DesiredUnit {
        let row = DesiredRow::new("Logical_Switch", "net1_node0")
            .string("name", "net1_node0")
            .value("x", Value::Atom(Atom::Real(1.5)))
            .map("external_ids", [("a", "b")])
            .refs("ports", [RowRef::desired("Logical_Switch_Port", "p1")]);
        DesiredUnit::new(UnitKey::new("Network", "net1")).row(edit(row))
    }

    #[test]
    fn any_change_of_content_changes_the_fingerprint() {
        let keys = FingerprintKeys::default();
        let base = fingerprint(&keys, "ctl", &unit(|r| r));
        assert_eq!(base, fingerprint(&keys, "ctl", &unit(|r| r)));
        let changed = [
            fingerprint(&keys, "other", &unit(|r| r)),
            fingerprint(&keys, "ctl", &unit(|r| r.string("name", "net1_node1"))),
            fingerprint(
                &keys,
                "ctl",
                &unit(|r| r.value("x", Value::Atom(Atom::Real(1.25)))),
            ),
            fingerprint(
                &keys,
                "ctl",
                &unit(|r| r.value("x", Value::Atom(Atom::Integer(1)))),
            ),
            fingerprint(&keys, "ctl", &unit(|r| r.map("external_ids", [("a", "c")]))),
            fingerprint(&keys, "ctl", &unit(|r| r.map("external_ids", [("ab", "")]))),
            fingerprint(
                &keys,
                "ctl",
                &unit(|r| r.refs("ports", [RowRef::desired("Logical_Switch_Port", "p2")])),
            ),
            fingerprint(
                &keys,
                "ctl",
                &unit(|r| r.refs("ports", [RowRef::Existing(Uuid::from_u128(7))])),
            ),
            fingerprint(&keys, "ctl", &unit(|r| r.refs("ports", []))),
            fingerprint(
                &keys,
                "ctl",
                &unit(|mut r| {
                    r.id = "net1_node0x".into();
                    r
                }),
            ),
            fingerprint(&keys, "ctl", &unit(|r| r).row(DesiredRow::new("ACL", "a"))),
            fingerprint(&keys, "ctl", &unit(|r| r.owner_type("NetpolNode"))),
            fingerprint(&keys, "ctl", &unit(|r| r.owner_type("Network"))),
        ];
        for (i, other) in changed.iter().enumerate() {
            assert_ne!(base, *other, "variant {i}");
        }
        let mut renamed = unit(|r| r);
        renamed.key.name = "net2".into();
        assert_ne!(base, fingerprint(&keys, "ctl", &renamed));
        // The same pieces in other places.
        let row = |id: &str, name: &str| DesiredRow::new("ACL", id).string("name", name);
        let key = UnitKey::new("Network", "net1");
        let pair = |a, b| DesiredUnit::new(key.clone()).row(a).row(b);
        let ab = fingerprint(&keys, "ctl", &pair(row("a", "b"), row("b", "a")));
        assert_ne!(
            ab,
            fingerprint(&keys, "ctl", &pair(row("b", "a"), row("a", "b")))
        );
        assert_ne!(
            ab,
            fingerprint(&keys, "ctl", &pair(row("a", "a"), row("b", "b")))
        );
        // Another engine's keys give other fingerprints.
        assert_ne!(
            base,
            fingerprint(&FingerprintKeys::default(), "ctl", &unit(|r| r))
        );
    }
}
