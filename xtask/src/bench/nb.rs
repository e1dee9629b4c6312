//! `cargo xtask bench nb`: the Northbound reconcile engine against the server's own limit.
//!
//! N Layer3 primary UDNs on M nodes ([`nb_topology`](super::nb_topology)) are written to
//! private `ovsdb-server`s, each on a fresh database:
//! 1. raw: the same rows as JSON-RPC `transact` requests straight on the socket, once as one
//!    transaction and once in batches of 10, 50 and 200 networks ([`nb_raw`](super::nb_raw));
//!    the fastest is `raw_s`;
//! 2. engine: [`Engine::reconcile`] through the client (plan, apply, verify the units
//!    applied), from the desired units until every transaction is committed (and in the
//!    client's replica) and verified: `engine_s`;
//! 3. the unchanged desired state again, reconciled by the same engine (which skips the
//!    units it verified): `reapply_ops` (must be 0) and `reapply_s`;
//! 4. memory: a fresh client syncs the populated database; the heap it holds afterwards
//!    (counted by the xtask binary's global allocator) is the replica's, compared with the
//!    server's RSS.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, ensure};
use udn_ovsdb::client::{Client, ClientConfig};
use udn_ovsdb::engine::{ApplyPolicy, DesiredUnit, Engine, INDEXED_KEYS, Scope};
use udn_ovsdb::nb;
use udn_ovsdb::schema::{DbSchema, Requirements};
use udn_ovsdb::testing::OvsdbServer;

use super::nb_alloc::live_bytes;
use super::nb_raw::{self, Batching};
use super::nb_topology::{CONTROLLER, OWNER_TYPE, Topology, network_unit};

/// The tables the topology writes; the engine's client monitors all their columns.
pub const TABLES: [&str; 8] = [
    "ACL",
    "Logical_Router",
    "Logical_Router_Port",
    "Logical_Router_Static_Route",
    "Logical_Switch",
    "Logical_Switch_Port",
    "NAT",
    "Port_Group",
];

const MIB: f64 = 1024.0 * 1024.0;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The topology.
    pub topology: Topology,
    /// How the engine batches (default: [`ApplyPolicy::default`]).
    pub policy: ApplyPolicy,
}

/// One raw variant's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawFigures {
    /// How the rows were cut.
    pub batching: Batching,
    /// Whether the connection also monitored the tables (diagnostic variants, not `raw_s`).
    pub monitored: bool,
    /// Transactions sent.
    pub transactions: usize,
    /// Seconds.
    pub seconds: f64,
    /// CPU seconds the server used meanwhile.
    pub server_cpu_s: f64,
    /// The server's RSS afterwards, MiB.
    pub server_rss_mb: f64,
}

/// One engine pass: reconcile (plan, apply, verify).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineRun {
    /// Seconds a full comparison of the pass's units with the database afterwards takes, by
    /// an engine that remembers nothing (measured after the pass, not part of it): what the
    /// first pass's verification cost, what the re-apply would cost without skipping.
    pub compare_s: f64,
    /// Seconds from the desired units to the last transaction committed and verified.
    pub seconds: f64,
    /// Operations the plan sent.
    pub ops: usize,
    /// Transactions sent.
    pub transactions: usize,
    /// CPU seconds the server used meanwhile.
    pub server_cpu_s: f64,
    /// CPU seconds this process used meanwhile (all threads).
    pub client_cpu_s: f64,
}

/// Figures of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Networks.
    pub networks: usize,
    /// Nodes.
    pub nodes: usize,
    /// Rows written.
    pub rows: usize,
    /// The engine's batching.
    pub policy: ApplyPolicy,
    /// Raw variants: [`Batching::ALL`] (these make `raw_s`), then the diagnostic ones.
    pub raw: Vec<RawFigures>,
    /// The first engine pass (fresh database).
    pub engine: EngineRun,
    /// The second pass with the same desired state.
    pub reapply: EngineRun,
    /// RSS of the server holding the database (the engine run's server, with the memory
    /// client's monitor), MiB.
    pub server_rss_mb: f64,
    /// Heap held by a fresh client after syncing the database: its replica, MiB.
    pub replica_mb: f64,
    /// Rows in that replica.
    pub replica_rows: usize,
    /// The same with every column of the tables monitored, MiB (diagnostic).
    pub replica_all_columns_mb: f64,
    /// Peak RSS of this process over the whole run (desired units, encoded requests,
    /// replicas), MiB.
    pub process_peak_rss_mb: f64,
    /// 1-minute load average before and after the run.
    pub load: (f64, f64),
}

impl Figures {
    /// The fastest of the raw variants of [`Batching::ALL`] (unmonitored).
    pub fn raw_s(&self) -> f64 {
        self.raw
            .iter()
            .filter(|r| !r.monitored && Batching::ALL.contains(&r.batching))
            .map(|r| r.seconds)
            .fold(f64::INFINITY, f64::min)
    }

    /// `engine_s / raw_s`.
    pub fn ratio(&self) -> f64 {
        self.engine.seconds / self.raw_s()
    }

    /// The memory line printed before the summary.
    pub fn memory_line(&self) -> String {
        format!(
            "nb-bench-memory server_rss_mb={:.1} replica_mb={:.1} replica_rows={} replica_all_columns_mb={:.1} process_peak_rss_mb={:.1}",
            self.server_rss_mb,
            self.replica_mb,
            self.replica_rows,
            self.replica_all_columns_mb,
            self.process_peak_rss_mb
        )
    }

    /// The summary line (the last line of output).
    pub fn line(&self) -> String {
        format!(
            "nb-bench networks={} nodes={} rows={} engine_s={:.3} raw_s={:.3} ratio={:.2} reapply_ops={} reapply_s={:.3} rss_mb={:.1}",
            self.networks,
            self.nodes,
            self.rows,
            self.engine.seconds,
            self.raw_s(),
            self.ratio(),
            self.reapply.ops,
            self.reapply.seconds,
            self.replica_mb
        )
    }
}

/// What the engine needs of the topology's tables: every column the desired rows set,
/// `external_ids` (the ownership stamps), and every reference column between these tables
/// (how the engine finds the referrers of rows it deletes).
pub fn engine_columns() -> anyhow::Result<Requirements> {
    let schema = DbSchema::from_text(nb::SCHEMA_JSON).context("parsing the vendored NB schema")?;
    let mut needs = Requirements::default();
    for row in network_unit(0, 1).rows {
        let columns = row
            .columns
            .keys()
            .chain(row.refs.keys())
            .map(String::as_str);
        needs = needs.with(&row.table, columns.chain(["external_ids"]));
    }
    for table in TABLES {
        let table_schema = schema
            .table(table)
            .ok_or_else(|| anyhow!("the NB schema has no table {table}"))?;
        let references = table_schema.columns.iter().filter_map(|(name, column)| {
            let (target, _) = column.ty.reference()?;
            TABLES.contains(&target).then_some(name.as_str())
        });
        needs = needs.with(table, references);
    }
    Ok(needs)
}

/// The engine's client configuration for `server`: `monitor` monitored and required, the
/// engine's ownership keys indexed, generous timeouts for big transactions.
pub fn client_config(server: &OvsdbServer, monitor: &Requirements) -> ClientConfig {
    let mut config = ClientConfig::new(server.endpoint(), nb::DATABASE);
    config.monitor = monitor.clone();
    config.required = monitor.clone();
    config.indexed_keys = INDEXED_KEYS.iter().map(|k| (*k).to_owned()).collect();
    config.request_timeout = Duration::from_secs(600);
    config
}

/// One engine pass over `units` with every unit of [`OWNER_TYPE`] in scope: reconcile
/// (plan against the client's replica, apply, verify), fail naming the first unit that
/// failed; then, untimed, a full comparison of `units` by an engine that remembers nothing.
/// `server_pid` is the server's process, for its CPU time.
pub async fn engine_pass(
    engine: &Engine,
    client: &Client,
    server_pid: u32,
    units: impl Fn() -> Vec<DesiredUnit>,
    policy: &ApplyPolicy,
) -> anyhow::Result<EngineRun> {
    let scope = Scope::OwnerType(OWNER_TYPE.to_owned());
    let desired = units();
    let (server_cpu, client_cpu) = (cpu_seconds(server_pid), cpu_seconds(std::process::id()));
    let started = Instant::now();
    let report = engine.reconcile(client, desired, &scope, policy).await?;
    let seconds = started.elapsed().as_secs_f64();
    let server_cpu_s = cpu_seconds(server_pid) - server_cpu;
    let client_cpu_s = cpu_seconds(std::process::id()) - client_cpu;
    if let Some(failure) = report.failures().next() {
        return Err(anyhow!("{failure}").context("the engine's apply failed"));
    }
    ensure!(report.is_success(), "the engine's apply did not finish");
    let desired = units();
    let started = Instant::now();
    let compare = {
        let replica = client.replica();
        Engine::new(engine.controller()).plan(&*replica, desired, &scope)?
    };
    let compare_s = started.elapsed().as_secs_f64();
    ensure!(
        compare.is_empty(),
        "the database differs from the desired state after a reconcile: {} operations",
        compare.op_count()
    );
    Ok(EngineRun {
        compare_s,
        seconds,
        ops: report.ops,
        transactions: report.transactions,
        server_cpu_s,
        client_cpu_s,
    })
}

/// Writes `units` raw with `batching` to a fresh server and measures it; with `monitored`
/// the connection monitors [`TABLES`] first.
pub fn raw_variant(
    units: &[DesiredUnit],
    rows: usize,
    batching: Batching,
    monitored: bool,
) -> anyhow::Result<RawFigures> {
    let transactions = nb_raw::encode(units, batching, CONTROLLER)?;
    raw_transactions(
        &transactions,
        rows,
        batching,
        monitored.then_some(&TABLES[..]),
        nb_raw::MonitorMethod::Cond,
        false,
    )
}

/// Sends `transactions` (holding `rows` inserts, cut per `batching`) to a fresh private NB
/// `ovsdb-server` and measures it; with `monitor` the connection first monitors every column
/// of those tables, as a client keeping a replica does. With `clock` (and `monitor`), a
/// second connection monitors the same tables and times the updates
/// ([`UpdateClock`](super::controller_watch::UpdateClock)), as the controller bench watches
/// the controller's own writes: the observer costs both sides the same.
pub fn raw_transactions(
    transactions: &[nb_raw::RawTransaction],
    rows: usize,
    batching: Batching,
    monitor: Option<&[&str]>,
    method: nb_raw::MonitorMethod,
    clock: bool,
) -> anyhow::Result<RawFigures> {
    let server = OvsdbServer::start_nb().context("starting ovsdb-server")?;
    let _clock = match monitor {
        Some(tables) if clock => Some(
            super::controller_watch::UpdateClock::start(server.socket(), nb::DATABASE, tables)
                .context("starting the bench's update clock")?,
        ),
        _ => None,
    };
    let cpu = cpu_seconds(server.pid());
    let run = nb_raw::send(server.socket(), transactions, monitor, method)
        .with_context(|| format!("raw {}", batching.label()))?;
    let server_cpu_s = cpu_seconds(server.pid()) - cpu;
    ensure!(
        run.rows == rows,
        "raw {}: {} rows inserted, {rows} expected",
        batching.label(),
        run.rows
    );
    Ok(RawFigures {
        batching,
        monitored: monitor.is_some(),
        transactions: run.transactions,
        seconds: run.seconds,
        server_cpu_s,
        server_rss_mb: server_rss_mb(&server)?,
    })
}

fn server_rss_mb(server: &OvsdbServer) -> anyhow::Result<f64> {
    let kib = server.rss_kib().context("reading the server's RSS")?;
    Ok(kib as f64 / 1024.0)
}

/// CPU seconds (user + system) process `pid` has used.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let ticks: f64 = stat
        .rsplit_once(')')
        .map(|(_, rest)| {
            rest.split_whitespace()
                .skip(11)
                .take(2)
                .filter_map(|t| t.parse::<f64>().ok())
                .sum()
        })
        .unwrap_or(f64::NAN);
    ticks / 100.0
}

/// The 1-minute load average.
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

#[allow(clippy::print_stdout)] // the benchmark's output is its figures
fn say(line: &str) {
    println!("{line}");
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")
}

/// The engine's first pass on the fresh database `server`, then the same desired state again.
async fn engine_passes(
    server: &OvsdbServer,
    monitor: &Requirements,
    topology: Topology,
    policy: &ApplyPolicy,
) -> anyhow::Result<(EngineRun, EngineRun)> {
    let rows = topology.rows();
    let client = Client::connect(client_config(server, monitor))
        .await
        .context("connecting the engine's client")?;
    let reconciler = Engine::new(CONTROLLER);
    let engine = engine_pass(
        &reconciler,
        &client,
        server.pid(),
        || topology.units(),
        policy,
    )
    .await?;
    let in_replica = client.replica().len();
    ensure!(
        in_replica == rows,
        "the replica holds {in_replica} rows after the engine wrote {rows}"
    );
    say(&format!(
        "engine: {} ops in {} transactions, {:.3} s (a full compare: {:.3} s), server CPU {:.2} s, client CPU {:.2} s",
        engine.ops,
        engine.transactions,
        engine.seconds,
        engine.compare_s,
        engine.server_cpu_s,
        engine.client_cpu_s
    ));
    let reapply = engine_pass(
        &reconciler,
        &client,
        server.pid(),
        || topology.units(),
        policy,
    )
    .await?;
    say(&format!(
        "engine re-apply: {} ops in {} transactions, {:.3} s (a full compare: {:.3} s)",
        reapply.ops, reapply.transactions, reapply.seconds, reapply.compare_s
    ));
    Ok((engine, reapply))
}

/// The heap a fresh client monitoring `monitor` holds once synced with `server` and the
/// monitor reply is dropped (its replica), the replica's rows, and the server's RSS meanwhile (MiB). Runs on a runtime of
/// its own, so nothing else of this process is alive on it.
fn replica_heap(
    server: &OvsdbServer,
    monitor: &Requirements,
) -> anyhow::Result<(usize, usize, f64)> {
    runtime()?.block_on(async {
        let before = live_bytes();
        let client = Client::connect(client_config(server, monitor))
            .await
            .context("connecting the memory client")?;
        // The connection's reader drops the monitor reply (bytes and JSON) after handing it
        // over, possibly after `connect` returned: a round trip through the same reader
        // makes sure it has.
        client.echo().await.context("echo after the initial sync")?;
        let after = live_bytes();
        let rows = client.replica().len();
        let rss = server_rss_mb(server)?;
        drop(client);
        anyhow::Ok((after.saturating_sub(before), rows, rss))
    })
}

/// Runs the benchmark, printing each variant's figures as they come.
pub fn run(options: &Options) -> anyhow::Result<Figures> {
    let topology = options.topology;
    let load_before = load_average();
    let rows = topology.rows();
    say(&format!(
        "nb-bench: {} networks x {} nodes = {rows} rows (load average {load_before:.2})",
        topology.networks, topology.nodes
    ));
    let units = topology.units();
    // Diagnostics: one network per transaction, and what monitoring costs the server in one
    // transaction and in transactions the size of the engine's.
    let engine_sized =
        Batching::Networks((options.policy.max_ops / topology.rows_per_network()).max(1));
    let variants = Batching::ALL.iter().map(|b| (*b, false)).chain([
        (Batching::Networks(1), false),
        (Batching::Single, true),
        (engine_sized, true),
    ]);
    let mut raw = Vec::new();
    for (batching, monitored) in variants {
        let figures = raw_variant(&units, rows, batching, monitored)?;
        say(&format!(
            "raw {}{}: {} transactions, {:.3} s, server CPU {:.2} s, server RSS {:.1} MiB",
            batching.label(),
            if monitored { " + monitor" } else { "" },
            figures.transactions,
            figures.seconds,
            figures.server_cpu_s,
            figures.server_rss_mb
        ));
        raw.push(figures);
    }
    drop(units);
    let server = OvsdbServer::start_nb().context("starting ovsdb-server")?;
    let policy = options.policy;
    let monitor = engine_columns()?;
    let (engine, reapply) =
        runtime()?.block_on(engine_passes(&server, &monitor, topology, &policy))?;
    let (replica_bytes, replica_rows, server_rss_mb) = replica_heap(&server, &monitor)?;
    let every_column = TABLES
        .iter()
        .fold(Requirements::default(), |r, t| r.with(t, []));
    let (all_columns_bytes, _, _) = replica_heap(&server, &every_column)?;
    drop(server);
    Ok(Figures {
        networks: topology.networks,
        nodes: topology.nodes,
        rows,
        policy,
        raw,
        engine,
        reapply,
        server_rss_mb,
        replica_mb: replica_bytes as f64 / MIB,
        replica_rows,
        replica_all_columns_mb: all_columns_bytes as f64 / MIB,
        process_peak_rss_mb: super::peak_rss_mb().unwrap_or(f64::NAN),
        load: (load_before, load_average()),
    })
}

/// Runs, prints and records in `docs/benchmarks.md` (section `nb-<N>x<M>`).
pub fn run_and_record(root: &Path, options: &Options) -> anyhow::Result<()> {
    let figures = run(options)?;
    let topology = options.topology;
    super::record(
        root,
        &format!("nb-{}x{}", topology.networks, topology.nodes),
        &format!(
            "Northbound engine vs raw ovsdb-server: {} networks x {} nodes",
            topology.networks, topology.nodes
        ),
        &super::nb_report::body(&figures, &jiff::Zoned::now().date().to_string()),
    )?;
    say(&figures.memory_line());
    say(&figures.line());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_monitors_what_it_writes_and_the_references_between() {
        let needs = engine_columns().unwrap();
        let columns =
            |table: &str| -> Vec<&str> { needs.tables[table].iter().map(String::as_str).collect() };
        assert_eq!(needs.tables.len(), TABLES.len());
        assert_eq!(
            columns("Logical_Switch_Port"),
            ["addresses", "external_ids", "name", "options", "type"]
        );
        assert_eq!(
            columns("Logical_Switch"),
            ["acls", "external_ids", "name", "other_config", "ports"]
        );
        // NAT.gateway_port points at Logical_Router_Port: monitored although never set.
        assert_eq!(
            columns("NAT"),
            [
                "external_ids",
                "external_ip",
                "gateway_port",
                "logical_ip",
                "logical_port",
                "options",
                "type"
            ]
        );
        assert_eq!(
            columns("Port_Group"),
            ["acls", "external_ids", "name", "ports"]
        );
    }
}
