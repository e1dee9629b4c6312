//! `cargo xtask bench cni`: CNI ADD latency on a lab node, with the whole stack as users
//! run it ([`udn_test_support::stack`] with the release binaries: `udn-kube-sim serve`,
//! `udn-cluster-manager`, `udn-controller` and `udn-node` on node1 of a one-node OVN lab).
//!
//! 1. 2N default-network pods are created on node1 and the bench waits until each has its
//!    `k8s.ovn.org/pod-networks` annotation, its `Port_Binding` is in SB and node1's
//!    ovn-controller has caught up (`ovn-nbctl --wait=hv sync`), so no ADD waits for the
//!    controller or northd. Each pod gets its netns beforehand.
//! 2. ADD, as kubelet's runtime calls it (the real `ovn-k8s-cni-overlay` executed with the
//!    runtime's environment and the node's CNI config on stdin), for N pods one at a time,
//!    then for the other N pods 8 at a time. Each ADD's time is the plugin process's, from
//!    exec to exit ([`CniRun::elapsed`](udn_test_support::stack::CniRun)).
//! 3. Per ADD, OVN's bind time: from the interface row's insert (the agent's port
//!    transaction) to ovn-controller's `ovn-installed` on it, both as the bench's own OVS
//!    monitor saw them ([`InterfaceClock`]), within the ADD's run. Ours is the rest.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, ensure};
use k8s_openapi::api::core::v1::Pod;
use udn_test_support::stack::{
    Binaries, CniPod, CniRun, Stack, StackConfig, create_namespace, create_pod,
};

use super::cni_clock::{InterfaceClock, PortTimes};
pub use super::cni_figures::*;
use super::controller_launch::source_state;
use super::cpu::CpuSnapshot;
use super::nb::load_average;
use super::process::release_binary;

/// The namespace of the bench's pods.
const NAMESPACE: &str = "cni-bench";
/// `VERSION` runs for the plugin's own exec cost.
const VERSION_RUNS: usize = 20;
/// The longest the bench waits for annotations, bindings and flags.
const DEADLINE: Duration = Duration::from_secs(180);

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Pods per mode.
    pub pods: usize,
    /// ADDs at once in the concurrent mode.
    pub concurrency: usize,
}

/// Prints a line of the bench's output.
#[allow(clippy::print_stdout)] // the benchmark's output is its figures
fn say(line: &str) {
    println!("{line}");
}

/// One pod of the bench, ready for its ADD.
#[derive(Debug, Clone)]
struct BenchPod {
    name: String,
    uid: String,
    /// `CNI_CONTAINERID`; its first 15 characters name the host veth.
    sandbox: String,
    netns: String,
}

impl BenchPod {
    fn host_veth(&self) -> String {
        self.sandbox.chars().take(15).collect()
    }
}

/// A sandbox ID like a runtime's (64 hex digits), unique in its first 15.
fn sandbox_id(mode: usize, index: usize) -> String {
    format!("{:03x}{index:012x}{}", 0xc00 + mode, "0".repeat(49))
}

/// One finished ADD.
#[derive(Debug)]
struct Run {
    index: usize,
    started: Instant,
    ended: Instant,
    cni: CniRun,
}

/// Creates the pods in the API and waits until they are annotated and bound in SB.
async fn create_pods(stack: &Stack, names: &[String]) -> anyhow::Result<Vec<String>> {
    let node = &stack.agents[0].name;
    create_namespace(&stack.client, NAMESPACE, false).await;
    let mut uids = Vec::new();
    for name in names {
        uids.push(create_pod(&stack.client, NAMESPACE, name, node).await);
    }
    let api: kube::Api<Pod> = kube::Api::namespaced(stack.client.clone(), NAMESPACE);
    let started = Instant::now();
    loop {
        let pods = api
            .list(&Default::default())
            .await
            .context("listing the pods")?;
        let annotated = pods
            .items
            .iter()
            .filter(|p| {
                p.metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key("k8s.ovn.org/pod-networks"))
            })
            .count();
        if annotated == names.len() {
            break;
        }
        ensure!(
            started.elapsed() < DEADLINE,
            "{annotated} of {} pods annotated after {DEADLINE:?}\n{}",
            names.len(),
            stack.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(uids)
}

/// Waits until SB has a `Port_Binding` of every pod and node1's ovn-controller caught up.
fn wait_bound(stack: &Stack, names: &[String]) -> anyhow::Result<()> {
    let node = stack.lab.node(&stack.agents[0].name)?;
    let started = Instant::now();
    loop {
        let ports = node.sbctl(&["--bare", "--columns=logical_port", "list", "Port_Binding"])?;
        let bound = ports
            .lines()
            .filter(|l| l.starts_with(&format!("{NAMESPACE}_")))
            .count();
        if bound == names.len() {
            break;
        }
        ensure!(
            started.elapsed() < DEADLINE,
            "{bound} of {} pod port bindings in SB after {DEADLINE:?}",
            names.len()
        );
        std::thread::park_timeout(Duration::from_millis(100));
    }
    node.wait_hv()?;
    Ok(())
}

/// `VERSION` runs of the plugin, which answers it by itself: its exec and exit, ms.
fn version_runs(stack: &Stack, pod: &BenchPod) -> anyhow::Result<Vec<f64>> {
    let node = stack.agents[0].name.as_str();
    let cni_pod = CniPod {
        namespace: NAMESPACE,
        name: &pod.name,
        uid: pod.uid.clone(),
        sandbox: &pod.sandbox,
        netns: pod.netns.clone(),
        ifname: "eth0",
        extra_env: Vec::new(),
    };
    let mut out = Vec::new();
    for _ in 0..VERSION_RUNS {
        let run = stack.cni(node, "VERSION", &cni_pod, None);
        ensure!(run.code == 0, "VERSION failed: {run:?}");
        out.push(run.elapsed.as_secs_f64() * 1000.0);
    }
    Ok(out)
}

/// One mode's ADDs and what the bench's clock saw of them.
#[derive(Debug)]
struct Outcome {
    mode: ModeRun,
    /// Per ADD, the bench's `ovn-installed` minus ovn-controller's stamp, ms.
    lags: Vec<f64>,
    /// ADDs whose insert arrived already installed.
    coalesced: usize,
}

/// Runs ADD for every pod of `pods`, `concurrency` at a time.
fn add_all(
    stack: &Stack,
    clock: &InterfaceClock,
    pods: &[BenchPod],
    concurrency: usize,
) -> anyhow::Result<Outcome> {
    let node = stack.agents[0].name.as_str();
    let next = AtomicUsize::new(0);
    let runs = Mutex::new(Vec::new());
    let cpu_before = CpuSnapshot::take();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..concurrency {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(pod) = pods.get(index) else { break };
                    let cni_pod = CniPod {
                        namespace: NAMESPACE,
                        name: &pod.name,
                        uid: pod.uid.clone(),
                        sandbox: &pod.sandbox,
                        netns: pod.netns.clone(),
                        ifname: "eth0",
                        extra_env: Vec::new(),
                    };
                    let cni = stack.cni(node, "ADD", &cni_pod, None);
                    // The process's window (the config file read before it is left out).
                    let ended = Instant::now();
                    let run = Run {
                        index,
                        started: ended - cni.elapsed,
                        ended,
                        cni,
                    };
                    runs.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(run);
                }
            });
        }
    });
    let wall_s = started.elapsed().as_secs_f64();
    let cpu = CpuSnapshot::take().since(&cpu_before);
    let runs = runs
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(failed) = runs.iter().find(|r| r.cni.code != 0) {
        return Err(anyhow!(
            "ADD of {} failed ({}): {} {}\n{}",
            pods[failed.index].name,
            failed.cni.code,
            failed.cni.stdout,
            failed.cni.stderr,
            stack.logs()
        ));
    }
    let names: Vec<String> = pods.iter().map(BenchPod::host_veth).collect();
    let seen = clock.wait_installed(&names, DEADLINE)?;
    let mut samples = Vec::new();
    let mut lags = Vec::new();
    let mut coalesced = 0;
    for run in &runs {
        let times = seen.get(&names[run.index]).copied().unwrap_or_default();
        samples.push(sample(run, &times));
        coalesced += usize::from(times.coalesced);
        lags.extend(clock.lag_ms(&times));
    }
    let mode = ModeRun {
        concurrency,
        samples,
        wall_s,
        cpu,
    };
    let (total, ours, bind) = (mode.total(), mode.ours(), mode.bind());
    say(&format!(
        "cni-bench {}: {} ADDs in {wall_s:.2} s; total p50 {:.1} p99 {:.1} ms, ours p50 {:.1} p99 {:.1} ms, OVN bind p50 {:.1} p99 {:.1} ms{}",
        mode.label(),
        mode.samples.len(),
        total.p50,
        total.p99,
        ours.p50,
        ours.p99,
        bind.p50,
        bind.p99,
        if coalesced > 0 {
            format!(" ({coalesced} inserts seen already installed: counted all ours)")
        } else {
            String::new()
        }
    ));
    Ok(Outcome {
        mode,
        lags,
        coalesced,
    })
}

/// One ADD's figures: OVN's bind time is the part of the insert-to-`ovn-installed` window
/// inside the plugin's run (a monitor's update may arrive after the plugin exited).
fn sample(run: &Run, times: &PortTimes) -> Sample {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let total_ms = ms(run.cni.elapsed);
    match (times.added, times.installed) {
        (Some(added), Some(installed)) if !times.coalesced => {
            let from = added.clamp(run.started, run.ended);
            let to = installed.clamp(from, run.ended);
            Sample {
                total_ms,
                to_port_ms: ms(from - run.started),
                bind_ms: ms(to - from),
            }
        }
        _ => Sample {
            total_ms,
            to_port_ms: total_ms,
            bind_ms: 0.0,
        },
    }
}

/// `ovn-controller --version`'s first line.
fn ovn_version() -> String {
    std::process::Command::new("ovn-controller")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "ovn-controller (version unknown)".to_owned())
}

/// The release binaries.
fn binaries(root: &Path) -> anyhow::Result<Binaries> {
    Ok(Binaries {
        sim: release_binary(root, "udn-kube-sim", "udn-kube-sim")?,
        cluster_manager: release_binary(root, "udn-cluster-manager", "udn-cluster-manager")?,
        controller: release_binary(root, "udn-controller", "udn-controller")?,
        agent: release_binary(root, "udn-node", "udn-node")?,
        cni: release_binary(root, "udn-cni", "ovn-k8s-cni-overlay")?,
    })
}

/// Runs the benchmark.
pub fn run(root: &Path, options: &Options) -> anyhow::Result<Figures> {
    ensure!(options.pods > 0, "--pods must be at least 1");
    let load_before = load_average();
    let source = source_state(root);
    let mut config = StackConfig::new(1, binaries(root)?);
    // The agent's debug lines would be part of what is measured; `UDN_BENCH_AGENT_LOG`
    // sets another filter to look into a run (e.g. `info,udn_node::cni=debug` logs each
    // interface's phases; keep the logs with `UDN_STACK_KEEP_LOGS=DIR`).
    config.log_filter = std::env::var("UDN_BENCH_AGENT_LOG").unwrap_or_else(|_| "info".to_owned());
    config.cni_request_timeout_s = 120;
    say(&format!(
        "cni-bench: {} pods sequential, {} pods {} at a time, on node1 (load average {load_before:.2})",
        options.pods, options.pods, options.concurrency
    ));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let started = Instant::now();
    let mut stack = runtime.block_on(Stack::start_with(config));
    let start_s = started.elapsed().as_secs_f64();
    let modes = [1, options.concurrency];
    let names: Vec<Vec<String>> = modes
        .iter()
        .map(|concurrency| {
            (0..options.pods)
                .map(|k| format!("c{concurrency}-{k:04}"))
                .collect()
        })
        .collect();
    let all: Vec<String> = names.concat();
    let created = Instant::now();
    let uids = runtime.block_on(create_pods(&stack, &all))?;
    wait_bound(&stack, &all)?;
    let annotate_s = created.elapsed().as_secs_f64();
    say(&format!(
        "cni-bench: stack ready in {start_s:.1} s; {} pods annotated and bound in {annotate_s:.1} s",
        all.len()
    ));
    let mut pods: Vec<Vec<BenchPod>> = Vec::new();
    let mut uids = uids.into_iter();
    for (mode, mode_names) in names.iter().enumerate() {
        let mut list = Vec::new();
        for (index, name) in mode_names.iter().enumerate() {
            list.push(BenchPod {
                name: name.clone(),
                uid: uids.next().context("a UID per pod")?,
                sandbox: sandbox_id(mode, index),
                netns: stack.pod_netns(name),
            });
        }
        pods.push(list);
    }
    let version_ms = version_runs(&stack, &pods[0][0])?;
    let node = stack.lab.node(&stack.agents[0].name)?;
    let clock = InterfaceClock::start(node.ovs_socket())?;
    let mut outcomes = Vec::new();
    for (concurrency, list) in modes.iter().zip(&pods) {
        outcomes.push(add_all(&stack, &clock, list, *concurrency)?);
        stack.assert_running();
    }
    drop(clock);
    drop(stack);
    drop(runtime);
    Ok(Figures {
        pods: options.pods,
        version_ms,
        lag_ms: outcomes.iter().flat_map(|o| o.lags.clone()).collect(),
        coalesced: outcomes.iter().map(|o| o.coalesced).sum(),
        modes: outcomes.into_iter().map(|o| o.mode).collect(),
        start_s,
        annotate_s,
        source,
        ovn: ovn_version(),
        load: (load_before, load_average()),
    })
}

/// Runs, prints and records in `docs/benchmarks.md` (section `cni-<N>`).
pub fn run_and_record(root: &Path, options: &Options) -> anyhow::Result<()> {
    let figures = run(root, options)?;
    super::record(
        root,
        &format!("cni-{}", options.pods),
        &format!(
            "CNI ADD latency on a lab node: {} pods sequential, {} pods {} at a time",
            options.pods, options.pods, options.concurrency
        ),
        &super::cni_report::body(&figures, &jiff::Zoned::now().date().to_string()),
    )?;
    say(&figures.line());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_ids_look_like_a_runtimes_and_name_distinct_veths() {
        let a = sandbox_id(0, 7);
        let b = sandbox_id(1, 7);
        assert_eq!(a.len(), 64);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        let veth = |sandbox: &str| sandbox.chars().take(15).collect::<String>();
        assert_ne!(veth(&a), veth(&b));
        assert_ne!(veth(&a), veth(&sandbox_id(0, 8)));
    }
}
