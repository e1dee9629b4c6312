//! Running the networks' engine passes of one zone pass: every network is planned first,
//! then the plans are sent back to back on the one Northbound connection (the server
//! answers a connection's transactions in order, so the shared rows written first are
//! there for the networks' transactions after them), and each network is verified only
//! once every write of the pass is answered. The server so always has work queued, and
//! the controller's own work (planning, verifying) happens before and after the writes
//! rather than between them.
//!
//! Plans awaiting their answers are bounded by [`AHEAD_OPS`] operations: beyond that a
//! network is planned as earlier ones are answered.

use std::collections::BTreeSet;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use udn_ovsdb::client::{Client, ClientError};
use udn_ovsdb::engine::{
    ApplyPolicy, ApplyReport, DesiredUnit, Engine, PlanError, PlannedPass, Scope, UnitKey,
};
use udn_ovsdb::protocol::Operation;

use crate::model::Network;

/// At most this many planned operations await their answers (a network's plan stays whole).
/// About 500 networks of 90 rows; a plan holds its rows, so this bounds the memory too.
pub(super) const AHEAD_OPS: usize = 50_000;

/// One network's engine pass to run.
pub(super) struct Job {
    pub(super) engine: Engine,
    pub(super) units: Vec<DesiredUnit>,
    pub(super) scope: Scope,
    pub(super) meta: JobMeta,
}

/// What is needed after the pass: which units to track.
pub(super) struct JobMeta {
    pub(super) controller: String,
    pub(super) keys: BTreeSet<UnitKey>,
    pub(super) previous: Option<BTreeSet<UnitKey>>,
    pub(super) sweeping: bool,
}

/// A job's outcome.
pub(super) struct Done<'n> {
    pub(super) net: &'n Network,
    pub(super) meta: JobMeta,
    pub(super) result: Result<ApplyReport, PlanError>,
    /// From its plan to its last answer (measured when it ended, not when the batch did).
    pub(super) took: Duration,
}

/// A job planned and sent, until it is verified.
pub(super) struct Sent<'n> {
    net: &'n Network,
    meta: JobMeta,
    engine: Engine,
    planned: PlannedPass,
    report: ApplyReport,
    took: Duration,
}

type Applying<'a, 'n> = Pin<Box<dyn Future<Output = Sent<'n>> + Send + 'a>>;

/// What [`write_jobs`] did: the lead's outcome, the jobs that could not be planned, and
/// the jobs sent (all answered), to verify with [`Written::verify`].
pub(super) struct Written<'n> {
    /// The lead's operations and how long its transaction took, or why it failed.
    pub(super) lead: Result<(usize, Duration), ClientError>,
    failed: Vec<Done<'n>>,
    sent: Vec<Sent<'n>>,
}

impl<'n> Written<'n> {
    /// Compares each sent network with the replica again (see
    /// [`Engine::verify_pass`]); every job's outcome.
    pub(super) fn verify(self, nb: &Client) -> Vec<Done<'n>> {
        let mut done = self.failed;
        for Sent {
            net,
            meta,
            engine,
            planned,
            report,
            took,
        } in self.sent
        {
            engine.verify_pass(|| nb.replica(), planned, &report);
            done.push(Done {
                net,
                meta,
                result: Ok(report),
                took,
            });
        }
        done
    }
}

/// Writes `lead` (plain operations the networks may refer to, e.g. shared rows inserted
/// with chosen UUIDs) in one transaction, then the engine passes of `jobs` in their order,
/// planned ahead and sent without waiting for each other; returns once every one is
/// answered, before any is verified.
pub(super) async fn write_jobs<'n>(
    nb: &Client,
    policy: &ApplyPolicy,
    lead: Vec<Operation>,
    jobs: Vec<(&'n Network, Job)>,
) -> Written<'n> {
    let lead_ops = lead.len();
    let mut lead_write = std::pin::pin!(async move {
        let started = Instant::now();
        if lead.is_empty() {
            Ok((0, Duration::ZERO))
        } else {
            nb.transact(lead)
                .await
                .map(|_| (lead_ops, started.elapsed()))
        }
    });
    let mut pending = jobs.into_iter();
    let mut failed: Vec<Done<'n>> = Vec::new();
    let mut ahead = 0usize;
    // Every network planned (up to the bound) before anything is sent: the writes then go
    // out back to back.
    let mut planned: Vec<Planned<'n>> = Vec::new();
    while ahead < AHEAD_OPS {
        let Some((net, job)) = pending.next() else {
            break;
        };
        if let Some(job) = plan(nb, net, job, &mut failed) {
            ahead += job.planned.op_count();
            planned.push(job);
        }
    }
    // The lead first (polled once: sent now), then the networks in their order.
    let mut lead_result = match futures::poll!(lead_write.as_mut()) {
        Poll::Ready(result) => Some(result),
        Poll::Pending => None,
    };
    let mut running: FuturesUnordered<Applying<'_, 'n>> = FuturesUnordered::new();
    let mut sent: Vec<Sent<'n>> = Vec::new();
    for job in planned {
        send(nb, policy, job, &mut running, &mut sent, &mut ahead).await;
    }
    loop {
        if lead_result.is_none() {
            lead_result = Some(lead_write.as_mut().await);
        }
        match running.next().await {
            Some(finished) => {
                ahead = ahead.saturating_sub(finished.planned.op_count());
                sent.push(finished);
            }
            None if pending.len() == 0 => break,
            None => {}
        }
        // Beyond the bound: planned as earlier ones are answered.
        while ahead < AHEAD_OPS || running.is_empty() {
            let Some((net, job)) = pending.next() else {
                break;
            };
            if let Some(job) = plan(nb, net, job, &mut failed) {
                ahead += job.planned.op_count();
                send(nb, policy, job, &mut running, &mut sent, &mut ahead).await;
            }
        }
    }
    let lead = match lead_result {
        Some(result) => result,
        None => lead_write.await,
    };
    Written { lead, failed, sent }
}

/// A job planned, not sent yet.
struct Planned<'n> {
    net: &'n Network,
    meta: JobMeta,
    engine: Engine,
    planned: PlannedPass,
    started: Instant,
}

/// Plans `job` against the replica; a job that cannot be planned goes to `failed`.
fn plan<'n>(
    nb: &Client,
    net: &'n Network,
    job: Job,
    failed: &mut Vec<Done<'n>>,
) -> Option<Planned<'n>> {
    let started = Instant::now();
    let planned = {
        let view = nb.replica();
        job.engine.plan_pass(&*view, job.units, &job.scope)
    };
    match planned {
        Ok(planned) => Some(Planned {
            net,
            meta: job.meta,
            engine: job.engine,
            planned,
            started,
        }),
        Err(error) => {
            failed.push(Done {
                net,
                meta: job.meta,
                result: Err(error),
                took: started.elapsed(),
            });
            None
        }
    }
}

/// Starts sending `job`'s plan: polled once here, so its transactions go out now, in the
/// order of the calls; then it waits in `running` (or, answered already, in `sent`).
async fn send<'a, 'n>(
    nb: &'a Client,
    policy: &'a ApplyPolicy,
    job: Planned<'n>,
    running: &mut FuturesUnordered<Applying<'a, 'n>>,
    sent: &mut Vec<Sent<'n>>,
    ahead: &mut usize,
) where
    'n: 'a,
{
    let Planned {
        net,
        meta,
        engine,
        planned,
        started,
    } = job;
    let mut applying: Applying<'a, 'n> = Box::pin(async move {
        let report = engine.apply_pass(nb, &planned, policy).await;
        Sent {
            net,
            meta,
            engine,
            planned,
            report,
            took: started.elapsed(),
        }
    });
    match futures::poll!(applying.as_mut()) {
        Poll::Ready(finished) => {
            *ahead = ahead.saturating_sub(finished.planned.op_count());
            sent.push(finished);
        }
        Poll::Pending => running.push(applying),
    }
}
