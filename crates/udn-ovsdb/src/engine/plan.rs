//! The plan: per unit, the operations that bring the database to the desired state, grouped
//! into transactions-to-be. Planning is pure: it reads a view of the database and returns
//! data.

use std::collections::BTreeMap;

use super::Engine;
use super::desired::{DesiredRow, DesiredUnit, Scope, UnitKey};
use super::diff::{Diff, Lookup, RowDecision, index_rows};
use super::error::{PlanError, RowAt};
use super::order::{group_units, topological};
use super::owned::{Loc, Located, collect_owned, locate};
use super::stale::{Removal, StalePlan, plan_stale};
use super::stamps::{EXTERNAL_IDS, Stamp};
use super::validate::check_units;
use super::view::OwnedRowsView;
use crate::protocol::{
    Atom, Condition, ConditionFunction, Mutation, Mutator, Operation, Row, Uuid, Value,
};

/// The operations that bring the database to the desired state, unit by unit. Every
/// operation of a unit lands in one transaction. Empty when the database already holds
/// the desired state.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub(crate) units: Vec<UnitKey>,
    pub(crate) groups: Vec<Group>,
}

/// Units that must share a transaction (usually one), with their operations in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Group {
    /// Indices into [`Plan::units`].
    pub(crate) units: Vec<u32>,
    pub(crate) ops: Vec<Operation>,
    /// Per operation: its unit and the row id it is about.
    pub(crate) info: Vec<OpInfo>,
    /// Earlier groups whose new rows this group names (their UUIDs are known only once
    /// those groups are committed, unless they share the transaction).
    pub(crate) needs: Vec<u32>,
    /// Owned rows of non-root tables that go once no reference holds them (shown by the
    /// plan display; no operation of their own).
    pub(crate) released: Vec<Released>,
}

/// An owned non-root row the plan lets go.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Released {
    pub(crate) unit: u32,
    pub(crate) table: String,
    pub(crate) uuid: Uuid,
    pub(crate) id: Option<String>,
}

/// What one operation is about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpInfo {
    pub(crate) unit: u32,
    /// The row id (`k8s.ovn.org/id`), when the row is one of ours.
    pub(crate) id: Option<String>,
}

impl Plan {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.ops.is_empty())
    }

    /// The number of operations.
    pub fn op_count(&self) -> usize {
        self.groups.iter().map(|g| g.ops.len()).sum()
    }

    /// Every unit the plan covers (changed or not), in plan order.
    pub fn units(&self) -> impl Iterator<Item = &UnitKey> {
        self.units.iter()
    }

    /// Every operation with its unit, in the order they are sent.
    pub fn operations(&self) -> impl Iterator<Item = (&UnitKey, &Operation)> {
        self.groups.iter().flat_map(|g| {
            g.ops
                .iter()
                .zip(&g.info)
                .filter_map(|(op, info)| self.units.get(info.unit as usize).map(|key| (key, op)))
        })
    }

    /// The operations of one unit, in order.
    pub fn unit_operations<'p>(&'p self, unit: &'p UnitKey) -> impl Iterator<Item = &'p Operation> {
        self.operations()
            .filter(move |(key, _)| *key == unit)
            .map(|(_, op)| op)
    }
}

impl Engine {
    /// Plans the operations that make the units of `units` (and, with
    /// [`Scope::OwnerType`], the absence of other units of that type) true in the database
    /// `view` shows. Pure: reads the view, returns data.
    pub fn plan<V: OwnedRowsView>(
        &self,
        view: &V,
        mut units: Vec<DesiredUnit>,
        scope: &Scope,
    ) -> Result<Plan, PlanError> {
        check_units(view.schema(), &mut units, scope)?;
        let owned = collect_owned(view, &self.controller, &mut units, scope);
        let located = locate(view, &self.controller, &units, &owned);
        let diff = Lookup {
            view,
            controller: &self.controller,
            units: &units,
            index: index_rows(&units)?,
            owned: &owned,
            located: &located,
        }
        .diff()?;
        let stale = plan_stale(view, &units, &located);
        let (unit_groups, needs) = group_units(units.len(), &diff.deps);
        build(
            &self.controller,
            units,
            &located,
            diff,
            stale,
            unit_groups,
            needs,
        )
    }
}

fn where_uuid(uuid: Uuid) -> Vec<Condition> {
    vec![Condition {
        column: "_uuid".to_owned(),
        function: ConditionFunction::Equal,
        value: Value::Atom(Atom::Uuid(uuid)),
    }]
}

/// Turns decisions into operations, moving the desired values into them.
fn build(
    controller: &str,
    units: Vec<DesiredUnit>,
    located: &Located<'_>,
    diff: Diff,
    stale: Vec<StalePlan<'_>>,
    unit_groups: Vec<Vec<u32>>,
    needs: Vec<Vec<u32>>,
) -> Result<Plan, PlanError> {
    let mut keys = Vec::with_capacity(units.len());
    let mut rows: Vec<Vec<Option<DesiredRow>>> = Vec::with_capacity(units.len());
    for unit in units {
        keys.push(unit.key);
        rows.push(unit.rows.into_iter().map(Some).collect());
    }
    let mut decisions: Vec<Vec<Option<RowDecision>>> = diff
        .rows
        .into_iter()
        .map(|d| d.into_iter().map(Some).collect())
        .collect();
    let mut stale: Vec<Option<StalePlan<'_>>> = stale.into_iter().map(Some).collect();
    let mut groups = Vec::with_capacity(unit_groups.len());
    for (members, needs) in unit_groups.into_iter().zip(needs) {
        let mut group = Group {
            units: members,
            ops: Vec::new(),
            info: Vec::new(),
            needs,
            released: Vec::new(),
        };
        insert_ops(
            controller,
            &mut group,
            &keys,
            located,
            &mut rows,
            &mut decisions,
        )?;
        for &u in &group.units.clone() {
            let unit_rows = rows
                .get_mut(u as usize)
                .map(std::mem::take)
                .unwrap_or_default();
            let unit_decisions = decisions
                .get_mut(u as usize)
                .map(std::mem::take)
                .unwrap_or_default();
            for (row, decision) in unit_rows.into_iter().zip(unit_decisions) {
                if let (
                    Some(row),
                    Some(RowDecision::Existing {
                        uuid,
                        columns,
                        refs,
                        mutations,
                    }),
                    Some(key),
                ) = (row, decision, keys.get(u as usize))
                {
                    let changes = Changes {
                        uuid,
                        columns,
                        refs,
                        mutations,
                    };
                    existing_ops(&mut group, u, row, changes, (controller, key));
                }
            }
            if let Some(plan) = stale.get_mut(u as usize).and_then(Option::take) {
                stale_ops(&mut group, u, plan);
            }
        }
        groups.push(group);
    }
    Ok(Plan {
        units: keys,
        groups,
    })
}

/// The inserts of a group, each after the new rows it names.
fn insert_ops(
    controller: &str,
    group: &mut Group,
    keys: &[UnitKey],
    located: &Located<'_>,
    rows: &mut [Vec<Option<DesiredRow>>],
    decisions: &mut [Vec<Option<RowDecision>>],
) -> Result<(), PlanError> {
    // New rows of the group, in unit then row order: (unit, row, name).
    let mut nodes: Vec<(u32, u32, u32)> = Vec::new();
    for &u in &group.units {
        for (r, loc) in (0u32..).zip(located.loc.get(u as usize).map_or(&[][..], Vec::as_slice)) {
            if let Loc::New(name) = loc {
                nodes.push((u, r, *name));
            }
        }
    }
    let position: BTreeMap<u32, usize> = nodes.iter().enumerate().map(|(i, n)| (n.2, i)).collect();
    let mut edges = vec![Vec::new(); nodes.len()];
    for (i, &(u, r, _)) in nodes.iter().enumerate() {
        if let Some(Some(RowDecision::Insert { uses, .. })) =
            decisions.get(u as usize).and_then(|d| d.get(r as usize))
        {
            for used in uses {
                if let Some(&from) = position.get(used)
                    && let Some(out) = edges.get_mut(from)
                {
                    out.push(i);
                }
            }
        }
    }
    let order = topological(nodes.len(), &edges).map_err(|cycle| {
        let (u, r, _) = cycle
            .first()
            .and_then(|i| nodes.get(*i))
            .copied()
            .unwrap_or_default();
        let row = rows
            .get(u as usize)
            .and_then(|rs| rs.get(r as usize))
            .and_then(Option::as_ref);
        PlanError::Cycle {
            at: RowAt::boxed(
                keys.get(u as usize)
                    .cloned()
                    .unwrap_or_else(|| UnitKey::new("", "")),
                row.map(|row| row.table.clone()).unwrap_or_default(),
                row.map(|row| row.id.clone()).unwrap_or_default(),
            ),
        }
    })?;
    for i in order {
        let Some(&(u, r, name)) = nodes.get(i) else {
            continue;
        };
        let row = rows
            .get_mut(u as usize)
            .and_then(|rs| rs.get_mut(r as usize))
            .and_then(Option::take);
        let decision = decisions
            .get_mut(u as usize)
            .and_then(|d| d.get_mut(r as usize))
            .and_then(Option::take);
        if let (Some(row), Some(RowDecision::Insert { refs, .. })) = (row, decision) {
            let mut values = row.columns;
            if let Some(key) = keys.get(u as usize) {
                stamp(controller, key, &row.id).apply(&mut values);
            }
            for (column, value) in refs {
                if !matches!(&value, Value::Set(s) if s.is_empty()) {
                    values.insert(column, value);
                }
            }
            group.ops.push(Operation::Insert {
                table: row.table,
                row: values,
                uuid_name: Some(format!("r{name}")),
            });
            group.info.push(OpInfo {
                unit: u,
                id: Some(row.id),
            });
        }
    }
    Ok(())
}

/// What changes in one existing row.
struct Changes {
    uuid: Uuid,
    columns: Vec<String>,
    refs: Vec<(String, Value)>,
    mutations: Vec<Mutation>,
}

fn stamp<'a>(controller: &'a str, key: &'a UnitKey, id: &'a str) -> Stamp<'a> {
    Stamp {
        controller,
        owner_type: &key.owner_type,
        owner: &key.name,
        id,
    }
}

fn existing_ops(
    group: &mut Group,
    unit: u32,
    mut row: DesiredRow,
    changes: Changes,
    (controller, key): (&str, &UnitKey),
) {
    let Changes {
        uuid,
        columns,
        refs,
        mutations,
    } = changes;
    if !columns.is_empty() || !refs.is_empty() {
        let mut values = Row::new();
        for column in columns {
            if column == EXTERNAL_IDS {
                let mut ids = Row::new();
                if let Some(caller) = row.columns.remove(EXTERNAL_IDS) {
                    ids.insert(EXTERNAL_IDS.to_owned(), caller);
                }
                stamp(controller, key, &row.id).apply(&mut ids);
                values.extend(ids);
            } else if let Some(value) = row.columns.remove(&column) {
                values.insert(column, value);
            }
        }
        values.extend(refs);
        group.ops.push(Operation::Update {
            table: row.table.clone(),
            where_: where_uuid(uuid),
            row: values,
        });
        group.info.push(OpInfo {
            unit,
            id: Some(row.id.clone()),
        });
    }
    if !mutations.is_empty() {
        group.ops.push(Operation::Mutate {
            table: row.table,
            where_: where_uuid(uuid),
            mutations,
        });
        group.info.push(OpInfo {
            unit,
            id: Some(row.id),
        });
    }
}

fn stale_ops(group: &mut Group, unit: u32, plan: StalePlan<'_>) {
    group
        .released
        .extend(plan.released.iter().map(|row| Released {
            unit,
            table: row.table.to_owned(),
            uuid: row.uuid,
            id: row.id.map(str::to_owned),
        }));
    for ((table, referrer), columns) in plan.detach {
        let mutations = columns
            .into_iter()
            .map(|(column, removal)| Mutation {
                column,
                mutator: Mutator::Delete,
                value: match removal {
                    Removal::Set(atoms) => Value::Set(atoms),
                    Removal::Map(pairs) => Value::Map(pairs),
                },
            })
            .collect();
        group.ops.push(Operation::Mutate {
            table,
            where_: where_uuid(referrer),
            mutations,
        });
        group.info.push(OpInfo { unit, id: None });
    }
    for row in plan.deletes {
        group.ops.push(Operation::Delete {
            table: row.table.to_owned(),
            where_: where_uuid(row.uuid),
        });
        group.info.push(OpInfo {
            unit,
            id: row.id.map(str::to_owned),
        });
    }
}
