//! Restart safety of the allocating controllers (node IDs and transit addresses, node subnets
//! of the default and a Layer3 network, Layer2 pod IPAM and, in a cluster left in the legacy
//! Layer2 topology, the nodes' gateway router tunnel IDs): random sequences of node and pod
//! creations and deletions, with the controllers stopped (gracefully or killed mid-flight) and
//! restarted at random points. At the end every node and pod is fully annotated, no node ID,
//! transit address, subnet, IP or tunnel ID is held twice, and nothing leaked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "node_subnets_support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::watcher;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use proptest::prelude::*;
use serde_json::json;
use support::*;
use udn_api::annotations::{
    parse_node_id, parse_node_layer2_tunnel_ids, parse_node_subnets,
    parse_node_transit_switch_port_ifaddr, parse_pod_networks,
};
use udn_api::names::{
    ANNOTATION_NODE_ID, ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS, ANNOTATION_NODE_SUBNETS,
    ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR, ANNOTATION_POD_NETWORKS,
};
use udn_cluster_manager::metrics::NetworkLabels;
use udn_test_support::TestCluster;

const NODES: u8 = 5;
const PODS: u8 = 8;
/// 10.60.0.0/24 in /27s.
const HOST_SUBNETS: i64 = 8;
/// 10.40.0.0/26 minus network, broadcast, gateway and management.
const POD_IPS: i64 = 60;
/// 10.244.0.0/16 in /24s (the IPv6 range has more room).
const DEFAULT_SUBNETS: i64 = 256;
/// Node IDs 2..=5000.
const NODE_IDS: i64 = 4999;
/// The node a legacy cluster left behind (never deleted), holding a tunnel ID of `t_prim`.
const LEGACY_NODE: &str = "legacy";

#[derive(Clone, Debug)]
enum Op {
    AddNode(u8),
    DeleteNode(u8),
    AddPod(u8, u8),
    DeletePod(u8),
    /// Stop (or kill) and start again right away.
    Restart {
        kill: bool,
    },
    /// Stop (or kill); the next ops run with the controllers down until a `Start` or
    /// `Restart` (or the end).
    Stop {
        kill: bool,
    },
    Start,
    Pause,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..NODES).prop_map(Op::AddNode),
        1 => (0..NODES).prop_map(Op::DeleteNode),
        4 => (0..PODS, 0..NODES).prop_map(|(p, n)| Op::AddPod(p, n)),
        2 => (0..PODS).prop_map(Op::DeletePod),
        2 => any::<bool>().prop_map(|kill| Op::Restart { kill }),
        1 => any::<bool>().prop_map(|kill| Op::Stop { kill }),
        1 => Just(Op::Start),
        1 => Just(Op::Pause),
    ]
}

async fn setup(cluster: &TestCluster, legacy: bool) {
    let client = cluster.client();
    let config = config();
    if legacy {
        create_node_with_annotations(
            &client,
            LEGACY_NODE,
            json!({ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS: r#"{"t_prim":"30000"}"#}),
        )
        .await;
    }
    create_namespace(&client, "t", true).await;
    udn_with_nad(
        &client,
        json!({
            "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
            "metadata": {"name": "prim", "namespace": "t"},
            "spec": {"topology": "Layer2", "layer2": {"role": "Primary", "subnets": ["10.40.0.0/26"]}},
        }),
        &config,
    )
    .await;
    udn_with_nad(
        &client,
        json!({
            "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
            "metadata": {"name": "l3", "namespace": "t"},
            "spec": {"topology": "Layer3", "layer3": {"role": "Secondary", "subnets": [{"cidr": "10.60.0.0/24", "hostSubnet": 27}]}},
        }),
        &config,
    )
    .await;
}

async fn apply(
    cluster: &TestCluster,
    running: &mut Option<Running>,
    op: &Op,
    nodes: &mut BTreeSet<u8>,
    pods: &mut BTreeSet<u8>,
) {
    let client = cluster.client();
    let node_api: Api<Node> = Api::all(client.clone());
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), "t");
    match op {
        Op::AddNode(n) if nodes.insert(*n) => create_node(&client, &format!("n{n}")).await,
        Op::DeleteNode(n) if nodes.remove(n) => {
            node_api
                .delete(&format!("n{n}"), &DeleteParams::default())
                .await
                .unwrap();
        }
        Op::AddPod(p, n) if pods.insert(*p) => {
            let pod = serde_json::from_value(udn_test_support::pod(
                "t",
                &format!("p{p}"),
                Some(&format!("n{n}")),
            ))
            .unwrap();
            pod_api.create(&PostParams::default(), &pod).await.unwrap();
        }
        Op::DeletePod(p) if pods.remove(p) => {
            pod_api
                .delete(&format!("p{p}"), &DeleteParams::default().grace_period(0))
                .await
                .unwrap();
        }
        Op::Restart { kill } | Op::Stop { kill } => {
            if let Some(old) = running.take() {
                if *kill {
                    old.kill().await;
                } else {
                    old.stop().await;
                }
            }
            if matches!(op, Op::Restart { .. }) {
                *running = Some(Running::start(cluster, Controllers::All, config()));
            }
        }
        Op::Start if running.is_none() => {
            *running = Some(Running::start(cluster, Controllers::All, config()));
        }
        Op::Pause => tokio::time::sleep(Duration::from_millis(30)).await,
        _ => {}
    }
}

/// Every value each node incarnation (uid) ever carried, per annotation entry: node ID,
/// transit addresses, each network's node subnets and each network's tunnel ID. A restart must
/// keep them, so each entry has at most one value.
/// `(node uid, entry)` -> the values seen.
type Values = BTreeMap<(String, String), BTreeSet<String>>;

#[derive(Clone, Default)]
struct History {
    seen: Arc<Mutex<Values>>,
    /// The newest node resourceVersion the watch delivered.
    newest: Arc<Mutex<u64>>,
}

impl History {
    fn record(cluster: &TestCluster) -> (Self, tokio::task::JoinHandle<()>) {
        let history = Self::default();
        let sink = history.clone();
        let api: Api<Node> = Api::all(cluster.client());
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()));
            while let Some(event) = stream.next().await {
                if let Ok(watcher::Event::Apply(node) | watcher::Event::InitApply(node)) = event {
                    sink.add(&node);
                }
            }
        });
        (history, task)
    }

    fn add(&self, node: &Node) {
        let uid = node.metadata.uid.clone().unwrap_or_default();
        let annotations = node.metadata.annotations.clone().unwrap_or_default();
        let mut entries: Vec<(String, String)> = Vec::new();
        for key in [
            ANNOTATION_NODE_ID,
            ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR,
        ] {
            if let Some(value) = annotations.get(key) {
                entries.push((key.to_owned(), value.clone()));
            }
        }
        if let Some(value) = annotations.get(ANNOTATION_NODE_SUBNETS) {
            for (network, subnets) in parse_node_subnets(value).unwrap() {
                entries.push((format!("subnets {network}"), format!("{subnets:?}")));
            }
        }
        if let Some(value) = annotations.get(ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS) {
            for (network, id) in parse_node_layer2_tunnel_ids(value).unwrap() {
                entries.push((format!("tunnel {network}"), id.to_string()));
            }
        }
        let version = node.metadata.resource_version.as_deref().unwrap_or("0");
        let version: u64 = version.parse().unwrap();
        let mut newest = self.newest.lock().unwrap();
        *newest = (*newest).max(version);
        let mut seen = self.seen.lock().unwrap();
        for (entry, value) in entries {
            seen.entry((uid.clone(), entry)).or_default().insert(value);
        }
    }

    /// Entries that changed value during their node's life.
    fn changed(&self) -> Vec<((String, String), BTreeSet<String>)> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|(_, values)| values.len() > 1)
            .map(|(entry, values)| (entry.clone(), values.clone()))
            .collect()
    }
}

/// What one node carries once converged.
#[derive(Debug)]
struct NodeState {
    id: u32,
    subnets: Vec<String>,
    tunnel: Option<u32>,
}

/// The node's annotations once complete (`None` while something is missing or stale).
async fn node_state(client: &kube::Client, node: &str, legacy: bool) -> Option<NodeState> {
    let id = parse_node_id(&node_annotation(client, node, ANNOTATION_NODE_ID).await?).ok()?;
    let transit = node_annotation(client, node, ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR).await?;
    let transit: Vec<String> = parse_node_transit_switch_port_ifaddr(&transit)
        .unwrap()
        .to_vec()
        .iter()
        .map(ToString::to_string)
        .collect();
    if transit != [format!("100.88.0.{id}/16"), format!("fd97::{id:x}/64")] {
        return None;
    }
    let value = node_annotation(client, node, ANNOTATION_NODE_SUBNETS).await?;
    let parsed = parse_node_subnets(&value).unwrap();
    let mut subnets: Vec<String> = parsed
        .get("t_l3")?
        .iter()
        .map(|s| format!("t_l3 {s}"))
        .collect();
    let default = parsed.get("default")?;
    if default.len() != 2 {
        return None;
    }
    subnets.extend(default.iter().map(|s| format!("default {s}")));
    let tunnels = node_annotation(
        client,
        node,
        ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS,
    )
    .await
    .map(|v| parse_node_layer2_tunnel_ids(&v).unwrap());
    // udn's zones render the legacy Layer2 topology: every node gets a tunnel ID, whether
    // or not an earlier run left a legacy node behind.
    let _ = legacy;
    let tunnel = match tunnels {
        Some(ids) if ids.keys().eq(["t_prim"]) => Some(ids["t_prim"]),
        _ => return None,
    };
    Some(NodeState {
        id,
        subnets,
        tunnel,
    })
}

/// Waits until every node and pod is annotated, then checks uniqueness and leaks.
async fn check(
    cluster: &TestCluster,
    running: &Running,
    nodes: &BTreeSet<u8>,
    pods: &BTreeSet<u8>,
    legacy: bool,
) {
    let client = cluster.client();
    let mut names: Vec<String> = nodes.iter().map(|n| format!("n{n}")).collect();
    if legacy {
        names.push(LEGACY_NODE.to_owned());
    }
    let node_count = i64::try_from(names.len()).unwrap();
    let (states, ips, tunnels) = eventually("convergence", Duration::from_secs(20), || async {
        let mut states = BTreeMap::new();
        for name in &names {
            states.insert(name.clone(), node_state(&client, name, legacy).await?);
        }
        let mut ips = BTreeMap::new();
        let mut tunnels = BTreeMap::new();
        for p in pods {
            let annotations = pod_annotations(&client, "t", &format!("p{p}")).await?;
            let parsed = parse_pod_networks(annotations.get(ANNOTATION_POD_NETWORKS)?).unwrap();
            let entry = parsed.get("t/prim")?;
            ips.insert(*p, entry.ip_addresses.clone());
            tunnels.insert(*p, entry.tunnel_id);
        }
        // The allocators agree with the annotations: nothing leaked, nothing missing.
        let gauge = |network: &str| {
            running
                .metrics
                .free_addresses
                .get_or_create(&NetworkLabels {
                    network: network.into(),
                })
                .get()
        };
        let converged = gauge("t_l3")
            == HOST_SUBNETS - i64::try_from(nodes.len()).unwrap() - i64::from(legacy)
            && gauge("t_prim") == POD_IPS - i64::try_from(pods.len()).unwrap()
            && gauge("default") == DEFAULT_SUBNETS - node_count
            && running.metrics.free_node_ids.get() == NODE_IDS - node_count;
        converged.then_some((states, ips, tunnels))
    })
    .await;
    let ids: BTreeSet<u32> = states.values().map(|s| s.id).collect();
    assert_eq!(ids.len(), states.len(), "node ID held twice: {states:?}");
    assert!(ids.iter().all(|id| (2..=5000).contains(id)), "{states:?}");
    let all_subnets: Vec<&String> = states.values().flat_map(|s| &s.subnets).collect();
    assert_eq!(
        all_subnets.iter().collect::<BTreeSet<_>>().len(),
        all_subnets.len(),
        "{states:?}"
    );
    let all_ips: Vec<_> = ips.values().flatten().collect();
    assert_eq!(all_ips.len(), pods.len());
    assert_eq!(
        all_ips.iter().collect::<BTreeSet<_>>().len(),
        all_ips.len(),
        "{ips:?}"
    );
    // Pods and (legacy) nodes take tunnel IDs from one pool: all distinct.
    let all_tunnels: Vec<u32> = tunnels
        .values()
        .copied()
        .chain(states.values().filter_map(|s| s.tunnel))
        .collect();
    assert_eq!(
        all_tunnels.iter().collect::<BTreeSet<_>>().len(),
        all_tunnels.len(),
        "pods {tunnels:?}, nodes {states:?}"
    );
    let first_pod_id = 1;
    assert!(
        tunnels.values().all(|id| *id >= first_pod_id),
        "{tunnels:?}"
    );
}

async fn scenario(ops: Vec<Op>, legacy: bool) {
    let cluster = TestCluster::new();
    let (history, watch) = History::record(&cluster);
    setup(&cluster, legacy).await;
    let mut running = Some(Running::start(&cluster, Controllers::All, config()));
    let (mut nodes, mut pods) = (BTreeSet::new(), BTreeSet::new());
    for op in &ops {
        apply(&cluster, &mut running, op, &mut nodes, &mut pods).await;
    }
    let running = match running {
        Some(running) => running,
        None => Running::start(&cluster, Controllers::All, config()),
    };
    check(&cluster, &running, &nodes, &pods, legacy).await;
    running.stop().await;
    // Once the watch has caught up with every node write: nothing a node held ever moved.
    let api: Api<Node> = Api::all(cluster.client());
    let mut newest = 0;
    for node in api.list(&Default::default()).await.unwrap().items {
        let version = node.metadata.resource_version.unwrap_or_default();
        newest = newest.max(version.parse::<u64>().unwrap());
    }
    eventually("the watch caught up", Duration::from_secs(5), || async {
        (*history.newest.lock().unwrap() >= newest).then_some(())
    })
    .await;
    let changed = history.changed();
    watch.abort();
    assert!(
        changed.is_empty(),
        "values changed across restarts: {changed:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn restarts_never_hand_out_twice(
        ops in proptest::collection::vec(op(), 1..30),
        legacy in any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(scenario(ops, legacy));
    }
}
