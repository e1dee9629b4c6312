//! The lab: bring-up, lookup, pods, probes, and teardown on drop.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::capture::Capture;
use crate::command::{ExecOutput, require};
use crate::config::{LabConfig, SINGLE_ZONE_NAME, ZoneMode};
use crate::error::LabError;
use crate::netns::{Netns, netns_with_prefix};
use crate::node::Node;
use crate::node_start::{NodePlan, ZoneRole, start_node};
use crate::pod::{
    InterfaceSpec, Pod, PodEntry, PodSpec, check_interface, disable_ipv6, netns_suffix,
    plumb_interface,
};
use crate::probe::{Ping, TcpListener, payload, ping, tcp_connect, tcp_send};
use crate::run_dir::RunDir;
use crate::underlay::{ExternalHost, UNDERLAY_BRIDGE, Underlay, mac_for};

/// Programs every lab needs (ping, nc and tcpdump are checked when a probe first runs).
const REQUIRED: &[&str] = &[
    "ip",
    "nsenter",
    "ethtool",
    "ovsdb-tool",
    "ovsdb-server",
    "ovs-vsctl",
    "ovs-vswitchd",
    "ovs-appctl",
    "ovs-ofctl",
    "ovn-northd",
    "ovn-controller",
    "ovn-nbctl",
    "ovn-sbctl",
];

/// Bytes [`Lab::tcp_check`] sends: enough for many full-size segments.
const TCP_CHECK_BYTES: usize = 256 * 1024;

/// A running OVN lab. Dropping it kills every daemon it started, deletes its network
/// namespaces (and with them every link) and removes its run directory; fields drop in
/// declaration order, pods first.
#[derive(Debug)]
pub struct Lab {
    pods: Mutex<BTreeMap<String, PodEntry>>,
    nodes: Vec<Node>,
    external: ExternalHost,
    underlay: Underlay,
    next_veth: AtomicU32,
    config: LabConfig,
    run: RunDir,
}

impl Lab {
    /// Brings the lab up and returns once every chassis is registered in its zone's SB and
    /// every zone has synced to its chassis (`--wait=hv`).
    pub fn start(config: LabConfig) -> Result<Self, LabError> {
        let started = Instant::now();
        config.validate()?;
        preflight()?;
        crate::stale::clean_stale_labs();
        let run = RunDir::reserve(config.run_base.as_deref())?;
        let prefix = run.prefix().to_owned();
        let mtu = config.underlay_mtu;
        let prefix_len = config.underlay.prefix();
        let underlay = Underlay::start(&format!("{prefix}-underlay"), mtu)?;
        let external_ip = host_ip(&config, 1)?;
        let external = ExternalHost::start(
            &format!("{prefix}-ext"),
            &underlay,
            external_ip,
            prefix_len,
            mtu,
        )?;
        let mut nodes: Vec<Node> = Vec::with_capacity(config.nodes.len());
        for (index, name) in config.nodes.iter().enumerate() {
            let role = match (config.zones, nodes.first()) {
                (ZoneMode::PerNode, _) => ZoneRole::Own(name.clone()),
                (ZoneMode::Single, None) => ZoneRole::Own(SINGLE_ZONE_NAME.to_owned()),
                (ZoneMode::Single, Some(first)) => ZoneRole::Join(first.sockets.clone()),
            };
            let ip = host_ip(&config, index + 2)?;
            let plan = NodePlan {
                name: name.clone(),
                netns: format!("{prefix}-{name}"),
                dir: run.path().join(name),
                ip,
                prefix_len,
                next_hop: external_ip,
                mac: mac_for(ip),
                mtu,
                underlay_netns: underlay.netns.name().to_owned(),
                underlay_port: format!("n{}", index + 1),
                underlay_bridge: UNDERLAY_BRIDGE.to_owned(),
                timeout: config.timeout,
            };
            nodes.push(start_node(plan, role)?);
        }
        let lab = Self {
            pods: Mutex::new(BTreeMap::new()),
            nodes,
            external,
            underlay,
            next_veth: AtomicU32::new(1),
            config,
            run,
        };
        lab.wait_ready()?;
        tracing::info!(
            prefix = %lab.prefix(),
            nodes = lab.nodes.len(),
            elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "ovn lab up"
        );
        Ok(lab)
    }

    /// Every ovn-controller registered its chassis, then every zone synced to its chassis.
    fn wait_ready(&self) -> Result<(), LabError> {
        for node in &self.nodes {
            node.sbctl(&["wait-until", "Chassis", node.chassis_id()])?;
        }
        for node in self.nodes.iter().filter(|node| node.runs_zone()) {
            node.wait_hv()?;
        }
        Ok(())
    }

    /// Leaves the lab running beyond this value (nothing is stopped or deleted when it goes)
    /// and returns its run directory: a lab that outlives its process, as the sandbox's. It
    /// is taken apart later with [`crate::tear_down`] on that directory.
    pub fn detach(self) -> std::path::PathBuf {
        let run_dir = self.run.path().to_path_buf();
        // Forgetting skips every field's drop (daemons, netns, the run dir): exactly what
        // must survive. The memory is the caller's process's until it exits.
        std::mem::forget(self);
        run_dir
    }

    /// The lab's unique prefix: every netns it creates is named `<prefix>-...`.
    pub fn prefix(&self) -> &str {
        self.run.prefix()
    }

    /// The lab's run directory (node dirs with logs, sockets, pidfiles).
    pub fn run_dir(&self) -> &Path {
        self.run.path()
    }

    /// The configuration the lab was started with.
    pub fn config(&self) -> &LabConfig {
        &self.config
    }

    /// The nodes, in configuration order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Result<&Node, LabError> {
        self.nodes
            .iter()
            .find(|node| node.name() == name)
            .ok_or_else(|| LabError::NotFound {
                kind: "node",
                name: name.to_owned(),
            })
    }

    /// The external host (the nodes' default gateway).
    pub fn external(&self) -> &ExternalHost {
        &self.external
    }

    /// The underlay bridge's netns (bridge `br0`; node `i`'s port is `n<i>`, the external
    /// host's is `ext`).
    pub fn underlay_netns(&self) -> &str {
        self.underlay.netns.name()
    }

    /// Every network namespace that currently carries this lab's prefix.
    pub fn netns_names(&self) -> Vec<String> {
        netns_with_prefix(&format!("{}-", self.prefix()))
    }

    /// The pid of every daemon the lab runs.
    pub fn pids(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .flat_map(|node| node.pids().into_iter().map(|(_, pid)| pid))
            .collect()
    }

    fn pods_locked(&self) -> MutexGuard<'_, BTreeMap<String, PodEntry>> {
        self.pods
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Creates a pod: its netns, then each interface (veth to `br-int` with
    /// `external_ids:iface-id`). Does not wait for OVN: see [`Lab::wait_installed`].
    pub fn add_pod(&self, spec: PodSpec) -> Result<Pod, LabError> {
        let node = self.node(&spec.node)?;
        if self.pods_locked().contains_key(&spec.name) {
            return Err(LabError::Invalid {
                field: "pod".to_owned(),
                reason: format!("{:?} exists", spec.name),
            });
        }
        let step = format!("add pod {}", spec.name);
        let netns_name = format!("{}-pod-{}", self.prefix(), netns_suffix(&spec.name));
        let netns = Netns::create(&step, &netns_name)?;
        if spec.disable_ipv6 {
            disable_ipv6(&netns_name)?;
        }
        let mut pod = Pod {
            name: spec.name.clone(),
            node: spec.node.clone(),
            netns: netns_name,
            interfaces: Vec::new(),
        };
        for interface in &spec.interfaces {
            match self.plumb(node, &pod, interface) {
                Ok(plumbed) => pod.interfaces.push(plumbed),
                Err(error) => {
                    unplug(node, &pod);
                    return Err(error);
                }
            }
        }
        self.pods_locked().insert(
            spec.name,
            PodEntry {
                pod: pod.clone(),
                _netns: netns,
            },
        );
        Ok(pod)
    }

    fn plumb(
        &self,
        node: &Node,
        pod: &Pod,
        interface: &InterfaceSpec,
    ) -> Result<crate::pod::PodInterface, LabError> {
        let host_ifname = interface
            .host_ifname
            .clone()
            .unwrap_or_else(|| format!("vp{}", self.next_veth.fetch_add(1, Ordering::Relaxed)));
        check_interface(interface, &host_ifname)?;
        plumb_interface(node, &pod.netns, interface, &host_ifname)
    }

    /// Adds an interface to a running pod (e.g. `ovn-udn1` next to `eth0`).
    pub fn add_pod_interface(&self, pod: &str, interface: InterfaceSpec) -> Result<Pod, LabError> {
        let current = self.pod(pod)?;
        let node = self.node(&current.node)?;
        let plumbed = self.plumb(node, &current, &interface)?;
        let mut pods = self.pods_locked();
        let entry = pods.get_mut(pod).ok_or_else(|| LabError::NotFound {
            kind: "pod",
            name: pod.to_owned(),
        })?;
        entry.pod.interfaces.push(plumbed);
        Ok(entry.pod.clone())
    }

    /// The pod named `name`.
    pub fn pod(&self, name: &str) -> Result<Pod, LabError> {
        self.pods_locked()
            .get(name)
            .map(|entry| entry.pod.clone())
            .ok_or_else(|| LabError::NotFound {
                kind: "pod",
                name: name.to_owned(),
            })
    }

    /// Every pod, by name.
    pub fn pods(&self) -> Vec<Pod> {
        self.pods_locked()
            .values()
            .map(|entry| entry.pod.clone())
            .collect()
    }

    /// Deletes a pod: its OVS ports, then its netns (which deletes the veths).
    pub fn remove_pod(&self, name: &str) -> Result<(), LabError> {
        let entry = self
            .pods_locked()
            .remove(name)
            .ok_or_else(|| LabError::NotFound {
                kind: "pod",
                name: name.to_owned(),
            })?;
        let node = self.node(&entry.pod.node)?;
        for interface in &entry.pod.interfaces {
            node.vsctl(&["--if-exists", "del-port", "br-int", &interface.host_ifname])?;
        }
        drop(entry);
        Ok(())
    }

    /// Waits (up to `timeout` in all) until ovn-controller has installed the flows of every
    /// interface of pod `name` (`external_ids:ovn-installed=true` on each OVS Interface).
    pub fn wait_installed(&self, name: &str, timeout: Duration) -> Result<(), LabError> {
        let deadline = Instant::now() + timeout;
        let pod = self.pod(name)?;
        let node = self.node(&pod.node)?;
        for interface in &pod.interfaces {
            let left = deadline.saturating_duration_since(Instant::now());
            node.wait_installed(&interface.host_ifname, left)?;
        }
        Ok(())
    }

    /// Runs `argv` in network namespace `netns` (a node's, a pod's, the external host's) with
    /// `nsenter --net`, which keeps the host's `/sys` (`ip netns exec` remounts it). A non-zero
    /// exit is not an error.
    pub fn exec(&self, netns: &str, argv: &[&str]) -> Result<ExecOutput, LabError> {
        crate::exec::exec(netns, argv)
    }

    /// Whether `dst` answers `ping.count` pings from `netns` within `ping.timeout`.
    pub fn ping(&self, netns: &str, dst: IpAddr, ping_opts: Ping) -> Result<bool, LabError> {
        ping(netns, dst, ping_opts)
    }

    /// Starts a one-connection TCP listener on `port` in `netns`; returns once it listens.
    pub fn listen_tcp(
        &self,
        netns: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<TcpListener<'_>, LabError> {
        TcpListener::start(netns, port, timeout)
    }

    /// Whether a TCP connection from `netns` to `dst:port` is accepted (a listener, e.g. from
    /// [`Lab::listen_tcp`], counts its connection as received).
    pub fn tcp_connect(
        &self,
        netns: &str,
        dst: IpAddr,
        port: u16,
        timeout: Duration,
    ) -> Result<bool, LabError> {
        tcp_connect(netns, dst, port, timeout)
    }

    /// Connects from `netns` to `dst:port`, sends `data` and closes; true if that worked.
    pub fn tcp_send(
        &self,
        netns: &str,
        dst: IpAddr,
        port: u16,
        data: &[u8],
        timeout: Duration,
    ) -> Result<bool, LabError> {
        tcp_send(netns, dst, port, data, timeout)
    }

    /// Sends 256 KiB over TCP from netns `from` to a listener on `dst:port` in netns `to`;
    /// true if it arrived byte for byte within `timeout`.
    pub fn tcp_check(
        &self,
        from: &str,
        to: &str,
        dst: IpAddr,
        port: u16,
        timeout: Duration,
    ) -> Result<bool, LabError> {
        let data = payload(TCP_CHECK_BYTES);
        let listener = self.listen_tcp(to, port, timeout)?;
        if !self.tcp_send(from, dst, port, &data, timeout)? {
            return Ok(false);
        }
        match listener.received(timeout) {
            Ok(received) => Ok(received.data == data),
            Err(LabError::Timeout { .. }) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Captures packets arriving on `interface` in `netns` (pcap `filter`, may be empty);
    /// returns once tcpdump captures.
    pub fn capture(
        &self,
        netns: &str,
        interface: &str,
        filter: &str,
    ) -> Result<Capture<'_>, LabError> {
        Capture::start(netns, interface, filter, self.config.timeout)
    }

    /// Captures packets arriving at the external host (pcap `filter`, may be empty).
    pub fn capture_external(&self, filter: &str) -> Result<Capture<'_>, LabError> {
        self.capture(self.external.netns(), self.external.ifname(), filter)
    }

    /// A text dump for a failing test: each zone's NB and SB, each node's OVS, flow counts,
    /// pods, and the tail of every log.
    pub fn diagnostics(&self) -> String {
        let mut out = String::new();
        let mut section = |title: &str, body: Result<String, LabError>| {
            let body = body.unwrap_or_else(|error| format!("error: {error}"));
            let _ = writeln!(out, "=== {title}\n{}", body.trim_end());
        };
        for node in &self.nodes {
            let name = node.name();
            if node.runs_zone() {
                section(&format!("{name}: ovn-nbctl show"), node.nbctl(&["show"]));
                section(&format!("{name}: ovn-sbctl show"), node.sbctl(&["show"]));
            }
            section(&format!("{name}: ovs-vsctl show"), node.vsctl(&["show"]));
            section(
                &format!("{name}: br-int flows"),
                node.flow_count("br-int").map(|count| count.to_string()),
            );
            for log in node.log_files() {
                section(&log.display().to_string(), tail(&log, 40));
            }
        }
        section("pods", Ok(format!("{:#?}", self.pods())));
        out
    }
}

// Tests share a lab across threads (parallel probes).
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Lab>();
};

fn tail(path: &Path, lines: usize) -> Result<String, LabError> {
    let text = std::fs::read_to_string(path).map_err(|source| LabError::File {
        step: "diagnostics".to_owned(),
        action: "read",
        path: path.to_owned(),
        source,
    })?;
    let all: Vec<&str> = text.lines().collect();
    Ok(all[all.len().saturating_sub(lines)..].join("\n"))
}

/// Removes the OVS ports of a pod that could not be finished (its netns goes on drop).
fn unplug(node: &Node, pod: &Pod) {
    for interface in &pod.interfaces {
        let _ = node.vsctl(&["--if-exists", "del-port", "br-int", &interface.host_ifname]);
    }
}

/// The `n`-th address of the underlay network.
fn host_ip(config: &LabConfig, n: usize) -> Result<std::net::Ipv4Addr, LabError> {
    u32::try_from(n)
        .ok()
        .and_then(|n| config.underlay.nth(n))
        .ok_or_else(|| LabError::Invalid {
            field: "underlay".to_owned(),
            reason: format!("{} has no address number {n}", config.underlay),
        })
}

fn preflight() -> Result<(), LabError> {
    if !rustix::process::geteuid().is_root() {
        return Err(LabError::Invalid {
            field: "user".to_owned(),
            reason: "the lab creates network namespaces: run the tests as root".to_owned(),
        });
    }
    require("start the lab", REQUIRED)
}
