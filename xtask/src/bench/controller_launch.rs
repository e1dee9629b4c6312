//! Running the controller for `cargo xtask bench controller`: its command line, its
//! `/metrics`, the CPU and footprint of the processes around it, its log.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use ipnetwork::Ipv4Network;
use udn_ovn_lab::{DaemonKind, Lab};

use super::controller_figures::{ControllerMetrics, Cpu, DaemonRss, Footprint};
use super::controller_objects::{self as objects, NodeHost, ZONE};
use super::controller_zone::ZoneView;
use super::nb::cpu_seconds;
use super::process::{ChildGuard, metric, peak_rss_mb, scrape};

const MIB_PER_KIB: f64 = 1.0 / 1024.0;

/// KiB as MiB (`None`: 0).
fn kib_mib(kib: Option<u64>) -> f64 {
    kib.unwrap_or(0) as f64 * MIB_PER_KIB
}

/// The zone's size now: SB row counts, OpenFlow flows on `br-int`, daemon RSS.
pub async fn footprint(view: &ZoneView, lab: &Lab) -> anyhow::Result<Footprint> {
    let node = lab.node(ZONE)?;
    let rss = node.rss()?;
    Ok(Footprint {
        lflows: view.sb_rows("Logical_Flow").await?,
        datapaths: view.sb_rows("Datapath_Binding").await?,
        port_bindings: view.sb_rows("Port_Binding").await?,
        of_flows: node.flow_count("br-int")?,
        rss: DaemonRss {
            nb: kib_mib(rss.nb),
            sb: kib_mib(rss.sb),
            northd: kib_mib(rss.northd),
            controller: kib_mib(Some(rss.controller)),
            vswitchd: kib_mib(Some(rss.vswitchd)),
        },
    })
}

/// How the controller is started.
#[derive(Debug)]
pub struct Launch<'a> {
    /// The release binary.
    pub binary: &'a Path,
    /// The API server's kubeconfig.
    pub kubeconfig: &'a Path,
    /// `--nb-address`.
    pub nb: String,
    /// `--sb-address`.
    pub sb: String,
    /// The log file (appended to).
    pub log: PathBuf,
}

impl Launch<'_> {
    /// Starts it with its admin server on `port`, logging (appending) to the log file.
    pub fn spawn(&self, port: u16) -> anyhow::Result<ChildGuard> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("opening {}", self.log.display()))?;
        let child = Command::new(self.binary)
            .arg("--kubeconfig")
            .arg(self.kubeconfig)
            .args(["--nb-address", &self.nb, "--sb-address", &self.sb])
            .args(["--zone", ZONE])
            .args(["--enable-multi-network", "--enable-network-segmentation"])
            .args(objects::cluster_flags())
            .args(["--leader-elect=false", "--log-filter", &log_filter()])
            .args(["--admin-bind-address", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting udn-controller")?;
        Ok(ChildGuard(child))
    }
}

/// The controller's metrics from its admin server on `port`; `pid` for its peak RSS.
pub async fn controller_metrics(port: u16, pid: u32) -> anyhow::Result<ControllerMetrics> {
    let text = scrape(port).await?;
    let nb = [("database", "nb")];
    let sb = [("database", "sb")];
    let count = |value: Option<f64>| value.unwrap_or(0.0) as u64;
    Ok(ControllerMetrics {
        nb_write_s: metric(
            &text,
            "udn_controller_transaction_duration_seconds_sum",
            &nb,
        )
        .unwrap_or(0.0),
        nb_writes: count(metric(
            &text,
            "udn_controller_transaction_duration_seconds_count",
            &nb,
        )),
        nb_ops: count(metric(&text, "udn_controller_operations_total", &nb)),
        sb_ops: count(metric(&text, "udn_controller_operations_total", &sb)),
        passes: count(metric(&text, "udn_controller_reconcile_passes_total", &[])),
        pass_s: metric(&text, "udn_controller_pass_duration_seconds_sum", &[]).unwrap_or(0.0),
        errors: count(metric(&text, "udn_controller_errors_total", &[])),
        peak_rss_mb: peak_rss_mb(pid).unwrap_or(f64::NAN),
    })
}

/// The processes [`Cpu`] reads.
#[derive(Debug, Clone, Copy)]
pub struct CpuPids {
    pub controller: u32,
    pub nb: Option<u32>,
    pub sb: Option<u32>,
    pub northd: Option<u32>,
    pub ovn_controller: Option<u32>,
    pub vswitchd: Option<u32>,
}

impl CpuPids {
    /// What each process has used so far (0 for those not running in this setup).
    pub fn sample(&self) -> Cpu {
        let pids = self;
        let of = |pid: Option<u32>| pid.map_or(0.0, cpu_seconds);
        Cpu {
            controller: of(Some(pids.controller)),
            nb: of(pids.nb),
            sb: of(pids.sb),
            northd: of(pids.northd),
            ovn_controller: of(pids.ovn_controller),
            vswitchd: of(pids.vswitchd),
        }
    }

    /// The controller `controller` and the daemons of the lab's zone.
    pub fn of_lab(lab: &Lab, controller: u32) -> anyhow::Result<Self> {
        let pids = lab.node(ZONE)?.pids();
        let pid = |kind: DaemonKind| pids.iter().find(|(k, _)| *k == kind).map(|(_, p)| *p);
        Ok(Self {
            controller,
            nb: pid(DaemonKind::NbDb),
            sb: pid(DaemonKind::SbDb),
            northd: pid(DaemonKind::Northd),
            ovn_controller: pid(DaemonKind::Controller),
            vswitchd: pid(DaemonKind::Vswitchd),
        })
    }
}

/// The lab's node1 as the node agent reports it.
pub fn local_host(lab: &Lab) -> anyhow::Result<NodeHost> {
    let node = lab.node(ZONE)?;
    Ok(NodeHost {
        name: ZONE.to_owned(),
        chassis: node.chassis_id().to_owned(),
        cidr: Ipv4Network::new(node.node_ip(), node.node_prefix_len())?,
        mac: node.breth0_mac().to_owned(),
        next_hop: node.next_hop(),
    })
}

/// `git describe --always --dirty` of the controller's sources (and those it links), so a
/// figure says what it measured: the working tree is shared and may hold changes.
pub fn source_state(root: &Path) -> String {
    let describe = Command::new("git")
        .args(["describe", "--always", "--exclude=*"])
        .current_dir(root)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--", "crates/", "Cargo.lock"])
        .current_dir(root)
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    if dirty {
        format!("{describe} with uncommitted changes under crates/")
    } else {
        describe
    }
}

pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The number of `WARN` lines in the log at `path`, and the first few distinct ones (without
/// their timestamps).
pub fn log_warnings(path: &Path) -> (usize, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut count = 0;
    let mut distinct: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some((_, rest)) = line.split_once(" WARN ") else {
            continue;
        };
        count += 1;
        let shown: String = rest.chars().take(240).collect();
        let message = shown
            .split(" network=")
            .next()
            .unwrap_or_default()
            .to_owned();
        if distinct.len() < 8 && !distinct.iter().any(|d| d.starts_with(&message)) {
            distinct.push(shown);
        }
    }
    (count, distinct)
}

/// The controller's log filter: `info` (its debug lines would be part of what is measured),
/// or `UDN_BENCH_CONTROLLER_LOG` to look into a run (e.g. `info,udn_ovsdb::client=debug`
/// logs each transaction as it is sent).
fn log_filter() -> String {
    std::env::var("UDN_BENCH_CONTROLLER_LOG").unwrap_or_else(|_| "info".to_owned())
}
