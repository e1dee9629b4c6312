//! update2 `modify` diff semantics on canonical values (ovsdb-server(7), "modify"): set
//! elements toggle; map pairs add, remove or replace by key; scalars are replaced.

use std::cmp::Ordering;

use crate::protocol::{Atom, Value};
use crate::schema::{ColumnType, SchemaError, atom_cmp};

/// The type a diff of `ty` is read with: diffs may have any number of elements (an optional
/// column changing from `x` to `y` sends the set `[x, y]`).
fn diff_type(ty: &ColumnType) -> ColumnType {
    ColumnType {
        min: 0,
        max: None,
        ..ty.clone()
    }
}

/// Applies the `modify` diff `diff` to the canonical value `old` of a column of type `ty`,
/// returning the new canonical value.
pub(crate) fn apply_diff(ty: &ColumnType, old: Value, diff: Value) -> Result<Value, SchemaError> {
    if ty.is_scalar() {
        return ty.normalize(diff);
    }
    let diff = diff_type(ty).normalize(diff)?;
    Ok(match (old, diff) {
        (Value::Map(old), Value::Map(diff)) => Value::Map(merge_map(old, diff)),
        (Value::Set(old), Value::Set(diff)) => Value::Set(toggle_set(old, diff)),
        // `old` is canonical for `ty`, so it has the same shape as the normalized diff; a
        // mismatch means the stored value was not canonical: take the diff's shape.
        (_, diff) => diff,
    })
}

/// Symmetric difference of two sorted, deduplicated atom lists.
fn toggle_set(old: Vec<Atom>, diff: Vec<Atom>) -> Vec<Atom> {
    let mut out = Vec::with_capacity(old.len() + diff.len());
    let mut old = old.into_iter().peekable();
    let mut diff = diff.into_iter().peekable();
    loop {
        let order = match (old.peek(), diff.peek()) {
            (Some(a), Some(b)) => atom_cmp(a, b),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => break,
        };
        match order {
            Ordering::Less => out.extend(old.next()),
            Ordering::Greater => out.extend(diff.next()),
            Ordering::Equal => {
                old.next();
                diff.next();
            }
        }
    }
    out
}

/// Map diff on two key-sorted pair lists: a key only in `diff` is added; a pair equal to the
/// existing pair is removed; another value for an existing key replaces it.
fn merge_map(old: Vec<(Atom, Atom)>, diff: Vec<(Atom, Atom)>) -> Vec<(Atom, Atom)> {
    let mut out = Vec::with_capacity(old.len() + diff.len());
    let mut old = old.into_iter().peekable();
    let mut diff = diff.into_iter().peekable();
    loop {
        let order = match (old.peek(), diff.peek()) {
            (Some(a), Some(b)) => atom_cmp(&a.0, &b.0),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => break,
        };
        match order {
            Ordering::Less => out.extend(old.next()),
            Ordering::Greater => out.extend(diff.next()),
            Ordering::Equal => {
                if let (Some(existing), Some(change)) = (old.next(), diff.next())
                    && atom_cmp(&existing.1, &change.1) != Ordering::Equal
                {
                    out.push(change);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::schema::{AtomicType, BaseType, RefType};

    fn base(atomic: AtomicType) -> BaseType {
        BaseType {
            atomic,
            ref_table: None,
            ref_type: RefType::Strong,
            enum_values: None,
        }
    }

    fn ty(value: Option<AtomicType>, min: u64, max: Option<u64>) -> ColumnType {
        ColumnType {
            key: base(AtomicType::String),
            value: value.map(base),
            min,
            max,
        }
    }

    fn s(text: &str) -> Atom {
        Atom::String(text.to_owned())
    }

    fn set(items: &[&str]) -> Value {
        Value::Set(items.iter().map(|i| s(i)).collect())
    }

    fn map(pairs: &[(&str, &str)]) -> Value {
        Value::Map(pairs.iter().map(|(k, v)| (s(k), s(v))).collect())
    }

    #[test]
    fn sets_toggle_elements() {
        let t = ty(None, 0, None);
        let out = apply_diff(&t, set(&["a", "c", "e"]), set(&["e", "b", "a"])).unwrap();
        assert_eq!(out, set(&["b", "c"]));
        // A bare atom is a one-element diff.
        let out = apply_diff(&t, set(&["a"]), Value::Atom(s("z"))).unwrap();
        assert_eq!(out, set(&["a", "z"]));
    }

    #[test]
    fn optional_value_change_is_a_two_element_diff() {
        let t = ty(None, 0, Some(1));
        assert_eq!(
            apply_diff(&t, set(&["x"]), set(&["x", "y"])).unwrap(),
            set(&["y"])
        );
        assert_eq!(apply_diff(&t, set(&["x"]), set(&["x"])).unwrap(), set(&[]));
    }

    #[test]
    fn maps_add_remove_replace() {
        let t = ty(Some(AtomicType::String), 0, None);
        let old = map(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let diff = map(&[("a", "1"), ("b", "9"), ("d", "4")]);
        assert_eq!(
            apply_diff(&t, old, diff).unwrap(),
            map(&[("b", "9"), ("c", "3"), ("d", "4")])
        );
    }

    #[test]
    fn scalars_are_replaced_and_checked() {
        let t = ColumnType {
            key: base(AtomicType::Real),
            value: None,
            min: 1,
            max: Some(1),
        };
        assert_eq!(
            apply_diff(
                &t,
                Value::Atom(Atom::Real(1.0)),
                Value::Atom(Atom::Integer(2))
            )
            .unwrap(),
            Value::Atom(Atom::Real(2.0))
        );
        assert!(apply_diff(&t, Value::Atom(Atom::Real(1.0)), Value::Atom(s("x"))).is_err());
    }
}
