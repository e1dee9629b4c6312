//! Checks desired units against the server schema and brings them into canonical form:
//! values normalized per column type, ownership stamps added to `external_ids`.

use std::collections::HashSet;

use super::desired::{DesiredRow, DesiredUnit, RowRef, Scope, UnitKey};
use super::error::{PlanError, RowAt};
use super::stamps::{EXTERNAL_IDS, is_stamp_key, stamp};
use crate::protocol::{Atom, Value};
use crate::schema::{AtomicType, DbSchema, TableSchema};

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

/// Checks every unit and row, normalizing values in place and stamping `external_ids`.
pub(crate) fn check_units(
    schema: &DbSchema,
    controller: &str,
    units: &mut [DesiredUnit],
    scope: &Scope,
) -> Result<(), PlanError> {
    let mut seen: HashSet<&UnitKey> = HashSet::with_capacity(units.len());
    for unit in units.iter() {
        if let Scope::OwnerType(owner_type) = scope
            && unit.key.owner_type != *owner_type
        {
            return Err(PlanError::OutOfScope {
                unit: unit.key.clone(),
                scope: owner_type.clone(),
            });
        }
        if !seen.insert(&unit.key) {
            return Err(PlanError::DuplicateUnit {
                unit: unit.key.clone(),
            });
        }
    }
    for unit in units.iter_mut() {
        for row in &mut unit.rows {
            check_row(schema, controller, &unit.key, row)?;
        }
    }
    Ok(())
}

fn check_row(
    schema: &DbSchema,
    controller: &str,
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
    for (column, value) in &mut row.columns {
        let Some(schema_column) = table.columns.get(column) else {
            return Err(unknown(unit, &row.table, &row.id, column));
        };
        if schema_column.ty.reference().is_some() {
            return Err(PlanError::ReferenceInColumns {
                at: RowAt::boxed(unit.clone(), row.table.clone(), row.id.clone()),
                column: column.clone(),
            });
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
    stamp_row(controller, unit, row)?;
    for (column, targets) in &row.refs {
        let Some(schema_column) = table.columns.get(column) else {
            return Err(unknown(unit, &row.table, &row.id, column));
        };
        let expected = match schema_column.ty.reference() {
            Some((expected, _)) if !schema_column.ty.is_map() => expected,
            _ => {
                return Err(PlanError::NotAReferenceSet {
                    at: RowAt::boxed(unit.clone(), row.table.clone(), row.id.clone()),
                    column: column.clone(),
                });
            }
        };
        for target in targets {
            if let RowRef::Desired {
                table: target_table,
                ..
            } = target
                && target_table != expected
            {
                return Err(PlanError::WrongTarget {
                    at: RowAt::boxed(unit.clone(), row.table.clone(), row.id.clone()),
                    column: column.clone(),
                    target_table: target_table.clone(),
                    expected: expected.to_owned(),
                });
            }
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

fn stamp_row(controller: &str, unit: &UnitKey, row: &mut DesiredRow) -> Result<(), PlanError> {
    let external_ids = row
        .columns
        .entry(EXTERNAL_IDS.to_owned())
        .or_insert_with(|| Value::Map(Vec::new()));
    let Value::Map(pairs) = external_ids else {
        // Normalization against the string-map column type made it a map.
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
    stamp(pairs, controller, &unit.owner_type, &unit.name, &row.id);
    Ok(())
}
