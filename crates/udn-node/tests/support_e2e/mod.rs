//! The whole stack as users run it, for the CNI end-to-end tests: a real OVN lab (a zone
//! per node), `udn-kube-sim serve`, `udn-cluster-manager`, and per node `udn-controller`
//! and `udn-node` (inside the node's network namespace), all their own processes; pods are
//! network namespaces wired by executing the real `ovn-k8s-cni-overlay` as kubelet does.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

pub mod forward;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use udn_ovn_lab::{Lab, LabConfig};
use udn_test_support::workspace_binary;

pub use forward::Forwarder;

/// How long anything in these tests may take to converge.
pub const WAIT: Duration = Duration::from_secs(90);

/// The cluster flags every component gets.
pub const CLUSTER_FLAGS: [&str; 6] = [
    "--cluster-subnets",
    "10.244.0.0/16/24",
    "--k8s-service-cidrs",
    "10.96.0.0/16",
    "--gateway-mode",
    "shared",
];

/// A child process killed (and reaped) on drop; its stderr goes to a log file.
#[derive(Debug)]
pub struct Process {
    pub name: String,
    pub log: PathBuf,
    child: Child,
}

impl Process {
    pub fn spawn(name: &str, mut command: Command, log: PathBuf) -> Self {
        let file = std::fs::File::create(&log).unwrap();
        let child = command
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        Self {
            name: name.to_owned(),
            log,
            child,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Panics with its log when it has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "{} exited ({status}):\n{}",
                self.name,
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops it (SIGKILL) and waits.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One node's agent.
#[derive(Debug)]
pub struct NodeAgent {
    pub name: String,
    pub socket: PathBuf,
    pub conf_dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub process: Process,
    _forwarder: Forwarder,
}

/// The running stack.
pub struct Stack {
    pub lab: Lab,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub client: kube::Client,
    pub agents: Vec<NodeAgent>,
    pub controllers: Vec<Process>,
    pub cluster_manager: Process,
    pub sim: Process,
    pub cni: PathBuf,
    pub netns: Vec<String>,
}

impl Drop for Stack {
    fn drop(&mut self) {
        for name in &self.netns {
            let _ = Command::new("ip").args(["netns", "delete", name]).status();
        }
    }
}

/// The node's agent command line (run inside the node's netns with `nsenter`).
fn agent_command(
    binary: &Path,
    node: &udn_ovn_lab::Node,
    kubeconfig: &Path,
    socket: &Path,
    conf_dir: &Path,
    cgroup: Option<&str>,
) -> Command {
    let mut command = Command::new("nsenter");
    // ovs-ofctl and ovs-appctl find the node's bridges through its OVS run dir.
    command.env("OVS_RUNDIR", node.ovs_rundir());
    command
        .arg(format!("--net=/run/netns/{}", node.netns()))
        .arg("--")
        .arg(binary)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--node-name", node.name()])
        .args(["--enable-multi-network", "--enable-network-segmentation"])
        .args(CLUSTER_FLAGS)
        .arg("--ovs-address")
        .arg(node.ovs_remote())
        .arg("--sb-address")
        .arg(node.sb_remote())
        .args(["--ovs-datapath-type", "netdev"])
        .arg("--cni-server-socket")
        .arg(socket)
        .arg("--cni-conf-dir")
        .arg(conf_dir)
        .args(["--admin-bind-address", "127.0.0.1:0"])
        // Short enough for the test of a pod that never gets its annotation.
        .args(["--cni-request-timeout", "20"])
        .args(["--leader-elect=false", "--log-filter", "udn=debug,info"]);
    if let Some(path) = cgroup {
        command.args(["--kubelet-cgroup-path", path]);
    }
    command
}

impl Stack {
    /// Starts everything for a lab of `nodes` nodes and waits until every node's CNI
    /// config file is written (the agent is ready then).
    pub async fn start(nodes: usize) -> Self {
        let sim_bin = workspace_binary("udn-kube-sim", "udn-kube-sim");
        let cm_bin = workspace_binary("udn-cluster-manager", "udn-cluster-manager");
        let controller_bin = workspace_binary("udn-controller", "udn-controller");
        let cni = workspace_binary("udn-cni", "ovn-k8s-cni-overlay");
        let agent_bin = PathBuf::from(env!("CARGO_BIN_EXE_udn-node"));
        let lab = Lab::start(LabConfig::with_nodes(nodes)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let (sim, address) = start_sim(&sim_bin, &kubeconfig, dir.path());
        let client = client_for(&kubeconfig).await;
        install_crds(&client).await;
        for node in lab.nodes() {
            create_node(&client, node.name(), &node.node_ip().to_string()).await;
        }
        let mut cm = Command::new(&cm_bin);
        cm.arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--enable-multi-network", "--enable-network-segmentation"])
            .args(CLUSTER_FLAGS)
            .args([
                "--admin-bind-address",
                "127.0.0.1:0",
                "--leader-elect=false",
            ]);
        let cluster_manager = Process::spawn(
            "udn-cluster-manager",
            cm,
            dir.path().join("cluster-manager.log"),
        );
        let mut controllers = Vec::new();
        let mut agents = Vec::new();
        for node in lab.nodes() {
            let mut controller = Command::new(&controller_bin);
            controller
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .arg("--nb-address")
                .arg(node.nb_remote())
                .arg("--sb-address")
                .arg(node.sb_remote())
                .args(["--zone", node.name()])
                .args(["--enable-multi-network", "--enable-network-segmentation"])
                .args(CLUSTER_FLAGS)
                .args([
                    "--admin-bind-address",
                    "127.0.0.1:0",
                    "--leader-elect=false",
                ]);
            controllers.push(Process::spawn(
                &format!("udn-controller {}", node.name()),
                controller,
                dir.path().join(format!("controller-{}.log", node.name())),
            ));
            let forwarder = Forwarder::start(node.netns(), address);
            let node_kubeconfig = dir.path().join(format!("kubeconfig-{}", node.name()));
            write_kubeconfig(
                &node_kubeconfig,
                &format!("http://127.0.0.1:{}", forwarder.port()),
            );
            let socket = dir
                .path()
                .join(format!("cni-{}", node.name()))
                .join("cni.sock");
            let conf_dir = dir.path().join(format!("net.d-{}", node.name()));
            let command =
                agent_command(&agent_bin, node, &node_kubeconfig, &socket, &conf_dir, None);
            agents.push(NodeAgent {
                name: node.name().to_owned(),
                process: Process::spawn(
                    &format!("udn-node {}", node.name()),
                    command,
                    dir.path().join(format!("node-{}.log", node.name())),
                ),
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
            cni,
            netns: Vec::new(),
        };
        stack.wait_ready();
        stack
    }

    /// Waits until every agent wrote its CNI config file.
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + WAIT;
        for index in 0..self.agents.len() {
            loop {
                let conf = self.agents[index].conf_dir.join("10-ovn-kubernetes.conf");
                if conf.exists() {
                    break;
                }
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
        let index = self.agents.iter().position(|a| a.name == node).unwrap();
        self.agents[index].process.kill();
        let lab_node = self.lab.node(node).unwrap();
        let agent = &self.agents[index];
        let command = agent_command(
            std::path::Path::new(env!("CARGO_BIN_EXE_udn-node")),
            lab_node,
            &agent.kubeconfig,
            &agent.socket,
            &agent.conf_dir,
            None,
        );
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

    pub fn agent(&self, node: &str) -> &NodeAgent {
        self.agents.iter().find(|a| a.name == node).unwrap()
    }

    /// Every log, for failure messages.
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

    /// A fresh pod netns (deleted with the stack).
    pub fn pod_netns(&mut self, name: &str) -> String {
        let netns = format!("{}-e2e-{name}", self.lab.prefix());
        let status = Command::new("ip")
            .args(["netns", "add", &netns])
            .status()
            .unwrap();
        assert!(status.success(), "ip netns add {netns}");
        self.netns.push(netns.clone());
        netns
    }

    /// Executes the CNI plugin as kubelet does for `pod` on `node`.
    pub fn cni(&self, node: &str, command: &str, pod: &CniPod<'_>, stdin: Option<&str>) -> CniRun {
        let agent = self.agent(node);
        let conf = match stdin {
            Some(text) => text.to_owned(),
            None => std::fs::read_to_string(agent.conf_dir.join("10-ovn-kubernetes.conf")).unwrap(),
        };
        let mut env: BTreeMap<String, String> = BTreeMap::from([
            ("CNI_COMMAND".into(), command.into()),
            ("CNI_CONTAINERID".into(), pod.sandbox.into()),
            ("CNI_NETNS".into(), format!("/run/netns/{}", pod.netns)),
            ("CNI_IFNAME".into(), pod.ifname.into()),
            ("CNI_PATH".into(), "/opt/cni/bin".into()),
            (
                "CNI_ARGS".into(),
                format!(
                    "IgnoreUnknown=1;K8S_POD_NAMESPACE={};K8S_POD_NAME={};K8S_POD_INFRA_CONTAINER_ID={};K8S_POD_UID={}",
                    pod.namespace, pod.name, pod.sandbox, pod.uid
                ),
            ),
            ("PATH".into(), "/usr/sbin:/usr/bin:/sbin:/bin".into()),
            (
                "UDN_CNI_SERVER_SOCKET".into(),
                agent.socket.display().to_string(),
            ),
        ]);
        for (key, value) in &pod.extra_env {
            match value {
                Some(value) => env.insert((*key).to_owned(), (*value).to_owned()),
                None => env.remove(*key),
            };
        }
        run_cni(&self.cni, &env, &conf)
    }
}

/// What the CNI plugin is called for.
#[derive(Debug, Clone)]
pub struct CniPod<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: String,
    pub sandbox: &'a str,
    pub netns: String,
    pub ifname: &'a str,
    /// Variables to set (`Some`) or remove (`None`).
    pub extra_env: Vec<(&'a str, Option<&'a str>)>,
}

/// One execution of the plugin.
#[derive(Debug)]
pub struct CniRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl CniRun {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is no JSON ({e}): {:?} / {}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Runs the plugin binary with exactly `env` and `stdin`.
pub fn run_cni(binary: &Path, env: &BTreeMap<String, String>, stdin: &str) -> CniRun {
    let mut child = Command::new(binary)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Commands that do not read stdin (VERSION) may exit before it is written.
    if let Err(error) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
    }
    let out = child.wait_with_output().unwrap();
    CniRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn start_sim(binary: &Path, kubeconfig: &Path, dir: &Path) -> (Process, SocketAddr) {
    let mut child = Command::new(binary)
        .args(["serve", "--listen", "127.0.0.1:0", "--kubeconfig"])
        .arg(kubeconfig)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("sim.log")).unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let address = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected sim output {line:?}"))
        .trim_start_matches("http://")
        .parse()
        .unwrap_or_else(|e| panic!("sim address {line:?}: {e}"));
    (
        Process {
            name: "udn-kube-sim".into(),
            log: dir.join("sim.log"),
            child,
        },
        address,
    )
}

fn write_kubeconfig(path: &Path, server: &str) {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {server}\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sim\ncurrent-context: sim\nusers:\n- name: sim\n  user: {{}}\n"
    );
    std::fs::write(path, text).unwrap();
}

pub async fn client_for(kubeconfig: &Path) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

async fn install_crds(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in udn_api::crd::manifests() {
        api.create(&PostParams::default(), &crd).await.unwrap();
    }
}

async fn create_node(client: &kube::Client, name: &str, ip: &str) {
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"addresses": [{"type": "InternalIP", "address": ip}]},
    }))
    .unwrap();
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node)
        .await
        .unwrap();
}

pub async fn create_namespace(client: &kube::Client, name: &str, primary: bool) {
    let ns: Namespace = serde_json::from_value(udn_test_support::namespace(name, primary)).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// Creates a pod on `node`; returns its UID.
pub async fn create_pod(client: &kube::Client, namespace: &str, name: &str, node: &str) -> String {
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap();
    let pod = Api::<Pod>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
    pod.metadata.uid.unwrap()
}

/// Runs `argv` inside netns `netns`.
pub fn in_netns(netns: &str, argv: &[&str]) -> std::process::Output {
    Command::new("nsenter")
        .arg(format!("--net=/run/netns/{netns}"))
        .arg("--")
        .args(argv)
        .output()
        .unwrap()
}
