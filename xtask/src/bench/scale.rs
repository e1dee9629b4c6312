//! `cargo xtask bench scale --networks N --nodes M --active-per-node A`: the control plane
//! at scale with Dynamic UDN on, and one node's real zone.
//!
//! 1. Control plane: `udn-kube-sim serve` holds N namespaces with a primary Layer3 UDN each,
//!    M nodes (node-agent annotations only) and pods bound to nodes
//!    ([`scale_objects`](super::scale_objects): two per network on two nodes, at most A
//!    networks per node, A on node1). The release `udn-cluster-manager` (Dynamic UDN on)
//!    starts once everything exists; converged = every NAD has its network ID and every
//!    node its node ID and the host subnets of the default network and of its networks,
//!    and nothing changed for 3 s ([`scale_cm`](super::scale_cm)). Its peak RSS then.
//! 2. node1's zone, twice, each fresh ([`scale_zone`](super::scale_zone)): the release
//!    `udn-controller` (Dynamic UDN on) with [`UPSTREAM_SHAPE_ARGS`] (every lean-topology
//!    setting off: the networks rendered as upstream does), then with its defaults. Each:
//!    NB converged, `sb_cfg`, `hv_cfg` from the controller's start; SB logical flows,
//!    OpenFlow flows on `br-int` and the five OVN/OVS daemons' RSS, minus the empty zone's,
//!    per network rendered. The ratios are default over upstream-shaped.
//! 3. In the default zone: a new network's first pod on node1 to Ready, through udn-node and
//!    the real CNI plugin ([`scale_pod`](super::scale_pod)).
//!
//! When cluster-manager gives node1 more than [`ZONE_LIMIT`] networks (no Dynamic UDN
//! gating), the zone runs are skipped and the report says so.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use ipnetwork::Ipv4Network;
use udn_sandbox::components;

use super::controller_launch::{log_tail, source_state};
use super::controller_objects::{NodeHost, ZONE, remote_host};
use super::nb::load_average;
use super::process::{ChildGuard, peak_rss_mb, release_binary, status_mib};
use super::scale_cm::{self, CmState};
use super::scale_objects::{self as objects, Plan, network_name, node_name};
use super::scale_pod::{PodReady, PodSetup, new_network_pod};
use super::scale_zone::{DYNAMIC_UDN_FLAGS, LiveZone, ZoneFigures, ZoneRun, ZoneSetup, run_zone};
use super::sim_server::{SimServer, install_crds};

/// The controller's extra flags for the upstream-shaped run: every lean-topology setting
/// off (`docs/controller.md`, "To run upstream's shape"), so both runs are one list apart.
/// A lean setting added later goes here too.
pub const UPSTREAM_SHAPE_ARGS: &[&str] = &[
    "--lean-skip-multicast=false",
    "--lean-skip-node-allow-acl=false",
    "--lean-transit-on-demand=false",
];

/// The most networks node1's zone is run with (a zone holds ~1000 networks on this machine,
/// `docs/benchmarks.md` controller-500x20; more would not fit in memory).
pub const ZONE_LIMIT: usize = 1000;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Sizes and placement.
    pub plan: Plan,
    /// The longest any phase may take.
    pub deadline: Duration,
}

/// The control plane's figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ControlPlane {
    /// Seconds to create every object (before cluster-manager starts).
    pub create_s: f64,
    /// What the watches saw at convergence (times from cluster-manager's start).
    pub state: CmState,
    /// cluster-manager's peak RSS at convergence, MiB.
    pub rss_mb: f64,
    /// Its RSS at the end of the run, MiB.
    pub rss_end_mb: f64,
    /// Whether every node carried exactly the networks with pods on it.
    pub gated: bool,
}

/// Figures of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// The sizes.
    pub plan: Plan,
    /// The control plane.
    pub cm: ControlPlane,
    /// Networks with a pod on node1.
    pub active: usize,
    /// Networks node1 carries per-node state of (what cluster-manager gave it).
    pub node1_networks: usize,
    /// The upstream-shaped zone and the default one; `None`: skipped (see `skipped`).
    pub zones: Option<(ZoneFigures, ZoneFigures)>,
    /// The new network's first pod.
    pub pod: Option<PodReady>,
    /// Why the zone runs were skipped.
    pub skipped: Option<String>,
    /// `git describe` of the sources.
    pub source: String,
    /// 1-minute load average before and after.
    pub load: (f64, f64),
}

impl Figures {
    /// A default-over-upstream ratio of a per-network figure.
    fn ratio(&self, of: impl Fn(&ZoneFigures) -> f64) -> f64 {
        self.zones
            .as_ref()
            .map_or(f64::NAN, |(upstream, lean)| of(lean) / of(upstream))
    }

    /// SB logical flows per network, default over upstream-shaped.
    pub fn lflows_ratio(&self) -> f64 {
        self.ratio(ZoneFigures::lflows_per_net)
    }

    /// OpenFlow flows per network, default over upstream-shaped.
    pub fn of_ratio(&self) -> f64 {
        self.ratio(ZoneFigures::of_per_net)
    }

    /// Daemon RSS per network, default over upstream-shaped.
    pub fn rss_ratio(&self) -> f64 {
        self.ratio(ZoneFigures::rss_per_net)
    }

    /// The default zone's time to flows installed.
    pub fn zone_hv_s(&self) -> f64 {
        self.zones
            .as_ref()
            .map_or(f64::NAN, |(_, lean)| lean.timeline.hv_s)
    }

    /// The summary line (the last line of output).
    pub fn line(&self) -> String {
        format!(
            "scale-bench networks={} nodes={} active={} cm_converge_s={:.2} cm_rss_mb={:.1} zone_hv_s={:.2} lflows_ratio={:.2} of_ratio={:.2} rss_ratio={:.2} new_net_pod_ready_s={:.2}",
            self.plan.networks,
            self.plan.nodes,
            self.active,
            self.cm.state.converge_s,
            self.cm.rss_mb,
            self.zone_hv_s(),
            self.lflows_ratio(),
            self.of_ratio(),
            self.rss_ratio(),
            self.pod.map_or(f64::NAN, |p| p.ready_s),
        )
    }
}

/// What a zone run printed.
fn zone_line(f: &ZoneFigures) -> String {
    format!(
        "zone {}: {} networks rendered, hv_cfg {:.2} s (NB {:.2} s, sb_cfg {:.2} s); {} lflows, {} OpenFlow flows, daemons {:.1} MiB; per network {:.0} lflows, {:.0} OF, {:.2} MiB",
        f.label,
        f.nb_networks,
        f.timeline.hv_s,
        f.timeline.nb_s,
        f.timeline.sb_s,
        f.full.lflows,
        f.full.of_flows,
        f.full.rss.total(),
        f.lflows_per_net(),
        f.of_per_net(),
        f.rss_per_net()
    )
}

/// Prints a line of the bench's output.
#[allow(clippy::print_stdout)] // the benchmark's output is its figures
fn say(line: &str) {
    println!("{line}");
}

/// The hosts of the nodes: node1 where the lab puts it (its agent annotations are written
/// again for each fresh lab), the others the next underlay addresses with random chassis.
fn hosts(nodes: usize) -> anyhow::Result<Vec<NodeHost>> {
    let local = NodeHost {
        name: ZONE.to_owned(),
        chassis: uuid::Uuid::new_v4().to_string(),
        cidr: Ipv4Network::new(Ipv4Addr::new(172, 18, 0, 2), 16)?,
        mac: "02:00:ac:12:00:02".to_owned(),
        next_hop: Ipv4Addr::new(172, 18, 0, 1),
    };
    std::iter::once(Ok(local.clone()))
        .chain((1..nodes).map(|k| remote_host(&local, k)))
        .collect()
}

/// Per node, the networks with a pod on it.
fn expected(plan: &Plan) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = (0..plan.nodes)
        .map(|k| (node_name(k), BTreeSet::new()))
        .collect();
    for s in 0..plan.pods() {
        let (network, node) = plan.slot(s);
        out.entry(node_name(node))
            .or_default()
            .insert(network_name(network + 1));
    }
    out
}

/// The release binaries, built as the other benches build them.
struct Binaries {
    sim: std::path::PathBuf,
    cluster_manager: std::path::PathBuf,
    controller: std::path::PathBuf,
    agent: std::path::PathBuf,
    cni: std::path::PathBuf,
}

fn binaries(root: &Path) -> anyhow::Result<Binaries> {
    Ok(Binaries {
        sim: release_binary(root, "udn-kube-sim", "udn-kube-sim")?,
        cluster_manager: release_binary(root, "udn-cluster-manager", "udn-cluster-manager")?,
        controller: release_binary(root, "udn-controller", "udn-controller")?,
        agent: release_binary(root, "udn-node", "udn-node")?,
        cni: release_binary(root, "udn-cni", "ovn-k8s-cni-overlay")?,
    })
}

fn spawn_cluster_manager(
    binary: &Path,
    kubeconfig: &Path,
    log: &Path,
) -> anyhow::Result<ChildGuard> {
    let stderr =
        std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut command = components::cluster_manager(binary, kubeconfig);
    command
        .args(DYNAMIC_UDN_FLAGS)
        .args(["--log-filter", "warn"])
        .stdout(Stdio::null())
        .stderr(stderr);
    Ok(ChildGuard(
        command.spawn().context("starting udn-cluster-manager")?,
    ))
}

/// What the phases share: sizes, binaries, the API server, where logs go.
struct Bench<'a> {
    options: &'a Options,
    bins: Binaries,
    sim: &'a SimServer,
    logs: std::path::PathBuf,
    dir: std::path::PathBuf,
}

impl Bench<'_> {
    /// A component's log file.
    fn log(&self, name: &str) -> std::path::PathBuf {
        let plan = self.options.plan;
        self.logs.join(format!(
            "scale-{}x{}x{}-{name}.log",
            plan.networks, plan.nodes, plan.active_per_node
        ))
    }

    /// Phase 1: the objects, then cluster-manager until converged; it keeps running.
    async fn control_plane(
        &self,
        client: &kube::Client,
    ) -> anyhow::Result<(ControlPlane, ChildGuard)> {
        let plan = self.options.plan;
        let created = Instant::now();
        objects::create(client, &plan, &hosts(plan.nodes)?).await?;
        let create_s = created.elapsed().as_secs_f64();
        say(&format!("objects created in {create_s:.2} s"));
        let cm_log = self.log("cluster-manager");
        let cm = spawn_cluster_manager(&self.bins.cluster_manager, &self.sim.kubeconfig, &cm_log)?;
        let started = Instant::now();
        let expected = expected(&plan);
        let state = scale_cm::wait(
            client,
            plan.networks,
            &expected,
            started,
            self.options.deadline,
        )
        .await
        .map_err(|e| {
            anyhow!(
                "{e:#}\ncluster-manager log tail:\n{}",
                log_tail(&cm_log, 20)
            )
        })?;
        let rss_mb = peak_rss_mb(cm.pid()).unwrap_or(f64::NAN);
        let gated = state.gated(&expected);
        let (mean, max) = state.per_node();
        say(&format!(
            "cluster-manager converged at {:.2} s, peak RSS {rss_mb:.1} MiB; node1 carries {} networks, per node mean {mean:.1} max {max}; gated: {gated}",
            state.converge_s,
            state.networks.get(ZONE).map_or(0, BTreeSet::len),
        ));
        let figures = ControlPlane {
            create_s,
            state,
            rss_mb,
            rss_end_mb: f64::NAN,
            gated,
        };
        Ok((figures, cm))
    }

    /// Phase 2: node1's zone upstream-shaped, then (fresh) with the defaults, one at a time;
    /// the default one keeps running.
    async fn zones(
        &self,
        client: &kube::Client,
        networks: usize,
        pods: usize,
    ) -> anyhow::Result<(ZoneFigures, LiveZone)> {
        let mut upstream: Option<ZoneFigures> = None;
        for (label, args, name) in [
            (
                "upstream-shaped",
                UPSTREAM_SHAPE_ARGS,
                "controller-upstream",
            ),
            ("default", &[][..], "controller-default"),
        ] {
            let log = self.log(name);
            let _ = std::fs::remove_file(&log);
            let setup = ZoneSetup {
                controller: self.bins.controller.clone(),
                kubeconfig: self.sim.kubeconfig.clone(),
                log: log.clone(),
                deadline: self.options.deadline,
            };
            let run = ZoneRun {
                label,
                extra_args: args,
                networks,
                pods,
            };
            let zone = run_zone(client, &setup, run)
                .await
                .map_err(|e| anyhow!("{e:#}\ncontroller log tail:\n{}", log_tail(&log, 20)))?;
            say(&zone_line(&zone.figures));
            match upstream.take() {
                None => upstream = Some(zone.figures.clone()),
                Some(first) => return Ok((first, zone)),
            }
        }
        Err(anyhow!("the zone runs did not both run"))
    }

    /// Phase 3: the new network's first pod on node1, in `zone`.
    async fn pod(&self, client: &kube::Client, zone: &LiveZone) -> anyhow::Result<PodReady> {
        let setup = PodSetup {
            agent: self.bins.agent.clone(),
            cni: self.bins.cni.clone(),
            api: self.sim.address,
            dir: self.dir.join("pod"),
            log: self.log("node"),
            deadline: self.options.deadline,
        };
        let pod = new_network_pod(client, zone, &setup)
            .await
            .map_err(|e| anyhow!("{e:#}\nudn-node log tail:\n{}", log_tail(&setup.log, 20)))?;
        say(&format!(
            "new network's first pod on node1: Ready {:.2} s after its creation (annotated {:.2} s, CNI ADD {:.2} s); its NAD {:.2} s after the UDN",
            pod.ready_s, pod.annotated_s, pod.cni_s, pod.udn_to_nad_s
        ));
        Ok(pod)
    }

    /// The three phases.
    async fn run(&self, figures: &mut Figures) -> anyhow::Result<()> {
        let client = self.sim.client().await?;
        install_crds(&client).await?;
        let (cm_figures, mut cm) = self.control_plane(&client).await?;
        figures.node1_networks = cm_figures.state.networks.get(ZONE).map_or(0, BTreeSet::len);
        figures.cm = cm_figures;
        if figures.node1_networks > ZONE_LIMIT {
            let reason = format!(
                "cluster-manager gave node1 {} networks (more than {ZONE_LIMIT}): Dynamic UDN gating is not in effect, and a zone of that many networks does not fit this machine",
                figures.node1_networks
            );
            say(&format!("zone runs skipped: {reason}"));
            figures.skipped = Some(reason);
            return Ok(());
        }
        let (upstream, lean) = self
            .zones(&client, figures.node1_networks, figures.active)
            .await?;
        figures.zones = Some((upstream, lean.figures.clone()));
        figures.pod = Some(self.pod(&client, &lean).await?);
        cm.ensure_running("udn-cluster-manager")?;
        figures.cm.rss_end_mb = status_mib(cm.pid(), "VmRSS").unwrap_or(f64::NAN);
        Ok(())
    }
}

/// Runs the benchmark.
pub fn run(root: &Path, options: &Options) -> anyhow::Result<Figures> {
    let plan = options.plan;
    let load_before = load_average();
    let source = source_state(root);
    let bins = binaries(root)?;
    let dir = std::env::temp_dir().join(format!("udn-scale-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).context("creating the work directory")?;
    let logs = root.join("target/bench-logs");
    std::fs::create_dir_all(&logs).context("creating target/bench-logs")?;
    let sim = SimServer::start(&bins.sim, &dir)?;
    let bench = Bench {
        options,
        bins,
        sim: &sim,
        logs,
        dir: dir.clone(),
    };
    let active = plan.active_on(0).len();
    say(&format!(
        "scale-bench: {} networks, {} nodes, {} pods, {active} networks on node1 (load average {load_before:.2}); logs {}",
        plan.networks,
        plan.nodes,
        plan.pods(),
        bench.log("*").display()
    ));
    let mut figures = Figures {
        plan,
        cm: ControlPlane::default(),
        active,
        node1_networks: 0,
        zones: None,
        pod: None,
        skipped: None,
        source,
        load: (load_before, f64::NAN),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(bench.run(&mut figures))?;
    drop(runtime);
    drop(bench);
    drop(sim);
    let _ = std::fs::remove_dir_all(&dir);
    figures.load.1 = load_average();
    Ok(figures)
}

/// Runs, prints and records in `docs/benchmarks.md` (section `scale-<N>x<M>x<A>`).
pub fn run_and_record(root: &Path, options: &Options) -> anyhow::Result<()> {
    let figures = run(root, options)?;
    let plan = options.plan;
    super::record(
        root,
        &format!(
            "scale-{}x{}x{}",
            plan.networks, plan.nodes, plan.active_per_node
        ),
        &format!(
            "Scale: {} primary UDNs x {} nodes, {} active networks per node, Dynamic UDN on",
            plan.networks, plan.nodes, plan.active_per_node
        ),
        &super::scale_report::body(&figures, &jiff::Zoned::now().date().to_string()),
    )?;
    say(&figures.line());
    Ok(())
}
