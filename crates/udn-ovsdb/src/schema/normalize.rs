//! Canonical values: one representation per value of a column type, so that values read from
//! the server and values we want compare equal exactly when OVSDB considers them equal.

use std::cmp::Ordering;

use serde_json::json;

use super::error::SchemaError;
use super::types::{AtomicType, BaseType, ColumnType};
use crate::protocol::{Atom, Uuid, Value};

/// Total order on atoms used for canonical sorting: by type, then value (reals by
/// [`f64::total_cmp`]).
pub fn atom_cmp(a: &Atom, b: &Atom) -> Ordering {
    fn rank(atom: &Atom) -> u8 {
        match atom {
            Atom::Integer(_) => 0,
            Atom::Real(_) => 1,
            Atom::Boolean(_) => 2,
            Atom::String(_) => 3,
            Atom::Uuid(_) => 4,
            Atom::NamedUuid(_) => 5,
        }
    }
    match (a, b) {
        (Atom::Integer(x), Atom::Integer(y)) => x.cmp(y),
        (Atom::Real(x), Atom::Real(y)) => x.total_cmp(y),
        (Atom::Boolean(x), Atom::Boolean(y)) => x.cmp(y),
        (Atom::String(x), Atom::String(y)) => x.cmp(y),
        (Atom::Uuid(x), Atom::Uuid(y)) => x.cmp(y),
        (Atom::NamedUuid(x), Atom::NamedUuid(y)) => x.cmp(y),
        _ => rank(a).cmp(&rank(b)),
    }
}

impl ColumnType {
    /// The canonical form of `value` for this type: scalars are [`Value::Atom`]; sets and
    /// optional values are [`Value::Set`], sorted and without duplicates (a bare atom is a
    /// one-element set); maps are [`Value::Map`] sorted by key (a later duplicate key wins);
    /// integers in real columns become reals. Named UUIDs are accepted where UUIDs are.
    pub fn normalize(&self, value: Value) -> Result<Value, SchemaError> {
        let mismatch = |value: &Value, reason: &str| SchemaError::Mismatch {
            value: value.to_json().to_string(),
            ty: self.spelling(),
            reason: reason.to_owned(),
        };
        if let Some(value_type) = &self.value {
            let pairs = match value {
                Value::Map(pairs) => pairs,
                Value::Set(ref atoms) if atoms.is_empty() => Vec::new(),
                other => return Err(mismatch(&other, "expected a map")),
            };
            let mut out: Vec<(Atom, Atom)> = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                let k = normalize_atom(&self.key, k).map_err(|r| mismatch_atom(self, r))?;
                let v = normalize_atom(value_type, v).map_err(|r| mismatch_atom(self, r))?;
                out.push((k, v));
            }
            // Stable sort keeps insertion order among equal keys; keep the last one.
            out.sort_by(|a, b| atom_cmp(&a.0, &b.0));
            let mut deduped: Vec<(Atom, Atom)> = Vec::with_capacity(out.len());
            for pair in out {
                match deduped.last_mut() {
                    Some(last) if atom_cmp(&last.0, &pair.0) == Ordering::Equal => *last = pair,
                    _ => deduped.push(pair),
                }
            }
            self.check_count(deduped.len(), || Value::Map(deduped.clone()))?;
            return Ok(Value::Map(deduped));
        }
        if self.is_scalar() {
            return match value {
                Value::Atom(atom) => normalize_atom(&self.key, atom)
                    .map(Value::Atom)
                    .map_err(|r| mismatch_atom(self, r)),
                Value::Set(mut atoms) if atoms.len() == 1 => atoms
                    .pop()
                    .map(|atom| normalize_atom(&self.key, atom))
                    .unwrap_or_else(|| Err(("expected exactly one value", json!(null))))
                    .map(Value::Atom)
                    .map_err(|r| mismatch_atom(self, r)),
                other => Err(mismatch(&other, "expected exactly one value")),
            };
        }
        let atoms = match value {
            Value::Atom(atom) => vec![atom],
            Value::Set(atoms) => atoms,
            other @ Value::Map(_) => return Err(mismatch(&other, "expected a set")),
        };
        let mut out = atoms
            .into_iter()
            .map(|atom| normalize_atom(&self.key, atom))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|r| mismatch_atom(self, r))?;
        out.sort_by(atom_cmp);
        out.dedup_by(|a, b| atom_cmp(a, b) == Ordering::Equal);
        self.check_count(out.len(), || Value::Set(out.clone()))?;
        Ok(Value::Set(out))
    }

    /// The value a new row gets when the column is not given (RFC 7047 §5.2.1): empty for
    /// sets and maps, else 0, 0.0, false, "" or the all-zero UUID.
    pub fn default_value(&self) -> Value {
        if self.is_map() {
            return Value::Map(Vec::new());
        }
        if !self.is_scalar() {
            return Value::Set(Vec::new());
        }
        Value::Atom(match self.key.atomic {
            AtomicType::Integer => Atom::Integer(0),
            AtomicType::Real => Atom::Real(0.0),
            AtomicType::Boolean => Atom::Boolean(false),
            AtomicType::String => Atom::String(String::new()),
            AtomicType::Uuid => Atom::Uuid(Uuid::from_u128(0)),
        })
    }

    /// The type as the schema would write it (for messages).
    pub fn spelling(&self) -> String {
        let max = self
            .max
            .map_or_else(|| "unlimited".to_owned(), |m| m.to_string());
        match &self.value {
            Some(v) => format!(
                "map of {} to {} ({}..{max})",
                self.key.atomic.as_str(),
                v.atomic.as_str(),
                self.min
            ),
            None if self.is_scalar() => self.key.atomic.as_str().to_owned(),
            None => format!("set of {} ({}..{max})", self.key.atomic.as_str(), self.min),
        }
    }

    fn check_count(&self, n: usize, value: impl Fn() -> Value) -> Result<(), SchemaError> {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        let too_many = self.max.is_some_and(|max| n > max);
        if n < self.min || too_many {
            return Err(SchemaError::Mismatch {
                value: value().to_json().to_string(),
                ty: self.spelling(),
                reason: format!("{n} elements"),
            });
        }
        Ok(())
    }
}

fn mismatch_atom(
    ty: &ColumnType,
    (reason, atom): (&'static str, serde_json::Value),
) -> SchemaError {
    SchemaError::Mismatch {
        value: atom.to_string(),
        ty: ty.spelling(),
        reason: reason.to_owned(),
    }
}

fn normalize_atom(base: &BaseType, atom: Atom) -> Result<Atom, (&'static str, serde_json::Value)> {
    match (base.atomic, atom) {
        (AtomicType::Integer, atom @ Atom::Integer(_))
        | (AtomicType::Real, atom @ Atom::Real(_))
        | (AtomicType::Boolean, atom @ Atom::Boolean(_))
        | (AtomicType::String, atom @ Atom::String(_))
        | (AtomicType::Uuid, atom @ (Atom::Uuid(_) | Atom::NamedUuid(_))) => Ok(atom),
        // JSON does not tell 1 from 1.0: integers are reals in real columns.
        #[allow(clippy::cast_precision_loss)]
        (AtomicType::Real, Atom::Integer(i)) => Ok(Atom::Real(i as f64)),
        (expected, atom) => Err((
            match expected {
                AtomicType::Integer => "expected an integer",
                AtomicType::Real => "expected a real",
                AtomicType::Boolean => "expected a boolean",
                AtomicType::String => "expected a string",
                AtomicType::Uuid => "expected a uuid",
            },
            atom.to_json(),
        )),
    }
}
