//! `cargo xtask bench cluster-manager`: the cluster-manager as users run it (release
//! binary, its own process) against `udn-kube-sim serve`: N UDNs in N namespaces and M
//! nodes are created, and the time until every NAD (with its network ID) and every node's
//! host-subnet annotation is in place is measured, with the manager's reconciles/s (from
//! its /metrics), peak RSS (from /proc) and the node-subnets writes (from a node watch).
//! Several sizes in one run (`--udns 1000,2000,5000`) show how time and memory grow.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::json;
use udn_api::crd::UserDefinedNetwork;

use super::cluster_manager_watch::Convergence;
use super::process::{ChildGuard, free_port, metric, peak_rss_mb, release_binary, scrape};
use super::sim_server::{SimServer, install_crds};

/// How long a run may take to converge.
const DEADLINE: Duration = Duration::from_secs(300);

/// Figures of one run.
#[derive(Debug)]
pub struct Figures {
    /// UDNs (one per namespace).
    pub udns: usize,
    /// Nodes.
    pub nodes: usize,
    /// Seconds from the first create until everything converged.
    pub converge_s: f64,
    /// Reconciles per second over the run (all controllers).
    pub reconciles_per_s: f64,
    /// Peak RSS of the cluster-manager process, MiB.
    pub rss_mb: f64,
    /// `node-subnets` annotation writes per node (changes seen by a node watch).
    pub writes_per_node: f64,
    /// Bytes of `node-subnets` values written over all nodes, MiB.
    pub written_mb: f64,
}

impl Figures {
    /// The summary line (its last line of output).
    pub fn line(&self) -> String {
        format!(
            "cm-bench udns={} nodes={} converge_s={:.2} reconciles_per_s={:.0} rss_mb={:.1} \
             writes_per_node={:.1} written_mb={:.1}",
            self.udns,
            self.nodes,
            self.converge_s,
            self.reconciles_per_s,
            self.rss_mb,
            self.writes_per_node,
            self.written_mb
        )
    }
}

/// Sum of `udn_cluster_manager_reconciles_total` over all labels, from the metrics text.
fn reconciles_total(metrics: &str) -> f64 {
    metric(metrics, "udn_cluster_manager_reconciles_total", &[]).unwrap_or(0.0)
}

/// Run the benchmark.
pub fn run(root: &Path, udns: usize, nodes: usize) -> anyhow::Result<Figures> {
    let sim_bin = release_binary(root, "udn-kube-sim", "udn-kube-sim")?;
    let cm_bin = release_binary(root, "udn-cluster-manager", "udn-cluster-manager")?;
    let dir = std::env::temp_dir().join(format!("udn-cm-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).context("creating the work directory")?;
    let sim = SimServer::start(&sim_bin, &dir)?;
    let kubeconfig = sim.kubeconfig.clone();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(async {
        let client = sim.client().await?;
        install_crds(&client).await?;
        let admin_port = free_port()?;
        let manager = Command::new(&cm_bin)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args([
                "--enable-multi-network",
                "--enable-network-segmentation",
                "--leader-elect=false",
                "--admin-bind-address",
                &format!("127.0.0.1:{admin_port}"),
                "--log-filter",
                "error",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting udn-cluster-manager")?;
        let pid = manager.id();
        let _manager = ChildGuard(manager);
        let mut convergence = Convergence::start(&client);
        let start = Instant::now();
        create_objects(&client, udns, nodes).await?;
        if std::env::var_os("UDN_BENCH_PROGRESS").is_some() {
            eprintln!("created in {:.2}s", start.elapsed().as_secs_f64());
        }
        let writes = convergence.wait(udns, nodes, start, DEADLINE).await?;
        let converge_s = start.elapsed().as_secs_f64();
        let reconciles = reconciles_total(&scrape(admin_port).await?);
        Ok(Figures {
            udns,
            nodes,
            converge_s,
            reconciles_per_s: reconciles / converge_s,
            rss_mb: peak_rss_mb(pid).unwrap_or(0.0),
            writes_per_node: writes.patches as f64 / nodes.max(1) as f64,
            written_mb: writes.bytes as f64 / 1_048_576.0,
        })
    })
}

async fn create_objects(client: &Client, udns: usize, nodes: usize) -> anyhow::Result<()> {
    let pp = PostParams::default();
    let node_api: Api<Node> = Api::all(client.clone());
    for i in 1..=nodes {
        let node: Node =
            serde_json::from_value(json!({"metadata": {"name": format!("node-{i}")}}))?;
        node_api
            .create(&pp, &node)
            .await
            .context("creating a node")?;
    }
    let ns_api: Api<Namespace> = Api::all(client.clone());
    for i in 0..udns {
        let name = format!("tenant-{i}");
        let ns: Namespace = serde_json::from_value(json!({"metadata": {
            "name": name, "labels": {udn_api::names::LABEL_PRIMARY_UDN_NAMESPACE: ""}}}))?;
        ns_api
            .create(&pp, &ns)
            .await
            .context("creating a namespace")?;
        let udn: UserDefinedNetwork = serde_json::from_value(json!({
            "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
            "metadata": {"name": "net", "namespace": name},
            "spec": {"topology": "Layer3", "layer3": {"role": "Primary",
                "subnets": [{"cidr": "10.132.0.0/16", "hostSubnet": 24}]}},
        }))?;
        Api::<UserDefinedNetwork>::namespaced(client.clone(), &name)
            .create(&pp, &udn)
            .await
            .context("creating a UDN")?;
    }
    Ok(())
}

/// Run each size in turn, print each run's line and record them in `docs/benchmarks.md`.
pub fn run_and_record(root: &Path, sizes: &[usize], nodes: usize) -> anyhow::Result<()> {
    let mut runs = Vec::new();
    for &udns in sizes {
        let figures = run(root, udns, nodes)?;
        #[allow(clippy::print_stdout)] // the benchmark's output is its figures
        {
            println!("{}", figures.line());
        }
        runs.push(figures);
    }
    let list = sizes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let rows: String = runs
        .iter()
        .map(|f| {
            format!(
                "| {} | {} | {:.2} | {:.2} | {:.0} | {:.1} | {:.1} | {:.1} |\n",
                f.udns,
                f.nodes,
                f.converge_s,
                f.converge_s * 1000.0 / f.udns.max(1) as f64,
                f.reconciles_per_s,
                f.writes_per_node,
                f.written_mb,
                f.rss_mb,
            )
        })
        .collect();
    let lines: String = runs.iter().map(|f| format!("{}\n", f.line())).collect();
    let body = format!(
        "`cargo xtask bench cluster-manager --udns {list} --nodes {nodes}`, measured {date} \
         (2 cores, shared): the release `udn-cluster-manager` binary in its own process \
         against `udn-kube-sim serve` (HTTP on loopback), Dynamic UDN off (every network on \
         every node), a fresh manager and server per size. N namespaces with one Primary \
         Layer3 UDN each (`10.132.0.0/16`, host subnet /24) and {nodes} nodes are created after \
         the manager starts; converged = every NAD carries its network ID and every node's \
         `k8s.ovn.org/node-subnets` has all N networks and the default one, as watches of NADs \
         and nodes see them. Writes = changes of a node's `node-subnets` seen by the node \
         watch; MiB = the bytes of those values, all nodes. Targets: converge_s <= 10 at \
         1000 UDNs; at 5000 UDNs converge_s <= 60, rss_mb <= 600; time growing linearly.\n\n\
         | UDNs | nodes | converge s | s per 1000 UDNs | reconciles/s | node-subnets writes per node | MiB written | manager peak RSS MiB |\n\
         |---|---|---|---|---|---|---|---|\n\
         {rows}\n```\n{lines}```\n",
        date = jiff::Zoned::now().date(),
    );
    super::record(
        root,
        "cluster-manager",
        "cluster-manager convergence",
        &body,
    )
}
