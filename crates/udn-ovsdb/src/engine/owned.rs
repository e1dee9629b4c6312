//! The rows this controller owns: the existing row of each desired row (by table and row
//! id, through the indexed `k8s.ovn.org/id` stamp), and the owned rows of the units in
//! scope that no desired row is (stale), found through the owner stamps without reading
//! the rows that are desired.
//!
//! A row is unit `T/N`'s when it carries this controller's stamp, `k8s.ovn.org/owner` = `N`,
//! and `k8s.ovn.org/owner-type` = `T` or a row owner type declared for `T` (see
//! [`RowOwnerTypes`]): read from the row alone, the same for a unit that is desired, one of
//! [`Scope::Units`] and one found gone. A unit's rows are looked up by its name (indexed)
//! and filtered by that rule; units no longer desired are found per owner type of the
//! scope, by name, so `Node/a` given keeps nothing of `RemoteNode/a`.

use std::collections::BTreeSet;

use super::Engine;
use super::converged::Converged;
use super::desired::{DesiredUnit, Scope, UnitKey};
use super::hasher::{FastMap, FastSet};
use super::owner_types::RowOwnerTypes;
use super::parallel::{map_ranges, split_even, workers};
use super::stamps::{EXTERNAL_IDS, ID_KEY, OWNER_KEY, OWNER_TYPE_KEY, Stamp, Stamps, owned_by};
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

/// Owned rows of units in scope that no desired row is: per given unit, and (with a scope
/// of owner types) the units of those types found in the database but not given, in unit
/// key order.
pub(crate) type Unmatched<'v> = (Vec<Vec<OwnedRow<'v>>>, Vec<(UnitKey, Vec<OwnedRow<'v>>)>);

/// Units of the scope's owner types (owner type, name present in the database) that own none
/// of our rows, with their versions (see [`Converged`]).
pub(crate) type Foreign = Vec<(UnitKey, u64)>;

/// The owned rows of the compared units (`skipped` ones have none: they are converged) that
/// are not `matched` (by a desired row); with a scope of owner types, also the units no
/// longer desired and the names owning none of our rows of a type.
pub(crate) fn unmatched_rows<'v, V: OwnedRowsView>(
    view: &'v V,
    engine: &Engine,
    units: &[DesiredUnit],
    skipped: &[bool],
    scope: &Scope,
    matched: &FastMap<Uuid, (u32, u32)>,
) -> (Unmatched<'v>, Foreign) {
    let ours = Ours {
        controller: &engine.controller,
        row_types: &engine.row_owner_types,
    };
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
                    unmatched_of_unit(view, ours, &tables, &unit.key, matched)
                }
            })
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect();
    let Some(owner_types) = scope.covered() else {
        return ((per_unit, Vec::new()), Vec::new());
    };
    let (gone, foreign) = gone_units(
        view,
        (ours, &engine.converged),
        units,
        &tables,
        &owner_types,
        matched,
    );
    ((per_unit, gone), foreign)
}

/// How rows are recognised as this controller's and attributed to units.
#[derive(Debug, Clone, Copy)]
struct Ours<'e> {
    controller: &'e str,
    row_types: &'e RowOwnerTypes,
}

impl<'e> Ours<'e> {
    /// The owner type of the unit owning `row` and the row's stamps, when the row is ours
    /// and names a unit (owner type and name).
    fn unit_of<'a, 'r: 'a>(&'a self, row: &'r Row) -> Option<(&'a str, Stamps<'r>)>
    where
        'e: 'a,
    {
        let stamps = owned_by(row, self.controller)?;
        stamps.owner?;
        Some((self.row_types.unit_type(stamps.owner_type?), stamps))
    }
}

/// The units of `owner_types` in the database that are not desired, with their rows, in
/// unit key order; and the (type, name) present that own none of our rows. Candidates are
/// the owners of this controller's rows when the view indexes the controller stamp (cost: our
/// rows, whatever else the database holds), else the distinct owner names the view lists (no
/// row read), else the owners of the rows stamped with the types (or their row owner types);
/// a (type, name) known to own none of ours at the name's current version is not read again,
/// and every candidate name's rows are read once for all the types it is read for.
fn gone_units<'v, V: OwnedRowsView>(
    view: &'v V,
    (ours, converged): (Ours<'_>, &Converged),
    units: &[DesiredUnit],
    tables: &[&'v str],
    owner_types: &[&str],
    matched: &FastMap<Uuid, (u32, u32)>,
) -> (Vec<(UnitKey, Vec<OwnedRow<'v>>)>, Foreign) {
    let desired: FastSet<(&str, &str)> = units
        .iter()
        .map(|unit| (unit.key.owner_type.as_str(), unit.key.name.as_str()))
        .collect();
    let gone_somewhere = |name: &str| owner_types.iter().any(|t| !desired.contains(&(*t, name)));
    let mut names: BTreeSet<&'v str> = BTreeSet::new();
    for table in tables {
        // Best: this controller's own rows (an index on the controller stamp), so the cost is
        // that of our rows, not of every owner in the database.
        if let Some(rows) = view.controller_rows(table, ours.controller) {
            for uuid in rows {
                let Some((unit_type, stamps)) =
                    view.row(table, &uuid).and_then(|row| ours.unit_of(row))
                else {
                    continue;
                };
                if let Some(owner) = stamps.owner.filter(|owner| {
                    owner_types.contains(&unit_type) && !desired.contains(&(unit_type, *owner))
                }) {
                    names.insert(owner);
                }
            }
            continue;
        }
        if let Some(values) = view.values(table, OWNER_KEY) {
            names.extend(values.into_iter().filter(|name| gone_somewhere(name)));
            continue;
        }
        for owner_type in owner_types {
            for stamped in ours.row_types.stamped_types(owner_type) {
                for uuid in view.find(table, OWNER_TYPE_KEY, stamped) {
                    let owner = view
                        .row(table, &uuid)
                        .and_then(|row| ours.unit_of(row))
                        .filter(|(unit_type, stamps)| {
                            unit_type == owner_type && stamps.owner_type == Some(stamped)
                        })
                        .and_then(|(_, stamps)| stamps.owner);
                    if let Some(owner) =
                        owner.filter(|owner| !desired.contains(&(owner_type, owner)))
                    {
                        names.insert(owner);
                    }
                }
            }
        }
    }
    let mut gone = Vec::new();
    let mut foreign = Vec::new();
    for name in names {
        let version = view.version(OWNER_KEY, name);
        let mut read: Vec<&str> = Vec::new();
        for owner_type in owner_types {
            if desired.contains(&(*owner_type, name)) {
                continue;
            }
            let key = UnitKey::new(*owner_type, name);
            if converged.is_foreign(&key, version) {
                foreign.extend(version.map(|v| (key, v)));
            } else {
                read.push(owner_type);
            }
        }
        if read.is_empty() {
            continue;
        }
        let found = rows_of_name(view, ours, tables, (&read, name), matched);
        for (owner_type, (owns, rows)) in read.into_iter().zip(found) {
            let key = UnitKey::new(owner_type, name);
            if !rows.is_empty() {
                gone.push((key, rows));
            } else if !owns {
                foreign.extend(version.map(|v| (key, v)));
            }
        }
    }
    gone.sort_by(|a, b| a.0.cmp(&b.0));
    (gone, foreign)
}

/// Per owner type of `owner_types`: our rows of the unit of that type named `name` that no
/// desired row is, and whether that unit owns any of ours at all.
fn rows_of_name<'v, V: OwnedRowsView>(
    view: &'v V,
    ours: Ours<'_>,
    tables: &[&'v str],
    (owner_types, name): (&[&str], &str),
    matched: &FastMap<Uuid, (u32, u32)>,
) -> Vec<(bool, Vec<OwnedRow<'v>>)> {
    let mut found: Vec<(bool, Vec<OwnedRow<'v>>)> = vec![(false, Vec::new()); owner_types.len()];
    for table in tables {
        for uuid in view.find(table, OWNER_KEY, name) {
            let Some(row) = view.row(table, &uuid) else {
                continue;
            };
            let Some((unit_type, stamps)) = ours.unit_of(row) else {
                continue;
            };
            let slot = owner_types
                .iter()
                .position(|t| *t == unit_type)
                .and_then(|i| found.get_mut(i));
            let Some((owns, rows)) = slot.filter(|_| stamps.owner == Some(name)) else {
                continue;
            };
            *owns = true;
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
    found
}

/// The rows of unit `key` (its name, and its owner type or a row owner type declared for
/// it) that no desired row is.
fn unmatched_of_unit<'v, V: OwnedRowsView>(
    view: &'v V,
    ours: Ours<'_>,
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
            let Some((unit_type, stamps)) = ours.unit_of(row) else {
                continue;
            };
            if unit_type == key.owner_type && stamps.owner == Some(key.name.as_str()) {
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
