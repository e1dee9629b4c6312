//! The rows this controller owns in scope, found through the indexed ownership stamps, and
//! which of them each desired row is (or whether it is new).

use super::desired::{DesiredUnit, Scope, UnitKey};
use super::hasher::{FastMap, FastSet};
use super::parallel::{map_ranges, split_even, workers};
use super::stamps::{ID_KEY, OWNER_KEY, OWNER_TYPE_KEY, external_id, owned_by};
use super::validate::is_ownable;
use super::view::OwnedRowsView;
use crate::protocol::{Row, Uuid};

/// One owned row of a unit in scope.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnedRow<'v> {
    pub(crate) table: &'v str,
    pub(crate) uuid: Uuid,
    pub(crate) id: Option<&'v str>,
    pub(crate) row: &'v Row,
}

/// Owned rows of the units in scope.
#[derive(Debug, Default)]
pub(crate) struct Owned<'v> {
    /// Per unit (same index as the units), its rows.
    pub(crate) per_unit: Vec<Vec<OwnedRow<'v>>>,
    /// (table, row id) to the row (the smallest UUID when several rows claim one id).
    pub(crate) by_id: FastMap<(&'v str, &'v str), (Uuid, &'v Row)>,
}

/// Where a desired row lives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Loc<'v> {
    /// It exists already.
    Existing(Uuid, &'v Row),
    /// It is inserted, named `r<N>`.
    New(u32),
}

/// Desired rows located in the database, and the owned rows nobody wants any more.
#[derive(Debug, Default)]
pub(crate) struct Located<'v> {
    /// Per unit, per row.
    pub(crate) loc: Vec<Vec<Loc<'v>>>,
    /// Existing rows matched by a desired row: (unit, row).
    pub(crate) matched: FastMap<Uuid, (u32, u32)>,
    /// Per unit, its owned rows to remove.
    pub(crate) stale: Vec<Vec<OwnedRow<'v>>>,
    /// Every stale row.
    pub(crate) stale_set: FastSet<Uuid>,
    /// New rows by name number: (unit, row).
    pub(crate) new_rows: Vec<(u32, u32)>,
}

/// Tables whose rows can be owned, in schema order.
pub(crate) fn ownable_tables(view: &impl OwnedRowsView) -> Vec<&str> {
    view.schema()
        .tables
        .iter()
        .filter(|(_, t)| is_ownable(t))
        .map(|(name, _)| name.as_str())
        .collect()
}

/// Collects the owned rows of the units in scope. With [`Scope::OwnerType`], units of that
/// type found in the database but not desired are appended to `units` with no rows (sorted
/// by name), so that they are deleted.
pub(crate) fn collect_owned<'v, V: OwnedRowsView>(
    view: &'v V,
    controller: &str,
    units: &mut Vec<DesiredUnit>,
    scope: &Scope,
) -> Owned<'v> {
    let tables = ownable_tables(view);
    let mut per_unit: Vec<Vec<OwnedRow<'v>>> = match scope {
        Scope::Units => {
            let ranges = split_even(units.len(), workers(units.len() * 100));
            map_ranges(&ranges, |range| {
                units
                    .get(range)
                    .unwrap_or_default()
                    .iter()
                    .map(|unit| owned_rows_of(view, controller, &tables, &unit.key))
                    .collect::<Vec<_>>()
            })
            .into_iter()
            .flatten()
            .collect()
        }
        Scope::OwnerType(owner_type) => {
            let found = owned_of_type(view, controller, &tables, owner_type);
            let mut position: FastMap<&str, usize> = units
                .iter()
                .enumerate()
                .map(|(i, unit)| (unit.key.name.as_str(), i))
                .collect();
            let mut per_unit: Vec<Vec<OwnedRow<'v>>> = vec![Vec::new(); units.len()];
            let mut gone: Vec<&'v str> = Vec::new();
            for (owner, row) in found {
                let at = *position.entry(owner).or_insert_with(|| {
                    gone.push(owner);
                    per_unit.push(Vec::new());
                    per_unit.len() - 1
                });
                if let Some(rows) = per_unit.get_mut(at) {
                    rows.push(row);
                }
            }
            // Units found only in the database, in name order.
            let first_gone = units.len();
            let mut found: Vec<(&'v str, Vec<OwnedRow<'v>>)> =
                gone.into_iter().zip(per_unit.drain(first_gone..)).collect();
            found.sort_by(|a, b| a.0.cmp(b.0));
            for (name, rows) in found {
                units.push(DesiredUnit::new(UnitKey::new(owner_type.clone(), name)));
                per_unit.push(rows);
            }
            per_unit
        }
    };
    let table_rank: FastMap<&str, usize> =
        tables.iter().enumerate().map(|(i, t)| (*t, i)).collect();
    let mut by_id: FastMap<(&'v str, &'v str), (Uuid, &'v Row)> = FastMap::default();
    for rows in &mut per_unit {
        // Deterministic order whatever the view's lookup order (usually sorted already).
        let rank = |row: &OwnedRow<'_>| (table_rank.get(row.table).copied(), row.uuid);
        if !rows.is_sorted_by_key(rank) {
            rows.sort_by_key(rank);
        }
        for row in rows.iter() {
            if let Some(id) = row.id {
                by_id
                    .entry((row.table, id))
                    .and_modify(|kept| {
                        if row.uuid < kept.0 {
                            *kept = (row.uuid, row.row);
                        }
                    })
                    .or_insert((row.uuid, row.row));
            }
        }
    }
    Owned { per_unit, by_id }
}

/// This controller's rows of owner type `owner_type`, with their owner, in table then
/// lookup order (rows read on a few threads for large databases).
fn owned_of_type<'v, V: OwnedRowsView>(
    view: &'v V,
    controller: &str,
    tables: &[&'v str],
    owner_type: &str,
) -> Vec<(&'v str, OwnedRow<'v>)> {
    let candidates: Vec<(&'v str, Uuid)> = tables
        .iter()
        .flat_map(|table| {
            view.find(table, OWNER_TYPE_KEY, owner_type)
                .into_iter()
                .map(move |uuid| (*table, uuid))
        })
        .collect();
    let ranges = split_even(candidates.len(), workers(candidates.len()));
    map_ranges(&ranges, |range| {
        candidates
            .get(range)
            .unwrap_or_default()
            .iter()
            .filter_map(|&(table, uuid)| {
                let row = view.row(table, &uuid)?;
                let stamps = owned_by(row, controller)?;
                let owner = stamps.owner?;
                (stamps.owner_type == Some(owner_type)).then_some((
                    owner,
                    OwnedRow {
                        table,
                        uuid,
                        id: stamps.id,
                        row,
                    },
                ))
            })
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect()
}

fn owned_rows_of<'v, V: OwnedRowsView>(
    view: &'v V,
    controller: &str,
    tables: &[&'v str],
    key: &UnitKey,
) -> Vec<OwnedRow<'v>> {
    let mut out = Vec::new();
    for table in tables {
        for uuid in view.find(table, OWNER_KEY, &key.name) {
            let Some(row) = view.row(table, &uuid) else {
                continue;
            };
            let Some(stamps) = owned_by(row, controller) else {
                continue;
            };
            if stamps.owner_type == Some(key.owner_type.as_str()) {
                out.push(OwnedRow {
                    table,
                    uuid,
                    id: stamps.id,
                    row,
                });
            }
        }
    }
    out
}

/// This controller's rows of `table` with row id `id`, smallest UUID first.
pub(crate) fn find_by_id<'v>(
    view: &'v impl OwnedRowsView,
    controller: &str,
    table: &str,
    id: &str,
) -> Vec<(Uuid, &'v Row)> {
    let mut found: Vec<(Uuid, &'v Row)> = view
        .find(table, ID_KEY, id)
        .into_iter()
        .filter_map(|uuid| {
            let row = view.row(table, &uuid)?;
            owned_by(row, controller).map(|_| (uuid, row))
        })
        .collect();
    found.sort_by_key(|(uuid, _)| *uuid);
    found
}

/// Matches every desired row with its existing row (by table and row id among this
/// controller's rows) or names it as new; the owned rows left over are stale. Extra rows
/// claiming the id of a desired row (duplicates) are stale too.
pub(crate) fn locate<'v, V: OwnedRowsView>(
    view: &'v V,
    controller: &str,
    units: &[DesiredUnit],
    owned: &Owned<'v>,
) -> Located<'v> {
    let rows: usize = units.iter().map(|u| u.rows.len()).sum();
    let mut located = Located {
        stale: vec![Vec::new(); units.len()],
        matched: FastMap::with_capacity_and_hasher(rows, Default::default()),
        ..Located::default()
    };
    let mut extra: Vec<(u32, OwnedRow<'v>)> = Vec::new();
    for (u, unit) in (0u32..).zip(units) {
        let mut locs = Vec::with_capacity(unit.rows.len());
        for (r, row) in (0u32..).zip(&unit.rows) {
            let existing = match owned.by_id.get(&(row.table.as_str(), row.id.as_str())) {
                Some(found) => Some(*found),
                None => {
                    let mut found = find_by_id(view, controller, &row.table, &row.id).into_iter();
                    let first = found.next();
                    if let Some(table) = schema_table_name(view, &row.table) {
                        for (uuid, duplicate) in found {
                            let id = external_id(duplicate, ID_KEY);
                            extra.push((
                                u,
                                OwnedRow {
                                    table,
                                    uuid,
                                    id,
                                    row: duplicate,
                                },
                            ));
                        }
                    }
                    first
                }
            };
            locs.push(match existing {
                Some((uuid, current)) => {
                    located.matched.insert(uuid, (u, r));
                    Loc::Existing(uuid, current)
                }
                None => {
                    let name = u32::try_from(located.new_rows.len()).unwrap_or(u32::MAX);
                    located.new_rows.push((u, r));
                    Loc::New(name)
                }
            });
        }
        located.loc.push(locs);
    }
    for (rows, stale) in owned.per_unit.iter().zip(located.stale.iter_mut()) {
        for row in rows {
            if !located.matched.contains_key(&row.uuid) && located.stale_set.insert(row.uuid) {
                stale.push(*row);
            }
        }
    }
    for (u, row) in extra {
        if !located.matched.contains_key(&row.uuid)
            && located.stale_set.insert(row.uuid)
            && let Some(stale) = located.stale.get_mut(u as usize)
        {
            stale.push(row);
        }
    }
    located
}

/// The schema's own copy of a table name (lives as long as the view).
fn schema_table_name<'v>(view: &'v impl OwnedRowsView, table: &str) -> Option<&'v str> {
    view.schema()
        .tables
        .get_key_value(table)
        .map(|(name, _)| name.as_str())
}
