//! A running lab node: what tests need to know about it, and the OVS/OVN tools pointed at it.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ipnetwork::Ipv4Network;
use udn_ovsdb::client::Endpoint;
use udn_ovsdb::testing::OvsdbServer;

use crate::command::{Cmd, ExecOutput};
use crate::daemon::{Daemon, rss_kib};
use crate::error::LabError;
use crate::netns::Netns;
use crate::node_start::{GATEWAY_BRIDGE, vsctl};
use crate::zone::{Zone, ZoneSockets, nbctl, sbctl, whole_seconds};

/// One of a node's daemons, for [`Node::appctl`] and [`Node::pids`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DaemonKind {
    /// The zone's NB `ovsdb-server` (only on the node that runs the zone).
    NbDb,
    /// The zone's SB `ovsdb-server` (only on the node that runs the zone).
    SbDb,
    /// The zone's `ovn-northd` (only on the node that runs the zone).
    Northd,
    /// The node's Open_vSwitch `ovsdb-server`.
    OvsDb,
    /// `ovs-vswitchd`.
    Vswitchd,
    /// `ovn-controller`.
    Controller,
}

/// Resident set sizes of a node's daemons, in KiB. The zone daemons are `None` on a node that
/// joins another node's zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRss {
    /// NB ovsdb-server.
    pub nb: Option<u64>,
    /// SB ovsdb-server.
    pub sb: Option<u64>,
    /// ovn-northd.
    pub northd: Option<u64>,
    /// ovn-controller.
    pub controller: u64,
    /// ovs-vswitchd.
    pub vswitchd: u64,
    /// The Open_vSwitch ovsdb-server.
    pub ovsdb: u64,
}

impl NodeRss {
    /// The sum over every daemon, in KiB.
    pub fn total_kib(&self) -> u64 {
        [self.nb, self.sb, self.northd]
            .iter()
            .flatten()
            .sum::<u64>()
            + self.controller
            + self.vswitchd
            + self.ovsdb
    }
}

/// `NB_Global`'s sequence numbers: what clients asked for (`nb_cfg`), what northd has written
/// to SB (`sb_cfg`) and what every chassis has installed (`hv_cfg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NbCfg {
    /// `NB_Global.nb_cfg`.
    pub nb_cfg: i64,
    /// `NB_Global.sb_cfg`.
    pub sb_cfg: i64,
    /// `NB_Global.hv_cfg`.
    pub hv_cfg: i64,
}

/// A lab node: a network namespace that is the node's host network, with its OVS and OVN
/// daemons. Dropped (with the lab) in field order: daemons first, the namespace last.
#[derive(Debug)]
pub struct Node {
    pub(crate) name: String,
    pub(crate) chassis_id: String,
    pub(crate) zone: String,
    pub(crate) dir: PathBuf,
    pub(crate) ip: Ipv4Addr,
    pub(crate) prefix_len: u8,
    pub(crate) next_hop: Ipv4Addr,
    pub(crate) mac: String,
    pub(crate) sockets: ZoneSockets,
    pub(crate) timeout: Duration,
    pub(crate) controller: Daemon,
    pub(crate) vswitchd: Daemon,
    pub(crate) ovs: OvsdbServer,
    pub(crate) zone_daemons: Option<Zone>,
    pub(crate) netns: Netns,
}

fn unix(path: &Path) -> String {
    format!("unix:{}", path.display())
}

impl Node {
    /// The node name (`node1`, ...): the Kubernetes node name, OVS `hostname`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The chassis id: OVS `external_ids:system-id`, a random UUID as `ovs-ctl
    /// --system-id=random` makes it.
    pub fn chassis_id(&self) -> &str {
        &self.chassis_id
    }

    /// The zone name (`NB_Global.name`): the node name, or [`crate::SINGLE_ZONE_NAME`].
    pub fn zone(&self) -> &str {
        &self.zone
    }

    /// Whether this node runs its zone's NB, SB and northd.
    pub fn runs_zone(&self) -> bool {
        self.zone_daemons.is_some()
    }

    /// The network namespace that is this node's host network.
    pub fn netns(&self) -> &str {
        self.netns.name()
    }

    /// The node IP (on `breth0`), also the geneve encap IP.
    pub fn node_ip(&self) -> Ipv4Addr {
        self.ip
    }

    /// The node IP's prefix length on the underlay.
    pub fn node_prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// The node IP with its prefix (`172.18.0.2/16`).
    pub fn node_cidr(&self) -> Ipv4Network {
        Ipv4Network::new(self.ip, self.prefix_len).unwrap_or_else(|_| Ipv4Network::from(self.ip))
    }

    /// The encap IP (`external_ids:ovn-encap-ip`), the node IP.
    pub fn encap_ip(&self) -> Ipv4Addr {
        self.ip
    }

    /// The default gateway: the external host's IP.
    pub fn next_hop(&self) -> Ipv4Addr {
        self.next_hop
    }

    /// The MAC of `breth0` (and of the uplink `eth0` it holds), `aa:bb:cc:dd:ee:ff` form.
    pub fn breth0_mac(&self) -> &str {
        &self.mac
    }

    /// The gateway bridge's name, `breth0`.
    pub fn gateway_bridge(&self) -> &'static str {
        GATEWAY_BRIDGE
    }

    /// The node's run directory: pidfiles, control sockets, `<bridge>.mgmt`, and the logs of
    /// ovs-vswitchd, ovn-controller and (on a zone's node) ovn-northd.
    pub fn log_dir(&self) -> &Path {
        &self.dir
    }

    /// Every log file of this node's daemons (the ovsdb-servers keep theirs in their own dirs).
    pub fn log_files(&self) -> Vec<PathBuf> {
        let mut logs = Vec::new();
        if let Some(zone) = &self.zone_daemons {
            logs.push(zone.nb.dir().join("log"));
            logs.push(zone.sb.dir().join("log"));
            logs.push(zone.northd.log().to_owned());
        }
        logs.push(self.ovs.dir().join("log"));
        logs.push(self.vswitchd.log().to_owned());
        logs.push(self.controller.log().to_owned());
        logs
    }

    /// The zone's NB unix socket.
    pub fn nb_socket(&self) -> &Path {
        &self.sockets.nb
    }

    /// `unix:<NB socket>`.
    pub fn nb_remote(&self) -> String {
        unix(&self.sockets.nb)
    }

    /// The zone's NB endpoint for `udn_ovsdb::client`.
    pub fn nb_endpoint(&self) -> Endpoint {
        Endpoint::Unix(self.sockets.nb.clone())
    }

    /// The zone's SB unix socket.
    pub fn sb_socket(&self) -> &Path {
        &self.sockets.sb
    }

    /// `unix:<SB socket>` (the node's `external_ids:ovn-remote`).
    pub fn sb_remote(&self) -> String {
        unix(&self.sockets.sb)
    }

    /// The zone's SB endpoint for `udn_ovsdb::client`.
    pub fn sb_endpoint(&self) -> Endpoint {
        Endpoint::Unix(self.sockets.sb.clone())
    }

    /// The node's Open_vSwitch database socket.
    pub fn ovs_socket(&self) -> &Path {
        self.ovs.socket()
    }

    /// `unix:<Open_vSwitch socket>`.
    pub fn ovs_remote(&self) -> String {
        unix(self.ovs.socket())
    }

    /// The node's Open_vSwitch endpoint for `udn_ovsdb::client`.
    pub fn ovs_endpoint(&self) -> Endpoint {
        self.ovs.endpoint()
    }

    /// The pid of each of this node's daemons that is running.
    pub fn pids(&self) -> Vec<(DaemonKind, u32)> {
        let mut pids = Vec::new();
        if let Some(zone) = &self.zone_daemons {
            pids.push((DaemonKind::NbDb, zone.nb.pid()));
            pids.push((DaemonKind::SbDb, zone.sb.pid()));
            pids.push((DaemonKind::Northd, zone.northd.pid()));
        }
        pids.push((DaemonKind::OvsDb, self.ovs.pid()));
        pids.push((DaemonKind::Vswitchd, self.vswitchd.pid()));
        pids.push((DaemonKind::Controller, self.controller.pid()));
        pids.retain(|(_, pid)| *pid != 0);
        pids
    }

    fn step(&self, tool: &str) -> String {
        format!("{tool} on {}", self.name)
    }

    /// Runs `ovn-nbctl` against the zone's NB; returns its stdout.
    pub fn nbctl(&self, args: &[&str]) -> Result<String, LabError> {
        nbctl(&self.sockets.nb, self.timeout)
            .args(args)
            .run(&self.step("ovn-nbctl"))
    }

    /// Runs `ovn-sbctl` against the zone's SB; returns its stdout.
    pub fn sbctl(&self, args: &[&str]) -> Result<String, LabError> {
        sbctl(&self.sockets.sb, self.timeout)
            .args(args)
            .run(&self.step("ovn-sbctl"))
    }

    /// Runs `ovs-vsctl` against the node's Open_vSwitch database; returns its stdout.
    pub fn vsctl(&self, args: &[&str]) -> Result<String, LabError> {
        vsctl(self.ovs.socket(), self.timeout)
            .args(args)
            .run(&self.step("ovs-vsctl"))
    }

    /// The node's `OVS_RUNDIR`: where ovs-vswitchd keeps its pidfile, control socket and
    /// the bridges' `<bridge>.mgmt` OpenFlow sockets (what `ovs-ofctl` and `ovs-appctl`
    /// need to find them).
    pub fn ovs_rundir(&self) -> &Path {
        &self.dir
    }

    /// Runs `ovs-ofctl` with the node's `OVS_RUNDIR` (so `br-int` names the node's bridge).
    pub fn ofctl(&self, args: &[&str]) -> Result<String, LabError> {
        Cmd::new("ovs-ofctl")
            .rundir(&self.dir)
            .args(args)
            .run(&self.step("ovs-ofctl"))
    }

    /// Runs `ovs-appctl -t <daemon's control socket>`.
    pub fn appctl(&self, daemon: DaemonKind, args: &[&str]) -> Result<String, LabError> {
        let step = self.step("ovs-appctl");
        let not_here = || LabError::NotFound {
            kind: "daemon",
            name: format!("{daemon:?} on {}", self.name),
        };
        let ovsdb_appctl = |server: &OvsdbServer| {
            server.appctl(args).map_err(|source| LabError::Ovsdb {
                step: step.clone(),
                source,
            })
        };
        let ctl = match daemon {
            DaemonKind::NbDb => {
                return ovsdb_appctl(&self.zone_daemons.as_ref().ok_or_else(not_here)?.nb);
            }
            DaemonKind::SbDb => {
                return ovsdb_appctl(&self.zone_daemons.as_ref().ok_or_else(not_here)?.sb);
            }
            DaemonKind::OvsDb => return ovsdb_appctl(&self.ovs),
            DaemonKind::Northd => {
                self.zone_daemons.as_ref().ok_or_else(not_here)?;
                self.dir.join("ovn-northd.ctl")
            }
            DaemonKind::Vswitchd => self.dir.join("ovs-vswitchd.ctl"),
            DaemonKind::Controller => self
                .dir
                .join(format!("ovn-controller.{}.ctl", self.controller.pid())),
        };
        Cmd::new("ovs-appctl")
            .rundir(&self.dir)
            .arg("-t")
            .arg(ctl)
            .args(args)
            .run(&step)
    }

    /// Runs a command in the node netns (through `nsenter`, so `/sys` stays the host's).
    pub fn exec(&self, argv: &[&str]) -> Result<ExecOutput, LabError> {
        crate::exec::exec(self.netns.name(), argv)
    }

    /// Waits (up to `timeout`) until port `port` exists on bridge `bridge`, e.g. ovn-controller's
    /// `patch-breth0_<node>-to-br-int` once NB has the node's localnet port.
    pub fn wait_port(&self, bridge: &str, port: &str, timeout: Duration) -> Result<(), LabError> {
        let step = self.step("wait for a bridge port");
        vsctl_wait(self.ovs.socket(), timeout, &step, &["Port", port], || {
            format!("port {port} on {bridge}")
        })?;
        let owner = vsctl(self.ovs.socket(), self.timeout)
            .args(["port-to-br", port])
            .run(&step)?;
        if owner.trim() == bridge {
            Ok(())
        } else {
            Err(LabError::Invalid {
                field: format!("port {port}"),
                reason: format!("is on bridge {}, not {bridge}", owner.trim()),
            })
        }
    }

    /// Waits (up to `timeout`) until ovn-controller has set `external_ids:ovn-installed=true`
    /// on OVS interface `interface` (its flows are in).
    pub fn wait_installed(&self, interface: &str, timeout: Duration) -> Result<(), LabError> {
        let step = self.step("wait for ovn-installed");
        vsctl_wait(
            self.ovs.socket(),
            timeout,
            &step,
            &["Interface", interface, "external_ids:ovn-installed=true"],
            || format!("ovn-installed on interface {interface}"),
        )
    }

    /// `ovn-nbctl --wait=hv sync` on the zone: returns once every chassis of the zone has
    /// installed everything NB held when it was called.
    pub fn wait_hv(&self) -> Result<(), LabError> {
        self.nbctl(&["--wait=hv", "sync"]).map(drop)
    }

    /// Adds OpenFlow flows (`ovs-ofctl add-flows` syntax, one per entry) to `bridge`.
    pub fn add_flows(&self, bridge: &str, flows: &[&str]) -> Result<(), LabError> {
        let mut text = flows.join("\n");
        text.push('\n');
        Cmd::new("ovs-ofctl")
            .rundir(&self.dir)
            .args(["add-flows", bridge, "-"])
            .stdin(text.into_bytes())
            .run(&self.step("ovs-ofctl add-flows"))
            .map(drop)
    }

    /// The number of OpenFlow flows on `bridge` (`ovs-ofctl dump-aggregate`).
    pub fn flow_count(&self, bridge: &str) -> Result<u64, LabError> {
        let output = self.ofctl(&["dump-aggregate", bridge])?;
        output
            .split_whitespace()
            .find_map(|field| field.strip_prefix("flow_count=")?.parse().ok())
            .ok_or(LabError::Parse {
                step: self.step("ovs-ofctl dump-aggregate"),
                what: "flow_count",
                output,
            })
    }

    /// The zone's ovn-northd log so far (tests assert it has no logical-flow parse errors).
    pub fn northd_log(&self) -> Result<String, LabError> {
        let path = &self.sockets.northd_log;
        std::fs::read_to_string(path).map_err(|source| LabError::File {
            step: self.step("read the northd log"),
            action: "read",
            path: path.clone(),
            source,
        })
    }

    /// The resident set size of each of this node's daemons.
    pub fn rss(&self) -> Result<NodeRss, LabError> {
        let step = self.step("read daemon RSS");
        let zone = |pick: fn(&Zone) -> u32| -> Result<Option<u64>, LabError> {
            self.zone_daemons
                .as_ref()
                .map(|zone| rss_kib(&step, pick(zone)))
                .transpose()
        };
        Ok(NodeRss {
            nb: zone(|zone| zone.nb.pid())?,
            sb: zone(|zone| zone.sb.pid())?,
            northd: zone(|zone| zone.northd.pid())?,
            controller: self.controller.rss_kib(&step)?,
            vswitchd: self.vswitchd.rss_kib(&step)?,
            ovsdb: rss_kib(&step, self.ovs.pid())?,
        })
    }

    /// The zone's `NB_Global` `nb_cfg`, `sb_cfg` and `hv_cfg`.
    pub fn nb_cfg(&self) -> Result<NbCfg, LabError> {
        let output = self.nbctl(&[
            "--bare",
            "--columns=nb_cfg,sb_cfg,hv_cfg",
            "list",
            "NB_Global",
        ])?;
        let numbers: Vec<i64> = output
            .split_whitespace()
            .filter_map(|field| field.parse().ok())
            .collect();
        match numbers[..] {
            [nb_cfg, sb_cfg, hv_cfg] => Ok(NbCfg {
                nb_cfg,
                sb_cfg,
                hv_cfg,
            }),
            _ => Err(LabError::Parse {
                step: self.step("read NB_Global"),
                what: "nb_cfg, sb_cfg and hv_cfg",
                output,
            }),
        }
    }
}

/// `ovs-vsctl --timeout=<timeout> wait-until <what>`, with a timeout reported as such.
fn vsctl_wait(
    ovs: &Path,
    timeout: Duration,
    step: &str,
    what: &[&str],
    describe: impl Fn() -> String,
) -> Result<(), LabError> {
    let started = std::time::Instant::now();
    let result = Cmd::new("ovs-vsctl")
        .arg(format!("--db=unix:{}", ovs.display()))
        .arg(format!("--timeout={}", whole_seconds(timeout)))
        .args(["--no-wait", "wait-until"])
        .args(what)
        .run(step);
    match result {
        Ok(_) => Ok(()),
        Err(LabError::Command { .. }) if started.elapsed() >= timeout => Err(LabError::Timeout {
            step: step.to_owned(),
            what: describe(),
            waited: started.elapsed(),
        }),
        Err(error) => Err(error),
    }
}
