//! `cargo xtask bench cluster-manager`: the cluster-manager as users run it (release
//! binary, its own process) against `udn-kube-sim serve`: N UDNs in N namespaces and M
//! nodes are created, and the time until every NAD (with its network ID) and every node's
//! host-subnet annotation is in place is measured, with the manager's reconciles/s (from
//! its /metrics) and peak RSS (from /proc).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use udn_api::crd::UserDefinedNetwork;
use udn_api::nad::NetworkAttachmentDefinition;

use super::process::{ChildGuard, free_port, metric, peak_rss_mb, release_binary, scrape};
use super::sim_server::{SimServer, install_crds};

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
}

impl Figures {
    /// The summary line (its last line of output).
    pub fn line(&self) -> String {
        format!(
            "cm-bench udns={} nodes={} converge_s={:.2} reconciles_per_s={:.0} rss_mb={:.1}",
            self.udns, self.nodes, self.converge_s, self.reconciles_per_s, self.rss_mb
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
        let start = Instant::now();
        create_objects(&client, udns, nodes).await?;
        if std::env::var_os("UDN_BENCH_PROGRESS").is_some() {
            eprintln!("created in {:.2}s", start.elapsed().as_secs_f64());
        }
        wait_converged(&client, udns, nodes, start).await?;
        let converge_s = start.elapsed().as_secs_f64();
        let reconciles = reconciles_total(&scrape(admin_port).await?);
        Ok(Figures {
            udns,
            nodes,
            converge_s,
            reconciles_per_s: reconciles / converge_s,
            rss_mb: peak_rss_mb(pid).unwrap_or(0.0),
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

async fn converged(client: &Client, udns: usize, nodes: usize) -> anyhow::Result<bool> {
    let nads: Api<NetworkAttachmentDefinition> = Api::all(client.clone());
    let with_ids = nads
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|nad| {
            nad.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(udn_api::names::ANNOTATION_NETWORK_ID))
        })
        .count();
    if std::env::var_os("UDN_BENCH_PROGRESS").is_some() {
        eprintln!(
            "nads listed: {with_ids} at {:?}",
            std::time::SystemTime::now()
        );
    }
    if with_ids < udns {
        return Ok(false);
    }
    let node_api: Api<Node> = Api::all(client.clone());
    let node_list = node_api.list(&ListParams::default()).await?;
    let complete = node_list
        .items
        .iter()
        .filter(|node| {
            node.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(udn_api::names::ANNOTATION_NODE_SUBNETS))
                .and_then(|v| udn_api::annotations::parse_node_subnets(v).ok())
                .is_some_and(|subnets| subnets.len() >= udns)
        })
        .count();
    if std::env::var_os("UDN_BENCH_PROGRESS").is_some() {
        eprintln!(
            "progress: nads_with_ids={with_ids} complete_nodes={complete} at {:?}",
            std::time::SystemTime::now()
        );
    }
    Ok(complete == nodes)
}

async fn wait_converged(
    client: &Client,
    udns: usize,
    nodes: usize,
    start: Instant,
) -> anyhow::Result<()> {
    let deadline = Duration::from_secs(300);
    while start.elapsed() < deadline {
        if converged(client, udns, nodes).await? {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("not converged after {} s", deadline.as_secs())
}

/// Run, print and record in `docs/benchmarks.md`.
pub fn run_and_record(root: &Path, udns: usize, nodes: usize) -> anyhow::Result<()> {
    let figures = run(root, udns, nodes)?;
    let body = format!(
        "`cargo xtask bench cluster-manager --udns {udns} --nodes {nodes}`, measured {date}: the \
         release `udn-cluster-manager` binary in its own process against `udn-kube-sim serve` \
         (HTTP on loopback). {udns} namespaces with one Primary Layer3 UDN each \
         (`10.132.0.0/16`, host subnet /24) and {nodes} nodes are created after the manager \
         starts; converged = every NAD carries its network ID and every node's \
         `k8s.ovn.org/node-subnets` has all {udns} networks. Targets: converge_s <= 10, \
         rss_mb <= 150.\n\n\
         | UDNs | nodes | converge s | reconciles/s | manager peak RSS MiB |\n\
         |---|---|---|---|---|\n\
         | {udns} | {nodes} | {:.2} | {:.0} | {:.1} |\n\n`{}`\n",
        figures.converge_s,
        figures.reconciles_per_s,
        figures.rss_mb,
        figures.line(),
        date = jiff::Zoned::now().date(),
    );
    super::record(
        root,
        "cluster-manager",
        "cluster-manager convergence",
        &body,
    )?;
    #[allow(clippy::print_stdout)] // the benchmark's output is its figures
    {
        println!("{}", figures.line());
    }
    Ok(())
}
