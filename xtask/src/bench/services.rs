//! `cargo xtask bench services --services S --endpoints E`: the NB controller's Services on
//! one primary UDN, as users run it (the release `udn-controller` binary against
//! `udn-kube-sim serve` and a real OVN zone, `udn_ovn_lab`'s node1).
//!
//! 1. The zone (one primary Layer3 network `tenant-1`, node1) converges with no Service.
//! 2. The clock starts; S Services (one TCP port) and for each the EndpointSlice the mirror
//!    controller writes for it (E ready endpoints, UDN addresses) are created. `lb_ready_s`
//!    = until the zone's Northbound holds every Service's load balancer with all E backends
//!    (seen by a client that monitors `Load_Balancer`).
//! 3. Updates, one at a time: one endpoint of one Service's slice replaced; from the replace
//!    call to the load balancer holding the new backend. `update_p99_ms` over the updates.
//!
//! The slices are written by the bench, not by the mirror controller (cluster-manager does
//! not run here): what is measured is udn-controller's part, Service and slice to NB.

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, PostParams};
use serde_json::json;
use udn_ovn_lab::{Lab, LabConfig};
use udn_ovsdb::protocol::{Atom, Value};

use super::controller_launch::{Launch, local_host};
use super::controller_objects::{self as objects, Shape, ZONE};
use super::controller_zone::ZoneView;
use super::process::{free_port, release_binary};
use super::sim_server::{SimServer, install_crds};

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Services on the network.
    pub services: usize,
    /// Ready endpoints per Service.
    pub endpoints: usize,
    /// Endpoint updates measured one after the other.
    pub updates: usize,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Figures {
    /// The options.
    pub options: Options,
    /// Creating the Services and slices (API calls), seconds.
    pub create_s: f64,
    /// Clock start to every load balancer complete in NB, seconds.
    pub lb_ready_s: f64,
    /// The last API call answered to every load balancer complete, seconds.
    pub after_create_s: f64,
    /// Baseline: the same load balancer rows written raw (one `transact`) into the same NB,
    /// from the call to the bench's monitor seeing all of them, seconds.
    pub raw_s: f64,
    /// Each update's latency, milliseconds, sorted.
    pub update_ms: Vec<f64>,
}

impl Figures {
    /// The last line the issue asks for.
    pub fn line(&self) -> String {
        format!(
            "services-bench services={} endpoints={} lb_ready_s={:.2} update_p99_ms={:.1}",
            self.options.services,
            self.options.endpoints,
            self.lb_ready_s,
            quantile(&self.update_ms, 0.99)
        )
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn say(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Endpoint `j` of Service `i`, an address nobody else has (`10.200.0.0/14`).
fn address(i: usize, j: usize, endpoints: usize) -> Ipv4Addr {
    let n = u32::try_from(i * endpoints + j).unwrap_or(u32::MAX);
    Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 200, 0, 0)).wrapping_add(n))
}

fn service(namespace: &str, i: usize) -> anyhow::Result<Service> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("svc-{i}"), "namespace": namespace},
        "spec": {"selector": {"app": format!("svc-{i}")},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    }))?)
}

fn mirror(
    namespace: &str,
    network: &str,
    i: usize,
    addresses: &[Ipv4Addr],
) -> anyhow::Result<EndpointSlice> {
    let endpoints: Vec<serde_json::Value> = addresses
        .iter()
        .map(|ip| json!({"addresses": [ip.to_string()], "conditions": {"ready": true, "serving": true, "terminating": false}}))
        .collect();
    Ok(serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("svc-{i}-mirror"), "namespace": namespace,
            "labels": {"endpointslice.kubernetes.io/managed-by": "endpointslice-mirror-controller.k8s.ovn.org",
                       "k8s.ovn.org/service-name": format!("svc-{i}")},
            "annotations": {"k8s.ovn.org/endpointslice-network": network,
                            "k8s.ovn.org/source-endpointslice": format!("svc-{i}-abcde")}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }))?)
}

/// Backends per load balancer name (of the first VIP) among the zone's Northbound rows.
fn backends(view: &ZoneView) -> Vec<(String, String)> {
    let replica = view.nb().replica();
    replica
        .rows("Load_Balancer")
        .filter_map(|(_, row)| {
            let Some(Value::Atom(Atom::String(name))) = row.get("name") else {
                return None;
            };
            let backends = match row.get("vips") {
                Some(Value::Map(pairs)) => pairs.first().and_then(|(_, v)| match v {
                    Atom::String(s) => Some(s.clone()),
                    _ => None,
                }),
                _ => None,
            }
            .unwrap_or_default();
            Some((name.clone(), backends))
        })
        .collect()
}

async fn wait_for(
    what: &str,
    deadline: Duration,
    mut check: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let end = Instant::now() + deadline;
    while !check() {
        anyhow::ensure!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

async fn measure(
    lab: &Lab,
    sim: &SimServer,
    controller_bin: &Path,
    dir: &Path,
    options: Options,
) -> anyhow::Result<Figures> {
    let cluster = objects::cluster_config()?;
    let client = sim.client().await?;
    install_crds(&client).await?;
    let shape = Shape::new(1, 1, 0)?;
    objects::create(&client, shape, &[local_host(lab)?], &cluster).await?;
    let namespace = objects::namespace_name(1);
    let network = objects::network_name(1);
    let node = lab.node(ZONE)?;
    let view = ZoneView::connect(node.nb_endpoint(), node.sb_endpoint()).await?;
    let launch = Launch {
        binary: controller_bin,
        kubeconfig: &sim.kubeconfig,
        nb: node.nb_remote(),
        sb: node.sb_remote(),
        log: dir.join(format!(
            "services-{}x{}.log",
            options.services, options.endpoints
        )),
    };
    let mut controller = launch.spawn(free_port()?)?;
    let scoped = udn_api::names::ovn_prefix(&network);
    let group = format!("{scoped}clusterLBGroup");
    wait_for(
        "the network's load balancer group",
        Duration::from_secs(120),
        || {
            view.nb()
                .replica()
                .rows("Load_Balancer_Group")
                .any(|(_, row)| row.get("name") == Some(&Value::Atom(Atom::String(group.clone()))))
        },
    )
    .await?;
    controller.ensure_running("udn-controller")?;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), &namespace);
    let e = options.endpoints;
    let started = Instant::now();
    futures::stream::iter(0..options.services)
        .map(|i| {
            let (services, slices, namespace, network) = (&services, &slices, &namespace, &network);
            async move {
                services
                    .create(&PostParams::default(), &service(namespace, i)?)
                    .await
                    .context("creating a Service")?;
                let addresses: Vec<Ipv4Addr> = (0..e).map(|j| address(i, j, e)).collect();
                slices
                    .create(
                        &PostParams::default(),
                        &mirror(namespace, network, i, &addresses)?,
                    )
                    .await
                    .context("creating a slice")?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    let create_s = started.elapsed().as_secs_f64();
    let prefix = format!("{scoped}Service_{namespace}/svc-");
    wait_for(
        "every load balancer complete",
        Duration::from_secs(600),
        || {
            backends(&view)
                .iter()
                .filter(|(name, b)| {
                    name.starts_with(&prefix) && !b.is_empty() && b.split(',').count() == e
                })
                .count()
                == options.services
        },
    )
    .await?;
    let lb_ready_s = started.elapsed().as_secs_f64();
    let after_create_s = lb_ready_s - create_s;
    say(&format!(
        "services-bench: {} Services + slices created in {create_s:.2} s; every load balancer complete after {lb_ready_s:.2} s",
        options.services
    ));
    controller.ensure_running("udn-controller")?;

    let mut update_ms = Vec::with_capacity(options.updates);
    for u in 0..options.updates {
        let i = (u * 7919) % options.services;
        let mut addresses: Vec<Ipv4Addr> = (0..e).map(|j| address(i, j, e)).collect();
        let fresh = address(options.services + u, 0, e.max(1));
        if let Some(last) = addresses.last_mut() {
            *last = fresh;
        }
        let name = format!("svc-{i}-mirror");
        let mut slice = slices.get(&name).await.context("reading a slice")?;
        slice.endpoints = mirror(&namespace, &network, i, &addresses)?.endpoints;
        let lb = format!("{prefix}{i}_TCP_cluster");
        let wanted = format!("{fresh}:8080");
        let t0 = Instant::now();
        slices
            .replace(&name, &PostParams::default(), &slice)
            .await
            .context("updating a slice")?;
        wait_for("the updated backend", Duration::from_secs(60), || {
            backends(&view)
                .iter()
                .any(|(n, b)| *n == lb && b.contains(&wanted))
        })
        .await?;
        update_ms.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    update_ms.sort_by(f64::total_cmp);
    controller.ensure_running("udn-controller")?;
    let raw_s = raw_baseline(&view, &prefix).await?;
    say(&format!(
        "services-bench: the same rows written raw in {raw_s:.3} s; the controller took {after_create_s:.3} s after the last API call"
    ));
    Ok(Figures {
        options,
        create_s,
        lb_ready_s,
        after_create_s,
        raw_s,
        update_ms,
    })
}

/// The controller's load balancer rows (name, protocol, vips, options, external_ids) copied
/// under new names and inserted in one transaction; seconds until the monitor has them all.
async fn raw_baseline(view: &ZoneView, prefix: &str) -> anyhow::Result<f64> {
    let rows: Vec<udn_ovsdb::protocol::Row> = view
        .nb()
        .replica()
        .rows("Load_Balancer")
        .filter_map(|(_, row)| match row.get("name") {
            Some(Value::Atom(Atom::String(name))) if name.starts_with(prefix) => {
                let mut copy = udn_ovsdb::protocol::Row::new();
                for column in ["protocol", "vips", "options", "external_ids"] {
                    if let Some(value) = row.get(column) {
                        copy.insert(column.to_owned(), value.clone());
                    }
                }
                copy.insert(
                    "name".to_owned(),
                    Value::Atom(Atom::String(format!("raw-{name}"))),
                );
                Some(copy)
            }
            _ => None,
        })
        .collect();
    let count = rows.len();
    let ops = rows
        .into_iter()
        .map(|row| udn_ovsdb::protocol::Operation::Insert {
            table: "Load_Balancer".to_owned(),
            row,
            uuid_name: None,
            uuid: None,
        })
        .collect();
    let t0 = Instant::now();
    view.nb()
        .transact(ops)
        .await
        .context("the raw baseline's transact")?;
    wait_for("the raw rows", Duration::from_secs(60), || {
        view.nb()
            .replica()
            .rows("Load_Balancer")
            .filter(|(_, row)| matches!(row.get("name"), Some(Value::Atom(Atom::String(n))) if n.starts_with("raw-")))
            .count()
            == count
    })
    .await?;
    Ok(t0.elapsed().as_secs_f64())
}

/// Runs the benchmark.
pub fn run(root: &Path, options: Options) -> anyhow::Result<Figures> {
    anyhow::ensure!(
        options.services >= 1 && options.endpoints >= 1,
        "--services and --endpoints must be at least 1"
    );
    let sim_bin = release_binary(root, "udn-kube-sim", "udn-kube-sim")?;
    let controller_bin = release_binary(root, "udn-controller", "udn-controller")?;
    let dir = std::env::temp_dir().join(format!("udn-services-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).context("creating the work directory")?;
    // The controller's log is kept (target/ is not tracked), for whoever reads the figures.
    let logs = root.join("target/bench-logs");
    std::fs::create_dir_all(&logs).context("creating target/bench-logs")?;
    let lab = Lab::start(LabConfig::with_nodes(1)).context("starting the OVN lab")?;
    let sim = SimServer::start(&sim_bin, &dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let figures = runtime.block_on(measure(&lab, &sim, &controller_bin, &logs, options));
    drop(sim);
    drop(lab);
    let _ = std::fs::remove_dir_all(&dir);
    figures
}

/// Runs, prints and records in `docs/benchmarks.md` (section `services-<S>x<E>`).
pub fn run_and_record(root: &Path, options: Options) -> anyhow::Result<()> {
    let figures = run(root, options)?;
    let body = format!(
        "`cargo xtask bench services --services {s} --endpoints {e}` ({date}, {cores} cores): the release \
         udn-controller against udn-kube-sim and a real OVN zone (node1 of the lab), one primary Layer3 UDN. \
         {s} Services (one TCP port) and their mirrored EndpointSlices ({e} ready endpoints each, written by \
         the bench as the mirror controller writes them) created 16 at a time in {create:.2} s; then {u} \
         endpoint changes, one at a time.\n\n\
         | | figure |\n|---|---|\n\
         | Services + slices to every load balancer complete in NB (s) | {ready:.2} |\n\
         | of which after the last API call answered (s) | {after:.3} |\n\
         | baseline: the same load balancer rows written raw, one `transact`, to seen (s) | {raw:.3} |\n\
         | endpoint change to the load balancer updated, p50 / p99 / max (ms) | {p50:.1} / {p99:.1} / {max:.1} |\n\n\
         The controller's share against the raw baseline: {ratio:.1}x (its pass also reads the caches, \
         renders and plans the network, and waits for the debounce). Targets: lb_ready_s <= 5 at S=1000, \
         E=10; update_p99_ms <= 200.\n\n```\n{line}\n```\n",
        ratio = figures.after_create_s / figures.raw_s,
        s = options.services,
        e = options.endpoints,
        u = options.updates,
        date = jiff::Zoned::now().date(),
        cores = std::thread::available_parallelism().map_or(0, usize::from),
        create = figures.create_s,
        ready = figures.lb_ready_s,
        after = figures.after_create_s,
        raw = figures.raw_s,
        p50 = quantile(&figures.update_ms, 0.5),
        p99 = quantile(&figures.update_ms, 0.99),
        max = figures.update_ms.last().copied().unwrap_or(f64::NAN),
        line = figures.line(),
    );
    super::record(
        root,
        &format!("services-{}x{}", options.services, options.endpoints),
        &format!(
            "Services on a UDN: {} Services x {} endpoints to OVN load balancers",
            options.services, options.endpoints
        ),
        &body,
    )?;
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout(), "{}", figures.line());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_unique_per_service_and_endpoint() {
        assert_eq!(address(0, 0, 10), Ipv4Addr::new(10, 200, 0, 0));
        assert_eq!(address(1, 2, 10), Ipv4Addr::new(10, 200, 0, 12));
        assert_eq!(address(30, 0, 10), Ipv4Addr::new(10, 200, 1, 44));
        assert_eq!(quantile(&[1.0, 2.0, 3.0], 0.99), 3.0);
    }
}
