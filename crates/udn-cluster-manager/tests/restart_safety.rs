//! Restart safety of the whole cluster-manager: a random workload of network, node and pod
//! creates and deletes, with the manager stopped and started again at random points. At the
//! end every object is in place and no network ID, node ID, transit address, host subnet
//! (default network included) or pod IP is held twice.

#![allow(clippy::expect_used, clippy::unwrap_used)] // test helpers

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::Value;
use tokio::task::JoinHandle;
use udn_api::annotations::{
    parse_node_id, parse_node_subnets, parse_node_transit_switch_port_ifaddr, parse_pod_networks,
};
use udn_cluster_manager::config::Config;
use udn_cluster_manager::context::Context;
use udn_cluster_manager::metrics::Metrics;
use udn_cluster_manager::run::run_controllers;
use udn_kube_sim::{DeleteOptions, ListOptions, ResourceKey, WriteOptions};
use udn_runtime::Shutdown;
use udn_test_support::{TestCluster, l2_udn, l3_udn, namespace, node, pod};

const NETWORKS: usize = 4;
const NODES: usize = 3;
const PODS: usize = 3;

#[derive(Clone, Debug)]
enum Op {
    CreateNetwork(usize),
    DeleteNetwork(usize),
    CreateNode(usize),
    DeleteNode(usize),
    CreatePod(usize, usize, usize),
    DeletePod(usize, usize),
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..NETWORKS).prop_map(Op::CreateNetwork),
        1 => (0..NETWORKS).prop_map(Op::DeleteNetwork),
        2 => (0..NODES).prop_map(Op::CreateNode),
        1 => (0..NODES).prop_map(Op::DeleteNode),
        3 => (0..NETWORKS, 0..PODS, 0..NODES).prop_map(|(n, p, h)| Op::CreatePod(n, p, h)),
        1 => (0..NETWORKS, 0..PODS).prop_map(|(n, p)| Op::DeletePod(n, p)),
        2 => Just(Op::Restart),
    ]
}

fn key(group: &str, plural: &str) -> ResourceKey {
    ResourceKey {
        group: group.to_owned(),
        plural: plural.to_owned(),
    }
}

/// Even networks are Primary Layer3, odd ones Primary Layer2; all use the same subnet.
fn network(i: usize) -> Value {
    let ns = format!("ns-{i}");
    if i.is_multiple_of(2) {
        l3_udn(&ns, "net", "Primary", &["10.100.0.0/16"])
    } else {
        l2_udn(&ns, "net", "Primary", &["10.200.0.0/24"])
    }
}

struct Manager {
    shutdown: Shutdown,
    task: JoinHandle<()>,
}

fn start(cluster: &TestCluster) -> Manager {
    let ctx = Context::new(
        cluster.client(),
        Config::for_tests(),
        Metrics::unregistered(),
        None,
    );
    let shutdown = Shutdown::new();
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        run_controllers(ctx, stop).await.expect("controllers run");
    });
    Manager { shutdown, task }
}

async fn stop(manager: Manager) {
    manager.shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(20), manager.task)
        .await
        .expect("manager stops")
        .expect("manager task");
}

fn list(cluster: &TestCluster, group: &str, plural: &str) -> Vec<Value> {
    let list = cluster
        .sim
        .list(&key(group, plural), None, &ListOptions::default())
        .unwrap();
    list["items"].as_array().cloned().unwrap_or_default()
}

fn annotation<'a>(object: &'a Value, name: &str) -> Option<&'a str> {
    object["metadata"]["annotations"][name].as_str()
}

fn apply(cluster: &TestCluster, op: &Op) {
    let w = WriteOptions::default();
    // Pods are bound: without a kubelet, only a deletion without grace removes them.
    let d = DeleteOptions {
        grace_period_seconds: Some(0),
        ..DeleteOptions::default()
    };
    let ns_key = key("", "namespaces");
    let udns = key("k8s.ovn.org", "userdefinednetworks");
    match op {
        Op::CreateNetwork(i) => {
            let ns = format!("ns-{i}");
            let _ = cluster.sim.create(&ns_key, None, namespace(&ns, true), &w);
            let _ = cluster.sim.create(&udns, Some(&ns), network(*i), &w);
        }
        Op::DeleteNetwork(i) => {
            let _ = cluster
                .sim
                .delete(&udns, Some(&format!("ns-{i}")), "net", &d);
        }
        Op::CreateNode(h) => {
            let _ = cluster
                .sim
                .create(&key("", "nodes"), None, node(&format!("node-{h}")), &w);
        }
        Op::DeleteNode(h) => {
            let _ = cluster
                .sim
                .delete(&key("", "nodes"), None, &format!("node-{h}"), &d);
        }
        Op::CreatePod(i, p, h) => {
            let ns = format!("ns-{i}");
            let node_name = format!("node-{h}");
            let _ = cluster.sim.create(
                &key("", "pods"),
                Some(&ns),
                pod(&ns, &format!("pod-{p}"), Some(&node_name)),
                &w,
            );
        }
        Op::DeletePod(i, p) => {
            let _ = cluster.sim.delete(
                &key("", "pods"),
                Some(&format!("ns-{i}")),
                &format!("pod-{p}"),
                &d,
            );
        }
        Op::Restart => {}
    }
}

/// Everything the final state must satisfy; `Err` says what is missing or wrong.
fn check(cluster: &TestCluster) -> Result<(), String> {
    let udns = list(cluster, "k8s.ovn.org", "userdefinednetworks");
    let nads = list(cluster, "k8s.cni.cncf.io", "network-attachment-definitions");
    let nodes = list(cluster, "", "nodes");
    let pods = list(cluster, "", "pods");
    // Every live UDN has its NAD with an ID; IDs are unique per network.
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    for nad in &nads {
        let Some(id) = annotation(nad, "k8s.ovn.org/network-id") else {
            return Err(format!("NAD without ID: {}", nad["metadata"]));
        };
        let network = annotation(nad, "k8s.ovn.org/network-name")
            .unwrap_or_default()
            .to_owned();
        if let Some(other) = ids.insert(id.to_owned(), network.clone())
            && other != network
        {
            return Err(format!("network ID {id} held by {other} and {network}"));
        }
    }
    let live: Vec<&Value> = udns
        .iter()
        .filter(|u| u["metadata"]["deletionTimestamp"].is_null())
        .collect();
    for udn in &live {
        let ns = udn["metadata"]["namespace"].as_str().unwrap();
        if !nads.iter().any(|n| n["metadata"]["namespace"] == ns) {
            return Err(format!("UDN {ns}/net has no NAD yet"));
        }
    }
    let l3: BTreeSet<String> = nads
        .iter()
        .filter(|n| {
            n["spec"]["config"]
                .as_str()
                .unwrap_or_default()
                .contains("\"layer3\"")
        })
        .filter_map(|n| annotation(n, "k8s.ovn.org/network-name").map(str::to_owned))
        .collect();
    // Every node has an ID, its transit addresses and default subnets; none is held twice.
    let mut node_ids: BTreeSet<u32> = BTreeSet::new();
    let mut transit: BTreeSet<String> = BTreeSet::new();
    for node in &nodes {
        let name = &node["metadata"]["name"];
        let Some(id) = annotation(node, "k8s.ovn.org/node-id") else {
            return Err(format!("node {name} has no ID"));
        };
        let id = parse_node_id(id).map_err(|e| e.to_string())?;
        if !node_ids.insert(id) {
            return Err(format!("node ID {id} held twice"));
        }
        let addrs = annotation(node, "k8s.ovn.org/node-transit-switch-port-ifaddr")
            .map(parse_node_transit_switch_port_ifaddr)
            .transpose()
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("node {name} has no transit address"))?;
        let ipv4 = addrs.ipv4.map(|a| a.to_string());
        if ipv4 != Some(format!("100.88.0.{id}/16")) {
            return Err(format!(
                "node {name} (ID {id}) has transit address {ipv4:?}"
            ));
        }
        if !transit.insert(format!("{addrs:?}")) {
            return Err(format!("transit address {addrs:?} held twice"));
        }
    }
    // Every node has a subnet of the default and of every Layer3 network; subnets unique per
    // network.
    let mut held: BTreeSet<(String, String)> = BTreeSet::new();
    let l3: BTreeSet<String> = l3.into_iter().chain(["default".to_owned()]).collect();
    for node in &nodes {
        let subnets = annotation(node, "k8s.ovn.org/node-subnets")
            .map(parse_node_subnets)
            .transpose();
        let subnets = subnets.map_err(|e| e.to_string())?.unwrap_or_default();
        for network in &l3 {
            if !subnets.contains_key(network) {
                return Err(format!("node {} lacks {network}", node["metadata"]["name"]));
            }
        }
        for (network, cidrs) in subnets {
            for cidr in cidrs {
                if !held.insert((network.clone(), cidr.to_string())) {
                    return Err(format!("subnet {cidr} of {network} held twice"));
                }
            }
        }
    }
    // Pods on Layer2 networks have IPs, unique per network.
    let l2_namespaces: BTreeSet<String> = nads
        .iter()
        .filter(|n| {
            n["spec"]["config"]
                .as_str()
                .unwrap_or_default()
                .contains("\"layer2\"")
        })
        .filter_map(|n| n["metadata"]["namespace"].as_str().map(str::to_owned))
        .collect();
    let mut ips: BTreeSet<(String, String)> = BTreeSet::new();
    for pod in &pods {
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if !l2_namespaces.contains(&ns) || pod["metadata"]["deletionTimestamp"].is_string() {
            continue;
        }
        let key = format!("{ns}/net");
        let Some(networks) = annotation(pod, "k8s.ovn.org/pod-networks") else {
            return Err(format!(
                "pod {ns}/{} not annotated",
                pod["metadata"]["name"]
            ));
        };
        let networks = parse_pod_networks(networks).map_err(|e| e.to_string())?;
        let Some(entry) = networks.get(&key) else {
            return Err(format!("pod {ns}/{} lacks {key}", pod["metadata"]["name"]));
        };
        for ip in &entry.ip_addresses {
            if !ips.insert((key.clone(), ip.ip().to_string())) {
                return Err(format!("IP {ip} of {key} held twice"));
            }
        }
    }
    Ok(())
}

async fn run_case(ops: Vec<Op>) -> Result<(), String> {
    let cluster = TestCluster::new();
    let mut manager = start(&cluster);
    for op in &ops {
        if matches!(op, Op::Restart) {
            stop(manager).await;
            manager = start(&cluster);
        } else {
            apply(&cluster, op);
            tokio::task::yield_now().await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = check(&cluster);
    while last.is_err() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        last = check(&cluster);
    }
    stop(manager).await;
    last.map_err(|e| format!("{e}\nops: {ops:?}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn restarts_at_random_points_never_hand_out_anything_twice(ops in prop::collection::vec(op(), 4..24)) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let result = runtime.block_on(run_case(ops));
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

#[test]
fn a_fixed_workload_converges() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ops = vec![
        Op::CreateNode(0),
        Op::CreateNetwork(0),
        Op::CreateNetwork(1),
        Op::Restart,
        Op::CreateNode(1),
        Op::CreatePod(1, 0, 0),
        Op::CreatePod(1, 1, 1),
        Op::Restart,
        Op::CreateNetwork(2),
        Op::DeleteNode(0),
        Op::CreatePod(1, 2, 1),
    ];
    runtime.block_on(run_case(ops)).unwrap();
}
