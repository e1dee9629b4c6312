//! Checks desired units against the server schema and brings them into canonical form:
//! values normalized per column type, ownership stamp keys refused in `external_ids`.

use std::cmp::Ordering;
use std::collections::HashSet;

use super::cursor::Cursor;
use super::desired::{DesiredRow, DesiredUnit, RowRef, Scope, UnitKey};
use super::error::{PlanError, RowAt};
use super::owner_types::RowOwnerTypes;
use super::parallel::{map_chunks_mut, split, workers};
use super::stamps::{EXTERNAL_IDS, is_stamp_key};
use crate::protocol::{Atom, Value};
use crate::schema::{AtomicType, BaseType, ColumnType, DbSchema, TableSchema, atom_cmp};

/// Whether rows of `table` can carry ownership stamps.
pub(crate) fn is_ownable(table: &TableSchema) -> bool {
    table.columns.get(EXTERNAL_IDS).is_some_and(|c| {
        c.ty.key.atomic == AtomicType::String
            && c.ty
                .value
                .as_ref()
                .is_some_and(|v| v.atomic == AtomicType::String)
    })
}

/// Checks the unit keys: each given once, each of an owner type the scope covers, none (and
/// no type of the scope) a row owner type.
pub(crate) fn check_keys(
    units: &[DesiredUnit],
    scope: &Scope,
    row_types: &RowOwnerTypes,
) -> Result<(), PlanError> {
    let covered = scope.covered();
    for owner_type in covered.iter().flatten() {
        if let Some(unit_type) = row_types.declared(owner_type) {
            return Err(PlanError::RowOwnerTypeAsUnitType {
                owner_type: (*owner_type).to_owned(),
                unit_type: unit_type.to_owned(),
                given: "scope".to_owned(),
            });
        }
    }
    let mut seen: HashSet<&UnitKey> = HashSet::with_capacity(units.len());
    for unit in units {
        if let Some(covered) = &covered
            && !covered.contains(&unit.key.owner_type.as_str())
        {
            return Err(PlanError::OutOfScope {
                unit: unit.key.clone(),
                scope: covered.join(", "),
            });
        }
        if let Some(unit_type) = row_types.declared(&unit.key.owner_type) {
            return Err(PlanError::RowOwnerTypeAsUnitType {
                owner_type: unit.key.owner_type.clone(),
                unit_type: unit_type.to_owned(),
                given: format!("unit {}", unit.key),
            });
        }
        if !seen.insert(&unit.key) {
            return Err(PlanError::DuplicateUnit {
                unit: unit.key.clone(),
            });
        }
    }
    Ok(())
}

/// Checks every row of the units `check` selects, normalizing values in place (the
/// ownership stamps are added when rows are written). Units not selected were checked by
/// an earlier plan with the same content and schema.
pub(crate) fn check_rows(
    schema: &DbSchema,
    row_types: &RowOwnerTypes,
    units: &mut [DesiredUnit],
    check: &[bool],
) -> Result<(), PlanError> {
    let mut selected: Vec<&mut DesiredUnit> = units
        .iter_mut()
        .zip(check)
        .filter(|(_, c)| **c)
        .map(|(unit, _)| unit)
        .collect();
    let weights: Vec<usize> = selected.iter().map(|u| u.rows.len()).collect();
    let ranges = split(&weights, workers(weights.iter().sum()));
    map_chunks_mut(&mut selected, &ranges, |chunk| {
        for unit in chunk {
            for row in &mut unit.rows {
                check_row(schema, row_types, &unit.key, row)?;
            }
        }
        Ok(())
    })
    .into_iter()
    .collect()
}

fn check_row(
    schema: &DbSchema,
    row_types: &RowOwnerTypes,
    unit: &UnitKey,
    row: &mut DesiredRow,
) -> Result<(), PlanError> {
    let Some(table) = schema.table(&row.table) else {
        return Err(PlanError::UnknownTable {
            at: RowAt::boxed(unit.clone(), row.table.clone(), row.id.clone()),
        });
    };
    if !is_ownable(table) {
        return Err(PlanError::NotOwnable {
            at: RowAt::boxed(unit.clone(), row.table.clone(), row.id.clone()),
        });
    }
    check_row_owner_type(table, row_types, unit, row)?;
    let mut schema_columns = Cursor::new(&table.columns);
    for (column, value) in &mut row.columns {
        let Some(schema_column) = schema_columns.seek(column) else {
            return Err(unknown(unit, &row.table, &row.id, column));
        };
        if schema_column.ty.reference().is_some() {
            return Err(PlanError::ReferenceInColumns {
                at: RowAt::boxed(unit.clone(), row.table.clone(), row.id.clone()),
                column: column.clone(),
            });
        }
        if is_canonical(&schema_column.ty, value) {
            continue;
        }
        let taken = std::mem::replace(value, Value::Set(Vec::new()));
        *value = schema_column
            .ty
            .normalize(taken)
            .map_err(|source| PlanError::BadValue {
                at: RowAt::boxed(unit.clone(), row.table.clone(), row.id.clone()),
                column: column.clone(),
                source,
            })?;
    }
    check_reserved(unit, row)?;
    check_refs(table, unit, row)
}

/// Reference columns must exist, be sets of references, and name rows of their table.
fn check_refs(table: &TableSchema, unit: &UnitKey, row: &DesiredRow) -> Result<(), PlanError> {
    let at = || RowAt::boxed(unit.clone(), row.table.clone(), row.id.clone());
    let mut schema_columns = Cursor::new(&table.columns);
    for (column, targets) in &row.refs {
        let Some(schema_column) = schema_columns.seek(column) else {
            return Err(unknown(unit, &row.table, &row.id, column));
        };
        let expected = match schema_column.ty.reference() {
            Some((expected, _)) if !schema_column.ty.is_map() => expected,
            _ => {
                return Err(PlanError::NotAReferenceSet {
                    at: at(),
                    column: column.clone(),
                });
            }
        };
        let wrong = targets.iter().find_map(|target| match target {
            RowRef::Desired { table, .. } if table != expected => Some(table),
            _ => None,
        });
        if let Some(target_table) = wrong {
            return Err(PlanError::WrongTarget {
                at: at(),
                column: column.clone(),
                target_table: target_table.clone(),
                expected: expected.to_owned(),
            });
        }
    }
    Ok(())
}

fn unknown(unit: &UnitKey, table: &str, id: &str, column: &str) -> PlanError {
    PlanError::UnknownColumn {
        at: RowAt::boxed(unit.clone(), table.to_owned(), id.to_owned()),
        column: column.to_owned(),
    }
}

/// A row owner type other than the unit's must be declared for the unit's owner type, on a
/// row of a non-root table.
fn check_row_owner_type(
    table: &TableSchema,
    row_types: &RowOwnerTypes,
    unit: &UnitKey,
    row: &DesiredRow,
) -> Result<(), PlanError> {
    let Some(owner_type) = row.owner_type.as_ref().filter(|t| **t != unit.owner_type) else {
        return Ok(());
    };
    let at = || RowAt::boxed(unit.clone(), row.table.clone(), row.id.clone());
    if table.is_root {
        return Err(PlanError::RowOwnerTypeOnRoot {
            at: at(),
            owner_type: owner_type.clone(),
        });
    }
    if row_types.declared(owner_type) != Some(unit.owner_type.as_str()) {
        return Err(PlanError::UndeclaredRowOwnerType {
            at: at(),
            owner_type: owner_type.clone(),
        });
    }
    Ok(())
}

/// Refuses ownership stamp keys in the caller's `external_ids` (the engine sets them).
fn check_reserved(unit: &UnitKey, row: &DesiredRow) -> Result<(), PlanError> {
    let Some(Value::Map(pairs)) = row.columns.get(EXTERNAL_IDS) else {
        return Ok(());
    };
    if let Some(key) = pairs.iter().find_map(|(k, _)| match k {
        Atom::String(k) if is_stamp_key(k) => Some(k),
        _ => None,
    }) {
        return Err(PlanError::ReservedKey {
            at: RowAt::boxed(unit.clone(), row.table.clone(), row.id.clone()),
            key: key.clone(),
        });
    }
    Ok(())
}

/// Whether `value` is already in the canonical form of `ty` (what
/// [`ColumnType::normalize`] would return), so that normalizing can be skipped.
pub(crate) fn is_canonical(ty: &ColumnType, value: &Value) -> bool {
    let count_fits = |n: usize| {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        n >= ty.min && ty.max.is_none_or(|max| n <= max)
    };
    let increasing = |a: &Atom, b: &Atom| atom_cmp(a, b) == Ordering::Less;
    match (value, &ty.value) {
        (Value::Map(pairs), Some(value_type)) => {
            count_fits(pairs.len())
                && pairs
                    .iter()
                    .all(|(k, v)| fits(&ty.key, k) && fits(value_type, v))
                && pairs.is_sorted_by(|a, b| increasing(&a.0, &b.0))
        }
        (Value::Atom(atom), None) => ty.is_scalar() && fits(&ty.key, atom),
        (Value::Set(atoms), None) => {
            !ty.is_scalar()
                && count_fits(atoms.len())
                && atoms.iter().all(|a| fits(&ty.key, a))
                && atoms.is_sorted_by(increasing)
        }
        _ => false,
    }
}

fn fits(base: &BaseType, atom: &Atom) -> bool {
    matches!(
        (base.atomic, atom),
        (AtomicType::Integer, Atom::Integer(_))
            | (AtomicType::Real, Atom::Real(_))
            | (AtomicType::Boolean, Atom::Boolean(_))
            | (AtomicType::String, Atom::String(_))
            | (AtomicType::Uuid, Atom::Uuid(_) | Atom::NamedUuid(_))
    )
}
