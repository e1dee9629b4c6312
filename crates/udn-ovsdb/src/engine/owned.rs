//! The rows this controller owns in scope, found through the indexed ownership stamps, and
//! which of them each desired row is (or whether it is new).

use std::collections::{HashMap, HashSet};

use super::desired::{DesiredUnit, Scope, UnitKey};
use super::stamps::{ID_KEY, OWNER_KEY, OWNER_TYPE_KEY, external_id, owned_by};
use super::validate::is_ownable;
use super::view::OwnedRowsView;
use crate::protocol::Uuid;

/// One owned row of a unit in scope.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnedRow<'v> {
    pub(crate) table: &'v str,
    pub(crate) uuid: Uuid,
    pub(crate) id: Option<&'v str>,
}

/// Owned rows of the units in scope.
#[derive(Debug, Default)]
pub(crate) struct Owned<'v> {
    /// Per unit (same index as the units), its rows.
    pub(crate) per_unit: Vec<Vec<OwnedRow<'v>>>,
    /// (table, row id) to the row (the smallest UUID when several rows claim one id).
    pub(crate) by_id: HashMap<(&'v str, &'v str), Uuid>,
}

/// Where a desired row lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loc {
    /// It exists already.
    Existing(Uuid),
    /// It is inserted, named `r<N>`.
    New(u32),
}

/// Desired rows located in the database, and the owned rows nobody wants any more.
#[derive(Debug, Default)]
pub(crate) struct Located<'v> {
    /// Per unit, per row.
    pub(crate) loc: Vec<Vec<Loc>>,
    /// Existing rows matched by a desired row: (unit, row).
    pub(crate) matched: HashMap<Uuid, (u32, u32)>,
    /// Per unit, its owned rows to remove.
    pub(crate) stale: Vec<Vec<OwnedRow<'v>>>,
    /// Every stale row.
    pub(crate) stale_set: HashSet<Uuid>,
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
        Scope::Units => units
            .iter()
            .map(|unit| owned_rows_of(view, controller, &tables, &unit.key))
            .collect(),
        Scope::OwnerType(owner_type) => {
            let mut by_owner: HashMap<&'v str, Vec<OwnedRow<'v>>> = HashMap::new();
            for table in &tables {
                for uuid in view.find(table, OWNER_TYPE_KEY, owner_type) {
                    let Some(row) = view.row(table, &uuid) else {
                        continue;
                    };
                    let Some(stamps) = owned_by(row, controller) else {
                        continue;
                    };
                    let (Some(owner), Some(row_type)) = (stamps.owner, stamps.owner_type) else {
                        continue;
                    };
                    if row_type == owner_type {
                        by_owner.entry(owner).or_default().push(OwnedRow {
                            table,
                            uuid,
                            id: stamps.id,
                        });
                    }
                }
            }
            let mut per_unit: Vec<Vec<OwnedRow<'v>>> = units
                .iter()
                .map(|unit| by_owner.remove(unit.key.name.as_str()).unwrap_or_default())
                .collect();
            let mut gone: Vec<(&'v str, Vec<OwnedRow<'v>>)> = by_owner.into_iter().collect();
            gone.sort_by(|a, b| a.0.cmp(b.0));
            for (name, rows) in gone {
                units.push(DesiredUnit::new(UnitKey::new(owner_type.clone(), name)));
                per_unit.push(rows);
            }
            per_unit
        }
    };
    let mut by_id: HashMap<(&'v str, &'v str), Uuid> = HashMap::new();
    for rows in &mut per_unit {
        // Deterministic order whatever the view's lookup order.
        rows.sort_by(|a, b| a.table.cmp(b.table).then(a.uuid.cmp(&b.uuid)));
        for row in rows.iter() {
            if let Some(id) = row.id {
                by_id
                    .entry((row.table, id))
                    .and_modify(|u| *u = (*u).min(row.uuid))
                    .or_insert(row.uuid);
            }
        }
    }
    Owned { per_unit, by_id }
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
                });
            }
        }
    }
    out
}

/// This controller's rows of `table` with row id `id`, smallest UUID first.
pub(crate) fn find_by_id(
    view: &impl OwnedRowsView,
    controller: &str,
    table: &str,
    id: &str,
) -> Vec<Uuid> {
    let mut found: Vec<Uuid> = view
        .find(table, ID_KEY, id)
        .into_iter()
        .filter(|uuid| {
            view.row(table, uuid)
                .is_some_and(|row| owned_by(row, controller).is_some())
        })
        .collect();
    found.sort();
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
    let mut located = Located {
        stale: vec![Vec::new(); units.len()],
        ..Located::default()
    };
    let mut extra: Vec<(u32, OwnedRow<'v>)> = Vec::new();
    for (u, unit) in (0u32..).zip(units) {
        let mut locs = Vec::with_capacity(unit.rows.len());
        for (r, row) in (0u32..).zip(&unit.rows) {
            let existing = match owned.by_id.get(&(row.table.as_str(), row.id.as_str())) {
                Some(uuid) => Some(*uuid),
                None => {
                    let mut found = find_by_id(view, controller, &row.table, &row.id).into_iter();
                    let first = found.next();
                    for uuid in found {
                        if let Some(table) = schema_table_name(view, &row.table) {
                            let id = view
                                .row(table, &uuid)
                                .and_then(|existing| external_id(existing, ID_KEY));
                            extra.push((u, OwnedRow { table, uuid, id }));
                        }
                    }
                    first
                }
            };
            locs.push(match existing {
                Some(uuid) => {
                    located.matched.insert(uuid, (u, r));
                    Loc::Existing(uuid)
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
    for ((rows, stale), _) in owned
        .per_unit
        .iter()
        .zip(located.stale.iter_mut())
        .zip(units)
    {
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
