//! Which units a plan may leave out, and what it learns for the next: the work each unit
//! has, the converged units to remember, and the skipped units that must be compared after
//! all because a row the plan removes is referred to by one of their rows.

use super::converged::{Findings, Known, ScopeFindings};
use super::desired::{DesiredUnit, Scope};
use super::diff::{Diff, RowDecision};
use super::hasher::FastMap;
use super::owned::Foreign;
use super::owner_types::RowOwnerTypes;
use super::parallel::{map_ranges, split, workers};
use super::stale::{Stale, StalePlan};
use super::stamps::owned_by;
use super::view::OwnedRowsView;

/// Per unit: whether the plan changes anything of it (rows to insert, update or mutate,
/// owned rows to remove).
pub(crate) fn unit_work(diff: &Diff<'_>, stale: &[StalePlan<'_>]) -> Vec<bool> {
    let mut work: Vec<bool> = diff
        .units
        .iter()
        .map(|unit| {
            unit.decisions.iter().any(|decision| match decision {
                RowDecision::Insert { .. } => true,
                RowDecision::Existing {
                    columns,
                    refs,
                    mutations,
                    ..
                } => !columns.is_empty() || !refs.is_empty() || !mutations.is_empty(),
            })
        })
        .collect();
    for (slot, plan) in work.iter_mut().zip(stale) {
        *slot |= !plan.deletes.is_empty() || !plan.detach.is_empty() || !plan.released.is_empty();
    }
    work
}

/// What to remember of a plan: the compared desired units with nothing to do (at the
/// version read for them) and, for whole owner types, which units are desired and which
/// (type, name) own none of our rows.
pub(crate) fn findings(
    units: &[DesiredUnit],
    desired: usize,
    known: &Known,
    work: &[bool],
    scope: &Scope,
    foreign: Foreign,
) -> Findings {
    let converged = (0..desired)
        .filter(|u| {
            !known.skipped.get(*u).copied().unwrap_or(true)
                && !work.get(*u).copied().unwrap_or(true)
        })
        .filter_map(|u| {
            Some((
                units.get(u)?.key.clone(),
                *known.fingerprints.get(u)?,
                (*known.versions.get(u)?)?,
            ))
        })
        .collect();
    let scope = scope.covered().map(|owner_types| ScopeFindings {
        owner_types: owner_types.into_iter().map(str::to_owned).collect(),
        desired: units
            .iter()
            .take(desired)
            .map(|unit| unit.key.clone())
            .collect(),
        foreign,
    });
    Findings { converged, scope }
}

/// Skipped units holding a reference to a row the plan removes: their rows refer to what
/// they want, so the row is one they want (e.g. a duplicate the plan reduces): they must
/// be compared, to refer to the row that stays or to fail as a compared unit would.
pub(crate) fn skipped_referrers<V: OwnedRowsView>(
    view: &V,
    (controller, row_types): (&str, &RowOwnerTypes),
    units: &[DesiredUnit],
    skipped: &[bool],
    stale: &Stale<'_>,
) -> Vec<u32> {
    if stale.all.is_empty() || !skipped.iter().any(|skip| *skip) {
        return Vec::new();
    }
    let position: FastMap<(&str, &str), u32> = (0u32..)
        .zip(units)
        .filter(|(u, _)| skipped.get(*u as usize).copied().unwrap_or(false))
        .map(|(u, unit)| ((unit.key.owner_type.as_str(), unit.key.name.as_str()), u))
        .collect();
    let mut out = Vec::new();
    for target in &stale.all {
        for (table, referrer, _) in view.referrers(target) {
            if stale.all.contains(&referrer) {
                continue;
            }
            let Some(stamps) = view
                .row(&table, &referrer)
                .and_then(|row| owned_by(row, controller))
            else {
                continue;
            };
            // A row stamped with a row owner type belongs to a unit of the type it is
            // declared for.
            if let (Some(owner_type), Some(owner)) = (stamps.owner_type, stamps.owner)
                && let Some(&u) = position.get(&(row_types.unit_type(owner_type), owner))
            {
                out.push(u);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Copies of the units with work, with their fingerprints (to verify them after the apply),
/// made on a few threads when they are many.
pub(crate) fn keep_changed(
    units: &[DesiredUnit],
    work: &[bool],
    fingerprints: &[u128],
) -> Vec<(DesiredUnit, u128)> {
    let changed: Vec<(&DesiredUnit, u128)> = units
        .iter()
        .zip(work)
        .zip(fingerprints)
        .filter(|((_, work), _)| **work)
        .map(|((unit, _), fingerprint)| (unit, *fingerprint))
        .collect();
    let weights: Vec<usize> = changed.iter().map(|(unit, _)| unit.rows.len()).collect();
    let ranges = split(&weights, workers(weights.iter().sum()));
    map_ranges(&ranges, |range| {
        changed
            .get(range)
            .unwrap_or_default()
            .iter()
            .map(|(unit, fingerprint)| ((*unit).clone(), *fingerprint))
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect()
}
