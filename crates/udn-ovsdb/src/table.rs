//! What every typed table offers ([`Table`]: implemented by the generated structs of
//! [`crate::nb`], [`crate::sb`] and [`crate::vswitch`]), the error of reading a row into one
//! ([`RowError`]), and the conversions between Rust field types and OVSDB values that the
//! generated code calls.
//!
//! Writing gives the canonical form of each column (what `ColumnType::normalize` produces):
//! scalars as [`Value::Atom`], optional values and sets as sorted, duplicate-free
//! [`Value::Set`]s, maps as [`Value::Map`]s sorted by key. Reading accepts what a server may
//! send for a column type (a bare atom for a one-element set, an empty set for an empty map,
//! integers in real columns); a missing column reads as the RFC 7047 default.

use std::cmp::Ordering;

use crate::protocol::{Atom, Row, Uuid, Value};
use crate::schema::atom_cmp;

/// A typed row of one table of a vendored schema, convertible to and from a [`Row`].
/// (`nb::NbTable` is this trait under its older name.)
pub trait Table: Sized {
    /// The database the table belongs to (`OVN_Northbound`, `OVN_Southbound`,
    /// `Open_vSwitch`).
    const DATABASE: &'static str;
    /// The table name, as the schema spells it.
    const TABLE: &'static str;
    /// Every column of the table in the vendored schema, sorted.
    const COLUMNS: &'static [&'static str];

    /// The row's `_uuid`, when it came from the server.
    fn uuid(&self) -> Option<Uuid>;

    /// Every column in canonical form (equal to `ColumnType::normalize` of each column).
    fn to_row(&self) -> Row;

    /// Reads a row. Missing columns take the RFC 7047 default (0, 0.0, false, "", empty set
    /// or map); columns the vendored schema does not know (newer servers) are ignored.
    fn from_row(uuid: Option<Uuid>, row: &Row) -> Result<Self, RowError>;
}

/// A row column whose value does not fit the column's Rust type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read column {table}.{column}: {reason}")]
pub struct RowError {
    /// The table.
    pub table: &'static str,
    /// The column.
    pub column: &'static str,
    /// What is wrong, e.g. `expected a string, got 5`.
    pub reason: String,
}

/// A Rust type holding one atom of a column: `i64`, `f64`, `bool`, `String` or [`Uuid`].
pub(crate) trait ColumnAtom: Sized {
    /// What the type reads, for messages: `a string`.
    const EXPECTED: &'static str;

    /// The atom.
    fn to_atom(&self) -> Atom;

    /// The value of `atom`, when it has this type.
    fn from_atom(atom: &Atom) -> Option<Self>;
}

impl ColumnAtom for i64 {
    const EXPECTED: &'static str = "an integer";

    fn to_atom(&self) -> Atom {
        Atom::Integer(*self)
    }

    fn from_atom(atom: &Atom) -> Option<Self> {
        match atom {
            Atom::Integer(i) => Some(*i),
            _ => None,
        }
    }
}

impl ColumnAtom for f64 {
    const EXPECTED: &'static str = "a real";

    fn to_atom(&self) -> Atom {
        Atom::Real(*self)
    }

    fn from_atom(atom: &Atom) -> Option<Self> {
        match atom {
            Atom::Real(r) => Some(*r),
            // JSON does not tell 1 from 1.0: integers are reals in real columns.
            #[allow(clippy::cast_precision_loss)]
            Atom::Integer(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl ColumnAtom for bool {
    const EXPECTED: &'static str = "a boolean";

    fn to_atom(&self) -> Atom {
        Atom::Boolean(*self)
    }

    fn from_atom(atom: &Atom) -> Option<Self> {
        match atom {
            Atom::Boolean(b) => Some(*b),
            _ => None,
        }
    }
}

impl ColumnAtom for String {
    const EXPECTED: &'static str = "a string";

    fn to_atom(&self) -> Atom {
        Atom::String(self.clone())
    }

    fn from_atom(atom: &Atom) -> Option<Self> {
        match atom {
            Atom::String(s) => Some(s.clone()),
            _ => None,
        }
    }
}

impl ColumnAtom for Uuid {
    const EXPECTED: &'static str = "a uuid";

    fn to_atom(&self) -> Atom {
        Atom::Uuid(*self)
    }

    fn from_atom(atom: &Atom) -> Option<Self> {
        match atom {
            Atom::Uuid(u) => Some(*u),
            _ => None,
        }
    }
}

/// A scalar column: the bare atom.
pub(crate) fn atom_value<T: ColumnAtom>(value: &T) -> Value {
    Value::Atom(value.to_atom())
}

/// An optional or set column (an `Option`, a `BTreeSet` or a `Vec` of reals): a sorted set
/// without duplicates.
pub(crate) fn set_value<'a, T: ColumnAtom + 'a>(items: impl IntoIterator<Item = &'a T>) -> Value {
    let mut atoms: Vec<Atom> = items.into_iter().map(ColumnAtom::to_atom).collect();
    atoms.sort_by(atom_cmp);
    atoms.dedup_by(|a, b| atom_cmp(a, b) == Ordering::Equal);
    Value::Set(atoms)
}

/// A map column: pairs sorted by key; of equal keys the last one wins.
pub(crate) fn map_value<'a, K: ColumnAtom + 'a, V: ColumnAtom + 'a>(
    pairs: impl IntoIterator<Item = (&'a K, &'a V)>,
) -> Value {
    let mut sorted: Vec<(Atom, Atom)> = pairs
        .into_iter()
        .map(|(k, v)| (k.to_atom(), v.to_atom()))
        .collect();
    // Stable sort keeps insertion order among equal keys; keep the last one.
    sorted.sort_by(|a, b| atom_cmp(&a.0, &b.0));
    let mut out: Vec<(Atom, Atom)> = Vec::with_capacity(sorted.len());
    for pair in sorted {
        match out.last_mut() {
            Some(last) if atom_cmp(&last.0, &pair.0) == Ordering::Equal => *last = pair,
            _ => out.push(pair),
        }
    }
    Value::Map(out)
}

/// Reads the columns of one row of one table, naming both in errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowReader<'r> {
    table: &'static str,
    row: &'r Row,
}

impl<'r> RowReader<'r> {
    /// A reader of `row` of `table`.
    pub(crate) fn new(table: &'static str, row: &'r Row) -> Self {
        Self { table, row }
    }

    /// A scalar column; missing reads as the type's default (0, 0.0, false, "").
    pub(crate) fn scalar<T: ColumnAtom + Default>(
        &self,
        column: &'static str,
    ) -> Result<T, RowError> {
        self.scalar_or(column, T::default)
    }

    /// A scalar column; missing reads as `default()` (the all-zero UUID for uuid columns).
    pub(crate) fn scalar_or<T: ColumnAtom>(
        &self,
        column: &'static str,
        default: impl FnOnce() -> T,
    ) -> Result<T, RowError> {
        match self.row.get(column) {
            None => Ok(default()),
            Some(Value::Atom(atom)) => self.atom(column, atom),
            Some(Value::Set(atoms)) => match atoms.as_slice() {
                [atom] => self.atom(column, atom),
                _ => Err(self.error(
                    column,
                    format!("expected exactly one value, got a set of {}", atoms.len()),
                )),
            },
            Some(Value::Map(_)) => Err(self.error(column, "expected exactly one value, got a map")),
        }
    }

    /// An optional column (a set of at most one element); missing reads as `None`.
    pub(crate) fn optional<T: ColumnAtom>(
        &self,
        column: &'static str,
    ) -> Result<Option<T>, RowError> {
        match self.row.get(column) {
            None => Ok(None),
            Some(Value::Atom(atom)) => self.atom(column, atom).map(Some),
            Some(Value::Set(atoms)) => match atoms.as_slice() {
                [] => Ok(None),
                [atom] => self.atom(column, atom).map(Some),
                _ => Err(self.error(
                    column,
                    format!("expected at most one value, got a set of {}", atoms.len()),
                )),
            },
            Some(Value::Map(_)) => Err(self.error(column, "expected at most one value, got a map")),
        }
    }

    /// A set column into any collection of its atoms; missing reads as empty.
    pub(crate) fn set<T: ColumnAtom, C: FromIterator<T>>(
        &self,
        column: &'static str,
    ) -> Result<C, RowError> {
        match self.row.get(column) {
            None => Ok(std::iter::empty().collect()),
            Some(Value::Atom(atom)) => self
                .atom(column, atom)
                .map(|a| std::iter::once(a).collect()),
            Some(Value::Set(atoms)) => atoms.iter().map(|atom| self.atom(column, atom)).collect(),
            Some(Value::Map(_)) => Err(self.error(column, "expected a set, got a map")),
        }
    }

    /// A map column into any collection of its pairs; missing (or an empty set) reads as
    /// empty.
    pub(crate) fn map<K: ColumnAtom, V: ColumnAtom, C: FromIterator<(K, V)>>(
        &self,
        column: &'static str,
    ) -> Result<C, RowError> {
        match self.row.get(column) {
            None => Ok(std::iter::empty().collect()),
            Some(Value::Map(pairs)) => pairs
                .iter()
                .map(|(k, v)| Ok((self.atom(column, k)?, self.atom(column, v)?)))
                .collect(),
            Some(Value::Set(atoms)) if atoms.is_empty() => Ok(std::iter::empty().collect()),
            Some(Value::Set(atoms)) => Err(self.error(
                column,
                format!("expected a map, got a set of {}", atoms.len()),
            )),
            Some(Value::Atom(atom)) => {
                Err(self.error(column, format!("expected a map, got {}", atom.to_json())))
            }
        }
    }

    fn atom<T: ColumnAtom>(&self, column: &'static str, atom: &Atom) -> Result<T, RowError> {
        T::from_atom(atom).ok_or_else(|| {
            self.error(
                column,
                format!("expected {}, got {}", T::EXPECTED, atom.to_json()),
            )
        })
    }

    fn error(&self, column: &'static str, reason: impl Into<String>) -> RowError {
        RowError {
            table: self.table,
            column,
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    // The vendored schema has no real or scalar uuid columns; the generator handles them
    // with these conversions.
    use super::*;

    #[test]
    fn reals_are_sorted_deduplicated_and_read_from_integers() {
        let reals = vec![2.5, -1.0, 2.5];
        assert_eq!(
            set_value(&reals),
            Value::Set(vec![Atom::Real(-1.0), Atom::Real(2.5)])
        );
        let row = Row::from([
            (
                "w".to_owned(),
                Value::Set(vec![Atom::Integer(3), Atom::Real(0.5)]),
            ),
            ("r".to_owned(), Value::Atom(Atom::Integer(2))),
        ]);
        let reader = RowReader::new("T", &row);
        assert_eq!(reader.set::<f64, Vec<f64>>("w"), Ok(vec![3.0, 0.5]));
        assert_eq!(reader.scalar::<f64>("r"), Ok(2.0));
    }

    #[test]
    fn real_keyed_maps_keep_the_last_of_equal_keys() {
        let pairs: Vec<(f64, String)> = vec![
            (2.0, "b".to_owned()),
            (1.0, "a".to_owned()),
            (2.0, "c".to_owned()),
        ];
        assert_eq!(
            map_value(pairs.iter().map(|(k, v)| (k, v))),
            Value::Map(vec![
                (Atom::Real(1.0), Atom::String("a".to_owned())),
                (Atom::Real(2.0), Atom::String("c".to_owned())),
            ])
        );
    }

    #[test]
    fn scalar_uuids_default_to_zero_and_reject_named_uuids() {
        let row = Row::from([(
            "named".to_owned(),
            Value::Atom(Atom::NamedUuid("row1".to_owned())),
        )]);
        let reader = RowReader::new("T", &row);
        let zero = || Uuid::from_u128(0);
        assert_eq!(reader.scalar_or("missing", zero), Ok(Uuid::from_u128(0)));
        assert_eq!(
            reader.scalar_or("named", zero).map_err(|e| e.to_string()),
            Err(
                "cannot read column T.named: expected a uuid, got [\"named-uuid\",\"row1\"]"
                    .to_owned()
            )
        );
    }
}
