//! Restart safety of both allocating controllers (node subnets and Layer2 pod IPAM): random
//! sequences of node and pod creations and deletions, with the controllers stopped (gracefully
//! or killed mid-flight) and restarted at random points. At the end every node and pod is
//! annotated, no subnet, IP or tunnel ID is held twice, and nothing leaked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "node_subnets_support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use proptest::prelude::*;
use serde_json::json;
use support::*;
use udn_api::annotations::{parse_node_subnets, parse_pod_networks};
use udn_api::names::{ANNOTATION_NODE_SUBNETS, ANNOTATION_POD_NETWORKS};
use udn_cluster_manager::metrics::NetworkLabels;
use udn_test_support::TestCluster;

const NODES: u8 = 5;
const PODS: u8 = 8;
/// 10.60.0.0/24 in /27s.
const HOST_SUBNETS: i64 = 8;
/// 10.40.0.0/26 minus network, broadcast, gateway and management.
const POD_IPS: i64 = 60;

#[derive(Clone, Debug)]
enum Op {
    AddNode(u8),
    DeleteNode(u8),
    AddPod(u8, u8),
    DeletePod(u8),
    Restart { kill: bool },
    Pause,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..NODES).prop_map(Op::AddNode),
        1 => (0..NODES).prop_map(Op::DeleteNode),
        4 => (0..PODS, 0..NODES).prop_map(|(p, n)| Op::AddPod(p, n)),
        2 => (0..PODS).prop_map(Op::DeletePod),
        2 => any::<bool>().prop_map(|kill| Op::Restart { kill }),
        1 => Just(Op::Pause),
    ]
}

async fn setup(cluster: &TestCluster) {
    let client = cluster.client();
    let config = config();
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
                .delete(&format!("p{p}"), &DeleteParams::default())
                .await
                .unwrap();
        }
        Op::Restart { kill } => {
            if let Some(old) = running.take() {
                if *kill {
                    old.kill().await;
                } else {
                    old.stop().await;
                }
            }
            *running = Some(Running::start(cluster, Controllers::Both, config()));
        }
        Op::Pause => tokio::time::sleep(Duration::from_millis(30)).await,
        _ => {}
    }
}

/// Waits until every node and pod is annotated, then checks uniqueness and leaks.
async fn check(
    cluster: &TestCluster,
    running: &Running,
    nodes: &BTreeSet<u8>,
    pods: &BTreeSet<u8>,
) {
    let client = cluster.client();
    let (subnets, ips, tunnels) = eventually("convergence", Duration::from_secs(20), || async {
        let mut subnets = BTreeMap::new();
        for n in nodes {
            let value = node_annotation(&client, &format!("n{n}"), ANNOTATION_NODE_SUBNETS).await?;
            let parsed = parse_node_subnets(&value).unwrap();
            subnets.insert(*n, parsed.get("t_l3")?.clone());
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
        let free_subnets = running
            .metrics
            .free_addresses
            .get_or_create(&NetworkLabels {
                network: "t_l3".into(),
            })
            .get();
        let free_ips = running
            .metrics
            .free_addresses
            .get_or_create(&NetworkLabels {
                network: "t_prim".into(),
            })
            .get();
        let expected_subnets = HOST_SUBNETS - i64::try_from(nodes.len()).unwrap();
        let expected_ips = POD_IPS - i64::try_from(pods.len()).unwrap();
        (free_subnets == expected_subnets && free_ips == expected_ips)
            .then_some((subnets, ips, tunnels))
    })
    .await;
    let all_subnets: Vec<_> = subnets.values().flatten().collect();
    assert_eq!(all_subnets.len(), nodes.len());
    assert_eq!(
        all_subnets.iter().collect::<BTreeSet<_>>().len(),
        all_subnets.len(),
        "{subnets:?}"
    );
    let all_ips: Vec<_> = ips.values().flatten().collect();
    assert_eq!(all_ips.len(), pods.len());
    assert_eq!(
        all_ips.iter().collect::<BTreeSet<_>>().len(),
        all_ips.len(),
        "{ips:?}"
    );
    assert_eq!(
        tunnels.values().collect::<BTreeSet<_>>().len(),
        tunnels.len(),
        "{tunnels:?}"
    );
    assert!(tunnels.values().all(|id| *id >= 10), "{tunnels:?}");
}

async fn scenario(ops: Vec<Op>) {
    let cluster = TestCluster::new();
    setup(&cluster).await;
    let mut running = Some(Running::start(&cluster, Controllers::Both, config()));
    let (mut nodes, mut pods) = (BTreeSet::new(), BTreeSet::new());
    for op in &ops {
        apply(&cluster, &mut running, op, &mut nodes, &mut pods).await;
    }
    let running = match running {
        Some(running) => running,
        None => Running::start(&cluster, Controllers::Both, config()),
    };
    check(&cluster, &running, &nodes, &pods).await;
    running.stop().await;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    #[test]
    fn restarts_never_hand_out_twice(ops in proptest::collection::vec(op(), 1..30)) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(scenario(ops));
    }
}
