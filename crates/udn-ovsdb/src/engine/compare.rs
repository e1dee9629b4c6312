//! Comparing desired units with the database: every unit not known converged is diffed,
//! the owned rows no desired row is are found, and skipped units that turn out to need a
//! comparison after all are compared too.

use super::Engine;
use super::converged::Known;
use super::desired::{DesiredUnit, Scope, UnitKey};
use super::diff::{Diff, Lookup, RowPos, index_rows};
use super::error::{PlanError, RowAt};
use super::hasher::FastMap;
use super::owned::{Foreign, Loc, OwnedRow, unmatched_rows};
use super::skip::skipped_referrers;
use super::stale::Stale;
use super::validate::check_rows;
use super::view::OwnedRowsView;
use crate::protocol::Uuid;

/// What comparing found.
#[derive(Debug)]
pub(crate) struct Compared<'v> {
    pub(crate) diff: Diff<'v>,
    /// Existing rows that desired rows are, by position.
    pub(crate) matched: FastMap<Uuid, RowPos>,
    pub(crate) stale: Stale<'v>,
    /// Units of the scope's owner types no longer desired (their rows are in `stale`, after
    /// the desired units').
    pub(crate) gone: Vec<UnitKey>,
    pub(crate) foreign: Foreign,
}

/// Checks and compares the units `known` does not skip. Usually one pass; another when a
/// skipped unit needs a comparison (a row of it the plan removes, or one that should exist
/// and does not): it is then checked and compared like the others.
pub(crate) fn compare<'v, V: OwnedRowsView>(
    view: &'v V,
    engine: &Engine,
    units: &mut [DesiredUnit],
    scope: &Scope,
    known: &mut Known,
) -> Result<Compared<'v>, PlanError> {
    let controller = engine.controller.as_str();
    let mut check: Vec<bool> = known.skipped.iter().map(|skip| !skip).collect();
    loop {
        check_rows(view.schema(), &engine.row_owner_types, units, &check)?;
        let diff = Lookup {
            view,
            controller,
            units,
            index: index_rows(units)?,
            skipped: &known.skipped,
        }
        .diff()?;
        let matched = matched_rows(&diff);
        let ((unmatched, gone), foreign) =
            unmatched_rows(view, engine, units, &known.skipped, scope, &matched);
        let (gone, gone_rows): (Vec<UnitKey>, Vec<_>) = gone.into_iter().unzip();
        let stale = stale_rows(&diff, unmatched, gone_rows);
        let mut unskip = diff.unskip.clone();
        unskip.extend(skipped_referrers(
            view,
            (controller, &engine.row_owner_types),
            units,
            &known.skipped,
            &stale,
        ));
        if unskip.is_empty() {
            return Ok(Compared {
                diff,
                matched,
                stale,
                gone,
                foreign,
            });
        }
        check = vec![false; units.len()];
        for u in unskip {
            if let (Some(skip), Some(c)) =
                (known.skipped.get_mut(u as usize), check.get_mut(u as usize))
            {
                *skip = false;
                *c = true;
            }
        }
    }
}

/// Existing rows that desired rows are, by position.
fn matched_rows(diff: &Diff<'_>) -> FastMap<Uuid, RowPos> {
    let mut matched = FastMap::default();
    for (u, unit) in (0u32..).zip(&diff.units) {
        for (r, loc) in (0u32..).zip(&unit.locs) {
            if let Loc::Existing { uuid, .. } = loc {
                matched.insert(*uuid, (u, r));
            }
        }
    }
    matched
}

/// The owned rows to remove: unmatched rows of the desired units (in order) and of the
/// units no longer desired (after them), and duplicates of desired rows, each once.
fn stale_rows<'v>(
    diff: &Diff<'v>,
    unmatched: Vec<Vec<OwnedRow<'v>>>,
    gone: Vec<Vec<OwnedRow<'v>>>,
) -> Stale<'v> {
    let mut stale = Stale::default();
    for (u, rows) in unmatched.into_iter().chain(gone).enumerate() {
        let duplicates = diff
            .units
            .get(u)
            .map(|unit| unit.duplicates.as_slice())
            .unwrap_or_default();
        let mut kept = Vec::with_capacity(rows.len() + duplicates.len());
        for row in rows.into_iter().chain(duplicates.iter().copied()) {
            if stale.all.insert(row.uuid) {
                kept.push(row);
            }
        }
        stale.per_unit.push(kept);
    }
    stale
}

/// References to rows outside the plan must not target rows the plan deletes.
pub(crate) fn check_outside(
    units: &[DesiredUnit],
    diff: &Diff<'_>,
    stale: &Stale<'_>,
) -> Result<(), PlanError> {
    let Some(bad) = diff.outside.iter().find(|o| stale.all.contains(&o.uuid)) else {
        return Ok(());
    };
    let (u, r) = bad.at;
    let unit = units.get(u as usize);
    let row = unit.and_then(|unit| unit.rows.get(r as usize));
    Err(PlanError::DanglingRef {
        at: RowAt::boxed(
            unit.map(|unit| unit.key.clone())
                .unwrap_or_else(|| UnitKey::new("", "")),
            row.map(|row| row.table.clone()).unwrap_or_default(),
            row.map(|row| row.id.clone()).unwrap_or_default(),
        ),
        column: bad.column.clone(),
        target: bad.target.clone(),
    })
}

/// Every new row of a non-root table must be strongly referenced by a desired row, or the
/// server collects it at once.
pub(crate) fn check_referenced(
    view: &impl OwnedRowsView,
    units: &[DesiredUnit],
    diff: &Diff<'_>,
) -> Result<(), PlanError> {
    let schema = view.schema();
    for ((u, unit), found) in (0u32..).zip(units).zip(&diff.units) {
        for ((r, row), loc) in (0u32..).zip(&unit.rows).zip(&found.locs) {
            let root = schema.table(&row.table).is_none_or(|t| t.is_root);
            if *loc == Loc::New && !root && !diff.referenced.contains(&(u, r)) {
                return Err(PlanError::Unreferenced {
                    at: RowAt::boxed(unit.key.clone(), row.table.clone(), row.id.clone()),
                });
            }
        }
    }
    Ok(())
}
