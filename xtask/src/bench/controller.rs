//! `cargo xtask bench controller`: the NB controller as users run it (the release
//! `udn-controller` binary, its own process) against `udn-kube-sim serve` and a real OVN
//! zone (`udn_ovn_lab`: NB, SB, ovn-northd, ovn-controller, ovs-vswitchd of node1).
//!
//! 1. The lab's zone `node1` and the sim start; the objects of
//!    [`controller_objects`](super::controller_objects) are created (N primary Layer3
//!    networks, M nodes of which node1 is local, P pods on node1); the empty zone's
//!    footprint is measured (SB logical flows, OpenFlow flows on `br-int`, RSS of the five
//!    OVN/OVS daemons).
//! 2. The controller starts; the clock starts with it. NB converged, northd done (`sb_cfg`)
//!    and flows installed (`hv_cfg`) as [`ZoneView::converge`] defines them; the
//!    controller's own NB write time from its `/metrics`
//!    (`udn_controller_transaction_duration_seconds_sum{database="nb"}`); the zone's
//!    footprint again, minus the empty zone's, per network.
//! 3. Re-apply: the controller is killed and a fresh process (nothing remembered) starts
//!    against the converged zone; after its first pass, the operations it committed
//!    (`udn_controller_operations_total`) must be 0, and NB must not have changed.
//! 4. Raw: every row the controller wrote, copied from the bench's replica
//!    ([`controller_raw`](super::controller_raw)), written to fresh private NB servers as
//!    JSON-RPC `transact` requests on a connection that monitors the tables: in one
//!    transaction, 10 and 50 networks per transaction, one network per transaction. The
//!    fastest is `raw_s`; `nb_ratio` = the isolated run's NB write window (first to last NB
//!    update seen by a connection that monitors the same tables and only times the updates,
//!    [`UpdateClock`](super::controller_watch::UpdateClock)) / `raw_s` (both against an idle
//!    private server), with the other views in the report.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use udn_ovn_lab::{Lab, LabConfig};

use super::controller_diagnostics::{isolated_run, raw_zone};
pub use super::controller_figures::*;
use super::controller_launch::{
    CpuPids, Launch, controller_metrics, footprint, local_host, log_tail, log_warnings,
    source_state,
};
use super::controller_objects::{self as objects, NodeHost, Shape, ZONE};
use super::controller_raw::{self, Copied};
use super::controller_zone::{Expect, NB_TABLES, Progress, Timeline, Watch, ZoneView};
use super::nb::{RawFigures, load_average, raw_transactions};
use super::nb_raw::{Batching, MonitorMethod};
use super::process::{free_port, release_binary};
use super::sim_server::{SimServer, install_crds};

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The objects.
    pub shape: Shape,
    /// The longest the bench waits for the zone to converge.
    pub deadline: Duration,
}

/// Runs of the isolated controller and of each raw variant; the best of each counts.
pub const ROUNDS: usize = 3;

/// Prints a line of the bench's output.
#[allow(clippy::print_stdout)] // the benchmark's output is its figures
pub(super) fn say(line: &str) {
    println!("{line}");
}

/// Starts a fresh controller against the converged zone and reads its first pass.
async fn reapply(
    launch: &Launch<'_>,
    view: &ZoneView,
    deadline: Duration,
) -> anyhow::Result<Reapply> {
    let before = view.progress().signature();
    let port = free_port()?;
    let started = Instant::now();
    let mut controller = launch.spawn(port)?;
    let metrics = loop {
        controller.ensure_running("the restarted udn-controller")?;
        if let Ok(metrics) = controller_metrics(port, controller.pid()).await
            && metrics.passes >= 1
        {
            break metrics;
        }
        anyhow::ensure!(
            started.elapsed() < deadline,
            "the restarted controller made no pass in {} s",
            deadline.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let first_pass_s = started.elapsed().as_secs_f64();
    // Whatever it wrote has reached the bench's replica by the time NB is quiet again.
    let after = view.wait_quiet(deadline).await?.signature();
    let metrics_now = controller_metrics(port, controller.pid()).await?;
    drop(controller);
    Ok(Reapply {
        nb_ops: metrics_now.nb_ops,
        sb_ops: metrics_now.sb_ops,
        first_pass_s,
        pass_s: metrics.pass_s / metrics.passes.max(1) as f64,
        nb_changed: after != before,
    })
}

/// What the zone part of the run produced (the lab and the sim are gone afterwards).
struct ZoneRun {
    hosts: Vec<NodeHost>,
    create_s: f64,
    cpu: Cpu,
    timeline: Timeline,
    progress: Progress,
    controller: ControllerMetrics,
    empty: Footprint,
    full: Footprint,
    reapply: Reapply,
    copied: Copied,
}

async fn zone_run(
    lab: &Lab,
    sim: &SimServer,
    controller_bin: &Path,
    log: PathBuf,
    options: &Options,
) -> anyhow::Result<ZoneRun> {
    let shape = options.shape;
    let cluster = objects::cluster_config()?;
    let local = local_host(lab)?;
    let hosts = std::iter::once(Ok(local.clone()))
        .chain((1..shape.nodes).map(|k| objects::remote_host(&local, k)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let client = sim.client().await?;
    install_crds(&client).await?;
    let created = Instant::now();
    objects::create(&client, shape, &hosts, &cluster).await?;
    let create_s = created.elapsed().as_secs_f64();
    let node = lab.node(ZONE)?;
    let view = ZoneView::connect(node.nb_endpoint(), node.sb_endpoint()).await?;
    let empty = footprint(&view, lab).await?;
    let before = view.nb_uuids();
    say(&format!(
        "controller-bench: {} objects created in {create_s:.2} s; empty zone: {} lflows, {} OpenFlow flows, daemons {:.1} MiB",
        shape.networks * 2 + shape.nodes + shape.pods,
        empty.lflows,
        empty.of_flows,
        empty.rss.total()
    ));
    let launch = Launch {
        binary: controller_bin,
        kubeconfig: &sim.kubeconfig,
        nb: node.nb_remote(),
        sb: node.sb_remote(),
        log,
    };
    let port = free_port()?;
    let signature = view.progress().signature();
    let started = Instant::now();
    let mut controller = launch.spawn(port)?;
    let pids = CpuPids::of_lab(lab, controller.pid())?;
    let cpu_start = pids.sample();
    let cpu_at_change = Cell::new(cpu_start);
    let watch = Watch {
        expect: Expect::new(shape.networks, shape.pods),
        hv: true,
    };
    let timeline = view
        .converge(
            watch,
            signature,
            started,
            options.deadline,
            || controller.ensure_running("udn-controller"),
            || cpu_at_change.set(pids.sample()),
        )
        .await?;
    let cpu = cpu_at_change.get().since(&cpu_start);
    let metrics = controller_metrics(port, controller.pid()).await?;
    let progress = view.progress();
    say(&format!(
        "converged: expected rows at {:.2} s, NB {:.2} s, sb_cfg {:.2} s, hv_cfg {:.2} s ({} nb_cfg bumps); controller NB writes {:.2} s in {} calls, {} ops, {} passes, peak RSS {:.1} MiB",
        timeline.complete_s,
        timeline.nb_s,
        timeline.sb_s,
        timeline.hv_s,
        timeline.bumps,
        metrics.nb_write_s,
        metrics.nb_writes,
        metrics.nb_ops,
        metrics.passes,
        metrics.peak_rss_mb
    ));
    say(&format!("CPU s until NB converged: {cpu:.2?}"));
    let full = footprint(&view, lab).await?;
    say(&format!(
        "zone: {} lflows, {} datapaths, {} port bindings, {} OpenFlow flows, daemons {:.1} MiB",
        full.lflows,
        full.datapaths,
        full.port_bindings,
        full.of_flows,
        full.rss.total()
    ));
    drop(controller);
    let reapply = reapply(&launch, &view, options.deadline).await?;
    say(&format!(
        "re-apply: {} NB ops, {} SB ops, first pass after {:.2} s ({:.2} s a pass), NB changed: {}",
        reapply.nb_ops, reapply.sb_ops, reapply.first_pass_s, reapply.pass_s, reapply.nb_changed
    ));
    let copied = {
        let schema = view.nb().schema();
        let replica = view.nb().replica();
        controller_raw::copy(&replica, &schema, &NB_TABLES, &before)?
    };
    Ok(ZoneRun {
        hosts,
        create_s,
        timeline,
        progress,
        cpu,
        controller: metrics,
        empty,
        full,
        reapply,
        copied,
    })
}

/// Runs the benchmark.
pub fn run(root: &Path, options: &Options) -> anyhow::Result<Figures> {
    let shape = options.shape;
    let load_before = load_average();
    let sim_bin = release_binary(root, "udn-kube-sim", "udn-kube-sim")?;
    let controller_bin = release_binary(root, "udn-controller", "udn-controller")?;
    let source = source_state(root);
    let dir = std::env::temp_dir().join(format!("udn-controller-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).context("creating the work directory")?;
    // The controllers' log is kept (target/ is not tracked), for whoever reads the figures.
    let logs = root.join("target/bench-logs");
    std::fs::create_dir_all(&logs).context("creating target/bench-logs")?;
    let log = logs.join(format!("controller-{}x{}.log", shape.networks, shape.nodes));
    let _ = std::fs::remove_file(&log);
    say(&format!(
        "controller-bench: {} networks x {} nodes, {} pods (load average {load_before:.2}); controller log {}",
        shape.networks,
        shape.nodes,
        shape.pods,
        log.display()
    ));
    let lab = Lab::start(LabConfig::with_nodes(1)).context("starting the OVN lab")?;
    let sim = SimServer::start(&sim_bin, &dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let zone = runtime
        .block_on(zone_run(&lab, &sim, &controller_bin, log.clone(), options))
        .map_err(|error| anyhow!("{error:#}\ncontroller log tail:\n{}", log_tail(&log, 40)))?;
    drop(sim);
    drop(lab);
    // The controller's rows written raw into a fresh zone (control for sb_s and hv_s).
    let lab = Lab::start(LabConfig::with_nodes(1)).context("starting the second OVN lab")?;
    let chassis = zone
        .hosts
        .first()
        .map(|h| h.chassis.clone())
        .unwrap_or_default();
    let raw_zone = runtime.block_on(raw_zone(
        &lab,
        &zone.copied,
        &chassis,
        shape,
        options.deadline,
    ))?;
    drop(lab);
    // The same again without the zone's daemons, on a fresh API server each time: the
    // best of ROUNDS runs, as the raw variants below (both sides of nb_ratio alike; the
    // machine's speed varies from one second to the next).
    let mut isolated: Option<super::controller_figures::Isolated> = None;
    for round in 1..=ROUNDS {
        let sim = SimServer::start(&sim_bin, &dir)?;
        let run = runtime
            .block_on(isolated_run(
                &sim,
                &zone.hosts,
                &controller_bin,
                log.clone(),
                options,
            ))
            .map_err(|error| anyhow!("{error:#}\ncontroller log tail:\n{}", log_tail(&log, 40)))?;
        drop(sim);
        let window = |i: &super::controller_figures::Isolated| i.timeline.nb_s - i.timeline.first_s;
        say(&format!(
            "isolated round {round}: NB write window {:.3} s",
            window(&run)
        ));
        if isolated
            .as_ref()
            .is_none_or(|best| window(&run) < window(best))
        {
            isolated = Some(run);
        }
    }
    let isolated = isolated.ok_or_else(|| anyhow!("no isolated run"))?;
    drop(runtime);
    let (warnings, distinct) = log_warnings(&log);
    say(&format!(
        "controller log: {warnings} warnings{}",
        if distinct.is_empty() {
            String::new()
        } else {
            format!(", e.g.:\n  {}", distinct.join("\n  "))
        }
    ));
    let rows = zone.copied.rows();
    let mut raw = Vec::new();
    // The raw variants monitor as the controller does (`monitor_cond_since`); one more with
    // `monitor_cond`, which costs the server less, is reported as the faster baseline.
    let best_raw = |batching: Batching, method: MonitorMethod| -> anyhow::Result<RawFigures> {
        let transactions = zone.copied.transactions(batching)?;
        let mut best: Option<RawFigures> = None;
        for _ in 0..ROUNDS {
            let figures = raw_transactions(
                &transactions,
                rows,
                batching,
                Some(&NB_TABLES[..]),
                method,
                true,
            )?;
            if best.as_ref().is_none_or(|b| figures.seconds < b.seconds) {
                best = Some(figures);
            }
        }
        let figures = best.ok_or_else(|| anyhow!("no raw run"))?;
        say(&format!(
            "raw {} + {} (best of {ROUNDS}): {} transactions, {:.3} s, server CPU {:.2} s",
            batching.label(),
            method.method(),
            figures.transactions,
            figures.seconds,
            figures.server_cpu_s
        ));
        Ok(figures)
    };
    for batching in RAW_BATCHINGS {
        raw.push(best_raw(batching, MonitorMethod::CondSince)?);
    }
    let raw_cond = best_raw(Batching::Networks(1), MonitorMethod::Cond)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Figures {
        shape,
        create_s: zone.create_s,
        timeline: zone.timeline,
        progress: zone.progress,
        nb_rows: zone.copied.tables,
        controller: zone.controller,
        cpu: zone.cpu,
        isolated,
        raw_zone,
        source,
        empty: zone.empty,
        full: zone.full,
        reapply: zone.reapply,
        raw,
        raw_cond,
        load: (load_before, load_average()),
    })
}

/// Runs, prints and records in `docs/benchmarks.md` (section `controller-<N>x<M>`).
pub fn run_and_record(root: &Path, options: &Options) -> anyhow::Result<()> {
    let figures = run(root, options)?;
    let shape = options.shape;
    super::record(
        root,
        &format!("controller-{}x{}", shape.networks, shape.nodes),
        &format!(
            "NB controller on a real zone: {} networks x {} nodes, {} pods",
            shape.networks, shape.nodes, shape.pods
        ),
        &super::controller_report::body(&figures, &jiff::Zoned::now().date().to_string()),
    )?;
    say(&figures.line());
    Ok(())
}
