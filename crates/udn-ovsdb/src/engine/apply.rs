//! Sending a plan: whole groups of units batched into transactions up to a budget, a few
//! transactions in flight, a rejected batch retried group by group to find the failing unit.

use std::collections::{BTreeMap, HashMap};
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use tracing::{debug, info, warn};

use super::Engine;
use super::desired::UnitKey;
use super::display::op_line;
use super::error::UnitError;
use super::plan::{Group, Plan};
use crate::protocol::{
    Atom, Mutation, Operation, OperationResult, Row, TransactError, Uuid, Value,
};

/// How a transaction failed.
#[derive(Debug, Clone)]
pub enum TransactFailure {
    /// The server answered and rejected it (nothing of it was committed).
    Rejected(TransactError),
    /// No answer (disconnected, timed out): it may or may not have been committed.
    Unavailable(Arc<dyn std::error::Error + Send + Sync>),
}

/// Something that runs transactions, e.g. the client. Concurrent calls must be allowed.
pub trait Transactor {
    /// Runs `ops` as one transaction; returns one result per operation.
    fn transact(
        &self,
        ops: Vec<Operation>,
    ) -> impl Future<Output = Result<Vec<OperationResult>, TransactFailure>> + Send;
}

/// How to batch a plan into transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApplyPolicy {
    /// Operations per transaction: whole units are added while the total stays within it
    /// (a larger unit goes alone, never split).
    pub max_ops: usize,
    /// Transactions sent before the first answer is awaited (1 = one at a time).
    pub in_flight: usize,
}

impl Default for ApplyPolicy {
    /// 300 operations per transaction, 4 in flight. Measured against ovsdb-server (OVS 3.1,
    /// Debian) with a monitoring client, 44,200 Layer3-like rows: the server's CPU per row
    /// grows with the transaction size (0.76 s in transactions of one 221-row network,
    /// 1.0 s with two, 2.0 s with six, 2.5 s at 8,000 operations), so small transactions
    /// kept several in flight are fastest (1.1-1.7 s against 3.2-4.2 s at 8,000).
    fn default() -> Self {
        Self {
            max_ops: 300,
            in_flight: 4,
        }
    }
}

/// What became of one unit.
#[derive(Debug, Clone)]
pub enum UnitOutcome {
    /// Nothing to do.
    Unchanged,
    /// Its operations were committed.
    Applied {
        /// Number of operations.
        ops: usize,
    },
    /// Not applied.
    Failed(UnitError),
    /// Not tried: the server became unavailable first.
    NotAttempted,
}

/// What an apply did.
#[derive(Debug, Clone, Default)]
pub struct ApplyReport {
    /// Transactions sent (including failed ones and retries).
    pub transactions: usize,
    /// Operations committed.
    pub ops: usize,
    /// Every unit of the plan.
    pub units: BTreeMap<UnitKey, UnitOutcome>,
}

impl ApplyReport {
    /// Whether every unit is unchanged or applied.
    pub fn is_success(&self) -> bool {
        self.units
            .values()
            .all(|o| matches!(o, UnitOutcome::Unchanged | UnitOutcome::Applied { .. }))
    }

    /// The units that failed, with why.
    pub fn failures(&self) -> impl Iterator<Item = &UnitError> {
        self.units.values().filter_map(|o| match o {
            UnitOutcome::Failed(error) => Some(error),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GroupState {
    Pending,
    InFlight,
    Done,
    /// Failed, because of this unit.
    Failed(u32),
    Abandoned,
}

type Pending<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<OperationResult>, TransactFailure>> + Send + 'a>>;

struct Run<'p> {
    plan: &'p Plan,
    state: Vec<GroupState>,
    /// Groups whose new rows later groups name.
    needed: Vec<bool>,
    names: HashMap<String, Uuid>,
    report: ApplyReport,
    unavailable: bool,
}

impl Engine {
    /// Sends `plan`: every unit's operations in one transaction, whole groups batched up to
    /// `policy.max_ops` per transaction, up to `policy.in_flight` transactions outstanding.
    /// Nothing to do sends nothing. Never stops at a rejected unit: the batch is retried
    /// group by group and each failing unit is reported; stops sending when the server is
    /// unavailable.
    pub async fn apply<T: Transactor>(
        &self,
        client: &T,
        plan: &Plan,
        policy: &ApplyPolicy,
    ) -> ApplyReport {
        let mut run = Run::new(plan);
        let mut pipe = Pipeline::new(client, policy);
        for (g, group) in plan.groups.iter().enumerate() {
            if group.ops.is_empty() {
                continue;
            }
            if run.unavailable {
                break;
            }
            if pipe.batch_ops + group.ops.len() > pipe.max_ops {
                pipe.flush(&mut run);
            }
            // Names of rows inserted by a transaction still in flight are not known yet.
            if run.waits_for_in_flight(group, &pipe.batch) {
                pipe.flush(&mut run);
                pipe.settle_all(&mut run).await;
                if run.unavailable {
                    break;
                }
            }
            if let Some(failed) = run.failed_need(group) {
                run.fail_group(g, |unit| UnitError::DependencyFailed {
                    unit,
                    dependency: failed.clone(),
                });
                continue;
            }
            pipe.add(g, group.ops.len());
            run.set_state(g, GroupState::InFlight);
            while pipe.in_flight.len() >= pipe.max_in_flight {
                pipe.settle_one(&mut run).await;
            }
        }
        if !run.unavailable {
            pipe.flush(&mut run);
        }
        pipe.settle_all(&mut run).await;
        let report = run.into_report();
        log_report(&self.controller, &report);
        report
    }
}

fn log_report(controller: &str, report: &ApplyReport) {
    for error in report.failures() {
        warn!(controller, unit = %error.unit(), kind = error.kind(), error = %error, "ovsdb unit not applied");
    }
    let failed = report.failures().count();
    if report.ops > 0 {
        info!(
            controller,
            transactions = report.transactions,
            ops = report.ops,
            units = report.units.len(),
            failed,
            "applied plan"
        );
    } else {
        debug!(
            controller,
            transactions = report.transactions,
            units = report.units.len(),
            failed,
            "plan had nothing to apply"
        );
    }
}

/// Batches being filled and transactions in flight.
struct Pipeline<'c, T> {
    client: &'c T,
    max_ops: usize,
    max_in_flight: usize,
    batch: Vec<usize>,
    batch_ops: usize,
    in_flight: Vec<(Vec<usize>, Pending<'c>)>,
}

impl<'c, T: Transactor> Pipeline<'c, T> {
    fn new(client: &'c T, policy: &ApplyPolicy) -> Self {
        Self {
            client,
            max_ops: policy.max_ops.max(1),
            max_in_flight: policy.in_flight.max(1),
            batch: Vec::new(),
            batch_ops: 0,
            in_flight: Vec::new(),
        }
    }

    fn add(&mut self, group: usize, ops: usize) {
        self.batch.push(group);
        self.batch_ops += ops;
    }

    /// Sends the batch (if any) as one transaction.
    fn flush(&mut self, run: &mut Run<'_>) {
        if self.batch.is_empty() {
            return;
        }
        let groups = std::mem::take(&mut self.batch);
        self.batch_ops = 0;
        let ops = run.operations(&groups);
        run.report.transactions += 1;
        self.in_flight
            .push((groups, Box::pin(self.client.transact(ops))));
    }

    /// Waits for one transaction in flight and records its outcome.
    async fn settle_one(&mut self, run: &mut Run<'_>) {
        if let Some((groups, result)) = next_done(&mut self.in_flight).await {
            run.finish(self.client, groups, result).await;
        }
    }

    /// Waits for every transaction in flight.
    async fn settle_all(&mut self, run: &mut Run<'_>) {
        while !self.in_flight.is_empty() {
            self.settle_one(run).await;
        }
    }
}

/// Waits for the first finished transaction (polling in the order they were sent).
async fn next_done<'a>(
    in_flight: &mut Vec<(Vec<usize>, Pending<'a>)>,
) -> Option<(Vec<usize>, Result<Vec<OperationResult>, TransactFailure>)> {
    if in_flight.is_empty() {
        return None;
    }
    let (position, result) = poll_fn(|cx| {
        for (position, (_, future)) in in_flight.iter_mut().enumerate() {
            if let Poll::Ready(result) = future.as_mut().poll(cx) {
                return Poll::Ready((position, result));
            }
        }
        Poll::Pending
    })
    .await;
    let groups = (position < in_flight.len()).then(|| in_flight.remove(position).0)?;
    Some((groups, result))
}

impl<'p> Run<'p> {
    fn new(plan: &'p Plan) -> Self {
        let mut needed = vec![false; plan.groups.len()];
        for group in &plan.groups {
            for n in &group.needs {
                if let Some(slot) = needed.get_mut(*n as usize) {
                    *slot = true;
                }
            }
        }
        Self {
            plan,
            state: vec![GroupState::Pending; plan.groups.len()],
            needed,
            names: HashMap::new(),
            report: ApplyReport::default(),
            unavailable: false,
        }
    }

    fn group(&self, g: usize) -> Option<&'p Group> {
        self.plan.groups.get(g)
    }

    fn key(&self, unit: u32) -> UnitKey {
        self.plan
            .units
            .get(unit as usize)
            .cloned()
            .unwrap_or_else(|| UnitKey::new("", ""))
    }

    fn set_state(&mut self, g: usize, state: GroupState) {
        if let Some(slot) = self.state.get_mut(g) {
            *slot = state;
        }
    }

    /// Whether `group` names new rows of a group whose transaction is in flight (not in
    /// the batch being filled).
    fn waits_for_in_flight(&self, group: &Group, batch: &[usize]) -> bool {
        group.needs.iter().any(|n| {
            self.state.get(*n as usize) == Some(&GroupState::InFlight)
                && !batch.contains(&(*n as usize))
        })
    }

    /// The unit that failed a group `group` needs, if any did.
    fn failed_need(&self, group: &Group) -> Option<UnitKey> {
        group
            .needs
            .iter()
            .find_map(|n| match self.state.get(*n as usize) {
                Some(GroupState::Failed(unit)) => Some(self.key(*unit)),
                _ => None,
            })
    }

    /// The operations of `groups`, with names of rows committed earlier replaced by UUIDs.
    fn operations(&self, groups: &[usize]) -> Vec<Operation> {
        let mut ops = Vec::with_capacity(
            groups
                .iter()
                .filter_map(|g| self.group(*g))
                .map(|g| g.ops.len())
                .sum(),
        );
        for group in groups.iter().filter_map(|g| self.group(*g)) {
            if group.needs.is_empty() || self.names.is_empty() {
                ops.extend(group.ops.iter().cloned());
            } else {
                ops.extend(group.ops.iter().map(|op| resolve_names(op, &self.names)));
            }
        }
        ops
    }

    async fn finish<T: Transactor>(
        &mut self,
        client: &T,
        groups: Vec<usize>,
        result: Result<Vec<OperationResult>, TransactFailure>,
    ) {
        match result {
            Ok(results) => self.committed(&groups, &results),
            Err(TransactFailure::Unavailable(source)) => {
                self.unavailable = true;
                for g in groups {
                    self.fail_group(g, |unit| UnitError::Unavailable {
                        unit,
                        source: source.clone(),
                    });
                }
            }
            Err(TransactFailure::Rejected(error)) if groups.len() == 1 => {
                if let Some(&g) = groups.first() {
                    self.rejected(g, error);
                }
            }
            Err(TransactFailure::Rejected(_)) => {
                // One of the groups is at fault: find out which, each on its own.
                for g in groups {
                    if self.unavailable {
                        self.abandon(g);
                        continue;
                    }
                    let Some(group) = self.group(g) else {
                        continue;
                    };
                    if let Some(failed) = self.failed_need(group) {
                        self.fail_group(g, |unit| UnitError::DependencyFailed {
                            unit,
                            dependency: failed.clone(),
                        });
                        continue;
                    }
                    let ops = self.operations(&[g]);
                    self.report.transactions += 1;
                    let result = client.transact(ops).await;
                    Box::pin(self.finish(client, vec![g], result)).await;
                }
            }
        }
    }

    fn committed(&mut self, groups: &[usize], results: &[OperationResult]) {
        let mut offset = 0;
        for &g in groups {
            let Some(group) = self.group(g) else {
                continue;
            };
            if self.needed.get(g).copied().unwrap_or(false) {
                for (op, result) in group.ops.iter().zip(results.iter().skip(offset)) {
                    if let (
                        Operation::Insert {
                            uuid_name: Some(name),
                            ..
                        },
                        OperationResult::Inserted(uuid),
                    ) = (op, result)
                    {
                        self.names.insert(name.clone(), *uuid);
                    }
                }
            }
            offset += group.ops.len();
            self.report.ops += group.ops.len();
            let mut counts: BTreeMap<u32, usize> = group.units.iter().map(|u| (*u, 0)).collect();
            for info in &group.info {
                *counts.entry(info.unit).or_default() += 1;
            }
            for (unit, ops) in counts {
                let outcome = if ops == 0 {
                    UnitOutcome::Unchanged
                } else {
                    UnitOutcome::Applied { ops }
                };
                self.report.units.insert(self.key(unit), outcome);
            }
            if let Some(state) = self.state.get_mut(g) {
                *state = GroupState::Done;
            }
        }
    }

    /// A group sent alone was rejected: the unit of the failing operation is at fault.
    fn rejected(&mut self, g: usize, error: TransactError) {
        let Some(group) = self.group(g) else {
            return;
        };
        let op_index = match &error {
            TransactError::Operation { index, .. } => Some(*index),
            _ => None,
        };
        let at = op_index.and_then(|i| Some((group.ops.get(i)?, group.info.get(i)?)));
        let culprit = at
            .map(|(_, info)| info.unit)
            .or_else(|| group.units.first().copied())
            .unwrap_or(0);
        let culprit_key = self.key(culprit);
        let op = at.map(|(op, info)| op_line(op, info));
        for &unit in &group.units {
            let key = self.key(unit);
            let outcome = if unit == culprit {
                UnitError::Rejected {
                    unit: key.clone(),
                    op_index,
                    op: op.clone(),
                    error: error.clone(),
                }
            } else {
                UnitError::BundledWithFailed {
                    unit: key.clone(),
                    failed: culprit_key.clone(),
                }
            };
            self.report.units.insert(key, UnitOutcome::Failed(outcome));
        }
        if let Some(state) = self.state.get_mut(g) {
            *state = GroupState::Failed(culprit);
        }
    }

    fn fail_group(&mut self, g: usize, error: impl Fn(UnitKey) -> UnitError) {
        let Some(group) = self.group(g) else {
            return;
        };
        for &unit in &group.units {
            let key = self.key(unit);
            self.report
                .units
                .insert(key.clone(), UnitOutcome::Failed(error(key)));
        }
        if let (Some(state), Some(first)) = (self.state.get_mut(g), group.units.first()) {
            *state = GroupState::Failed(*first);
        }
    }

    fn abandon(&mut self, g: usize) {
        if let Some(state) = self.state.get_mut(g) {
            *state = GroupState::Abandoned;
        }
    }

    fn into_report(mut self) -> ApplyReport {
        for (g, group) in self.plan.groups.iter().enumerate() {
            let state = self.state.get(g).copied().unwrap_or(GroupState::Pending);
            for &unit in &group.units {
                let key = self.key(unit);
                let outcome = match state {
                    _ if group.ops.is_empty() => UnitOutcome::Unchanged,
                    GroupState::Pending | GroupState::Abandoned | GroupState::InFlight => {
                        UnitOutcome::NotAttempted
                    }
                    GroupState::Done | GroupState::Failed(_) => continue,
                };
                self.report.units.entry(key).or_insert(outcome);
            }
        }
        self.report
    }
}

/// A copy of `op` with the named UUIDs found in `names` replaced by the committed UUIDs.
fn resolve_names(op: &Operation, names: &HashMap<String, Uuid>) -> Operation {
    let atom = |a: &Atom| match a {
        Atom::NamedUuid(name) => names
            .get(name)
            .map_or_else(|| a.clone(), |u| Atom::Uuid(*u)),
        other => other.clone(),
    };
    let value = |v: &Value| match v {
        Value::Atom(a) => Value::Atom(atom(a)),
        Value::Set(atoms) => Value::Set(atoms.iter().map(atom).collect()),
        Value::Map(pairs) => Value::Map(pairs.iter().map(|(k, v)| (atom(k), atom(v))).collect()),
    };
    let row = |r: &Row| -> Row { r.iter().map(|(c, v)| (c.clone(), value(v))).collect() };
    match op {
        Operation::Insert {
            table,
            row: r,
            uuid_name,
            uuid,
        } => Operation::Insert {
            table: table.clone(),
            row: row(r),
            uuid_name: uuid_name.clone(),
            uuid: *uuid,
        },
        Operation::Update {
            table,
            where_,
            row: r,
        } => Operation::Update {
            table: table.clone(),
            where_: where_.clone(),
            row: row(r),
        },
        Operation::Mutate {
            table,
            where_,
            mutations,
        } => Operation::Mutate {
            table: table.clone(),
            where_: where_.clone(),
            mutations: mutations
                .iter()
                .map(|m| Mutation {
                    column: m.column.clone(),
                    mutator: m.mutator,
                    value: value(&m.value),
                })
                .collect(),
        },
        other => other.clone(),
    }
}
