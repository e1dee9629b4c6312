//! The simulated kubelet: what kubelet does toward the API server, CNI plugins and the
//! node's processes, for one node of the sandbox.
//!
//! - Registers its Node (Ready, addresses, capacity) and keeps it Ready.
//! - Binds unscheduled Pods to a Ready Node their `nodeSelector` matches ([`schedule`]:
//!   the same choice on every kubelet), or reports them Unschedulable.
//! - For every Pod bound to the node: a sandbox (a network namespace), the cluster default
//!   network through the CNI config in the conf dir and the networks of
//!   `k8s.v1.cni.cncf.io/networks` as Multus delegates them ([`cni`]), then
//!   `k8s.v1.cni.cncf.io/network-status`; each container in the netns and a cgroup of its own
//!   ([`container`]); readiness and liveness probes from the kubelet's own cgroup
//!   ([`probe`]); the Pod's status.
//! - When a Pod goes (or is being deleted), its containers are stopped (SIGTERM, SIGKILL
//!   after the grace period), CNI DEL runs, the netns and cgroups go, and a terminating Pod
//!   is deleted for good (`gracePeriodSeconds: 0`, uid precondition).
//! - What it set up is recorded under its state dir, so a restarted kubelet adopts its pods
//!   and cleans up those deleted meanwhile.

pub mod cni;
pub mod container;
mod pod;
pub mod probe;
mod register;
mod schedule;
mod worker;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::FutureExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::{reflector, watcher};
use serde::{Deserialize, Serialize};

use self::pod::PodRecord;
use self::worker::Worker;

/// What one simulated kubelet runs with (written as JSON by `udnctl sandbox up`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfig {
    /// The Node's name.
    pub node_name: String,
    /// The node's InternalIP addresses.
    pub node_ips: Vec<IpAddr>,
    /// The API server.
    pub kubeconfig: PathBuf,
    /// Where CNI configs are read from (as kubelet's `--cni-conf-dir`).
    pub cni_conf_dir: PathBuf,
    /// Where CNI plugins are executed from (as kubelet's `--cni-bin-dir`).
    pub cni_bin_dir: PathBuf,
    /// Pods' state (sandboxes, container logs).
    pub state_dir: PathBuf,
    /// A cgroup v2 directory: the kubelet moves itself into
    /// `<cgroup_root>/kubelet.slice/kubelet.service`, pods go under `<cgroup_root>/kubepods.slice`.
    pub cgroup_root: PathBuf,
    /// Prefix of the pods' network namespace names.
    pub netns_prefix: String,
    /// The command that runs a built-in image: `<image_command...> <image> <args...>`.
    pub image_command: Vec<String>,
}

/// Why the kubelet (or one pod's step) failed.
#[derive(Debug, thiserror::Error)]
pub enum KubeletError {
    /// The API server refused or failed a request.
    #[error("{what}: {source}")]
    Api {
        /// The request.
        what: String,
        /// The answer.
        source: kube::Error,
    },
    /// A CNI step failed.
    #[error("CNI: {0}")]
    Cni(String),
    /// A container could not be run.
    #[error("container: {0}")]
    Container(String),
    /// The node's host side (cgroups, netns, files).
    #[error("{0}")]
    Host(String),
}

/// How often pods are looked at (and probes are due at the earliest).
const TICK: Duration = Duration::from_millis(250);

/// How long a stopping kubelet waits for its pod workers to finish the step they are in
/// (a set-up half done would leave a sandbox without a record).
const STOP_WAIT: Duration = Duration::from_secs(10);

/// Runs the kubelet until SIGTERM or SIGINT. Pods keep running when it stops, as they do
/// when kubelet stops.
pub async fn run(config: KubeletConfig) -> Result<(), KubeletError> {
    join_own_cgroup(&config.cgroup_root)?;
    let client = crate::client::client(&config.kubeconfig)
        .await
        .map_err(|e| KubeletError::Host(e.to_string()))?;
    register::register(&client, &config).await?;
    // Pods set up before a restart: adopted by their pod's worker, or torn down once the
    // first listing shows their pod gone.
    let mut adopted: BTreeMap<String, PodRecord> = pod::load_records(&config.state_dir);
    tracing::info!(node = %config.node_name, adopted = adopted.len(), "kubelet running");
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| KubeletError::Host(format!("SIGTERM handler: {e}")))?;
    // The node's pods from a watch (`fieldSelector=spec.nodeName=<node>`, as kubelet's pod
    // source), not a list per tick: 200 pods listed four times a second cost the API server
    // and this process more than everything else they do.
    let selector = format!("spec.nodeName={}", config.node_name);
    let (store, changed) = watch_pods(&client, &selector);
    let mut heartbeat = tokio::time::Instant::now();
    let (stop, stopping) = tokio::sync::watch::channel(false);
    // By `namespace/name`: a new pod of the same name waits for the old one's tear-down.
    let mut workers: BTreeMap<String, Worker> = BTreeMap::new();
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            () = changed.notified() => {}
            () = tokio::time::sleep(TICK) => {}
        }
        schedule::schedule(&client, &config).await;
        // Until the watch has listed once, "not in the store" would mean nothing.
        if store.wait_until_ready().now_or_never().is_none() {
            continue;
        }
        let current: BTreeMap<String, Pod> = store
            .state()
            .iter()
            .map(|p| (pod::key(p), Pod::clone(p)))
            .collect();
        workers.retain(|_, worker| !worker.finished());
        for (key, worker) in &workers {
            let same = current
                .get(key)
                .filter(|p| p.metadata.uid.as_deref() == Some(worker.uid.as_str()));
            worker.update(same.cloned());
        }
        for (key, record) in std::mem::take(&mut adopted) {
            let pod = current
                .get(&key)
                .filter(|p| p.metadata.uid.as_deref() == Some(record.uid.as_str()))
                .cloned();
            let uid = record.uid.clone();
            let worker = Worker::start(&client, &config, uid, pod, Some(record), stopping.clone());
            workers.insert(key, worker);
        }
        for (key, p) in &current {
            if workers.contains_key(key) {
                continue;
            }
            let uid = p.metadata.uid.clone().unwrap_or_default();
            let worker = Worker::start(
                &client,
                &config,
                uid,
                Some(p.clone()),
                None,
                stopping.clone(),
            );
            workers.insert(key.clone(), worker);
        }
        if heartbeat.elapsed() > Duration::from_secs(10) {
            heartbeat = tokio::time::Instant::now();
            register::renew_lease(&client, &config).await;
        }
    }
    tracing::info!(node = %config.node_name, "kubelet stopping; pods keep running");
    stop.send_replace(true);
    let joined = futures::future::join_all(workers.into_values().map(Worker::join));
    if tokio::time::timeout(STOP_WAIT, joined).await.is_err() {
        tracing::warn!("pod workers did not finish in time");
    }
    Ok(())
}

/// A reflector over the pods `selector` picks; `changed` is notified at every event.
fn watch_pods(
    client: &kube::Client,
    selector: &str,
) -> (reflector::Store<Pod>, std::sync::Arc<tokio::sync::Notify>) {
    let api: Api<Pod> = Api::all(client.clone());
    let (store, writer) = reflector::store();
    let changed = std::sync::Arc::new(tokio::sync::Notify::new());
    let notify = std::sync::Arc::clone(&changed);
    let config = watcher::Config::default().fields(selector);
    tokio::spawn(udn_runtime::watch::reflect_with(
        "the node's pods",
        api,
        config,
        writer,
        move |_| {
            notify.notify_one();
            true
        },
    ));
    (store, changed)
}

/// Moves this process into `<cgroup_root>/kubelet.slice/kubelet.service` before any socket
/// is opened: the node agent's host isolation lets that cgroup's sockets (the probes) in.
fn join_own_cgroup(root: &Path) -> Result<(), KubeletError> {
    let dir = crate::cgroup::kubelet_cgroup(root);
    std::fs::create_dir_all(&dir)
        .map_err(|e| KubeletError::Host(format!("creating {}: {e}", dir.display())))?;
    let procs = dir.join("cgroup.procs");
    std::fs::write(&procs, std::process::id().to_string())
        .map_err(|e| KubeletError::Host(format!("joining {}: {e}", procs.display())))
}

/// The network namespace name of the sandbox the kubelet with `state_dir` made for pod
/// `namespace/name` (uid `uid`), if it has one.
pub fn sandbox_netns(state_dir: &Path, namespace: &str, name: &str, uid: &str) -> Option<String> {
    pod::load_records(state_dir)
        .into_values()
        .find(|r| r.namespace == namespace && r.name == name && r.uid == uid)
        .map(|r| r.netns)
}
