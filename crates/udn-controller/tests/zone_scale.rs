//! A zone with many networks, for profiling the controller's passes (ignored by default:
//! `cargo test --release -p udn-controller --test zone_scale -- --ignored --nocapture`).
//! Figures come from `cargo xtask bench controller`; this only prints pass reports.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;
use support::*;
use udn_ovsdb::testing::OvsdbServer;
use udn_test_support::TestCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "profiling aid, minutes in debug builds"]
async fn many_networks() {
    // RUST_LOG=udn_controller=debug shows each pass's phases.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let networks: u32 = std::env::var("ZONE_SCALE_NETWORKS").map_or(100, |v| v.parse().unwrap());
    let nodes: u32 = std::env::var("ZONE_SCALE_NODES").map_or(20, |v| v.parse().unwrap());
    let nb = OvsdbServer::start_nb().unwrap();
    let sb = OvsdbServer::start_sb().unwrap();
    let cluster = TestCluster::new();
    let client = cluster.client();
    for n in 0..nodes {
        let mut subnets = BTreeMap::new();
        subnets.insert("default".to_owned(), vec![format!("10.244.{n}.0/24")]);
        for i in 1..=networks {
            subnets.insert(format!("ns{i}_net"), vec![format!("10.128.{}.0/23", n * 2)]);
        }
        put_node(
            &client,
            &NodeAnnotations {
                name: format!("node{}", n + 1),
                id: n + 2,
                chassis: format!("chassis-{n}"),
                node_cidr: format!("172.18.0.{}/16", n + 2),
                node_ip: format!("172.18.0.{}", n + 2),
                mac: format!("02:00:ac:12:00:{:02x}", n + 2),
                next_hop: "172.18.0.1".to_owned(),
                subnets,
                layer2_tunnel_ids: BTreeMap::new(),
            },
        )
        .await;
    }
    for i in 1..=networks {
        let ns = format!("ns{i}");
        put_namespace(&client, &ns, true).await;
        put_nad(
            &client,
            nad_json(
                &ns,
                "net",
                &format!("{ns}_net"),
                json!({"topology": "layer3", "role": "primary", "subnets": "10.128.0.0/14/23"}),
                i,
            ),
        )
        .await;
        put_pod(&client, &ns, "p", "node1", json!({})).await;
    }
    let started = Instant::now();
    let mut zone = start_zone(&cluster, zone_config("node1"), nb.endpoint(), sb.endpoint()).await;
    let report = zone.converged(Duration::from_secs(600)).await;
    println!(
        "converged after {:?}: {:?} (passes {})",
        started.elapsed(),
        report,
        zone.last().0
    );
    zone.stop().await;
    let started = Instant::now();
    let mut zone = start_zone(&cluster, zone_config("node1"), nb.endpoint(), sb.endpoint()).await;
    let first = zone.first_pass(Duration::from_secs(600)).await;
    println!(
        "restarted, first pass after {:?}: {first:?}",
        started.elapsed()
    );
    zone.stop().await;
}
