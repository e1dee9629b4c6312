//! `cargo xtask bench cluster-manager`: the cluster-manager as users run it (release
//! binary, its own process) against `udn-kube-sim serve`: N UDNs in N namespaces and M
//! nodes are created, and the time until every NAD (with its network ID) and every node's
//! host-subnet annotation is in place is measured, with the manager's reconciles/s (from
//! its /metrics) and peak RSS (from /proc).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;
use udn_api::crd::UserDefinedNetwork;
use udn_api::nad::NetworkAttachmentDefinition;

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

/// Kills the child when dropped, so a failed run leaves nothing behind.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn release_binary(root: &Path, package: &str, binary: &str) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            package,
            "--bin",
            binary,
        ])
        .current_dir(root)
        .status()
        .with_context(|| format!("building {binary}"))?;
    anyhow::ensure!(status.success(), "building {binary} failed");
    Ok(root.join("target/release").join(binary))
}

fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

fn peak_rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Sum of `udn_cluster_manager_reconciles_total` over all labels, from the metrics text.
fn reconciles_total(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("udn_cluster_manager_reconciles_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn scrape(port: u16) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .context("connecting to the manager's admin server")?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .context("requesting /metrics")?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .context("reading /metrics")?;
    Ok(response)
}

async fn client_for(kubeconfig: &Path) -> anyhow::Result<Client> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).context("reading the sim's kubeconfig")?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .context("loading the sim's kubeconfig")?;
    Client::try_from(config).context("building a client")
}

/// Run the benchmark.
pub fn run(root: &Path, udns: usize, nodes: usize) -> anyhow::Result<Figures> {
    let sim_bin = release_binary(root, "udn-kube-sim", "udn-kube-sim")?;
    let cm_bin = release_binary(root, "udn-cluster-manager", "udn-cluster-manager")?;
    let dir = std::env::temp_dir().join(format!("udn-cm-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).context("creating the work directory")?;
    let kubeconfig = dir.join("kubeconfig");
    let mut sim = Command::new(&sim_bin)
        .args(["serve", "--listen", "127.0.0.1:0", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting udn-kube-sim")?;
    let stdout = sim.stdout.take().context("sim stdout")?;
    let _sim = Guard(sim);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .context("reading the sim's address")?;
    anyhow::ensure!(
        line.starts_with("listening on "),
        "unexpected sim output: {line}"
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(async {
        let client = client_for(&kubeconfig).await?;
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
        let _manager = Guard(manager);
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

async fn install_crds(client: &Client) -> anyhow::Result<()> {
    let api: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    for crd in udn_api::crd::manifests() {
        api.create(&PostParams::default(), &crd)
            .await
            .context("creating a CRD")?;
    }
    Ok(())
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
