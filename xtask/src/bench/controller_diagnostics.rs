//! The diagnostic runs of `cargo xtask bench controller`: the controller without the zone's
//! daemons ([`Isolated`]), and the controller's rows written raw into a fresh zone
//! ([`RawZone`]).

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use udn_ovn_lab::Lab;
use udn_ovsdb::testing::OvsdbServer;

use super::controller::{Options, say};
use super::controller_figures::{Isolated, RawZone};
use super::controller_launch::{CpuPids, Launch, controller_metrics, footprint};
use super::controller_objects::{self as objects, NodeHost, Shape, ZONE};
use super::controller_raw::Copied;
use super::controller_watch::UpdateClock;
use super::controller_zone::{Expect, NB_TABLES, POLL, Progress, QUIET, Timeline, Watch, ZoneView};
use super::nb_raw::Batching;
use super::process::free_port;
use super::sim_server::{SimServer, install_crds};

/// The controller on the same objects (created anew in `sim`) against private NB and SB
/// servers and nothing else.
pub async fn isolated_run(
    sim: &SimServer,
    hosts: &[NodeHost],
    controller_bin: &Path,
    log: PathBuf,
    options: &Options,
) -> anyhow::Result<Isolated> {
    let shape = options.shape;
    let cluster = objects::cluster_config()?;
    let client = sim.client().await?;
    install_crds(&client).await?;
    objects::create(&client, shape, hosts, &cluster).await?;
    let nb = OvsdbServer::start_nb().context("starting a private NB server")?;
    nb.nbctl(&["init"]).context("creating NB_Global")?;
    let sb = OvsdbServer::start_sb().context("starting a private SB server")?;
    let clock = UpdateClock::start(nb.socket(), udn_ovsdb::nb::DATABASE, &NB_TABLES)
        .context("monitoring the private NB server")?;
    let launch = Launch {
        binary: controller_bin,
        kubeconfig: &sim.kubeconfig,
        nb: format!("unix:{}", nb.socket().display()),
        sb: format!("unix:{}", sb.socket().display()),
        log,
    };
    let port = free_port()?;
    let started = Instant::now();
    let mut controller = launch.spawn(port)?;
    let pids = CpuPids {
        controller: controller.pid(),
        nb: Some(nb.pid()),
        sb: Some(sb.pid()),
        northd: None,
        ovn_controller: None,
        vswitchd: None,
    };
    let cpu_start = pids.sample();
    let cpu_at_change = Cell::new(cpu_start);
    let expect = Expect::new(shape.networks, shape.pods);
    let mut counted = 0;
    let seen = loop {
        controller.ensure_running("the isolated udn-controller")?;
        let seen = clock.seen();
        anyhow::ensure!(
            !seen.closed,
            "the private NB server closed the bench's monitor"
        );
        if seen.updates != counted {
            counted = seen.updates;
            cpu_at_change.set(pids.sample());
        }
        // Rows are counted (with ovn-nbctl) only once NB is quiet, so that the count
        // competes with nothing.
        if let Some(last) = seen.last
            && last.elapsed() >= QUIET
        {
            let progress = nb_progress(&nb)?;
            if progress.complete(&expect) {
                break seen;
            }
        }
        if started.elapsed() > options.deadline {
            anyhow::bail!(
                "the isolated controller did not converge in {} s: {:?}, expected {expect:?}",
                options.deadline.as_secs(),
                nb_progress(&nb)?
            );
        }
        tokio::time::sleep(POLL).await;
    };
    let since = |at: Option<Instant>| at.map_or(0.0, |at| (at - started).as_secs_f64());
    let timeline = Timeline {
        first_s: since(seen.first),
        complete_s: since(seen.last),
        nb_s: since(seen.last),
        ..Timeline::default()
    };
    let cpu = cpu_at_change.get().since(&cpu_start);
    let metrics = controller_metrics(port, controller.pid()).await?;
    say(&format!(
        "isolated (private NB and SB, no northd): NB {:.2} s; controller NB writes {:.2} s in {} calls, {} ops; CPU s controller {:.2}, NB server {:.2}",
        timeline.nb_s,
        metrics.nb_write_s,
        metrics.nb_writes,
        metrics.nb_ops,
        cpu.controller,
        cpu.nb
    ));
    Ok(Isolated {
        timeline,
        controller: metrics,
        cpu,
    })
}

/// Logical routers and pod ports in `nb`, counted with `ovn-nbctl`.
fn nb_progress(nb: &OvsdbServer) -> anyhow::Result<Progress> {
    let count = |args: &[&str]| -> anyhow::Result<usize> {
        let out = nb.nbctl(args).context("counting NB rows")?;
        Ok(out.lines().filter(|line| !line.trim().is_empty()).count())
    };
    Ok(Progress {
        routers: count(&["--bare", "--columns=_uuid", "list", "Logical_Router"])?,
        pod_ports: count(&[
            "--bare",
            "--columns=_uuid",
            "find",
            "Logical_Switch_Port",
            "external_ids:pod=true",
        ])?,
        ..Progress::default()
    })
}

/// See [`RawZone`]: `chassis` is the chassis the copied rows name.
pub async fn raw_zone(
    lab: &Lab,
    copied: &Copied,
    chassis: &str,
    shape: Shape,
    deadline: Duration,
) -> anyhow::Result<RawZone> {
    let node = lab.node(ZONE)?;
    let transactions = copied
        .transactions(Batching::Networks(50))?
        .into_iter()
        .map(|mut transaction| {
            let text = String::from_utf8(transaction.request)?;
            transaction.request = text.replace(chassis, node.chassis_id()).into_bytes();
            anyhow::Ok(transaction)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let view = ZoneView::connect(node.nb_endpoint(), node.sb_endpoint()).await?;
    let signature = view.signature();
    let socket = node.nb_socket().to_owned();
    let started = Instant::now();
    let sent = tokio::task::spawn_blocking(move || {
        super::nb_raw::send(
            &socket,
            &transactions,
            Some(&NB_TABLES[..]),
            super::nb_raw::MonitorMethod::CondSince,
        )
    })
    .await
    .context("the raw writer")??;
    let write_s = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        sent.rows == copied.rows(),
        "raw zone: {} rows written, {} copied",
        sent.rows,
        copied.rows()
    );
    let watch = Watch {
        expect: Expect::new(shape.networks, shape.pods),
        hv: true,
    };
    let timeline = view
        .converge(watch, signature, started, deadline, || Ok(()), || {})
        .await?;
    let full = footprint(&view, lab).await?;
    say(&format!(
        "raw zone (the rows written raw into a fresh zone, 50 networks/txn): written in {write_s:.2} s, sb_cfg {:.2} s, hv_cfg {:.2} s; {} lflows, {} OpenFlow flows, daemons {:.1} MiB",
        timeline.sb_s,
        timeline.hv_s,
        full.lflows,
        full.of_flows,
        full.rss.total()
    ));
    Ok(RawZone {
        write_s,
        sb_s: timeline.sb_s,
        hv_s: timeline.hv_s,
        full,
    })
}
