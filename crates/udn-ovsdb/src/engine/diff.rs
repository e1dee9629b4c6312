//! Per desired row: resolve its references and compare it with the existing row, column by
//! column, in canonical form.

use std::cmp::Ordering;
use std::ops::Range;

use super::cursor::Cursor;
use super::desired::{DesiredRow, DesiredUnit, RowRef, UnitKey};
use super::error::{PlanError, RowAt};
use super::hasher::FastMap;
use super::owned::{Loc, Located, Owned, find_by_id};
use super::parallel::{map_ranges, split, workers};
use super::stamps::{EXTERNAL_IDS, Stamp, owned_by};
use super::view::OwnedRowsView;
use crate::protocol::{Atom, Mutation, Mutator, Uuid, Value};
use crate::schema::{ColumnSchema, RefType, atom_cmp};

/// What to do with one desired row.
#[derive(Debug)]
pub(crate) enum RowDecision {
    /// Insert it, with these resolved reference columns; `uses` are the new rows (by name
    /// number) it refers to.
    Insert {
        refs: Vec<(String, Value)>,
        uses: Vec<u32>,
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

/// The decisions for every desired row.
#[derive(Debug, Default)]
pub(crate) struct Diff {
    /// Per unit, per row.
    pub(crate) rows: Vec<Vec<RowDecision>>,
    /// Cross-unit references to new rows.
    pub(crate) deps: Vec<Dep>,
}

/// Everything the diff looks things up in.
pub(crate) struct Lookup<'a, 'v, V> {
    pub(crate) view: &'v V,
    pub(crate) controller: &'a str,
    pub(crate) units: &'a [DesiredUnit],
    pub(crate) index: RowIndex<'a>,
    pub(crate) owned: &'a Owned<'v>,
    pub(crate) located: &'a Located<'v>,
}

/// Desired rows by (table, row id): (unit, row).
pub(crate) type RowIndex<'a> = FastMap<(&'a str, &'a str), (u32, u32)>;

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

struct RowCtx<'r> {
    unit: u32,
    key: &'r UnitKey,
    row: &'r DesiredRow,
}

/// What deciding a range of units found.
#[derive(Debug, Default)]
struct Decided {
    rows: Vec<Vec<RowDecision>>,
    deps: Vec<Dep>,
    /// New rows (by name number) strongly referenced by a desired row.
    referenced: Vec<u32>,
}

impl<V: OwnedRowsView> Lookup<'_, '_, V> {
    /// Decides every desired row (ranges of units on a few threads for large plans).
    pub(crate) fn diff(&self) -> Result<Diff, PlanError> {
        let weights: Vec<usize> = self.units.iter().map(|u| u.rows.len()).collect();
        let ranges = split(&weights, workers(weights.iter().sum()));
        let mut diff = Diff::default();
        let mut referenced = vec![false; self.located.new_rows.len()];
        for part in map_ranges(&ranges, |range| self.decide_units(range)) {
            let part = part?;
            diff.rows.extend(part.rows);
            diff.deps.extend(part.deps);
            for name in part.referenced {
                if let Some(seen) = referenced.get_mut(name as usize) {
                    *seen = true;
                }
            }
        }
        self.check_referenced(&referenced)?;
        diff.deps.sort_unstable();
        diff.deps.dedup();
        Ok(diff)
    }

    fn decide_units(&self, range: Range<usize>) -> Result<Decided, PlanError> {
        let mut decided = Decided::default();
        let units = self.units.get(range.clone()).unwrap_or_default();
        let locs = self.located.loc.get(range.clone()).unwrap_or_default();
        for ((u, unit), locs) in (0u32..).skip(range.start).zip(units).zip(locs) {
            let mut decisions = Vec::with_capacity(unit.rows.len());
            for (row, loc) in unit.rows.iter().zip(locs) {
                let ctx = RowCtx {
                    unit: u,
                    key: &unit.key,
                    row,
                };
                decisions.push(self.decide(&ctx, *loc, &mut decided)?);
            }
            decided.rows.push(decisions);
        }
        Ok(decided)
    }

    fn check_referenced(&self, referenced: &[bool]) -> Result<(), PlanError> {
        let schema = self.view.schema();
        for (&(u, r), seen) in self.located.new_rows.iter().zip(referenced) {
            let Some(unit) = self.units.get(u as usize) else {
                continue;
            };
            let Some(row) = unit.rows.get(r as usize) else {
                continue;
            };
            let root = schema.table(&row.table).is_none_or(|t| t.is_root);
            if !root && !seen {
                return Err(PlanError::Unreferenced {
                    at: RowAt::boxed(unit.key.clone(), row.table.clone(), row.id.clone()),
                });
            }
        }
        Ok(())
    }

    fn decide(
        &self,
        ctx: &RowCtx<'_>,
        loc: Loc<'_>,
        decided: &mut Decided,
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
            let value =
                self.resolve_column(ctx, column, schema_column, targets, decided, &mut uses)?;
            resolved.push((column.as_str(), schema_column, value));
        }
        let (uuid, current) = match loc {
            Loc::New(_) => {
                return Ok(RowDecision::Insert {
                    refs: resolved
                        .into_iter()
                        .map(|(c, _, v)| (c.to_owned(), v))
                        .collect(),
                    uses,
                });
            }
            Loc::Existing(uuid, current) => (uuid, current),
        };
        // Desired columns, the row and the schema are all sorted by column name: one pass.
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
                        at: RowAt::boxed(
                            ctx.key.clone(),
                            ctx.row.table.clone(),
                            ctx.row.id.clone(),
                        ),
                        column: column.clone(),
                    });
                }
                columns.push(column.clone());
            }
        }
        let caller_ids = match ctx.row.columns.get(EXTERNAL_IDS) {
            Some(Value::Map(pairs)) => pairs.as_slice(),
            _ => &[],
        };
        let stamp = Stamp {
            controller: self.controller,
            owner_type: &ctx.key.owner_type,
            owner: &ctx.key.name,
            id: &ctx.row.id,
        };
        if !stamp.holds(current.get(EXTERNAL_IDS), caller_ids) {
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
        column: &str,
        schema_column: &ColumnSchema,
        targets: &[RowRef],
        decided: &mut Decided,
        uses: &mut Vec<u32>,
    ) -> Result<Value, PlanError> {
        let Some((ref_table, ref_type)) = schema_column.ty.reference() else {
            return Ok(Value::Set(Vec::new()));
        };
        let strong = ref_type == RefType::Strong;
        let mut atoms = Vec::with_capacity(targets.len());
        for target in targets {
            let atom = match target {
                RowRef::Existing(uuid) => {
                    if self.located.stale_set.contains(uuid)
                        || self.view.row(ref_table, uuid).is_none()
                    {
                        return Err(self.dangling(ctx, column, uuid.to_string()));
                    }
                    Atom::Uuid(*uuid)
                }
                RowRef::Desired { table, id } => {
                    match self.resolve_desired(ctx.unit, table, id, strong, decided) {
                        Some((atom, new)) => {
                            if let Some(name) = new {
                                uses.push(name);
                            }
                            atom
                        }
                        None => {
                            return Err(self.dangling(ctx, column, format!("{table} id={id:?}")));
                        }
                    }
                }
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
        consumer: u32,
        table: &str,
        id: &str,
        strong: bool,
        decided: &mut Decided,
    ) -> Option<(Atom, Option<u32>)> {
        if let Some(&(u, r)) = self.index.get(&(table, id)) {
            let loc = self.located.loc.get(u as usize)?.get(r as usize)?;
            return Some(match *loc {
                Loc::Existing(uuid, _) => (Atom::Uuid(uuid), None),
                Loc::New(name) => {
                    if strong {
                        decided.referenced.push(name);
                    }
                    if u != consumer {
                        let root = self.view.schema().table(table).is_none_or(|t| t.is_root);
                        decided.deps.push(Dep {
                            consumer,
                            provider: u,
                            bundle: strong && !root,
                        });
                    }
                    (Atom::NamedUuid(format!("r{name}")), Some(name))
                }
            });
        }
        let uuid = match self.owned.by_id.get(&(table, id)) {
            Some((uuid, _)) => *uuid,
            None => {
                find_by_id(self.view, self.controller, table, id)
                    .into_iter()
                    .next()?
                    .0
            }
        };
        (!self.located.stale_set.contains(&uuid)).then_some((Atom::Uuid(uuid), None))
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
