//! Per unit: find the existing row of each desired row, then resolve the references and
//! compare column by column in canonical form (the unit's rows are read while still in
//! cache). Units are independent and decided on a few threads for large plans.

use std::cmp::Ordering;
use std::ops::Range;

use super::cursor::Cursor;
use super::desired::{DesiredRow, DesiredUnit, RowRef, UnitKey};
use super::error::{PlanError, RowAt};
use super::hasher::{FastMap, FastSet};
use super::owned::{Loc, OwnedRow, find_owned, locate_row, new_row_name};
use super::parallel::{map_ranges, split, workers};
use super::stamps::{EXTERNAL_IDS, Stamp, owned_by};
use super::view::OwnedRowsView;
use crate::protocol::{Atom, Mutation, Mutator, Row, Uuid, Value};
use crate::schema::{ColumnSchema, RefType, TableSchema, atom_cmp};

/// A desired row by position: (unit, row).
pub(crate) type RowPos = (u32, u32);

/// What to do with one desired row.
#[derive(Debug)]
pub(crate) enum RowDecision {
    /// Insert it, with these resolved reference columns; `uses` are the new rows it refers
    /// to.
    Insert {
        refs: Vec<(String, Value)>,
        uses: Vec<RowPos>,
    },
    /// It exists: set `columns` (taken from the desired row) and `refs`, apply `mutations`.
    Existing {
        uuid: Uuid,
        columns: Vec<String>,
        refs: Vec<(String, Value)>,
        mutations: Vec<Mutation>,
    },
}

/// A reference from one unit to a new row of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Dep {
    pub(crate) consumer: u32,
    pub(crate) provider: u32,
    /// The new row only lives if referenced in its own transaction: same transaction.
    pub(crate) bundle: bool,
}

/// A reference to an existing row that no desired row of the plan is: an error if the plan
/// turns out to delete that row.
#[derive(Debug)]
pub(crate) struct OutsideRef {
    pub(crate) uuid: Uuid,
    pub(crate) at: RowPos,
    pub(crate) column: String,
    pub(crate) target: String,
}

/// One unit's rows located and decided.
#[derive(Debug, Default)]
pub(crate) struct UnitDiff<'v> {
    pub(crate) locs: Vec<Loc<'v>>,
    pub(crate) decisions: Vec<RowDecision>,
    /// Further rows claiming the id of a desired row (to remove).
    pub(crate) duplicates: Vec<OwnedRow<'v>>,
}

/// The decisions for every desired row.
#[derive(Debug, Default)]
pub(crate) struct Diff<'v> {
    pub(crate) units: Vec<UnitDiff<'v>>,
    /// Cross-unit references to new rows.
    pub(crate) deps: Vec<Dep>,
    /// New rows strongly referenced by a desired row.
    pub(crate) referenced: FastSet<RowPos>,
    pub(crate) outside: Vec<OutsideRef>,
    /// Skipped units a compared unit needs compared after all (one of their rows, which
    /// should exist, does not).
    pub(crate) unskip: Vec<u32>,
}

/// What deciding a range of units found.
#[derive(Debug, Default)]
struct Decided<'v> {
    units: Vec<UnitDiff<'v>>,
    deps: Vec<Dep>,
    referenced: Vec<RowPos>,
    outside: Vec<OutsideRef>,
    /// Rows of other units located on demand (cross-unit references).
    elsewhere: FastMap<RowPos, Loc<'v>>,
    unskip: Vec<u32>,
}

/// Everything the diff looks things up in.
pub(crate) struct Lookup<'a, 'v, V> {
    pub(crate) view: &'v V,
    pub(crate) controller: &'a str,
    pub(crate) units: &'a [DesiredUnit],
    pub(crate) index: RowIndex<'a>,
    /// Units not compared (known converged): no decisions, their rows located on demand.
    pub(crate) skipped: &'a [bool],
}

/// Desired rows by (table, row id).
pub(crate) type RowIndex<'a> = FastMap<(&'a str, &'a str), RowPos>;

/// Indexes desired rows by (table, row id), rejecting duplicates.
pub(crate) fn index_rows(units: &[DesiredUnit]) -> Result<RowIndex<'_>, PlanError> {
    let mut index = FastMap::with_capacity_and_hasher(
        units.iter().map(|u| u.rows.len()).sum(),
        Default::default(),
    );
    for (u, unit) in (0u32..).zip(units) {
        for (r, row) in (0u32..).zip(&unit.rows) {
            if let Some((first, _)) = index.insert((row.table.as_str(), row.id.as_str()), (u, r)) {
                let first = units
                    .get(first as usize)
                    .map_or_else(|| unit.key.clone(), |f| f.key.clone());
                return Err(PlanError::DuplicateRow {
                    at: RowAt::boxed(unit.key.clone(), row.table.clone(), row.id.clone()),
                    first,
                });
            }
        }
    }
    Ok(index)
}

fn stamp_of<'a>(controller: &'a str, key: &'a UnitKey, row: &'a DesiredRow) -> Stamp<'a> {
    Stamp {
        controller,
        owner_type: row.stamped_owner_type(key),
        owner: &key.name,
        id: &row.id,
    }
}

fn caller_ids(row: &DesiredRow) -> &[(Atom, Atom)] {
    match row.columns.get(EXTERNAL_IDS) {
        Some(Value::Map(pairs)) => pairs.as_slice(),
        _ => &[],
    }
}

struct RowCtx<'r> {
    unit: u32,
    index: u32,
    key: &'r UnitKey,
    row: &'r DesiredRow,
}

impl<'v, V: OwnedRowsView> Lookup<'_, 'v, V> {
    /// Locates and decides every desired row.
    pub(crate) fn diff(&self) -> Result<Diff<'v>, PlanError> {
        let weights: Vec<usize> = (0..)
            .zip(self.units)
            .map(|(u, unit)| {
                if self.skipped.get(u).copied().unwrap_or(false) {
                    0
                } else {
                    unit.rows.len()
                }
            })
            .collect();
        let ranges = split(&weights, workers(weights.iter().sum()));
        let mut diff = Diff::default();
        for part in map_ranges(&ranges, |range| self.decide_units(range)) {
            let part = part?;
            diff.units.extend(part.units);
            diff.deps.extend(part.deps);
            diff.referenced.extend(part.referenced);
            diff.outside.extend(part.outside);
            diff.unskip.extend(part.unskip);
        }
        diff.deps.sort_unstable();
        diff.deps.dedup();
        diff.unskip.sort_unstable();
        diff.unskip.dedup();
        Ok(diff)
    }

    fn decide_units(&self, range: Range<usize>) -> Result<Decided<'v>, PlanError> {
        let mut decided = Decided::default();
        let units = self.units.get(range.clone()).unwrap_or_default();
        for (u, unit) in (0u32..).skip(range.start).zip(units) {
            if self.skipped.get(u as usize).copied().unwrap_or(false) {
                decided.units.push(UnitDiff::default());
                continue;
            }
            let mut found = UnitDiff {
                locs: Vec::with_capacity(unit.rows.len()),
                decisions: Vec::with_capacity(unit.rows.len()),
                duplicates: Vec::new(),
            };
            for row in &unit.rows {
                let stamp = stamp_of(self.controller, &unit.key, row);
                let (loc, duplicates) = locate_row(
                    self.view,
                    self.controller,
                    &row.table,
                    &row.id,
                    Some((&stamp, caller_ids(row))),
                );
                found.locs.push(loc);
                found.duplicates.extend(duplicates);
            }
            for ((r, row), loc) in (0u32..).zip(&unit.rows).zip(&found.locs) {
                let ctx = RowCtx {
                    unit: u,
                    index: r,
                    key: &unit.key,
                    row,
                };
                let decision = self.decide(&ctx, *loc, &found.locs, &mut decided)?;
                found.decisions.push(decision);
            }
            decided.units.push(found);
        }
        Ok(decided)
    }

    fn decide(
        &self,
        ctx: &RowCtx<'_>,
        loc: Loc<'_>,
        unit_locs: &[Loc<'v>],
        decided: &mut Decided<'v>,
    ) -> Result<RowDecision, PlanError> {
        let schema = self.view.schema();
        let table = schema.table(&ctx.row.table);
        let mut schema_columns = Cursor::new(table.map(|t| &t.columns));
        let mut resolved: Vec<(&str, &ColumnSchema, Value)> =
            Vec::with_capacity(ctx.row.refs.len());
        let mut uses = Vec::new();
        for (column, targets) in &ctx.row.refs {
            let Some(schema_column) = schema_columns.seek(column) else {
                continue;
            };
            let value = self.resolve_column(
                ctx,
                (column, schema_column),
                targets,
                unit_locs,
                decided,
                &mut uses,
            )?;
            resolved.push((column.as_str(), schema_column, value));
        }
        let (uuid, current, stamped) = match loc {
            Loc::New => {
                return Ok(RowDecision::Insert {
                    refs: resolved
                        .into_iter()
                        .map(|(c, _, v)| (c.to_owned(), v))
                        .collect(),
                    uses,
                });
            }
            Loc::Existing { uuid, row, stamped } => (uuid, row, stamped),
        };
        let mut columns = changed_columns(ctx, table, current)?;
        let stamp = stamp_of(self.controller, ctx.key, ctx.row);
        if !stamped && !stamp.holds(current.get(EXTERNAL_IDS), caller_ids(ctx.row)) {
            columns.push(EXTERNAL_IDS.to_owned());
        }
        let mut refs = Vec::new();
        let mut mutations = Vec::new();
        let mut have = Cursor::new(current);
        for (column, schema_column, want) in resolved {
            let current_value = have.seek(column);
            if schema_column.ty.max == Some(1) {
                if !holds(current_value, schema_column, &want) {
                    refs.push((column.to_owned(), want));
                }
            } else {
                self.set_mutations(current_value, column, schema_column, want, &mut mutations);
            }
        }
        Ok(RowDecision::Existing {
            uuid,
            columns,
            refs,
            mutations,
        })
    }

    /// Resolves the targets of one reference column into its canonical value.
    fn resolve_column(
        &self,
        ctx: &RowCtx<'_>,
        (column, schema_column): (&str, &ColumnSchema),
        targets: &[RowRef],
        unit_locs: &[Loc<'v>],
        decided: &mut Decided<'v>,
        uses: &mut Vec<RowPos>,
    ) -> Result<Value, PlanError> {
        let Some((ref_table, ref_type)) = schema_column.ty.reference() else {
            return Ok(Value::Set(Vec::new()));
        };
        let strong = ref_type == RefType::Strong;
        let mut atoms = Vec::with_capacity(targets.len());
        for target in targets {
            let atom = match target {
                RowRef::Existing(uuid) | RowRef::Ahead(uuid) => {
                    if matches!(target, RowRef::Existing(_))
                        && self.view.row(ref_table, uuid).is_none()
                    {
                        return Err(self.dangling(ctx, column, uuid.to_string()));
                    }
                    decided.outside.push(OutsideRef {
                        uuid: *uuid,
                        at: (ctx.unit, ctx.index),
                        column: column.to_owned(),
                        target: uuid.to_string(),
                    });
                    Atom::Uuid(*uuid)
                }
                RowRef::Desired { table, id } => self.resolve_desired(
                    ctx,
                    (column, table, id),
                    strong,
                    unit_locs,
                    decided,
                    uses,
                )?,
            };
            atoms.push(atom);
        }
        schema_column
            .ty
            .normalize(Value::Set(atoms))
            .map_err(|source| PlanError::BadValue {
                at: RowAt::boxed(ctx.key.clone(), ctx.row.table.clone(), ctx.row.id.clone()),
                column: column.to_owned(),
                source,
            })
    }

    /// A desired (or owned) row by table and id: its UUID, or its name when new.
    fn resolve_desired(
        &self,
        ctx: &RowCtx<'_>,
        (column, table, id): (&str, &str, &str),
        strong: bool,
        unit_locs: &[Loc<'v>],
        decided: &mut Decided<'v>,
        uses: &mut Vec<RowPos>,
    ) -> Result<Atom, PlanError> {
        let Some(&(u, r)) = self.index.get(&(table, id)) else {
            // Not desired in this plan: one of this controller's rows.
            let Some(uuid) = find_owned(self.view, self.controller, table, id) else {
                return Err(self.dangling(ctx, column, format!("{table} id={id:?}")));
            };
            decided.outside.push(OutsideRef {
                uuid,
                at: (ctx.unit, ctx.index),
                column: column.to_owned(),
                target: format!("{table} id={id:?}"),
            });
            return Ok(Atom::Uuid(uuid));
        };
        let loc = if u == ctx.unit {
            unit_locs.get(r as usize).copied().unwrap_or(Loc::New)
        } else {
            *decided
                .elsewhere
                .entry((u, r))
                .or_insert_with(|| locate_row(self.view, self.controller, table, id, None).0)
        };
        if loc == Loc::New && self.skipped.get(u as usize).copied().unwrap_or(false) {
            decided.unskip.push(u);
        }
        Ok(match loc {
            Loc::Existing { uuid, .. } => Atom::Uuid(uuid),
            Loc::New => {
                if strong {
                    decided.referenced.push((u, r));
                }
                if u != ctx.unit {
                    let root = self.view.schema().table(table).is_none_or(|t| t.is_root);
                    decided.deps.push(Dep {
                        consumer: ctx.unit,
                        provider: u,
                        bundle: strong && !root,
                    });
                }
                uses.push((u, r));
                Atom::NamedUuid(new_row_name(u, r))
            }
        })
    }

    fn dangling(&self, ctx: &RowCtx<'_>, column: &str, target: String) -> PlanError {
        PlanError::DanglingRef {
            at: RowAt::boxed(ctx.key.clone(), ctx.row.table.clone(), ctx.row.id.clone()),
            column: column.to_owned(),
            target,
        }
    }

    /// Mutations that make a reference set hold `want`, removing only elements this
    /// controller owns (elements of other owners stay).
    fn set_mutations(
        &self,
        current: Option<&Value>,
        column: &str,
        schema_column: &ColumnSchema,
        want: Value,
        mutations: &mut Vec<Mutation>,
    ) {
        let Value::Set(want) = want else {
            return;
        };
        let have: &[Atom] = match current {
            Some(Value::Set(atoms)) => atoms,
            _ => &[],
        };
        let ref_table = schema_column.ty.reference().map_or("", |(t, _)| t);
        let (insert, delete) = set_difference(have, want);
        let delete: Vec<Atom> = delete
            .into_iter()
            .filter(|atom| match atom {
                Atom::Uuid(uuid) => self
                    .view
                    .row(ref_table, uuid)
                    .is_some_and(|row| owned_by(row, self.controller).is_some()),
                _ => false,
            })
            .collect();
        if !delete.is_empty() {
            mutations.push(Mutation {
                column: column.to_owned(),
                mutator: Mutator::Delete,
                value: Value::Set(delete),
            });
        }
        if !insert.is_empty() {
            mutations.push(Mutation {
                column: column.to_owned(),
                mutator: Mutator::Insert,
                value: Value::Set(insert),
            });
        }
    }
}

/// The non-reference columns (but `external_ids`) of the desired row that `current` does
/// not hold. The desired columns, the row and the schema are all sorted by column name: one
/// pass over each.
fn changed_columns(
    ctx: &RowCtx<'_>,
    table: Option<&TableSchema>,
    current: &Row,
) -> Result<Vec<String>, PlanError> {
    let mut have = Cursor::new(current);
    let mut schema_columns = Cursor::new(table.map(|t| &t.columns));
    let mut columns = Vec::new();
    for (column, want) in &ctx.row.columns {
        if column == EXTERNAL_IDS {
            continue;
        }
        let Some(schema_column) = schema_columns.seek(column) else {
            continue;
        };
        if !holds(have.seek(column), schema_column, want) {
            if !schema_column.mutable {
                return Err(PlanError::ImmutableColumn {
                    at: RowAt::boxed(ctx.key.clone(), ctx.row.table.clone(), ctx.row.id.clone()),
                    column: column.clone(),
                });
            }
            columns.push(column.clone());
        }
    }
    Ok(columns)
}

/// Whether a column holding `have` (absent: its default) holds `want`.
fn holds(have: Option<&Value>, schema_column: &ColumnSchema, want: &Value) -> bool {
    match have {
        Some(have) => have == want,
        None => *want == schema_column.ty.default_value(),
    }
}

/// For two canonical (sorted, deduplicated) sets: (want \ have, have \ want).
fn set_difference(have: &[Atom], want: Vec<Atom>) -> (Vec<Atom>, Vec<Atom>) {
    let mut insert = Vec::new();
    let mut delete = Vec::new();
    let mut have = have.iter().peekable();
    for atom in want {
        loop {
            match have.peek() {
                Some(h) if atom_cmp(h, &atom) == Ordering::Less => {
                    delete.push((*h).clone());
                    have.next();
                }
                Some(h) if atom_cmp(h, &atom) == Ordering::Equal => {
                    have.next();
                    break;
                }
                _ => {
                    insert.push(atom);
                    break;
                }
            }
        }
    }
    delete.extend(have.cloned());
    (insert, delete)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(n: u128) -> Atom {
        Atom::Uuid(Uuid::from_u128(n))
    }

    #[test]
    fn set_difference_of_sorted_sets() {
        let (insert, delete) = set_difference(
            &[u(1), u(3), u(5)],
            vec![u(2), u(3), u(6), Atom::NamedUuid("r0".into())],
        );
        assert_eq!(insert, vec![u(2), u(6), Atom::NamedUuid("r0".into())]);
        assert_eq!(delete, vec![u(1), u(5)]);
        let (insert, delete) = set_difference(&[], vec![]);
        assert!(insert.is_empty() && delete.is_empty());
    }
}
