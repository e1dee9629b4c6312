//! The bench's own view of the zone's databases while the controller works: a `udn_ovsdb`
//! client monitoring the Northbound tables the controller writes (without the columns other
//! daemons write: northd sets `Logical_Switch_Port.up`, `dynamic_addresses` and `tag`), so
//! that "NB changed" means the controller wrote; `NB_Global`'s `nb_cfg`/`sb_cfg`/`hv_cfg`;
//! and a Southbound connection for row counts.
//!
//! Convergence ([`ZoneView::converge`]): the expected rows are there (every logical router:
//! a cluster router and a gateway router per network and for the default network; every
//! pod's two logical switch ports, default network and UDN) and the monitored tables then
//! stay unchanged for [`QUIET`]. Each time the tables changed and the expected rows are
//! there, `NB_Global.nb_cfg` is bumped (as `ovn-nbctl --wait` does), so the last bump follows
//! the last write within one poll and `sb_cfg`/`hv_cfg` reaching it means northd and
//! ovn-controller are done with the final NB contents.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use udn_ovsdb::client::{Client, ClientConfig, Endpoint};
use udn_ovsdb::engine::{OWNER_CONTROLLER_KEY, OWNER_KEY};
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{Atom, Mutation, Mutator, Operation, OperationResult, Uuid, Value};
use udn_ovsdb::replica::Replica;
use udn_ovsdb::schema::{DbSchema, Requirements};

/// The Northbound tables the controller writes.
pub use udn_controller::zone::WRITTEN_TABLES as NB_TABLES;

/// Columns of those tables other daemons write (ovn-northd).
const FOREIGN_COLUMNS: [(&str, &str); 3] = [
    ("Logical_Switch_Port", "up"),
    ("Logical_Switch_Port", "dynamic_addresses"),
    ("Logical_Switch_Port", "tag"),
];

/// How long the monitored tables must stay unchanged for NB to count as converged.
pub const QUIET: Duration = Duration::from_secs(3);
/// How often the bench looks.
pub const POLL: Duration = Duration::from_millis(20);
/// How often a long convergence says how far it got (on stderr).
const PROGRESS_EVERY: Duration = Duration::from_secs(10);
/// The least time between two `nb_cfg` bumps (a controller that never stops writing must
/// not make northd recompute on every poll).
const BUMP_INTERVAL: Duration = Duration::from_millis(250);

/// What the monitoring client keeps of NB: every column of [`NB_TABLES`] but the foreign
/// ones, and `NB_Global`'s sequence numbers.
pub fn nb_monitor() -> anyhow::Result<Requirements> {
    let schema = DbSchema::from_text(nb::SCHEMA_JSON).context("parsing the vendored NB schema")?;
    let mut monitor = Requirements::default().with("NB_Global", ["nb_cfg", "sb_cfg", "hv_cfg"]);
    for table in NB_TABLES {
        let columns = schema
            .table(table)
            .ok_or_else(|| anyhow!("the NB schema has no table {table}"))?
            .columns
            .keys()
            .map(String::as_str)
            .filter(|column| !FOREIGN_COLUMNS.contains(&(table, column)));
        monitor = monitor.with(table, columns);
    }
    Ok(monitor)
}

/// What [`ZoneView::converge`] waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watch {
    /// The rows NB must hold.
    pub expect: Expect,
    /// Whether to wait for `sb_cfg` and `hv_cfg` too (a zone with northd and
    /// ovn-controller), bumping `nb_cfg`.
    pub hv: bool,
}

/// What the bench expects in NB once the controller is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expect {
    /// Logical routers: a cluster router and a gateway router per network, default included.
    pub routers: usize,
    /// Pod logical switch ports (`external_ids:pod=true`): two per pod.
    pub pod_ports: usize,
}

impl Expect {
    /// For `networks` UDNs and `pods` pods on the local node.
    pub fn new(networks: usize, pods: usize) -> Self {
        Self {
            routers: 2 * (networks + 1),
            pod_ports: 2 * pods,
        }
    }
}

/// What NB holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    /// Logical routers.
    pub routers: usize,
    /// Pod logical switch ports.
    pub pod_ports: usize,
    /// `type=remote` logical switch ports (transit switch ports of remote nodes).
    pub remote_ports: usize,
    /// Rows monitored (of [`NB_TABLES`] and `NB_Global`).
    pub rows: usize,
    /// The highest change version of any `k8s.ovn.org/owner` value in those tables: it
    /// moves on every change of a row the controller stamped (see `Replica::version`).
    pub version: u64,
}

impl Progress {
    /// Whether every expected row is there.
    pub fn complete(&self, expect: &Expect) -> bool {
        self.routers >= expect.routers && self.pod_ports >= expect.pod_ports
    }

    /// Changes whenever the monitored tables change.
    pub fn signature(&self) -> (usize, u64) {
        (self.rows, self.version)
    }
}

fn string<'r>(row: &'r udn_ovsdb::protocol::Row, column: &str) -> Option<&'r str> {
    match row.get(column) {
        Some(Value::Atom(Atom::String(text))) => Some(text),
        _ => None,
    }
}

pub(super) fn map_get<'r>(
    row: &'r udn_ovsdb::protocol::Row,
    column: &str,
    key: &str,
) -> Option<&'r str> {
    match row.get(column) {
        Some(Value::Map(pairs)) => pairs.iter().find_map(|(k, v)| match (k, v) {
            (Atom::String(k), Atom::String(v)) if k == key => Some(v.as_str()),
            _ => None,
        }),
        _ => None,
    }
}

fn integer(row: &udn_ovsdb::protocol::Row, column: &str) -> i64 {
    match row.get(column) {
        Some(Value::Atom(Atom::Integer(n))) => *n,
        _ => 0,
    }
}

/// What changes whenever the monitored tables change: the number of rows, and the highest
/// change version of any `k8s.ovn.org/owner` value (it moves on every change of a row the
/// controller stamped, see `Replica::version`). Cheap: no row is read.
pub fn signature(replica: &Replica) -> (usize, u64) {
    let mut version = 0;
    for table in NB_TABLES {
        if let Some(owners) = replica.indexed_values(table, OWNER_KEY) {
            for owner in owners {
                version = version.max(replica.version(OWNER_KEY, owner).unwrap_or(0));
            }
        }
    }
    (replica.len(), version)
}

/// [`Progress`] of `replica`.
pub fn progress(replica: &Replica) -> Progress {
    let (rows, version) = signature(replica);
    let mut out = Progress {
        routers: replica.rows("Logical_Router").count(),
        rows,
        version,
        ..Progress::default()
    };
    for (_, row) in replica.rows("Logical_Switch_Port") {
        if map_get(row, "external_ids", "pod") == Some("true") {
            out.pod_ports += 1;
        }
        if string(row, "type") == Some("remote") {
            out.remote_ports += 1;
        }
    }
    out
}

/// `NB_Global`'s sequence numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cfg {
    /// `nb_cfg`.
    pub nb: i64,
    /// `sb_cfg`: northd has written SB for this `nb_cfg`.
    pub sb: i64,
    /// `hv_cfg`: every (local) chassis has installed it.
    pub hv: i64,
}

/// When things happened, in seconds from the controller's start.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timeline {
    /// The first change of the monitored NB tables (the controller's first write seen).
    pub first_s: f64,
    /// The expected rows were first all there.
    pub complete_s: f64,
    /// The last change of the monitored NB tables (NB converged).
    pub nb_s: f64,
    /// `sb_cfg` reached the last bump.
    pub sb_s: f64,
    /// `hv_cfg` reached the last bump.
    pub hv_s: f64,
    /// `nb_cfg` bumps (one per NB change seen after the expected rows were there).
    pub bumps: usize,
}

/// The bench's connections to the zone's NB and SB.
#[derive(Debug)]
pub struct ZoneView {
    nb: Client,
    sb: Client,
}

fn config(endpoint: Endpoint, database: &str, monitor: Requirements) -> ClientConfig {
    let mut config = ClientConfig::new(endpoint, database);
    config.monitor = monitor;
    config.indexed_keys = vec![OWNER_KEY.to_owned(), OWNER_CONTROLLER_KEY.to_owned()];
    // Selects of every logical flow and transactions while the servers are busy.
    config.request_timeout = Duration::from_secs(600);
    config
}

impl ZoneView {
    /// Connects to both databases.
    pub async fn connect(nb: Endpoint, sb: Endpoint) -> anyhow::Result<Self> {
        let nb = Client::connect(config(nb, nb::DATABASE, nb_monitor()?))
            .await
            .context("connecting the bench's NB client")?;
        let sb_monitor = Requirements::default().with("SB_Global", ["nb_cfg"]);
        let sb = Client::connect(config(sb, "OVN_Southbound", sb_monitor))
            .await
            .context("connecting the bench's SB client")?;
        Ok(Self { nb, sb })
    }

    /// The NB client (its replica holds what the controller wrote).
    pub fn nb(&self) -> &Client {
        &self.nb
    }

    /// What NB holds now.
    pub fn progress(&self) -> Progress {
        progress(&self.nb.replica())
    }

    /// [`signature`] of NB now.
    pub fn signature(&self) -> (usize, u64) {
        signature(&self.nb.replica())
    }

    /// The rows of [`NB_TABLES`] now, by UUID.
    pub fn nb_uuids(&self) -> HashSet<Uuid> {
        let replica = self.nb.replica();
        NB_TABLES
            .iter()
            .flat_map(|table| replica.rows(table).map(|(uuid, _)| *uuid))
            .collect()
    }

    /// `NB_Global`'s sequence numbers now.
    pub fn cfg(&self) -> Cfg {
        let replica = self.nb.replica();
        replica
            .rows("NB_Global")
            .next()
            .map(|(_, row)| Cfg {
                nb: integer(row, "nb_cfg"),
                sb: integer(row, "sb_cfg"),
                hv: integer(row, "hv_cfg"),
            })
            .unwrap_or_default()
    }

    /// Increments `NB_Global.nb_cfg`; returns the new value.
    pub async fn bump(&self) -> anyhow::Result<i64> {
        let op = Operation::Mutate {
            table: "NB_Global".to_owned(),
            where_: Vec::new(),
            mutations: vec![Mutation {
                column: "nb_cfg".to_owned(),
                mutator: Mutator::Add,
                value: Value::Atom(Atom::Integer(1)),
            }],
        };
        self.nb
            .transact(vec![op])
            .await
            .context("bumping NB_Global.nb_cfg")?;
        // The replica shows the commit when transact returns.
        Ok(self.cfg().nb)
    }

    /// The number of rows of SB table `table` (a `select` of `_uuid` only).
    pub async fn sb_rows(&self, table: &str) -> anyhow::Result<usize> {
        let op = Operation::Select {
            table: table.to_owned(),
            where_: Vec::new(),
            columns: Some(vec!["_uuid".to_owned()]),
        };
        let results = self
            .sb
            .transact(vec![op])
            .await
            .with_context(|| format!("counting SB {table}"))?;
        match results.first() {
            Some(OperationResult::Rows(rows)) => Ok(rows.len()),
            other => bail!("select of SB {table}: unexpected result {other:?}"),
        }
    }

    /// Waits until NB is converged and, with [`Wait::Hv`], northd and ovn-controller are done
    /// with it (see the module docs); times from `started`, changes counted from the
    /// signature `before` (NB's before the controller started). `alive` is called every poll
    /// (it fails when the controller died), `on_change` whenever NB changed; gives up after
    /// `deadline`, saying what it saw.
    pub async fn converge(
        &self,
        watch: Watch,
        before: (usize, u64),
        started: Instant,
        deadline: Duration,
        mut alive: impl FnMut() -> anyhow::Result<()>,
        mut on_change: impl FnMut(),
    ) -> anyhow::Result<Timeline> {
        let expect = watch.expect;
        let mut timeline = Timeline::default();
        let mut last = before;
        let mut progress = self.progress();
        let mut bumped: Option<((usize, u64), i64)> = None;
        let mut bumped_at = Instant::now();
        let mut reported = Instant::now();
        let (mut sb_at, mut hv_at) = (None, None);
        loop {
            alive()?;
            let now = started.elapsed();
            // Rows are only counted again when something changed.
            let signature = self.signature();
            if signature != last {
                last = signature;
                timeline.nb_s = now.as_secs_f64();
                if timeline.first_s == 0.0 {
                    timeline.first_s = timeline.nb_s;
                }
                on_change();
                progress = self.progress();
            }
            let complete = progress.complete(&expect);
            if complete && timeline.complete_s == 0.0 {
                timeline.complete_s = now.as_secs_f64();
            }
            let stale = bumped.is_none_or(|(at, _)| at != signature);
            let may_bump = bumped.is_none() || bumped_at.elapsed() >= BUMP_INTERVAL;
            if watch.hv && complete && stale && may_bump {
                let target = self.bump().await?;
                bumped_at = Instant::now();
                bumped = Some((signature, target));
                timeline.bumps += 1;
                (sb_at, hv_at) = (None, None);
            }
            if let Some((_, target)) = bumped {
                let cfg = self.cfg();
                let now = started.elapsed().as_secs_f64();
                if sb_at.is_none() && cfg.sb >= target {
                    sb_at = Some(now);
                }
                if hv_at.is_none() && cfg.hv >= target {
                    hv_at = Some(now);
                }
            }
            let quiet = started.elapsed().as_secs_f64() - timeline.nb_s >= QUIET.as_secs_f64();
            if quiet && complete && !watch.hv {
                return Ok(timeline);
            }
            let settled = quiet && complete && bumped.is_some_and(|(at, _)| at == signature);
            if let (true, Some(sb), Some(hv)) = (settled, sb_at, hv_at) {
                timeline.sb_s = sb;
                timeline.hv_s = hv;
                return Ok(timeline);
            }
            if reported.elapsed() >= PROGRESS_EVERY {
                reported = Instant::now();
                eprintln!(
                    "  {:.0} s: {} routers, {} pod ports, {} remote ports, {} rows; {:?}",
                    started.elapsed().as_secs_f64(),
                    progress.routers,
                    progress.pod_ports,
                    progress.remote_ports,
                    progress.rows,
                    self.cfg()
                );
            }
            if started.elapsed() > deadline {
                bail!(
                    "not converged after {} s: {progress:?}, expected {expect:?}, {:?}, nb_cfg bumped to {:?}",
                    deadline.as_secs(),
                    self.cfg(),
                    bumped.map(|(_, target)| target)
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until the monitored tables have not changed for [`QUIET`], or fails after
    /// `deadline`.
    pub async fn wait_quiet(&self, deadline: Duration) -> anyhow::Result<Progress> {
        let started = Instant::now();
        let mut last = self.signature();
        let mut changed = Instant::now();
        loop {
            tokio::time::sleep(POLL).await;
            let now = self.signature();
            if now != last {
                last = now;
                changed = Instant::now();
            } else if changed.elapsed() >= QUIET {
                return Ok(self.progress());
            }
            if started.elapsed() > deadline {
                bail!("NB kept changing for {} s", deadline.as_secs());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monitor_leaves_out_what_northd_writes() {
        let monitor = nb_monitor().unwrap();
        assert_eq!(monitor.tables.len(), NB_TABLES.len() + 1);
        let lsp = &monitor.tables["Logical_Switch_Port"];
        assert!(lsp.contains("addresses") && lsp.contains("external_ids"));
        assert!(!lsp.contains("up") && !lsp.contains("dynamic_addresses"));
        assert_eq!(monitor.tables["NB_Global"].len(), 3);
    }

    #[test]
    fn complete_needs_every_router_and_pod_port() {
        let expect = Expect::new(3, 5);
        assert_eq!(
            expect,
            Expect {
                routers: 8,
                pod_ports: 10
            }
        );
        let mut progress = Progress {
            routers: 8,
            pod_ports: 9,
            ..Progress::default()
        };
        assert!(!progress.complete(&expect));
        progress.pod_ports = 10;
        assert!(progress.complete(&expect));
    }
}
