//! `udnctl sandbox up`: prerequisites, then the OVN lab, the API server with udn's CRDs,
//! per node the forwarder to the API server and the simulated kubelet (which registers the
//! Node), then the cluster-manager and the EndpointSlice controller, and per node
//! `udn-controller` and `udn-node`; returns once every node's agent wrote its CNI config and
//! every Node is Ready. The state file is written after every step, so a failure half-way
//! leaves what `down` needs.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use udn_api::dynamic_udn::DynamicUdn;
use udn_ovn_lab::{Lab, LabConfig};

use crate::binaries::Binaries;
use crate::components::{self, AgentSettings, ZoneEndpoints};
use crate::daemon::{self, DaemonRecord, Liveness};
use crate::error::SandboxError;
use crate::kubelet::KubeletConfig;
use crate::layout::{Layout, NODE_API_PORT};
use crate::state::{NodeState, SandboxState};

/// The CNI config file the node agent writes (upstream's name).
pub const CNI_CONF_FILE: &str = "10-ovn-kubernetes.conf";

/// How `status` and `logs` name the EndpointSlice controller (kube-controller-manager's,
/// played by `udnctl sandbox endpoints`).
pub const ENDPOINTSLICE_CONTROLLER: &str = "endpointslice-controller";

/// How long one component may take to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// What to bring up.
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// The sandbox directory.
    pub dir: PathBuf,
    /// Nodes (`node1`...).
    pub nodes: usize,
    /// The programs.
    pub binaries: Binaries,
    /// The udn components' `--log-filter`.
    pub log_filter: String,
    /// Install missing Debian packages (otherwise their absence is an error).
    pub install_packages: bool,
    /// Dynamic UDN (`--enable-dynamic-udn-allocation`, `--udn-deletion-grace-period`), given
    /// to cluster-manager, every udn-controller and every node agent alike.
    pub dynamic_udn: DynamicUdn,
}

/// What `up` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpOutcome {
    /// A new sandbox runs.
    Started,
    /// The sandbox already ran; nothing was done.
    AlreadyUp,
    /// Leftovers of a sandbox that had crashed were removed, then a new one was started.
    Restarted {
        /// What was found not running.
        leftovers: Vec<String>,
    },
}

/// Brings the sandbox up (see the module docs).
pub fn up(options: &UpOptions) -> Result<UpOutcome, SandboxError> {
    preflight(options)?;
    let layout = Layout::new(&options.dir);
    let mut leftovers = Vec::new();
    if let Some(state) = SandboxState::load(&layout.state_file())? {
        let dead = crate::status::not_running(&state);
        if state.complete && dead.is_empty() {
            return Ok(UpOutcome::AlreadyUp);
        }
        leftovers = if dead.is_empty() {
            vec!["an unfinished bring-up".to_owned()]
        } else {
            dead
        };
        tracing::warn!(
            ?leftovers,
            "cleaning up a sandbox that is not (fully) running"
        );
        crate::down::down(&options.dir)?;
    } else if layout.root().exists() {
        // A directory without state: a `down` interrupted after removing the state.
        crate::down::down(&options.dir)?;
    }
    let runtime = crate::client::runtime()?;
    let mut bringup = Bringup {
        options,
        layout,
        state: SandboxState::default(),
    };
    let result = bringup.run(&runtime);
    if let Err(error) = result {
        // Keep the logs for the user; the rest goes.
        tracing::error!(%error, "bring-up failed; the logs are kept, run `udnctl sandbox down` to remove everything");
        return Err(error);
    }
    Ok(if leftovers.is_empty() {
        UpOutcome::Started
    } else {
        UpOutcome::Restarted { leftovers }
    })
}

/// Root, programs, packages, cgroup v2.
fn preflight(options: &UpOptions) -> Result<(), SandboxError> {
    if !rustix::process::geteuid().is_root() {
        return Err(SandboxError::Prerequisite(
            "the sandbox needs root (network namespaces, OVS, nftables, cgroups)".to_owned(),
        ));
    }
    let missing = crate::packages::missing();
    if !missing.is_empty() {
        if !options.install_packages {
            return Err(SandboxError::Prerequisite(format!(
                "missing Debian packages: {}",
                missing.join(" ")
            )));
        }
        tracing::info!(packages = %missing.join(" "), "installing missing Debian packages");
        crate::packages::install(&missing)?;
    }
    crate::cgroup::v2_mount()?;
    if options.nodes == 0 {
        return Err(SandboxError::Prerequisite(
            "--nodes must be at least 1".to_owned(),
        ));
    }
    Ok(())
}

struct Bringup<'a> {
    options: &'a UpOptions,
    layout: Layout,
    state: SandboxState,
}

impl Bringup<'_> {
    fn save(&self) -> Result<(), SandboxError> {
        self.state.save(&self.layout.state_file())
    }

    fn mkdir(path: &std::path::Path) -> Result<(), SandboxError> {
        std::fs::create_dir_all(path).map_err(|source| SandboxError::io("create", path, source))
    }

    fn spawn(&mut self, name: &str, command: Command) -> Result<DaemonRecord, SandboxError> {
        let log = self.layout.log(&name.replace(' ', "-"));
        let record = daemon::spawn(name, command, &log)?;
        self.state.daemons.push(record.clone());
        self.save()?;
        Ok(record)
    }

    fn run(&mut self, runtime: &tokio::runtime::Runtime) -> Result<(), SandboxError> {
        Self::mkdir(self.layout.root())?;
        Self::mkdir(&self.layout.logs())?;
        Self::mkdir(&self.layout.lab_base())?;
        self.save()?;
        self.start_lab()?;
        let api = self.start_api_server()?;
        runtime.block_on(self.install_crds())?;
        for index in 0..self.state.nodes.len() {
            self.start_node_base(index, api)?;
        }
        runtime.block_on(self.wait_nodes_registered())?;
        let kubeconfig = self.layout.kubeconfig();
        let binaries = &self.options.binaries;
        let mut manager = components::cluster_manager(&binaries.cluster_manager, &kubeconfig);
        manager.args(components::dynamic_udn_flags(&self.options.dynamic_udn));
        self.spawn("udn-cluster-manager", manager)?;
        let mut endpoints = Command::new(&self.options.binaries.udnctl);
        endpoints
            .args(["sandbox", "endpoints", "--kubeconfig"])
            .arg(&kubeconfig);
        self.spawn(ENDPOINTSLICE_CONTROLLER, endpoints)?;
        for index in 0..self.state.nodes.len() {
            self.start_node_components(index)?;
        }
        self.wait_agents_ready()?;
        runtime.block_on(self.wait_nodes_ready())?;
        self.state.complete = true;
        self.save()
    }

    fn start_lab(&mut self) -> Result<(), SandboxError> {
        let config = LabConfig::with_nodes(self.options.nodes).run_base(self.layout.lab_base());
        let lab = Lab::start(config)?;
        self.state.prefix = lab.prefix().to_owned();
        for node in lab.nodes() {
            self.state.nodes.push(NodeState {
                name: node.name().to_owned(),
                netns: node.netns().to_owned(),
                ip: node.node_ip(),
                nb_remote: node.nb_remote(),
                sb_remote: node.sb_remote(),
                ovs_remote: node.ovs_remote(),
                ovs_rundir: node.ovs_rundir().to_path_buf(),
            });
            // `pids` and `log_files` list the daemons in the same order.
            for ((kind, pid), log) in node.pids().into_iter().zip(node.log_files()) {
                let name = format!("{} {}", daemon_name(kind), node.name());
                self.state
                    .daemons
                    .push(DaemonRecord::of(&name, pid, log, false));
            }
        }
        self.state.lab_run_dir = Some(lab.detach());
        self.state.cgroup_root = Some(crate::cgroup::create(&self.state.prefix)?);
        self.save()
    }

    /// `udn-kube-sim serve` on an ephemeral loopback port; its address from its log.
    fn start_api_server(&mut self) -> Result<SocketAddr, SandboxError> {
        let mut command = Command::new(&self.options.binaries.sim);
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--kubeconfig"])
            .arg(self.layout.kubeconfig())
            .arg("--state")
            .arg(self.layout.api_state());
        let record = self.spawn("kube-sim", command)?;
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let text = std::fs::read_to_string(&record.log).unwrap_or_default();
            if let Some(url) = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("listening on "))
            {
                let url = url.trim().to_owned();
                let address: SocketAddr =
                    url.trim_start_matches("http://").parse().map_err(|_| {
                        SandboxError::NotReady {
                            component: "kube-sim".to_owned(),
                            seconds: 0,
                            reason: format!("unexpected address line {url:?}"),
                        }
                    })?;
                self.state.api_url = Some(url);
                self.save()?;
                return Ok(address);
            }
            self.check_alive(&record, deadline)?;
            std::thread::park_timeout(Duration::from_millis(20));
        }
    }

    /// An error when `record` has exited or `deadline` passed.
    fn check_alive(&self, record: &DaemonRecord, deadline: Instant) -> Result<(), SandboxError> {
        if let Liveness::Gone(reason) = record.liveness() {
            return Err(SandboxError::NotReady {
                component: record.name.clone(),
                seconds: READY_TIMEOUT.as_secs(),
                reason: format!(
                    "{reason}; its log ({}):\n{}",
                    record.log.display(),
                    record.log_tail(20)
                ),
            });
        }
        if Instant::now() >= deadline {
            return Err(SandboxError::NotReady {
                component: record.name.clone(),
                seconds: READY_TIMEOUT.as_secs(),
                reason: format!(
                    "its log ({}):\n{}",
                    record.log.display(),
                    record.log_tail(20)
                ),
            });
        }
        Ok(())
    }

    async fn install_crds(&self) -> Result<(), SandboxError> {
        let client = crate::client::client(&self.layout.kubeconfig()).await?;
        let api: Api<CustomResourceDefinition> = Api::all(client);
        for crd in udn_api::crd::manifests() {
            let name = crd.metadata.name.clone().unwrap_or_default();
            match api.create(&PostParams::default(), &crd).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(source) => {
                    return Err(SandboxError::Api {
                        what: format!("creating CustomResourceDefinition {name}"),
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    fn zone(&self, index: usize) -> ZoneEndpoints {
        let node = &self.state.nodes[index];
        ZoneEndpoints {
            node: node.name.clone(),
            netns: node.netns.clone(),
            nb_remote: node.nb_remote.clone(),
            sb_remote: node.sb_remote.clone(),
            ovs_remote: node.ovs_remote.clone(),
            ovs_rundir: node.ovs_rundir.clone(),
        }
    }

    fn cgroup_root(&self) -> Result<PathBuf, SandboxError> {
        self.state
            .cgroup_root
            .clone()
            .ok_or_else(|| SandboxError::Prerequisite("no sandbox cgroup".to_owned()))
    }

    /// The node's forwarder to the API server, its CNI dirs and its kubelet.
    fn start_node_base(&mut self, index: usize, api: SocketAddr) -> Result<(), SandboxError> {
        let node = self.state.nodes[index].clone();
        let paths = self.layout.node(&node.name);
        for dir in [
            paths.root().to_path_buf(),
            paths.cni_conf_dir(),
            paths.cni_bin_dir(),
            paths.kubelet_state(),
        ] {
            Self::mkdir(&dir)?;
        }
        if let Some(parent) = paths.cni_socket().parent() {
            Self::mkdir(parent)?;
        }
        let mut forward = Command::new(&self.options.binaries.udnctl);
        forward
            .args(["sandbox", "forward", "--netns", &node.netns, "--listen"])
            .arg(format!("127.0.0.1:{NODE_API_PORT}"))
            .arg("--to")
            .arg(api.to_string());
        self.spawn(&format!("forward {}", node.name), forward)?;
        crate::client::write_kubeconfig(
            &paths.kubeconfig(),
            &format!("http://127.0.0.1:{NODE_API_PORT}"),
        )?;
        write_cni_plugin(
            &paths.cni_bin_dir(),
            &self.options.binaries.cni,
            &paths.cni_socket(),
        )?;
        let config = KubeletConfig {
            node_name: node.name.clone(),
            node_ips: vec![std::net::IpAddr::V4(node.ip)],
            kubeconfig: paths.kubeconfig(),
            cni_conf_dir: paths.cni_conf_dir(),
            cni_bin_dir: paths.cni_bin_dir(),
            state_dir: paths.kubelet_state(),
            cgroup_root: self.cgroup_root()?,
            netns_prefix: format!("{}-p{}", self.state.prefix, index + 1),
            image_command: vec![
                self.options.binaries.udnctl.display().to_string(),
                "sandbox".to_owned(),
                "image".to_owned(),
            ],
        };
        let text = serde_json::to_string_pretty(&config).map_err(|e| SandboxError::State {
            path: paths.kubelet_config(),
            reason: e.to_string(),
        })?;
        std::fs::write(paths.kubelet_config(), text)
            .map_err(|source| SandboxError::io("write", &paths.kubelet_config(), source))?;
        let mut kubelet = components::in_netns(&node.netns);
        kubelet
            .arg(&self.options.binaries.udnctl)
            .args(["sandbox", "kubelet", "--config"])
            .arg(paths.kubelet_config());
        self.spawn(&format!("kubelet {}", node.name), kubelet)?;
        Ok(())
    }

    fn start_node_components(&mut self, index: usize) -> Result<(), SandboxError> {
        let zone = self.zone(index);
        let paths = self.layout.node(&zone.node);
        let binaries = self.options.binaries.clone();
        let dynamic_udn = components::dynamic_udn_flags(&self.options.dynamic_udn);
        let mut controller =
            components::controller(&binaries.controller, &zone, &self.layout.kubeconfig());
        controller.args(&dynamic_udn);
        self.spawn(&format!("udn-controller {}", zone.node), controller)?;
        let kubelet_cgroup = crate::cgroup::kubelet_cgroup(&self.cgroup_root()?);
        let settings = AgentSettings {
            kubeconfig: paths.kubeconfig(),
            socket: paths.cni_socket(),
            conf_dir: paths.cni_conf_dir(),
            cni_request_timeout_s: 60,
            log_filter: self.options.log_filter.clone(),
            kubelet_cgroup_path: Some(crate::cgroup::nft_path(&kubelet_cgroup)),
        };
        let mut agent = components::agent(&binaries.agent, &zone, &settings);
        agent.args(&dynamic_udn);
        self.spawn(&format!("udn-node {}", zone.node), agent)?;
        Ok(())
    }

    async fn wait_nodes_registered(&self) -> Result<(), SandboxError> {
        self.wait_nodes("registered", |_| true).await
    }

    async fn wait_nodes_ready(&self) -> Result<(), SandboxError> {
        self.wait_nodes("Ready", node_ready).await
    }

    async fn wait_nodes(&self, what: &str, check: fn(&Node) -> bool) -> Result<(), SandboxError> {
        let client = crate::client::client(&self.layout.kubeconfig()).await?;
        let api: Api<Node> = Api::all(client);
        let deadline = Instant::now() + READY_TIMEOUT;
        for node in &self.state.nodes {
            let kubelet = self.record(&format!("kubelet {}", node.name));
            loop {
                if let Ok(Some(found)) = api.get_opt(&node.name).await
                    && check(&found)
                {
                    break;
                }
                if let Some(record) = &kubelet {
                    self.check_alive(record, deadline).map_err(|e| match e {
                        SandboxError::NotReady {
                            component,
                            seconds,
                            reason,
                        } => SandboxError::NotReady {
                            component,
                            seconds,
                            reason: format!("Node {} not {what}; {reason}", node.name),
                        },
                        other => other,
                    })?;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    fn record(&self, name: &str) -> Option<DaemonRecord> {
        self.state.daemons.iter().find(|d| d.name == name).cloned()
    }

    /// Every agent wrote its CNI config (it is ready then).
    fn wait_agents_ready(&self) -> Result<(), SandboxError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        for node in &self.state.nodes {
            let conf = self
                .layout
                .node(&node.name)
                .cni_conf_dir()
                .join(CNI_CONF_FILE);
            let agent = self.record(&format!("udn-node {}", node.name));
            while !conf.exists() {
                if let Some(record) = &agent {
                    self.check_alive(record, deadline)?;
                }
                for other in self.state.daemons.iter().filter(|d| d.ours) {
                    if let Liveness::Gone(reason) = other.liveness() {
                        return Err(SandboxError::NotReady {
                            component: other.name.clone(),
                            seconds: 0,
                            reason: format!(
                                "{reason}; its log ({}):\n{}",
                                other.log.display(),
                                other.log_tail(20)
                            ),
                        });
                    }
                }
                std::thread::park_timeout(Duration::from_millis(50));
            }
        }
        Ok(())
    }
}

/// How `status` and `logs` name a lab daemon.
fn daemon_name(kind: udn_ovn_lab::DaemonKind) -> &'static str {
    use udn_ovn_lab::DaemonKind;
    match kind {
        DaemonKind::NbDb => "ovn-nb-ovsdb",
        DaemonKind::SbDb => "ovn-sb-ovsdb",
        DaemonKind::Northd => "ovn-northd",
        DaemonKind::OvsDb => "ovs-ovsdb",
        DaemonKind::Vswitchd => "ovs-vswitchd",
        DaemonKind::Controller => "ovn-controller",
    }
}

/// Whether the Node's Ready condition is True.
fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The node's `ovn-k8s-cni-overlay` in its CNI bin dir: a wrapper that points the real
/// plugin at this node's agent. Every node of the sandbox shares this host's filesystem, so
/// the agents' sockets cannot all be upstream's fixed path.
fn write_cni_plugin(
    bin_dir: &std::path::Path,
    plugin: &std::path::Path,
    socket: &std::path::Path,
) -> Result<(), SandboxError> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = bin_dir.join("ovn-k8s-cni-overlay");
    let text = format!(
        "#!/bin/sh\n# udn sandbox: this node's agent listens at its own socket.\nUDN_CNI_SERVER_SOCKET='{}' exec '{}' \"$@\"\n",
        socket.display(),
        plugin.display()
    );
    std::fs::write(&path, text)
        .and_then(|()| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)))
        .map_err(|source| SandboxError::io("write", &path, source))
}
