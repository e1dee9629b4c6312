//! The figures of `cargo xtask bench controller` and what is derived from them (ratios,
//! per-network footprint, the summary line).

use super::controller_objects::Shape;
use super::controller_zone::{Progress, Timeline};
use super::nb::RawFigures;
use super::nb_raw::Batching;

/// The raw variants: one transaction, 10 and 50 networks per transaction, one network per
/// transaction (all on a monitoring connection).
pub const RAW_BATCHINGS: [Batching; 4] = [
    Batching::Single,
    Batching::Networks(10),
    Batching::Networks(50),
    Batching::Networks(1),
];

/// RSS of the zone's five OVN/OVS daemons, MiB.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DaemonRss {
    /// NB ovsdb-server.
    pub nb: f64,
    /// SB ovsdb-server.
    pub sb: f64,
    /// ovn-northd.
    pub northd: f64,
    /// ovn-controller.
    pub controller: f64,
    /// ovs-vswitchd.
    pub vswitchd: f64,
}

impl DaemonRss {
    /// The five together.
    pub fn total(&self) -> f64 {
        self.nb + self.sb + self.northd + self.controller + self.vswitchd
    }
}

/// CPU seconds (user + system) used by the controller and the zone's daemons over a span.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cpu {
    /// The NB controller.
    pub controller: f64,
    /// NB ovsdb-server.
    pub nb: f64,
    /// SB ovsdb-server.
    pub sb: f64,
    /// ovn-northd.
    pub northd: f64,
    /// ovn-controller.
    pub ovn_controller: f64,
    /// ovs-vswitchd.
    pub vswitchd: f64,
}

impl Cpu {
    /// `self - earlier`.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            controller: self.controller - earlier.controller,
            nb: self.nb - earlier.nb,
            sb: self.sb - earlier.sb,
            northd: self.northd - earlier.northd,
            ovn_controller: self.ovn_controller - earlier.ovn_controller,
            vswitchd: self.vswitchd - earlier.vswitchd,
        }
    }
}

/// The controller against private NB and SB servers with nothing else connected (no
/// northd, no ovn-controller), on objects created anew in a second API server: what the
/// controller takes without the zone's daemons competing for the two cores.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Isolated {
    /// The timeline (NB only).
    pub timeline: Timeline,
    /// Its metrics.
    pub controller: ControllerMetrics,
    /// CPU from its start to NB converged (controller and NB server).
    pub cpu: Cpu,
}

/// Control (diagnostic): the controller's NB rows written raw into a fresh zone on this
/// machine right after the run, 50 networks per transaction as the upstream-shaped generator
/// writes (chassis names changed to the new zone's chassis), then `nb_cfg` bumped: what
/// northd and ovn-controller take for the same NB without the controller (no remote chassis
/// or port bindings in SB, no controller on the cores).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RawZone {
    /// Seconds from the first byte written to the last reply.
    pub write_s: f64,
    /// Seconds from the first write to `sb_cfg`.
    pub sb_s: f64,
    /// Seconds from the first write to `hv_cfg`.
    pub hv_s: f64,
    /// The zone afterwards.
    pub full: Footprint,
}

/// The zone's size at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Footprint {
    /// SB `Logical_Flow` rows.
    pub lflows: usize,
    /// SB `Datapath_Binding` rows.
    pub datapaths: usize,
    /// SB `Port_Binding` rows.
    pub port_bindings: usize,
    /// OpenFlow flows on `br-int`.
    pub of_flows: u64,
    /// Daemon RSS.
    pub rss: DaemonRss,
}

/// What the controller's `/metrics` said after the run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ControllerMetrics {
    /// Seconds of its NB writes (plan, transactions, verification of every network that
    /// had operations, and the keyed rows' transactions).
    pub nb_write_s: f64,
    /// NB write calls timed.
    pub nb_writes: u64,
    /// NB operations committed.
    pub nb_ops: u64,
    /// SB operations committed.
    pub sb_ops: u64,
    /// Reconcile passes.
    pub passes: u64,
    /// Seconds in passes.
    pub pass_s: f64,
    /// Errors counted (all steps).
    pub errors: u64,
    /// Peak RSS of the controller process, MiB.
    pub peak_rss_mb: f64,
}

/// The restarted controller's first pass over the converged zone.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Reapply {
    /// NB operations it committed.
    pub nb_ops: u64,
    /// SB operations it committed.
    pub sb_ops: u64,
    /// Seconds from its start until its first pass was counted.
    pub first_pass_s: f64,
    /// Mean duration of its passes so far, seconds.
    pub pass_s: f64,
    /// Whether NB changed while it ran (it must not).
    pub nb_changed: bool,
}

/// Figures of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// The objects.
    pub shape: Shape,
    /// Seconds to create every object (before the controller starts).
    pub create_s: f64,
    /// The timeline of the run, from the controller's start.
    pub timeline: Timeline,
    /// NB at convergence.
    pub progress: Progress,
    /// Rows the controller wrote, per table.
    pub nb_rows: std::collections::BTreeMap<String, usize>,
    /// The controller's metrics.
    pub controller: ControllerMetrics,
    /// CPU used from the controller's start to NB converged.
    pub cpu: Cpu,
    /// The same controller and objects without the zone's daemons.
    pub isolated: Isolated,
    /// The controller's rows written raw into a fresh zone.
    pub raw_zone: RawZone,
    /// The sources the controller was built from (`git describe`, dirty or not).
    pub source: String,
    /// The zone before the controller started.
    pub empty: Footprint,
    /// The zone after `hv_cfg`.
    pub full: Footprint,
    /// The re-apply.
    pub reapply: Reapply,
    /// The raw variants, [`RAW_BATCHINGS`] order, monitoring as the controller does
    /// (`monitor_cond_since`).
    pub raw: Vec<RawFigures>,
    /// One network per transaction on a `monitor_cond` connection: faster for the server,
    /// reported as the faster baseline.
    pub raw_cond: RawFigures,
    /// 1-minute load average before and after.
    pub load: (f64, f64),
}

impl Figures {
    /// Rows the controller wrote.
    pub fn rows(&self) -> usize {
        self.nb_rows.values().sum()
    }

    /// The fastest raw variant's seconds.
    pub fn raw_s(&self) -> f64 {
        self.raw
            .iter()
            .map(|r| r.seconds)
            .fold(f64::INFINITY, f64::min)
    }

    /// `nb_ratio`: the controller's NB write time over the same rows written raw, both in the
    /// same conditions: the controller's writes from its first NB change to its last (as the
    /// updates reach a monitoring connection that only times them,
    /// [`UpdateClock`](super::controller_watch::UpdateClock)), against private NB and SB
    /// servers with nothing else on the cores (the isolated run), over the fastest raw
    /// variant, also written to a private server on a connection that monitors the tables,
    /// with the same timing connection beside it.
    pub fn nb_ratio(&self) -> f64 {
        self.isolated_window_s() / self.raw_s()
    }

    /// [`Figures::nb_ratio`] against the faster `monitor_cond` baseline.
    pub fn nb_ratio_cond(&self) -> f64 {
        self.isolated_window_s() / self.raw_cond.seconds
    }

    /// The controller's `nb_s` in the live zone over the same rows written raw into a fresh
    /// live zone (the control's write time); `NaN` without a control.
    pub fn control_ratio(&self) -> f64 {
        self.timeline.nb_s / self.raw_zone.write_s
    }

    /// The isolated run's NB write window (first to last change), seconds.
    pub fn isolated_window_s(&self) -> f64 {
        self.isolated.timeline.nb_s - self.isolated.timeline.first_s
    }

    /// `nb_s / raw_s`: the controller's time from its start to NB converged in the live zone
    /// (northd and ovn-controller on the same cores) over the raw variant on an idle server.
    pub fn end_to_end_ratio(&self) -> f64 {
        self.timeline.nb_s / self.raw_s()
    }

    /// The span of the controller's NB writes as the bench's monitor saw them (first change
    /// to last), seconds.
    pub fn write_window_s(&self) -> f64 {
        self.timeline.nb_s - self.timeline.first_s
    }

    /// [`Figures::write_window_s`] over `raw_s`.
    pub fn window_ratio(&self) -> f64 {
        self.write_window_s() / self.raw_s()
    }

    /// The controller's own NB write time (its metric) over `raw_s`.
    pub fn write_ratio(&self) -> f64 {
        self.controller.nb_write_s / self.raw_s()
    }

    /// The isolated run's `nb_s` over `raw_s`.
    pub fn isolated_ratio(&self) -> f64 {
        self.isolated.timeline.nb_s / self.raw_s()
    }

    fn per_net(&self, full: f64, empty: f64) -> f64 {
        (full - empty) / self.shape.networks as f64
    }

    /// SB logical flows per network (the zone's growth over N).
    pub fn lflows_per_net(&self) -> f64 {
        self.per_net(self.full.lflows as f64, self.empty.lflows as f64)
    }

    /// OpenFlow flows on `br-int` per network.
    pub fn of_per_net(&self) -> f64 {
        self.per_net(self.full.of_flows as f64, self.empty.of_flows as f64)
    }

    /// RSS of the five daemons per network, MiB.
    pub fn rss_mib_per_net(&self) -> f64 {
        self.per_net(self.full.rss.total(), self.empty.rss.total())
    }

    /// The summary line (the last line of output).
    pub fn line(&self) -> String {
        format!(
            "controller-bench networks={} nodes={} pods={} nb_s={:.2} sb_s={:.2} hv_s={:.2} lflows_per_net={:.0} of_per_net={:.0} rss_mib_per_net={:.2} nb_ratio={:.2} reapply_ops={}",
            self.shape.networks,
            self.shape.nodes,
            self.shape.pods,
            self.timeline.nb_s,
            self.timeline.sb_s,
            self.timeline.hv_s,
            self.lflows_per_net(),
            self.of_per_net(),
            self.rss_mib_per_net(),
            self.nb_ratio(),
            self.reapply.nb_ops
        )
    }
}
