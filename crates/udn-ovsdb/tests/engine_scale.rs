//! Scale check of the engine against a real ovsdb-server (ignored by default: run with
//! `cargo test --release -p udn-ovsdb --test engine_scale -- --ignored --nocapture`).
//! `UDN_ENGINE_SCALE=<networks>x<nodes>` picks the size (default 200x55, ~45,000 rows);
//! `UDN_ENGINE_MAX_OPS` and `UDN_ENGINE_IN_FLIGHT` the apply policy;
//! `UDN_ENGINE_REPLAN_ROUNDS=<n>` times n more unchanged replans; `UDN_ENGINE_NO_MONITOR=1`
//! applies through a client that monitors nothing (no update notifications).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use udn_ovsdb::client::{Client, ClientConfig};
use udn_ovsdb::engine::{
    ApplyPolicy, DesiredRow, DesiredUnit, Engine, INDEXED_KEYS, RowRef, Scope, UnitKey,
};
use udn_ovsdb::nb;
use udn_ovsdb::schema::{DbSchema, Requirements};
use udn_ovsdb::testing::OvsdbServer;

fn network(name: &str, nodes: usize) -> DesiredUnit {
    let ids = [
        ("k8s.ovn.org/network", name),
        ("k8s.ovn.org/topology", "layer3"),
    ];
    let router = format!("{name}_ovn_cluster_router");
    let mut unit = DesiredUnit::new(UnitKey::new("Network", name));
    let mut router_ports = Vec::new();
    for node in 0..nodes {
        let switch = format!("{name}_node{node}");
        let (rtos, stor, mgmt) = (
            format!("rtos-{switch}"),
            format!("stor-{switch}"),
            format!("k8s-{switch}"),
        );
        unit = unit
            .row(
                DesiredRow::new("Logical_Router_Port", &rtos)
                    .string("name", &rtos)
                    .string("mac", "0a:58:0a:80:00:01")
                    .strings("networks", [format!("10.128.{node}.1/24").as_str()])
                    .map("external_ids", ids),
            )
            .row(
                DesiredRow::new("Logical_Switch_Port", &stor)
                    .string("name", &stor)
                    .string("type", "router")
                    .strings("addresses", ["router"])
                    .map("options", [("router-port", rtos.as_str())])
                    .map("external_ids", ids),
            )
            .row(
                DesiredRow::new("Logical_Switch_Port", &mgmt)
                    .string("name", &mgmt)
                    .strings("addresses", ["0a:58:0a:80:00:02 10.128.0.2"])
                    .map("external_ids", ids),
            )
            .row(
                DesiredRow::new("Logical_Switch", &switch)
                    .string("name", &switch)
                    .map(
                        "other_config",
                        [("subnet", format!("10.128.{node}.0/24").as_str())],
                    )
                    .map("external_ids", ids)
                    .refs(
                        "ports",
                        [
                            RowRef::desired("Logical_Switch_Port", &stor),
                            RowRef::desired("Logical_Switch_Port", &mgmt),
                        ],
                    ),
            );
        router_ports.push(RowRef::desired("Logical_Router_Port", &rtos));
    }
    unit.row(
        DesiredRow::new("Logical_Router", &router)
            .string("name", &router)
            .map("external_ids", ids)
            .refs("ports", router_ports),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "scale measurement; run explicitly"]
async fn engine_scale() {
    let size = std::env::var("UDN_ENGINE_SCALE").unwrap_or_else(|_| "200x55".into());
    let (networks, nodes) = size.split_once('x').unwrap();
    let (networks, nodes): (usize, usize) = (networks.parse().unwrap(), nodes.parse().unwrap());
    let server = OvsdbServer::start_nb().unwrap();
    let schema = DbSchema::from_text(nb::SCHEMA_JSON).unwrap();
    let mut config = ClientConfig::new(server.endpoint(), nb::DATABASE);
    if std::env::var("UDN_ENGINE_NO_MONITOR").is_err() {
        config.monitor = Requirements::everything_in(&schema);
    }
    config.indexed_keys = INDEXED_KEYS.iter().map(|k| (*k).to_owned()).collect();
    config.request_timeout = Duration::from_secs(600);
    let client = Client::connect(config).await.unwrap();
    let engine = Engine::new("scale");
    let units = || -> Vec<DesiredUnit> {
        (0..networks)
            .map(|i| network(&format!("net{i}"), nodes))
            .collect()
    };
    let rows: usize = units().iter().map(|u| u.rows.len()).sum();
    let scope = Scope::OwnerType("Network".into());
    let mut policy = ApplyPolicy::default();
    if let Ok(max_ops) = std::env::var("UDN_ENGINE_MAX_OPS") {
        policy.max_ops = max_ops.parse().unwrap();
    }
    if let Ok(in_flight) = std::env::var("UDN_ENGINE_IN_FLIGHT") {
        policy.in_flight = in_flight.parse().unwrap();
    }
    let desired = units();
    let server_cpu_before = process_cpu_s(server.pid());
    let own_cpu_before = process_cpu_s(std::process::id());
    let started = Instant::now();
    let (plan_s, report) = if std::env::var("UDN_ENGINE_NO_MONITOR").is_ok() {
        let empty =
            udn_ovsdb::replica::Replica::new(std::sync::Arc::new(schema.clone()), &INDEXED_KEYS);
        let plan = engine.plan(&empty, desired, &scope).unwrap();
        let plan_s = format!("{:.3}", started.elapsed().as_secs_f64());
        (plan_s, engine.apply(&client, &plan, &policy).await)
    } else {
        // Plan, apply and verify: the units written are remembered as converged.
        let report = engine
            .reconcile(&client, desired, &scope, &policy)
            .await
            .unwrap();
        ("(in the reconcile)".to_owned(), report)
    };
    let engine_s = started.elapsed().as_secs_f64();
    eprintln!(
        "apply cpu: server {:.2}s ours {:.2}s",
        process_cpu_s(server.pid()) - server_cpu_before,
        process_cpu_s(std::process::id()) - own_cpu_before
    );
    if std::env::var("UDN_ENGINE_NO_MONITOR").is_ok() {
        eprintln!(
            "no monitor: engine_s={engine_s:.3} transactions={}",
            report.transactions
        );
        return;
    }
    assert!(report.is_success());
    let transactions = report.transactions;
    let desired = units();
    let started = Instant::now();
    let report = engine
        .reconcile(&client, desired, &scope, &policy)
        .await
        .unwrap();
    let reapply_s = started.elapsed().as_secs_f64();
    assert_eq!(report.ops, 0);
    if let Ok(rounds) = std::env::var("UDN_ENGINE_REPLAN_ROUNDS") {
        let (mut cpu, mut wall) = (0, Duration::ZERO);
        for _ in 0..rounds.parse::<usize>().unwrap() {
            let desired = units();
            let (before, started) = (thread_cpu_ns(), Instant::now());
            let plan = engine.plan(&*client.replica(), desired, &scope).unwrap();
            cpu += thread_cpu_ns() - before;
            wall += started.elapsed();
            assert!(plan.is_empty());
            assert_eq!(plan.skipped_units(), networks);
        }
        eprintln!(
            "replan rounds {rounds}: per round main-thread cpu {:.1}ms wall {:.1}ms",
            cpu as f64 / 1e6 / rounds.parse::<f64>().unwrap(),
            wall.as_secs_f64() * 1e3 / rounds.parse::<f64>().unwrap()
        );
    }
    eprintln!(
        "engine-scale networks={networks} nodes={nodes} rows={rows} plan_s={plan_s} engine_s={engine_s:.3} transactions={transactions} reapply_s={reapply_s:.3} reapply_pct={:.1} server_rss_mb={}",
        100.0 * reapply_s / engine_s,
        server.rss_kib().unwrap() / 1024
    );
}

/// CPU time of this thread (ns), from the scheduler's statistics.
fn thread_cpu_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

/// User + system CPU time of a process (s), from /proc (clock ticks of 10 ms).
fn process_cpu_s(pid: u32) -> f64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = text
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}
