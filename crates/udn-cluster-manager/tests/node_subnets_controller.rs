//! The node-subnets controller against the in-memory API server: per-network per-family host
//! subnets in the upstream annotation JSON, stale entries, node and network deletion,
//! exhaustion reported as an event and the `NetworkAllocationSucceeded` condition, and
//! expansion of the cluster subnets. The default network's entry is allocated too; it is
//! compared on its own (`default_subnets`) where a test is about it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "node_subnets_support/mod.rs"]
mod support;

use serde_json::json;
use support::*;
use udn_api::names::ANNOTATION_NODE_SUBNETS;
use udn_api::render::NetworkSource;
use udn_cluster_manager::metrics::NetworkLabels;
use udn_test_support::TestCluster;

const CONDITION: &str = "NetworkAllocationSucceeded";

/// Waits until the node's UDN entries (all but `default`) are `expected`.
async fn wait_subnets(client: &kube::Client, node: &str, expected: &str) {
    let expected = expected.to_owned();
    eventually(
        &format!("node-subnets of {node} = {expected}"),
        WAIT,
        || async {
            (udn_subnets(client, node).await.as_deref() == Some(expected.as_str())).then_some(())
        },
    )
    .await;
}

fn l3(namespace: &str, name: &str, role: &str, subnets: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"topology": "Layer3", "layer3": {"role": role, "subnets": subnets}},
    })
}

#[tokio::test]
async fn every_layer3_network_gets_one_subnet_per_family_in_one_annotation() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = config();
    create_namespace(&client, "blue", true).await;
    create_namespace(&client, "red", false).await;
    create_namespace(&client, "green", false).await;
    // A node carrying a default-network entry (kept) and one of an unknown network (stale).
    create_node_with_annotations(
        &client,
        "n1",
        json!({ANNOTATION_NODE_SUBNETS: r#"{"default":["10.244.1.0/24"],"gone_net":["10.9.0.0/24"]}"#}),
    )
    .await;
    udn_with_nad(
        &client,
        l3(
            "blue",
            "net",
            "Primary",
            json!([{"cidr": "10.128.0.0/16"}, {"cidr": "fd00:10:128::/48"}]),
        ),
        &config,
    )
    .await;
    udn_with_nad(
        &client,
        l3(
            "red",
            "net",
            "Secondary",
            json!([{"cidr": "10.200.0.0/16", "hostSubnet": 26}]),
        ),
        &config,
    )
    .await;
    // A CUDN rendered into two namespaces is one network.
    let cudn = create_cudn(
        &client,
        udn_test_support::cudn(
            "shared",
            json!({"matchLabels": {"x": "y"}}),
            json!({"topology": "Layer3", "layer3": {"role": "Secondary", "subnets": [{"cidr": "10.50.0.0/16"}]}}),
        ),
    )
    .await;
    for namespace in ["red", "green"] {
        let source = NetworkSource::Cudn {
            cudn: &cudn,
            namespace,
        };
        create_nad(&client, &rendered_nad(&source, &config)).await;
    }
    // A Layer2 network gets no node subnet.
    udn_with_nad(
        &client,
        udn_test_support::l2_udn("green", "flat", "Secondary", &["10.70.0.0/16"]),
        &config,
    )
    .await;

    let running = Running::start(&cluster, Controllers::NodeSubnets, config.clone());
    wait_subnets(
        &client,
        "n1",
        r#"{"blue_net":["10.128.0.0/24","fd00:10:128:1::/64"],"cluster_udn_shared":["10.50.0.0/24"],"red_net":["10.200.0.0/26"]}"#,
    )
    .await;
    // The annotated default subnet is kept; the missing family is added. The same write
    // carries every network.
    let value = node_annotation(&client, "n1", ANNOTATION_NODE_SUBNETS)
        .await
        .unwrap();
    assert_eq!(
        value,
        r#"{"blue_net":["10.128.0.0/24","fd00:10:128:1::/64"],"cluster_udn_shared":["10.50.0.0/24"],"default":["10.244.1.0/24","fd00:10:244:1::/64"],"red_net":["10.200.0.0/26"]}"#
    );
    create_node(&client, "n2").await;
    wait_subnets(
        &client,
        "n2",
        r#"{"blue_net":["10.128.1.0/24","fd00:10:128:2::/64"],"cluster_udn_shared":["10.50.1.0/24"],"red_net":["10.200.1.0/26"]}"#,
    )
    .await;
    assert_eq!(
        default_subnets(&client, "n2").await.unwrap(),
        ["10.244.0.0/24", "fd00:10:244:2::/64"]
    );

    // Every owner with a cluster controller reports success (Layer2 too, as upstream).
    for (namespace, name) in [("blue", "net"), ("red", "net"), ("green", "flat")] {
        let condition = eventually("condition", WAIT, || async {
            udn_condition(&client, namespace, name, CONDITION).await
        })
        .await;
        assert_eq!(
            condition,
            (
                "True".to_owned(),
                "NetworkAllocationSucceeded".to_owned(),
                "Network allocation succeeded for all synced nodes.".to_owned()
            )
        );
    }
    let condition = eventually("CUDN condition", WAIT, || async {
        cudn_condition(&client, "shared", CONDITION).await
    })
    .await;
    assert_eq!(condition.0, "True");

    // /16 with /26 host subnets: 1024, two taken.
    let free = running
        .metrics
        .free_addresses
        .get_or_create(&NetworkLabels {
            network: "red_net".into(),
        })
        .get();
    assert_eq!(free, 1022);
    running.stop().await;
}

#[tokio::test]
async fn deleting_a_network_or_a_node_releases_its_subnets() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = config();
    create_namespace(&client, "a", false).await;
    create_namespace(&client, "b", false).await;
    udn_with_nad(
        &client,
        l3(
            "a",
            "net",
            "Secondary",
            json!([{"cidr": "10.1.0.0/24", "hostSubnet": 25}]),
        ),
        &config,
    )
    .await;
    udn_with_nad(
        &client,
        l3("b", "net", "Secondary", json!([{"cidr": "10.2.0.0/16"}])),
        &config,
    )
    .await;
    create_node(&client, "n1").await;
    let running = Running::start(&cluster, Controllers::NodeSubnets, config.clone());
    wait_subnets(
        &client,
        "n1",
        r#"{"a_net":["10.1.0.0/25"],"b_net":["10.2.0.0/24"]}"#,
    )
    .await;
    create_node(&client, "n2").await;
    wait_subnets(
        &client,
        "n2",
        r#"{"a_net":["10.1.0.128/25"],"b_net":["10.2.1.0/24"]}"#,
    )
    .await;

    // The node goes: in the full network its subnet is the one the next node gets (the
    // round-robin cursor of the roomy one moves on).
    delete_node(&client, "n1").await;
    create_node(&client, "n3").await;
    wait_subnets(
        &client,
        "n3",
        r#"{"a_net":["10.1.0.0/25"],"b_net":["10.2.2.0/24"]}"#,
    )
    .await;

    // The network goes (no NAD left): its entries disappear; the default network's stays.
    delete_nad(&client, "a", "net").await;
    wait_subnets(&client, "n2", r#"{"b_net":["10.2.1.0/24"]}"#).await;
    delete_nad(&client, "b", "net").await;
    let only_default = eventually("only the default entry left", WAIT, || async {
        let value = node_annotation(&client, "n2", ANNOTATION_NODE_SUBNETS).await?;
        value.starts_with(r#"{"default":"#).then_some(value)
    })
    .await;
    assert_eq!(udn_subnets(&client, "n2").await, None);
    assert!(!only_default.contains("_net"), "{only_default}");
    running.stop().await;
}

#[tokio::test]
async fn exhaustion_is_reported_and_expansion_serves_the_waiting_node() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = config();
    create_namespace(&client, "tenant", true).await;
    let spec = |subnets: serde_json::Value| l3("tenant", "net", "Primary", subnets);
    let udn = udn_with_nad(
        &client,
        spec(json!([{"cidr": "10.10.0.0/24", "hostSubnet": 25}])),
        &config,
    )
    .await;
    for node in ["n1", "n2"] {
        create_node(&client, node).await;
    }
    let running = Running::start(&cluster, Controllers::NodeSubnets, config.clone());
    let (first, second) = eventually("two nodes allocated", WAIT, || async {
        let first = udn_subnets(&client, "n1").await?;
        let second = udn_subnets(&client, "n2").await?;
        Some((first, second))
    })
    .await;
    let mut both = vec![first.clone(), second.clone()];
    both.sort();
    assert_eq!(
        both,
        [
            r#"{"tenant_net":["10.10.0.0/25"]}"#,
            r#"{"tenant_net":["10.10.0.128/25"]}"#
        ]
    );

    create_node(&client, "n3").await;
    let notes = eventually("allocation failure event", WAIT, || async {
        let notes = event_notes(&client, "tenant", "NetworkAllocationFailed").await;
        (!notes.is_empty()).then_some(notes)
    })
    .await;
    assert_eq!(
        notes[0],
        "Error occurred for node n3: error allocating network for node n3, network name tenant_net: no subnets available"
    );
    let failed = eventually("False condition", WAIT, || async {
        udn_condition(&client, "tenant", "net", CONDITION)
            .await
            .filter(|c| c.0 == "False")
    })
    .await;
    assert_eq!(
        failed,
        (
            "False".to_owned(),
            "InternalError".to_owned(),
            "Network allocation failed for at least one node: n3, check UDN events for more info."
                .to_owned()
        )
    );
    assert_eq!(udn_subnets(&client, "n3").await, None);
    let gauge = running
        .metrics
        .free_addresses
        .get_or_create(&NetworkLabels {
            network: "tenant_net".into(),
        })
        .get();
    assert_eq!(gauge, 0);

    // Append a range to the NAD config (what the UDN controller renders after an append).
    let mut grown = udn.clone();
    grown.spec = serde_json::from_value(
        spec(json!([{"cidr": "10.10.0.0/24", "hostSubnet": 25}, {"cidr": "10.20.0.0/24", "hostSubnet": 25}]))["spec"].clone(),
    )
    .unwrap();
    let nad = rendered_nad(&NetworkSource::Udn(&grown), &config);
    update_nad_config(
        &client,
        "tenant",
        "net",
        nad.spec.config.as_deref().unwrap(),
    )
    .await;
    wait_subnets(&client, "n3", r#"{"tenant_net":["10.20.0.0/25"]}"#).await;
    assert_eq!(udn_subnets(&client, "n1").await, Some(first));
    assert_eq!(udn_subnets(&client, "n2").await, Some(second));
    let recovered = eventually("True condition", WAIT, || async {
        udn_condition(&client, "tenant", "net", CONDITION)
            .await
            .filter(|c| c.0 == "True")
    })
    .await;
    assert_eq!(
        recovered.2,
        "Network allocation succeeded for all synced nodes."
    );
    running.stop().await;
}

#[tokio::test]
async fn restart_restores_allocations_before_allocating() {
    let cluster = TestCluster::new();
    let client = cluster.client();
    let config = config();
    create_namespace(&client, "a", false).await;
    udn_with_nad(
        &client,
        l3("a", "net", "Secondary", json!([{"cidr": "10.1.0.0/16"}])),
        &config,
    )
    .await;
    // Annotated by an earlier run: n-b holds the first subnet the allocator would pick.
    create_node_with_annotations(
        &client,
        "n-b",
        json!({ANNOTATION_NODE_SUBNETS: r#"{"a_net":["10.1.0.0/24"]}"#}),
    )
    .await;
    create_node(&client, "n-a").await;
    let running = Running::start(&cluster, Controllers::NodeSubnets, config.clone());
    wait_subnets(&client, "n-a", r#"{"a_net":["10.1.1.0/24"]}"#).await;
    assert_eq!(
        udn_subnets(&client, "n-b").await.as_deref(),
        Some(r#"{"a_net":["10.1.0.0/24"]}"#)
    );
    running.stop().await;
}
