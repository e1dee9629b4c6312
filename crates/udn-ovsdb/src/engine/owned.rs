//! The rows this controller owns: the existing row of each desired row (by table and row
//! id, through the indexed `k8s.ovn.org/id` stamp), and the owned rows of the units in
//! scope that no desired row is (stale), found through the owner stamps without reading
//! the rows that are desired.

use super::desired::{DesiredUnit, Scope, UnitKey};
use super::hasher::FastMap;
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

/// The owned rows of the units in scope that are not `matched` (by a desired row).
pub(crate) fn unmatched_rows<'v, V: OwnedRowsView>(
    view: &'v V,
    controller: &str,
    units: &[DesiredUnit],
    scope: &Scope,
    matched: &FastMap<Uuid, (u32, u32)>,
) -> Unmatched<'v> {
    let tables = ownable_tables(view);
    match scope {
        Scope::Units => {
            let ranges = split_even(units.len(), workers(units.len() * 100));
            let per_unit = map_ranges(&ranges, |range| {
                units
                    .get(range)
                    .unwrap_or_default()
                    .iter()
                    .map(|unit| unmatched_of_unit(view, controller, &tables, &unit.key, matched))
                    .collect::<Vec<_>>()
            })
            .into_iter()
            .flatten()
            .collect();
            (per_unit, Vec::new())
        }
        Scope::OwnerType(owner_type) => {
            unmatched_of_type(view, controller, units, &tables, owner_type, matched)
        }
    }
}

/// The unmatched owned rows of `owner_type`, grouped by unit.
fn unmatched_of_type<'v, V: OwnedRowsView>(
    view: &'v V,
    controller: &str,
    units: &[DesiredUnit],
    tables: &[&'v str],
    owner_type: &str,
    matched: &FastMap<Uuid, (u32, u32)>,
) -> Unmatched<'v> {
    let mut position: FastMap<&str, usize> = units
        .iter()
        .enumerate()
        .map(|(i, unit)| (unit.key.name.as_str(), i))
        .collect();
    let mut per_unit: Vec<Vec<OwnedRow<'v>>> = vec![Vec::new(); units.len()];
    let mut gone: Vec<&'v str> = Vec::new();
    for table in tables {
        for uuid in view.find(table, OWNER_TYPE_KEY, owner_type) {
            if matched.contains_key(&uuid) {
                continue;
            }
            let Some(row) = view.row(table, &uuid) else {
                continue;
            };
            let Some(stamps) = owned_by(row, controller) else {
                continue;
            };
            let Some(owner) = stamps
                .owner
                .filter(|_| stamps.owner_type == Some(owner_type))
            else {
                continue;
            };
            let at = *position.entry(owner).or_insert_with(|| {
                gone.push(owner);
                per_unit.push(Vec::new());
                per_unit.len() - 1
            });
            if let Some(rows) = per_unit.get_mut(at) {
                rows.push(OwnedRow {
                    table,
                    uuid,
                    id: stamps.id,
                    row,
                });
            }
        }
    }
    // Units found only in the database, in name order.
    let first_gone = units.len();
    let mut found: Vec<(&'v str, Vec<OwnedRow<'v>>)> =
        gone.into_iter().zip(per_unit.drain(first_gone..)).collect();
    found.sort_by(|a, b| a.0.cmp(b.0));
    let gone = found
        .into_iter()
        .map(|(name, rows)| (UnitKey::new(owner_type, name), rows))
        .collect();
    (per_unit, gone)
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
