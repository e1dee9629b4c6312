//! Restart safety of the zone controller: a random workload of network, node and pod
//! creates and deletes (as users and cluster-manager make them) against real Northbound and
//! Southbound ovsdb-servers, with the controller crashed at random points (the task aborted:
//! transactions and pod patches in flight are cut) and started again from nothing (new
//! engines, allocators restored from the annotations), and the Northbound server killed with
//! SIGKILL and restarted once. At the end the zone converges with no row twice and nothing of
//! deleted objects left, no pod ever got a second address or shares one, every live object
//! has its rows, and a fresh controller's first pass writes nothing.
//!
//! `PROPTEST_CASES` sets the number of cases (default [`DEFAULT_CASES`], sized for CI).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "restart_safety/checks.rs"]
mod checks;
mod support;
#[path = "restart_safety/workload.rs"]
mod workload;

use std::time::{Duration, Instant};

use proptest::prelude::*;
use support::{RunningZone, lean_zone_config, start_zone};
use udn_ovsdb::testing::OvsdbServer;
use udn_test_support::TestCluster;

use checks::{Records, Tables, check_annotations, check_nb, check_sb};
use workload::{LOCAL, NAMESPACES, NETWORKS, NODES, PODS, World};

/// Cases per run unless `PROPTEST_CASES` says otherwise.
const DEFAULT_CASES: u32 = 32;
const WAIT: Duration = Duration::from_secs(30);

#[derive(Clone, Debug)]
enum Op {
    AddNetwork(usize),
    DeleteNetwork(usize),
    AddNode(usize),
    DeleteNode(usize),
    /// Namespace slot, pod slot, node slot, secondary networks requested (bit per slot).
    AddPod(usize, usize, usize, u8),
    DeletePod(usize, usize),
    /// Let the controller work for this many milliseconds.
    Pause(u64),
    /// Crash the controller after this many milliseconds; it starts again after this many
    /// further operations.
    Crash {
        after_ms: u64,
        down_for: usize,
    },
    /// SIGKILL the Northbound server and start it again (the first one in a case only).
    RestartNb,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..NETWORKS.len()).prop_map(Op::AddNetwork),
        1 => (0..NETWORKS.len()).prop_map(Op::DeleteNetwork),
        2 => (0..NODES.len()).prop_map(Op::AddNode),
        1 => (0..NODES.len()).prop_map(Op::DeleteNode),
        // Mostly on the local node.
        5 => (0..NAMESPACES.len(), 0..PODS, prop_oneof![3 => Just(0usize), 1 => 1..NODES.len()], 0u8..16)
            .prop_map(|(ns, pod, node, mask)| Op::AddPod(ns, pod, node, mask)),
        2 => (0..NAMESPACES.len(), 0..PODS).prop_map(|(ns, pod)| Op::DeletePod(ns, pod)),
        2 => (0u64..150).prop_map(Op::Pause),
        3 => (0u64..80, 0usize..4).prop_map(|(after_ms, down_for)| Op::Crash { after_ms, down_for }),
        1 => Just(Op::RestartNb),
    ]
}

/// The zone's databases and the controller.
struct Zone {
    nb: OvsdbServer,
    sb: OvsdbServer,
    running: Option<RunningZone>,
}

impl Zone {
    async fn start(&mut self, cluster: &TestCluster) {
        if self.running.is_none() {
            self.running = Some(
                start_zone(
                    cluster,
                    // What udn-controller runs with: the default lean settings.
                    lean_zone_config(LOCAL),
                    self.nb.endpoint(),
                    self.sb.endpoint(),
                )
                .await,
            );
        }
    }
}

async fn apply(world: &mut World, op: &Op) {
    match *op {
        Op::AddNetwork(slot) => world.add_network(slot).await,
        Op::DeleteNetwork(slot) => world.delete_network(slot).await,
        Op::AddNode(slot) => world.add_node(slot).await,
        Op::DeleteNode(slot) => world.delete_node(slot).await,
        Op::AddPod(ns, pod, node, mask) => world.add_pod(ns, pod, node, mask).await,
        Op::DeletePod(ns, pod) => world.delete_pod(ns, pod).await,
        Op::Pause(_) | Op::Crash { .. } | Op::RestartNb => {}
    }
}

/// SIGKILLs the server and starts it again. The harness sees the old daemon gone when its
/// pidfile lock goes, which can be a moment before the database's lock goes (the kernel
/// closes an exiting process's files one by one): a start refused for the lock is retried.
async fn restart_server(server: &mut OvsdbServer) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match server.restart() {
            Ok(()) => return,
            Err(error) if Instant::now() < deadline && error.to_string().contains("lock") => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => panic!("ovsdb-server restart: {error}"),
        }
    }
}

/// Polls `check` until it passes or the deadline (the last pass may still be landing).
async fn eventually<F, Fut>(mut check: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let result = check().await;
        if result.is_ok() || Instant::now() > deadline {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One case's cluster, databases, controller and what was seen of pod addresses.
struct Case {
    cluster: TestCluster,
    world: World,
    zone: Zone,
    records: Records,
}

impl Case {
    async fn start() -> Self {
        let cluster = TestCluster::new();
        let world = World::new(cluster.client()).await;
        let mut zone = Zone {
            nb: OvsdbServer::start_nb().unwrap(),
            sb: OvsdbServer::start_sb().unwrap(),
            running: None,
        };
        zone.start(&cluster).await;
        Self {
            cluster,
            world,
            zone,
            records: Records::default(),
        }
    }

    /// The workload, with the addresses checked after every step.
    async fn run(&mut self, ops: &[Op]) -> Result<(), String> {
        let mut nb_restarted = false;
        let mut down_for: Option<usize> = None;
        for op in ops {
            match *op {
                Op::Pause(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                Op::Crash {
                    after_ms,
                    down_for: ops,
                } => {
                    tokio::time::sleep(Duration::from_millis(after_ms)).await;
                    if let Some(running) = self.zone.running.take() {
                        running.abort();
                        down_for = Some(ops);
                    }
                }
                Op::RestartNb if !nb_restarted => {
                    nb_restarted = true;
                    restart_server(&mut self.zone.nb).await;
                }
                _ => apply(&mut self.world, op).await,
            }
            self.records.observe(&self.cluster.sim)?;
            down_for = match down_for {
                Some(0) => {
                    self.zone.start(&self.cluster).await;
                    None
                }
                Some(n) => Some(n - 1),
                None => None,
            };
        }
        Ok(())
    }

    /// The controller converges to exactly what the world needs.
    async fn converges(&mut self) -> Result<(), String> {
        self.zone.start(&self.cluster).await;
        self.zone.running.as_mut().unwrap().converged(WAIT).await;
        self.records.observe(&self.cluster.sim)?;
        let (nb, sb) = (self.zone.nb.endpoint(), self.zone.sb.endpoint());
        let (world, sim) = (&self.world, &self.cluster.sim);
        eventually(|| async {
            check_annotations(world, sim)?;
            check_nb(world, &Tables::read(nb.clone(), true).await, sim)?;
            check_sb(world, &Tables::read(sb.clone(), false).await)
        })
        .await
    }

    /// A fresh controller finds everything as it would write it.
    async fn fresh_start_writes_nothing(&mut self) -> Result<(), String> {
        self.zone.running.take().unwrap().stop().await;
        self.zone.start(&self.cluster).await;
        let first = self.zone.running.as_mut().unwrap().first_pass(WAIT).await;
        let work = (
            first.nb_ops,
            first.sb_ops,
            first.pods_annotated,
            first.failures,
        );
        if work != (0, 0, 0, 0) {
            return Err(format!(
                "a fresh controller's first pass did work: {first:?}"
            ));
        }
        self.records.observe(&self.cluster.sim)?;
        self.zone.running.take().unwrap().stop().await;
        Ok(())
    }
}

async fn run_case(ops: &[Op]) -> Result<(), String> {
    let mut case = Case::start().await;
    case.run(ops).await?;
    case.converges().await?;
    case.fresh_start_writes_nothing().await
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// Runs a case on its own runtime; a panic (a wait that timed out) is a failure too, and
/// every failure is printed at once (shrinking takes a while).
fn block_on(ops: &[Op]) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(run_case(ops))
    }))
    .unwrap_or_else(|panic| {
        let text = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        Err(format!("panicked: {text}"))
    });
    if let Err(error) = &result {
        eprintln!("restart_safety case failed: {error}\nops: {ops:?}");
    }
    result
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // A case takes seconds: shrink a little, not for ever.
        max_shrink_iters: 64,
        max_shrink_time: 180_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn crashes_at_random_points_leave_one_copy_of_everything_and_no_pod_readdressed(
        ops in prop::collection::vec(op(), 6..28)
    ) {
        let result = block_on(&ops);
        prop_assert!(result.is_ok(), "{}\nops: {ops:?}", result.unwrap_err());
    }
}

/// The case that found teardowns never retried: a network deleted while the Northbound
/// server restarts (its teardown's outcome unknown).
#[test]
fn a_network_deleted_across_a_northbound_restart_is_torn_down() {
    let crash = |after_ms, down_for| Op::Crash { after_ms, down_for };
    let ops = vec![
        crash(76, 1),
        Op::AddPod(2, 0, 2, 11),
        crash(0, 1),
        Op::Pause(18),
        Op::AddNetwork(2),
        Op::AddNetwork(1),
        Op::Pause(19),
        Op::RestartNb,
        Op::DeleteNetwork(1),
        Op::Pause(120),
        Op::AddPod(1, 0, 0, 3),
        Op::AddNetwork(2),
        Op::DeleteNetwork(2),
        Op::AddNode(0),
    ];
    block_on(&ops).unwrap();
}

/// The case that found failed sweeps not retried: the local node deleted while the fresh
/// controller's first pass (a sweep) is cut by a Northbound restart.
#[test]
fn a_node_deleted_across_a_crash_and_a_northbound_restart_is_removed() {
    let ops = vec![
        Op::Crash {
            after_ms: 23,
            down_for: 0,
        },
        Op::DeleteNode(0),
        Op::RestartNb,
    ];
    block_on(&ops).unwrap();
}

/// A fixed workload touching every kind of change, with crashes in between.
#[test]
fn a_fixed_workload_with_crashes_converges() {
    let crash = |after_ms, down_for| Op::Crash { after_ms, down_for };
    let ops = vec![
        Op::AddNode(1),
        Op::AddNetwork(0),
        Op::AddNetwork(1),
        Op::AddNetwork(2),
        Op::AddNetwork(3),
        Op::AddPod(0, 0, 0, 0b1100),
        Op::AddPod(1, 0, 0, 0b0100),
        Op::AddPod(2, 0, 0, 0b1000),
        Op::AddPod(2, 1, 1, 0),
        crash(5, 1),
        Op::AddPod(1, 1, 0, 0),
        Op::Pause(50),
        Op::RestartNb,
        Op::AddNode(2),
        crash(30, 0),
        Op::DeleteNetwork(2),
        Op::DeletePod(2, 0),
        Op::AddPod(2, 2, 0, 0b1000),
        crash(0, 2),
        Op::DeleteNode(1),
        Op::AddNetwork(2),
        Op::AddPod(0, 1, 0, 0b0100),
    ];
    block_on(&ops).unwrap();
}
