//! The rows this controller owns: the existing row of each desired row (by table and row
//! id, through the indexed `k8s.ovn.org/id` stamp), and the owned rows of the units in
//! scope that no desired row is (stale), found through the owner stamps without reading
//! the rows that are desired.

use std::collections::BTreeSet;

use super::converged::Converged;
use super::desired::{DesiredUnit, Scope, UnitKey};
use super::hasher::{FastMap, FastSet};
use super::parallel::{map_ranges, split_even, workers};
use super::stamps::{EXTERNAL_IDS, ID_KEY, OWNER_KEY, OWNER_TYPE_KEY, Stamp, owned_by};
use super::validate::is_ownable;
use super::view::OwnedRowsView;
use crate::protocol::{Atom, Row, Uuid};

/// One owned row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnedRow<'v> {
    pub(crate) table: &'v str,
    pub(crate) uuid: Uuid,
    pub(crate) id: Option<&'v str>,
    pub(crate) row: &'v Row,
}

/// Where a desired row lives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Loc<'v> {
    /// It exists already; `stamped`: its `external_ids` are already exactly the desired ones.
    Existing {
        uuid: Uuid,
        row: &'v Row,
        stamped: bool,
    },
    /// It is inserted.
    New,
}

/// The named UUID of the new row `r` of unit `u` (a valid identifier, unique in a plan).
pub(crate) fn new_row_name(u: u32, r: u32) -> String {
    format!("r{u}_{r}")
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

/// This controller's row of `table` with row id `id` (the smallest UUID when several claim
/// it), and the other rows claiming it (duplicates to remove). With the desired stamps and
/// the caller's `external_ids` of the row, a row already holding exactly those is
/// recognised without a second look.
pub(crate) fn locate_row<'v, V: OwnedRowsView>(
    view: &'v V,
    controller: &str,
    table: &str,
    id: &str,
    desired_ids: Option<(&Stamp<'_>, &[(Atom, Atom)])>,
) -> (Loc<'v>, Vec<OwnedRow<'v>>) {
    let candidates = view.find(table, ID_KEY, id);
    if let [uuid] = candidates.as_slice() {
        let Some(row) = view.row(table, uuid) else {
            return (Loc::New, Vec::new());
        };
        let stamped =
            desired_ids.is_some_and(|(stamp, caller)| stamp.holds(row.get(EXTERNAL_IDS), caller));
        if stamped || owned_by(row, controller).is_some() {
            return (
                Loc::Existing {
                    uuid: *uuid,
                    row,
                    stamped,
                },
                Vec::new(),
            );
        }
        return (Loc::New, Vec::new());
    }
    let Some(table) = schema_table_name(view, table) else {
        return (Loc::New, Vec::new());
    };
    let mut ours: Vec<OwnedRow<'v>> = candidates
        .into_iter()
        .filter_map(|uuid| {
            let row = view.row(table, &uuid)?;
            let stamps = owned_by(row, controller)?;
            Some(OwnedRow {
                table,
                uuid,
                id: stamps.id,
                row,
            })
        })
        .collect();
    ours.sort_by_key(|owned| owned.uuid);
    let mut ours = ours.into_iter();
    let Some(first) = ours.next() else {
        return (Loc::New, Vec::new());
    };
    (
        Loc::Existing {
            uuid: first.uuid,
            row: first.row,
            stamped: false,
        },
        ours.collect(),
    )
}

/// Owned rows of units in scope that no desired row is: per given unit, and (with
/// [`Scope::OwnerType`]) the units of that type found in the database but not given, in name
/// order.
pub(crate) type Unmatched<'v> = (Vec<Vec<OwnedRow<'v>>>, Vec<(UnitKey, Vec<OwnedRow<'v>>)>);

/// Names of the scope's owner type present in the database that own none of our rows of
/// that type, with their versions (see [`Converged`]).
pub(crate) type Foreign = Vec<(UnitKey, u64)>;

/// The owned rows of the compared units (`skipped` ones have none: they are converged) that
/// are not `matched` (by a desired row); with [`Scope::OwnerType`], also the units no
/// longer desired and the names owning none of our rows.
pub(crate) fn unmatched_rows<'v, V: OwnedRowsView>(
    view: &'v V,
    (controller, converged): (&str, &Converged),
    units: &[DesiredUnit],
    skipped: &[bool],
    scope: &Scope,
    matched: &FastMap<Uuid, (u32, u32)>,
) -> (Unmatched<'v>, Foreign) {
    let tables = ownable_tables(view);
    let compared = units
        .iter()
        .enumerate()
        .filter(|(u, _)| !skipped.get(*u).copied().unwrap_or(false))
        .count();
    let ranges = split_even(units.len(), workers(compared * 100));
    let per_unit = map_ranges(&ranges, |range| {
        let start = range.start;
        units
            .get(range)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, unit)| {
                if skipped.get(start + i).copied().unwrap_or(false) {
                    Vec::new()
                } else {
                    unmatched_of_unit(view, controller, &tables, &unit.key, matched)
                }
            })
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect();
    let Scope::OwnerType(owner_type) = scope else {
        return ((per_unit, Vec::new()), Vec::new());
    };
    let (gone, foreign) = gone_units(
        view,
        (controller, converged),
        units,
        &tables,
        owner_type,
        matched,
    );
    ((per_unit, gone), foreign)
}

/// The units of `owner_type` in the database that are not desired, with their rows, in
/// name order; and the names present that own none of our rows of that type. Candidates
/// are the distinct owner names the view lists (no row read), else the owners of the rows of
/// the type; a name known to own none of ours at its current version is not read again.
fn gone_units<'v, V: OwnedRowsView>(
    view: &'v V,
    (controller, converged): (&str, &Converged),
    units: &[DesiredUnit],
    tables: &[&'v str],
    owner_type: &str,
    matched: &FastMap<Uuid, (u32, u32)>,
) -> (Vec<(UnitKey, Vec<OwnedRow<'v>>)>, Foreign) {
    let desired: FastSet<&str> = units.iter().map(|unit| unit.key.name.as_str()).collect();
    let mut names: BTreeSet<&'v str> = BTreeSet::new();
    for table in tables {
        if let Some(values) = view.values(table, OWNER_KEY) {
            names.extend(values.into_iter().filter(|name| !desired.contains(name)));
            continue;
        }
        for uuid in view.find(table, OWNER_TYPE_KEY, owner_type) {
            let owner = view
                .row(table, &uuid)
                .and_then(|row| owned_by(row, controller))
                .filter(|stamps| stamps.owner_type == Some(owner_type))
                .and_then(|stamps| stamps.owner);
            if let Some(owner) = owner.filter(|owner| !desired.contains(owner)) {
                names.insert(owner);
            }
        }
    }
    let mut gone = Vec::new();
    let mut foreign = Vec::new();
    for name in names {
        let key = UnitKey::new(owner_type, name);
        let version = view.version(OWNER_KEY, name);
        if converged.is_foreign(&key, version) {
            foreign.extend(version.map(|v| (key, v)));
            continue;
        }
        let (ours, rows) = rows_of_name(view, controller, tables, (owner_type, name), matched);
        if !rows.is_empty() {
            gone.push((key, rows));
        } else if !ours {
            foreign.extend(version.map(|v| (key, v)));
        }
    }
    (gone, foreign)
}

/// Our rows of `owner_type` owned by `name` that no desired row is, and whether it owns any
/// of ours at all.
fn rows_of_name<'v, V: OwnedRowsView>(
    view: &'v V,
    controller: &str,
    tables: &[&'v str],
    (owner_type, name): (&str, &str),
    matched: &FastMap<Uuid, (u32, u32)>,
) -> (bool, Vec<OwnedRow<'v>>) {
    let mut ours = false;
    let mut rows = Vec::new();
    for table in tables {
        for uuid in view.find(table, OWNER_KEY, name) {
            let Some(row) = view.row(table, &uuid) else {
                continue;
            };
            let Some(stamps) = owned_by(row, controller) else {
                continue;
            };
            if stamps.owner_type != Some(owner_type) || stamps.owner != Some(name) {
                continue;
            }
            ours = true;
            if !matched.contains_key(&uuid) {
                rows.push(OwnedRow {
                    table,
                    uuid,
                    id: stamps.id,
                    row,
                });
            }
        }
    }
    (ours, rows)
}

fn unmatched_of_unit<'v, V: OwnedRowsView>(
    view: &'v V,
    controller: &str,
    tables: &[&'v str],
    key: &UnitKey,
    matched: &FastMap<Uuid, (u32, u32)>,
) -> Vec<OwnedRow<'v>> {
    let mut out = Vec::new();
    for table in tables {
        for uuid in view.find(table, OWNER_KEY, &key.name) {
            if matched.contains_key(&uuid) {
                continue;
            }
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

/// This controller's rows of `table` with row id `id`: the smallest UUID.
pub(crate) fn find_owned(
    view: &impl OwnedRowsView,
    controller: &str,
    table: &str,
    id: &str,
) -> Option<Uuid> {
    match locate_row(view, controller, table, id, None).0 {
        Loc::Existing { uuid, .. } => Some(uuid),
        Loc::New => None,
    }
}

/// The schema's own copy of a table name (lives as long as the view).
fn schema_table_name<'v>(view: &'v impl OwnedRowsView, table: &str) -> Option<&'v str> {
    view.schema()
        .tables
        .get_key_value(table)
        .map(|(name, _)| name.as_str())
}
