//! The plan: per unit, the operations that bring the database to the desired state, grouped
//! into transactions-to-be. Planning is pure: it reads a view of the database and returns
//! data.

use super::Engine;
use super::compare::{Compared, check_outside, check_referenced, compare};
use super::desired::{DesiredRow, DesiredUnit, Scope, UnitKey};
use super::diff::{Diff, RowDecision, RowPos, UnitDiff};
use super::error::{PlanError, RowAt};
use super::hasher::FastMap;
use super::order::{group_units, topological};
use super::owned::{Loc, new_row_name};
use super::parallel::drop_aside;
use super::skip::{findings, keep_changed, unit_work};
use super::stale::{Removal, StalePlan, plan_stale};
use super::stamps::{EXTERNAL_IDS, Stamp};
use super::validate::check_keys;
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
    /// Desired units compared with the database.
    pub(crate) compared: usize,
    /// Desired units not compared: known converged.
    pub(crate) skipped: usize,
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

    /// How many desired units were compared with the database (the others were skipped).
    pub fn compared_units(&self) -> usize {
        self.compared
    }

    /// How many desired units were not compared: the engine had found them with nothing to
    /// do at the same desired rows, and nothing they own changed since (their owner name's
    /// [`OwnedRowsView::version`] is the same). They are in the plan, with no operations.
    pub fn skipped_units(&self) -> usize {
        self.skipped
    }

    /// The operations of one unit, in order.
    pub fn unit_operations<'p>(&'p self, unit: &'p UnitKey) -> impl Iterator<Item = &'p Operation> {
        self.operations()
            .filter(move |(key, _)| *key == unit)
            .map(|(_, op)| op)
    }
}

/// What a plan is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// [`Engine::plan`].
    Plan,
    /// The plan of a reconcile pass: the units it changes are copied to verify them. Here
    /// and in [`Pass::Verify`], the rows of units without work are freed on another thread
    /// when they are many (the pass returns sooner).
    Reconcile,
    /// The verification after the apply.
    Verify,
}

impl Engine {
    /// Plans the operations that make the units of `units` (and, with
    /// [`Scope::OwnerType`] or [`Scope::OwnerTypes`], the absence of other units of those
    /// types) true in the database `view` shows. Pure: reads the view, returns data.
    ///
    /// A unit this engine (or a clone) found with nothing to do at the same desired rows and
    /// the same [`OwnedRowsView::version`] of its owner name is not compared again (see
    /// [`Plan::skipped_units`]); a unit compared and found with nothing to do is remembered
    /// as such. Nothing is remembered from a plan that fails.
    pub fn plan<V: OwnedRowsView>(
        &self,
        view: &V,
        units: Vec<DesiredUnit>,
        scope: &Scope,
    ) -> Result<Plan, PlanError> {
        Ok(self.plan_units(view, units, scope, None, Pass::Plan)?.0)
    }

    /// [`Engine::plan`] with the fingerprints of `units` when known (`given`), returning
    /// also (for [`Pass::Reconcile`]) a copy of every desired unit the plan changes, with
    /// its fingerprint, to verify after the apply.
    pub(crate) fn plan_units<V: OwnedRowsView>(
        &self,
        view: &V,
        mut units: Vec<DesiredUnit>,
        scope: &Scope,
        given: Option<Vec<u128>>,
        pass: Pass,
    ) -> Result<(Plan, Vec<(DesiredUnit, u128)>), PlanError> {
        check_keys(&units, scope, &self.row_owner_types)?;
        let controller = self.controller.as_str();
        let mut known = self.converged.known(view, controller, &units, given);
        let Compared {
            mut diff,
            matched,
            stale,
            gone,
            foreign,
        } = compare(view, self, &mut units, scope, &mut known)?;
        let desired = units.len();
        for key in gone {
            units.push(DesiredUnit::new(key));
            diff.units.push(UnitDiff::default());
        }
        check_outside(&units, &diff, &stale)?;
        check_referenced(view, &units, &diff)?;
        let stale_plans = plan_stale(view, &units, &matched, &stale);
        let work = unit_work(&diff, &stale_plans);
        let findings = findings(&units, desired, &known, &work, scope, foreign);
        let kept = if pass == Pass::Reconcile {
            keep_changed(
                units.get(..desired).unwrap_or_default(),
                &work,
                &known.fingerprints,
            )
        } else {
            Vec::new()
        };
        let (unit_groups, needs) = group_units(units.len(), &diff.deps);
        let mut plan = build(
            controller,
            (units, &work, pass != Pass::Plan),
            diff,
            stale_plans,
            (unit_groups, needs),
        )?;
        plan.skipped = known.skipped_count();
        plan.compared = desired - plan.skipped;
        self.converged.record(findings);
        Ok((plan, kept))
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
    (units, work, aside): (Vec<DesiredUnit>, &[bool], bool),
    diff: Diff<'_>,
    stale: Vec<StalePlan<'_>>,
    (unit_groups, needs): (Vec<Vec<u32>>, Vec<Vec<u32>>),
) -> Result<Plan, PlanError> {
    let mut keys = Vec::with_capacity(units.len());
    let mut rows: Vec<Vec<Option<DesiredRow>>> = Vec::with_capacity(units.len());
    let mut unused = Vec::new();
    let mut unused_rows = 0;
    for (u, unit) in units.into_iter().enumerate() {
        keys.push(unit.key);
        // Rows of units without work (skipped or converged) give no operations.
        if !work.get(u).copied().unwrap_or(true) {
            unused_rows += unit.rows.len();
            unused.push(unit.rows);
            rows.push(Vec::new());
        } else {
            rows.push(unit.rows.into_iter().map(Some).collect());
        }
    }
    if aside {
        drop_aside(unused, unused_rows);
    }
    let mut new_rows: Vec<Vec<u32>> = Vec::with_capacity(diff.units.len());
    let mut decisions: Vec<Vec<Option<RowDecision>>> = Vec::with_capacity(diff.units.len());
    for unit in diff.units {
        new_rows.push(
            (0u32..)
                .zip(&unit.locs)
                .filter(|(_, loc)| **loc == Loc::New)
                .map(|(r, _)| r)
                .collect(),
        );
        decisions.push(unit.decisions.into_iter().map(Some).collect());
    }
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
        let mut work = Work {
            controller,
            keys: &keys,
            rows: &mut rows,
            decisions: &mut decisions,
        };
        work.insert_ops(&mut group, &new_rows)?;
        for &u in &group.units.clone() {
            work.existing_ops(&mut group, u);
            if let Some(plan) = stale.get_mut(u as usize).and_then(Option::take) {
                stale_ops(&mut group, u, plan);
            }
        }
        groups.push(group);
    }
    Ok(Plan {
        units: keys,
        groups,
        compared: 0,
        skipped: 0,
    })
}

/// What building a group's inserts reads and takes from.
struct Work<'a> {
    controller: &'a str,
    keys: &'a [UnitKey],
    rows: &'a mut [Vec<Option<DesiredRow>>],
    decisions: &'a mut [Vec<Option<RowDecision>>],
}

impl Work<'_> {
    /// The order of the new rows `nodes`: every row after the new rows it names.
    fn insert_order(&self, nodes: &[RowPos]) -> Result<Vec<usize>, PlanError> {
        let position: FastMap<RowPos, usize> =
            nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let mut edges = vec![Vec::new(); nodes.len()];
        for (i, &(u, r)) in nodes.iter().enumerate() {
            if let Some(Some(RowDecision::Insert { uses, .. })) = self
                .decisions
                .get(u as usize)
                .and_then(|d| d.get(r as usize))
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
        topological(nodes.len(), &edges).map_err(|cycle| {
            let (u, r) = cycle
                .first()
                .and_then(|i| nodes.get(*i))
                .copied()
                .unwrap_or_default();
            let row = self
                .rows
                .get(u as usize)
                .and_then(|rs| rs.get(r as usize))
                .and_then(Option::as_ref);
            PlanError::Cycle {
                at: RowAt::boxed(
                    self.keys
                        .get(u as usize)
                        .cloned()
                        .unwrap_or_else(|| UnitKey::new("", "")),
                    row.map(|row| row.table.clone()).unwrap_or_default(),
                    row.map(|row| row.id.clone()).unwrap_or_default(),
                ),
            }
        })
    }

    /// The updates and mutations of the existing rows of unit `u`; takes its rows.
    fn existing_ops(&mut self, group: &mut Group, u: u32) {
        let unit_rows = self
            .rows
            .get_mut(u as usize)
            .map(std::mem::take)
            .unwrap_or_default();
        let unit_decisions = self
            .decisions
            .get_mut(u as usize)
            .map(std::mem::take)
            .unwrap_or_default();
        let Some(key) = self.keys.get(u as usize) else {
            return;
        };
        for (row, decision) in unit_rows.into_iter().zip(unit_decisions) {
            if let (
                Some(row),
                Some(RowDecision::Existing {
                    uuid,
                    columns,
                    refs,
                    mutations,
                }),
            ) = (row, decision)
            {
                let changes = Changes {
                    uuid,
                    columns,
                    refs,
                    mutations,
                };
                existing_ops(group, u, row, changes, (self.controller, key));
            }
        }
    }

    /// The inserts of a group, each after the new rows it names.
    fn insert_ops(&mut self, group: &mut Group, new_rows: &[Vec<u32>]) -> Result<(), PlanError> {
        // New rows of the group, in unit then row order.
        let nodes: Vec<RowPos> = group
            .units
            .iter()
            .flat_map(|&u| {
                new_rows
                    .get(u as usize)
                    .into_iter()
                    .flatten()
                    .map(move |&r| (u, r))
            })
            .collect();
        let order = self.insert_order(&nodes)?;
        for i in order {
            let Some(&(u, r)) = nodes.get(i) else {
                continue;
            };
            let row = self
                .rows
                .get_mut(u as usize)
                .and_then(|rs| rs.get_mut(r as usize))
                .and_then(Option::take);
            let decision = self
                .decisions
                .get_mut(u as usize)
                .and_then(|d| d.get_mut(r as usize))
                .and_then(Option::take);
            if let (Some(row), Some(RowDecision::Insert { refs, .. })) = (row, decision) {
                let mut values = row.columns;
                if let Some(key) = self.keys.get(u as usize) {
                    stamp(self.controller, key, row.owner_type.as_deref(), &row.id)
                        .apply(&mut values);
                }
                for (column, value) in refs {
                    if !matches!(&value, Value::Set(s) if s.is_empty()) {
                        values.insert(column, value);
                    }
                }
                group.ops.push(Operation::Insert {
                    table: row.table,
                    row: values,
                    uuid_name: Some(new_row_name(u, r)),
                    uuid: row.insert_uuid,
                });
                group.info.push(OpInfo {
                    unit: u,
                    id: Some(row.id),
                });
            }
        }
        Ok(())
    }
}

/// What changes in one existing row.
struct Changes {
    uuid: Uuid,
    columns: Vec<String>,
    refs: Vec<(String, Value)>,
    mutations: Vec<Mutation>,
}

/// The stamps of the row `id` of unit `key` with row owner type `owner_type` (`None`: the
/// unit's).
fn stamp<'a>(
    controller: &'a str,
    key: &'a UnitKey,
    owner_type: Option<&'a str>,
    id: &'a str,
) -> Stamp<'a> {
    Stamp {
        controller,
        owner_type: owner_type.unwrap_or(&key.owner_type),
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
                stamp(controller, key, row.owner_type.as_deref(), &row.id).apply(&mut ids);
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
