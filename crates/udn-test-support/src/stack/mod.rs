//! The whole stack as users run it: a real OVN lab (`udn-ovn-lab`, a zone per node),
//! `udn-kube-sim serve`, `udn-cluster-manager`, and per node `udn-controller` and `udn-node`
//! (inside the node's network namespace, reaching the API server through a [`Forwarder`]),
//! all their own processes; pods are network namespaces wired by executing the real
//! `ovn-k8s-cni-overlay` as kubelet does ([`Stack::cni`]).
//!
//! The binaries are the caller's: tests pass their profile's builds
//! ([`Binaries::workspace`]), benchmarks their release builds. Everything started is
//! stopped, and every netns made is deleted, when the [`Stack`] is dropped.

mod api;
mod cni;
mod launch;
mod process;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use udn_ovn_lab::{Lab, LabConfig};

pub use api::{client_for, create_namespace, create_pod};
pub use cni::{CNI_CONF_FILE, CniPod, CniRun, in_netns, run_cni};
pub use launch::CLUSTER_FLAGS;
pub use process::Process;
pub use udn_sandbox::forward::Forwarder;

use crate::workspace_binary;

/// How long anything started by the stack may take to converge.
pub const WAIT: Duration = Duration::from_secs(90);

/// The programs the stack runs.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// `udn-kube-sim`.
    pub sim: PathBuf,
    /// `udn-cluster-manager`.
    pub cluster_manager: PathBuf,
    /// `udn-controller`.
    pub controller: PathBuf,
    /// `udn-node`.
    pub agent: PathBuf,
    /// `ovn-k8s-cni-overlay`.
    pub cni: PathBuf,
}

impl Binaries {
    /// The other packages' binaries built with the running test's profile
    /// ([`workspace_binary`]), and `agent` (a test of `udn-node` has its own:
    /// `env!("CARGO_BIN_EXE_udn-node")`).
    pub fn workspace(agent: PathBuf) -> Self {
        Self {
            sim: workspace_binary("udn-kube-sim", "udn-kube-sim"),
            cluster_manager: workspace_binary("udn-cluster-manager", "udn-cluster-manager"),
            controller: workspace_binary("udn-controller", "udn-controller"),
            agent,
            cni: workspace_binary("udn-cni", "ovn-k8s-cni-overlay"),
        }
    }
}

/// What to start.
#[derive(Debug, Clone)]
pub struct StackConfig {
    /// Lab nodes (`node1`, `node2`, ...), each its own zone.
    pub nodes: usize,
    /// The programs.
    pub binaries: Binaries,
    /// The agents' `--log-filter`.
    pub log_filter: String,
    /// The agents' `--cni-request-timeout`, seconds.
    pub cni_request_timeout_s: u64,
}

impl StackConfig {
    /// `nodes` nodes with debug logs from udn's crates and a CNI request timeout of 20 s
    /// (short enough for a test of a pod that never gets its annotation).
    pub fn new(nodes: usize, binaries: Binaries) -> Self {
        Self {
            nodes,
            binaries,
            log_filter: "udn=debug,info".to_owned(),
            cni_request_timeout_s: 20,
        }
    }
}

/// One node's agent.
#[derive(Debug)]
pub struct NodeAgent {
    /// The node.
    pub name: String,
    /// Its CNI server socket.
    pub socket: PathBuf,
    /// Where it writes its CNI config.
    pub conf_dir: PathBuf,
    /// Its kubeconfig (the API server through the forwarder).
    pub kubeconfig: PathBuf,
    /// The process.
    pub process: Process,
    _forwarder: Forwarder,
}

/// The running stack.
pub struct Stack {
    /// The OVN lab.
    pub lab: Lab,
    /// Logs, sockets, kubeconfigs and CNI configs.
    pub dir: tempfile::TempDir,
    /// The API server's kubeconfig (for the caller's namespace).
    pub kubeconfig: PathBuf,
    /// A client of the API server.
    pub client: kube::Client,
    /// One agent per node, in the lab's order.
    pub agents: Vec<NodeAgent>,
    /// One controller per node (zone), in the lab's order.
    pub controllers: Vec<Process>,
    /// The cluster manager.
    pub cluster_manager: Process,
    /// The API server.
    pub sim: Process,
    /// The CNI plugin.
    pub cni: PathBuf,
    /// Pod netns made with [`Stack::pod_netns`].
    pub netns: Vec<String>,
    /// What was started.
    pub config: StackConfig,
}

impl std::fmt::Debug for Stack {
    // `kube::Client` has no `Debug`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("lab", &self.lab.prefix())
            .field("dir", &self.dir.path())
            .field("agents", &self.agents)
            .field("netns", &self.netns)
            .finish_non_exhaustive()
    }
}

/// When set, the directory the stack copies its components' logs into when it stops
/// (the stack's own directory is temporary): for looking at a failed test or a bench run.
pub const KEEP_LOGS_ENV: &str = "UDN_STACK_KEEP_LOGS";

impl Drop for Stack {
    fn drop(&mut self) {
        if let Some(target) = std::env::var_os(KEEP_LOGS_ENV) {
            copy_logs(self.dir.path(), std::path::Path::new(&target));
        }
        for name in &self.netns {
            let _ = Command::new("ip").args(["netns", "delete", name]).status();
        }
    }
}

/// Copies every `*.log` of `from` into `to` (best effort: this runs while stopping).
fn copy_logs(from: &std::path::Path, to: &std::path::Path) {
    let _ = std::fs::create_dir_all(to);
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "log") {
            let _ = std::fs::copy(&path, to.join(entry.file_name()));
        }
    }
    eprintln!("stack: logs copied to {}", to.display());
}

impl Stack {
    /// Starts everything and waits until every node's CNI config file is written (the
    /// agent is ready then).
    pub async fn start_with(config: StackConfig) -> Self {
        let lab = Lab::start(LabConfig::with_nodes(config.nodes)).expect("starting the OVN lab");
        let dir = tempfile::tempdir().expect("a directory for the stack");
        let kubeconfig = dir.path().join("kubeconfig");
        let (sim, address) = api::start_sim(&config.binaries.sim, &kubeconfig, dir.path());
        let client = client_for(&kubeconfig).await;
        api::install_crds(&client).await;
        for node in lab.nodes() {
            api::create_node(&client, node.name(), &node.node_ip().to_string()).await;
        }
        let cluster_manager = Process::spawn(
            "udn-cluster-manager",
            launch::cluster_manager(&config, &kubeconfig),
            dir.path().join("cluster-manager.log"),
        );
        let mut controllers = Vec::new();
        let mut agents = Vec::new();
        for node in lab.nodes() {
            controllers.push(Process::spawn(
                &format!("udn-controller {}", node.name()),
                launch::controller(&config, node, &kubeconfig),
                dir.path().join(format!("controller-{}.log", node.name())),
            ));
            let forwarder = Forwarder::start(
                node.netns(),
                std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                address,
            )
            .expect("the forwarder into the node's netns");
            let node_kubeconfig = dir.path().join(format!("kubeconfig-{}", node.name()));
            api::write_kubeconfig(
                &node_kubeconfig,
                &format!("http://127.0.0.1:{}", forwarder.port()),
            );
            let socket = dir
                .path()
                .join(format!("cni-{}", node.name()))
                .join("cni.sock");
            let conf_dir = dir.path().join(format!("net.d-{}", node.name()));
            let paths = launch::AgentPaths {
                kubeconfig: &node_kubeconfig,
                socket: &socket,
                conf_dir: &conf_dir,
            };
            let process = Process::spawn(
                &format!("udn-node {}", node.name()),
                launch::agent(&config, node, paths),
                dir.path().join(format!("node-{}.log", node.name())),
            );
            agents.push(NodeAgent {
                name: node.name().to_owned(),
                process,
                socket,
                conf_dir,
                kubeconfig: node_kubeconfig,
                _forwarder: forwarder,
            });
        }
        let mut stack = Self {
            lab,
            dir,
            kubeconfig,
            client,
            agents,
            controllers,
            cluster_manager,
            sim,
            cni: config.binaries.cni.clone(),
            netns: Vec::new(),
            config,
        };
        stack.wait_ready();
        stack
    }

    /// Waits until every agent wrote its CNI config file.
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + WAIT;
        for index in 0..self.agents.len() {
            while !self.agents[index].conf_dir.join(CNI_CONF_FILE).exists() {
                self.assert_running();
                assert!(
                    Instant::now() < deadline,
                    "{} not ready after {WAIT:?}:\n{}",
                    self.agents[index].name,
                    self.agents[index].process.log_text()
                );
                std::thread::park_timeout(Duration::from_millis(50));
            }
        }
    }

    /// Polls `check` (every 100 ms, up to [`WAIT`]) until it gives `Ok`; panics with `what`,
    /// the last `Err` (what `check` saw) and the components' logs when time runs out, and
    /// as soon as a component has exited. `check` looks at the stack (the lab's nodes, the
    /// client) and returns a future owning what it needs.
    pub async fn eventually<T, F, Fut>(&mut self, what: &str, mut check: F) -> T
    where
        F: FnMut(&Self) -> Fut,
        Fut: std::future::Future<Output = Result<T, String>>,
    {
        let deadline = Instant::now() + WAIT;
        loop {
            let seen = match check(self).await {
                Ok(found) => return found,
                Err(seen) => seen,
            };
            self.assert_running();
            assert!(
                Instant::now() < deadline,
                "{what}: not so after {WAIT:?}; last seen: {seen}\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Panics with the log of the first component that has exited.
    pub fn assert_running(&mut self) {
        self.sim.assert_running();
        self.cluster_manager.assert_running();
        for c in &mut self.controllers {
            c.assert_running();
        }
        for a in &mut self.agents {
            a.process.assert_running();
        }
    }

    /// Kills `node`'s agent and starts it again with the same flags; returns once the new
    /// process says it is ready (the CNI config file exists from before).
    pub fn restart_agent(&mut self, node: &str) {
        let index = self.agent_index(node);
        self.agents[index].process.kill();
        let lab_node = self
            .lab
            .node(node)
            .unwrap_or_else(|e| panic!("lab node {node}: {e}"));
        let agent = &self.agents[index];
        let paths = launch::AgentPaths {
            kubeconfig: &agent.kubeconfig,
            socket: &agent.socket,
            conf_dir: &agent.conf_dir,
        };
        let command = launch::agent(&self.config, lab_node, paths);
        let log = self.dir.path().join(format!("node-{node}-restarted.log"));
        self.agents[index].process = Process::spawn(&format!("udn-node {node}"), command, log);
        let deadline = Instant::now() + WAIT;
        while !self.agents[index]
            .process
            .log_text()
            .contains("node agent ready")
        {
            self.agents[index].process.assert_running();
            assert!(Instant::now() < deadline, "{node}'s agent not ready again");
            std::thread::park_timeout(Duration::from_millis(50));
        }
    }

    fn agent_index(&self, node: &str) -> usize {
        self.agents
            .iter()
            .position(|a| a.name == node)
            .unwrap_or_else(|| panic!("no agent on {node}"))
    }

    /// `node`'s agent.
    pub fn agent(&self, node: &str) -> &NodeAgent {
        &self.agents[self.agent_index(node)]
    }

    /// The last 40 lines of every component's log, for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for p in std::iter::once(&self.cluster_manager)
            .chain(&self.controllers)
            .chain(self.agents.iter().map(|a| &a.process))
        {
            let text = p.log_text();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            out.push_str(&format!("--- {} ---\n", p.name));
            for line in tail.into_iter().rev() {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}
