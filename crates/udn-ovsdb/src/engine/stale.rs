//! Removing owned rows nobody wants: rows of root tables are deleted; rows of other tables
//! go when no strong reference holds them, so the references are removed from every row
//! that holds one and is not going away itself.

use std::collections::BTreeMap;

use super::desired::DesiredUnit;
use super::hasher::{FastMap, FastSet};
use super::owned::OwnedRow;
use super::view::OwnedRowsView;
use crate::protocol::{Atom, Uuid, Value};
use crate::schema::RefType;

/// What to remove from one reference column of a row holding references to stale rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Removal {
    /// Elements of a set.
    Set(Vec<Atom>),
    /// Pairs of a map.
    Map(Vec<(Atom, Atom)>),
}

/// The removals of one unit.
#[derive(Debug, Default)]
pub(crate) struct StalePlan<'v> {
    /// Rows of root tables to delete.
    pub(crate) deletes: Vec<OwnedRow<'v>>,
    /// Referrer (table, row) to column to what to remove.
    pub(crate) detach: BTreeMap<(String, Uuid), BTreeMap<String, Removal>>,
    /// Rows of non-root tables that go with their references (for the plan display).
    pub(crate) released: Vec<OwnedRow<'v>>,
}

/// Owned rows to remove: per unit, and all of them.
#[derive(Debug, Default)]
pub(crate) struct Stale<'v> {
    pub(crate) per_unit: Vec<Vec<OwnedRow<'v>>>,
    pub(crate) all: FastSet<Uuid>,
}

/// Plans the removal of every stale row, per unit. `matched` are the existing rows desired
/// rows are, by position.
pub(crate) fn plan_stale<'v, V: OwnedRowsView>(
    view: &V,
    units: &[DesiredUnit],
    matched: &FastMap<Uuid, (u32, u32)>,
    stale: &Stale<'v>,
) -> Vec<StalePlan<'v>> {
    let schema = view.schema();
    let mut plans = Vec::with_capacity(stale.per_unit.len());
    for rows in &stale.per_unit {
        let mut plan = StalePlan::default();
        for row in rows {
            if schema.table(row.table).is_none_or(|t| t.is_root) {
                plan.deletes.push(*row);
                continue;
            }
            plan.released.push(*row);
            for (table, referrer, column) in view.referrers(&row.uuid) {
                if stale.all.contains(&referrer) {
                    continue;
                }
                let Some(schema_column) = schema.column(&table, &column) else {
                    continue;
                };
                let strong = [Some(&schema_column.ty.key), schema_column.ty.value.as_ref()]
                    .into_iter()
                    .flatten()
                    .any(|base| {
                        base.ref_table.as_deref() == Some(row.table)
                            && base.ref_type == RefType::Strong
                    });
                if !strong || managed_by_plan(units, matched, &referrer, &column) {
                    continue;
                }
                let removal = removal(
                    view,
                    (&table, &referrer, &column),
                    schema_column.ty.is_map(),
                    row.uuid,
                );
                let columns = plan.detach.entry((table, referrer)).or_default();
                match (columns.get_mut(&column), removal) {
                    (Some(Removal::Set(have)), Removal::Set(more)) => have.extend(more),
                    (Some(Removal::Map(have)), Removal::Map(more)) => have.extend(more),
                    (_, removal) => {
                        columns.insert(column, removal);
                    }
                }
            }
        }
        plans.push(plan);
    }
    plans
}

/// What to remove from `column` of the `referrer` row of `table` so that it no longer
/// refers to `target`.
fn removal(
    view: &impl OwnedRowsView,
    (table, referrer, column): (&str, &Uuid, &str),
    is_map: bool,
    target: Uuid,
) -> Removal {
    if !is_map {
        return Removal::Set(vec![Atom::Uuid(target)]);
    }
    let target = Atom::Uuid(target);
    let pairs = match view.row(table, referrer).and_then(|r| r.get(column)) {
        Some(Value::Map(pairs)) => pairs
            .iter()
            .filter(|(k, v)| *k == target || *v == target)
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    Removal::Map(pairs)
}

/// Whether `referrer` is a desired row whose plan already sets `column` (its diff removes
/// owned elements it does not want).
fn managed_by_plan(
    units: &[DesiredUnit],
    matched: &FastMap<Uuid, (u32, u32)>,
    referrer: &Uuid,
    column: &str,
) -> bool {
    matched
        .get(referrer)
        .and_then(|&(u, r)| units.get(u as usize)?.rows.get(r as usize))
        .is_some_and(|row| row.refs.contains_key(column))
}
