//! One run of node1's real zone for `cargo xtask bench scale`: a fresh OVN lab (`node1`:
//! NB, SB, ovn-northd, ovn-controller, ovs-vswitchd), node1's node-agent annotations
//! pointed at it, and the release `udn-controller` for zone `node1` (Dynamic UDN on, plus a
//! run's extra flags) against the control plane's API server. Measured as the controller
//! bench measures a zone ([`ZoneView::converge`]: NB converged, `sb_cfg`, `hv_cfg`, all from
//! the controller's start) and the zone's footprint after `hv_cfg` minus the empty zone's.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use udn_ovn_lab::{Lab, LabConfig};
use udn_sandbox::components::{self, ZoneEndpoints};

use super::controller_figures::Footprint;
use super::controller_launch::{footprint, local_host};
use super::controller_objects::{NodeHost, ZONE, agent_annotations};
use super::controller_zone::{Expect, Timeline, Watch, ZoneView, map_get};
use super::process::{ChildGuard, peak_rss_mb, status_mib};

/// Dynamic UDN, for every component of the bench's control plane (upstream's default grace
/// period).
pub const DYNAMIC_UDN_FLAGS: [&str; 3] = [
    "--enable-dynamic-udn-allocation",
    "--udn-deletion-grace-period",
    "120s",
];

/// What one zone run is.
#[derive(Debug, Clone, Copy)]
pub struct ZoneRun<'a> {
    /// Its name in the report (`lean`, `upstream-shaped`).
    pub label: &'a str,
    /// The controller's extra flags.
    pub extra_args: &'a [&'a str],
    /// UDN networks node1 carries per-node state of (what the controller should render).
    pub networks: usize,
    /// Pods on node1.
    pub pods: usize,
}

/// What a zone run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneFigures {
    /// The run's label.
    pub label: String,
    /// Its extra controller flags.
    pub extra_args: Vec<String>,
    /// UDN networks with a logical router in NB (`k8s.ovn.org/network`), default left out.
    pub nb_networks: usize,
    /// Times from the controller's start.
    pub timeline: Timeline,
    /// Transit switch remote ports in NB.
    pub remote_ports: usize,
    /// NB rows monitored (the controller's tables).
    pub nb_rows: usize,
    /// The empty zone.
    pub empty: Footprint,
    /// The zone after `hv_cfg`.
    pub full: Footprint,
    /// The controller's RSS after `hv_cfg` and its peak, MiB.
    pub controller_rss_mb: (f64, f64),
}

impl ZoneFigures {
    fn per_net(&self, full: f64, empty: f64) -> f64 {
        (full - empty) / self.nb_networks.max(1) as f64
    }

    /// SB logical flows per rendered network.
    pub fn lflows_per_net(&self) -> f64 {
        self.per_net(self.full.lflows as f64, self.empty.lflows as f64)
    }

    /// OpenFlow flows on `br-int` per rendered network.
    pub fn of_per_net(&self) -> f64 {
        self.per_net(self.full.of_flows as f64, self.empty.of_flows as f64)
    }

    /// RSS of the five OVN/OVS daemons per rendered network, MiB.
    pub fn rss_per_net(&self) -> f64 {
        self.per_net(self.full.rss.total(), self.empty.rss.total())
    }
}

/// A zone that ran and still runs (for what comes after it).
#[derive(Debug)]
pub struct LiveZone {
    /// Its figures.
    pub figures: ZoneFigures,
    /// The bench's connections to NB and SB.
    pub view: ZoneView,
    /// The controller.
    pub controller: ChildGuard,
    /// The lab (dropped last).
    pub lab: Lab,
}

/// The endpoints of the lab's node1 as the components are told them.
pub fn zone_endpoints(lab: &Lab) -> anyhow::Result<ZoneEndpoints> {
    Ok(ZoneEndpoints::of_lab_node(lab.node(ZONE)?))
}

/// Writes `host`'s node-agent annotations on its Node (merge patch).
pub async fn annotate_agent(client: &Client, host: &NodeHost) -> anyhow::Result<()> {
    let patch = json!({"metadata": {"annotations": agent_annotations(host)?}});
    Api::<Node>::all(client.clone())
        .patch(&host.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("annotating node {}", host.name))?;
    Ok(())
}

/// Starts a fresh lab, points node1 at it and returns it with node1's host.
pub async fn fresh_lab(client: &Client) -> anyhow::Result<(Lab, NodeHost)> {
    let lab = Lab::start(LabConfig::with_nodes(1)).context("starting the OVN lab")?;
    let host = local_host(&lab)?;
    annotate_agent(client, &host).await?;
    Ok((lab, host))
}

/// UDN networks with a logical router in NB.
fn nb_networks(view: &ZoneView) -> usize {
    let replica = view.nb().replica();
    replica
        .rows("Logical_Router")
        .filter_map(|(_, row)| map_get(row, "external_ids", "k8s.ovn.org/network"))
        .filter(|network| *network != udn_api::names::DEFAULT_NETWORK_NAME)
        .collect::<BTreeSet<_>>()
        .len()
}

/// Starts `udn-controller` for node1's zone of `lab`, logging to `log`.
fn spawn_controller(
    binary: &Path,
    kubeconfig: &Path,
    lab: &Lab,
    extra_args: &[&str],
    log: &Path,
) -> anyhow::Result<ChildGuard> {
    let stderr = File::options()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let mut command = components::controller(binary, &zone_endpoints(lab)?, kubeconfig);
    command
        .args(DYNAMIC_UDN_FLAGS)
        .args(extra_args)
        .args(["--log-filter", "info"])
        .stdout(Stdio::null())
        .stderr(stderr);
    Ok(ChildGuard(
        command.spawn().context("starting udn-controller")?,
    ))
}

/// Where the run's binaries and logs are.
#[derive(Debug, Clone)]
pub struct ZoneSetup {
    /// The release `udn-controller`.
    pub controller: PathBuf,
    /// The API server's kubeconfig.
    pub kubeconfig: PathBuf,
    /// The controller's log (appended to).
    pub log: PathBuf,
    /// The longest to wait for the zone.
    pub deadline: Duration,
}

/// Runs node1's zone fresh with `run`'s settings until flows are installed.
pub async fn run_zone(
    client: &Client,
    setup: &ZoneSetup,
    run: ZoneRun<'_>,
) -> anyhow::Result<LiveZone> {
    let (lab, _host) = fresh_lab(client).await?;
    let node = lab.node(ZONE)?;
    let view = ZoneView::connect(node.nb_endpoint(), node.sb_endpoint()).await?;
    let empty = footprint(&view, &lab).await?;
    let before = view.progress().signature();
    let started = Instant::now();
    let mut controller = spawn_controller(
        &setup.controller,
        &setup.kubeconfig,
        &lab,
        run.extra_args,
        &setup.log,
    )?;
    let watch = Watch {
        // A cluster router at least per network (the default one included); both pod ports
        // (default network and UDN) of every pod.
        expect: Expect {
            routers: run.networks + 1,
            pod_ports: 2 * run.pods,
        },
        hv: true,
    };
    let timeline = view
        .converge(
            watch,
            before,
            started,
            setup.deadline,
            || controller.ensure_running("udn-controller"),
            || {},
        )
        .await?;
    let full = footprint(&view, &lab).await?;
    let progress = view.progress();
    let pid = controller.pid();
    let figures = ZoneFigures {
        label: run.label.to_owned(),
        extra_args: run.extra_args.iter().map(|a| (*a).to_owned()).collect(),
        nb_networks: nb_networks(&view),
        timeline,
        remote_ports: progress.remote_ports,
        nb_rows: progress.rows,
        empty,
        full,
        controller_rss_mb: (
            status_mib(pid, "VmRSS").unwrap_or(f64::NAN),
            peak_rss_mb(pid).unwrap_or(f64::NAN),
        ),
    };
    Ok(LiveZone {
        figures,
        view,
        controller,
        lab,
    })
}

/// Waits until NB has been quiet for a while, then until northd and ovn-controller caught
/// up with it (`nb_cfg` bumped, `hv_cfg` reached); seconds it took.
pub async fn settle(view: &ZoneView, deadline: Duration) -> anyhow::Result<f64> {
    let started = Instant::now();
    view.wait_quiet(deadline).await?;
    let target = view.bump().await?;
    while view.cfg().hv < target {
        if started.elapsed() > deadline {
            bail!("hv_cfg did not reach {target} in {} s", deadline.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(started.elapsed().as_secs_f64())
}
