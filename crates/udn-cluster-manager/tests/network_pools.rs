//! Network ID and tunnel key pools against the in-memory API server: thousands of UDNs get
//! IDs past upstream's 4096, and an exhausted pool is a condition and a Warning event naming
//! the pool, retried when a network is released.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod network_support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use network_support::*;
use udn_cluster_manager::config::Config;
use udn_test_support::{l2_udn, l3_udn, namespace};

const BASE_TRANSIT_KEY: u64 = 16_711_683;
const FIRST_FREE_KEY: u64 = 16_744_450;

fn annotation(nad: &serde_json::Value, key: &str) -> Option<String> {
    nad["metadata"]["annotations"][key]
        .as_str()
        .map(str::to_owned)
}

/// NADs that carry a network ID, polled every second (listing thousands of objects is not
/// free) until `count` have one or `deadline` passes.
async fn nads_with_ids(
    cluster: &Cluster,
    count: usize,
    deadline: Duration,
) -> Vec<serde_json::Value> {
    let until = tokio::time::Instant::now() + deadline;
    loop {
        let with_ids: Vec<serde_json::Value> = cluster
            .list(Kind::Nad, None)
            .into_iter()
            .filter(|nad| annotation(nad, "k8s.ovn.org/network-id").is_some())
            .collect();
        if with_ids.len() >= count || tokio::time::Instant::now() >= until {
            return with_ids;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// 5,000 UDNs (4,950 secondary Layer3 in 50 namespaces, 50 primary Layer2 with tunnel keys):
/// every one gets a NAD with its own ID, IDs go past 4095, and every tunnel key (transit keys
/// included) is unique.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_udns_get_network_ids_and_nads() {
    const NAMESPACES: usize = 50;
    const PER_NAMESPACE: usize = 99;
    let total = NAMESPACES * (PER_NAMESPACE + 1);
    let cluster = Cluster::new();
    let started = Instant::now();
    for n in 0..NAMESPACES {
        let ns = format!("ns{n}");
        cluster.create(Kind::Namespace, None, namespace(&ns, true));
        cluster.create(
            Kind::Udn,
            Some(&ns),
            l2_udn(&ns, "primary", "Primary", &["10.20.0.0/16"]),
        );
        for i in 0..PER_NAMESPACE {
            cluster.create(
                Kind::Udn,
                Some(&ns),
                l3_udn(&ns, &format!("net{i}"), "Secondary", &["10.10.0.0/16"]),
            );
        }
    }
    eprintln!("{total} UDNs created in {:?}", started.elapsed());
    let manager = Manager::start(&cluster);
    let nads = nads_with_ids(&cluster, total, Duration::from_secs(120)).await;
    let elapsed = started.elapsed();
    eprintln!("{total} UDNs: NADs with network IDs after {elapsed:?}");
    assert_eq!(nads.len(), total, "NADs with an ID");
    let mut ids = BTreeSet::new();
    let mut keys = BTreeSet::new();
    for nad in &nads {
        let id: u64 = annotation(nad, "k8s.ovn.org/network-id")
            .unwrap()
            .parse()
            .unwrap();
        assert!(ids.insert(id), "ID {id} handed out twice");
        assert!(
            keys.insert(BASE_TRANSIT_KEY + id),
            "transit key of {id} taken"
        );
        let tunnel: Vec<u64> =
            serde_json::from_str(&annotation(nad, "k8s.ovn.org/tunnel-keys").unwrap()).unwrap();
        if nad["metadata"]["name"] == "primary" {
            assert_eq!(tunnel.len(), 2);
            assert_eq!(tunnel[0], BASE_TRANSIT_KEY + id);
            assert!(
                tunnel[1] >= FIRST_FREE_KEY,
                "free key {} in the transit range",
                tunnel[1]
            );
            assert!(keys.insert(tunnel[1]), "key {} handed out twice", tunnel[1]);
        } else {
            assert!(tunnel.is_empty());
        }
    }
    // Round robin from 1 with nothing released: exactly 1..=5000.
    assert_eq!(ids, (1..=total as u64).collect::<BTreeSet<_>>());
    manager.stop().await;
}

/// A masquerade subnet with room for two networks: the third UDN gets `NetworkPoolExhausted`
/// naming the `masquerade-ips` pool and a Warning event, no NAD and no ID; deleting one of
/// the first two gives it the freed ID at once (not at the next resync).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_pool_is_reported_and_retried_when_a_network_is_released() {
    let cluster = Cluster::new();
    cluster.create(Kind::Namespace, None, namespace("blue", false));
    let mut config = Config::for_tests();
    // 16 addresses: the pairs of IDs 1 (.11/.12) and 2 (.13/.14) fit, ID 3's (.15/.16) not.
    config.cluster.masquerade_subnet_v4 = "169.254.0.0/28".parse().unwrap();
    let manager = Manager::start_with(&cluster, config);
    for name in ["a", "b"] {
        cluster.create(
            Kind::Udn,
            Some("blue"),
            l3_udn("blue", name, "Secondary", &["10.10.0.0/16"]),
        );
        wait_condition(
            &cluster,
            Kind::Udn,
            Some("blue"),
            name,
            (
                "True",
                "NetworkAttachmentDefinitionCreated",
                "NetworkAttachmentDefinition has been created",
            ),
        )
        .await;
    }
    cluster.create(
        Kind::Udn,
        Some("blue"),
        l3_udn("blue", "c", "Secondary", &["10.10.0.0/16"]),
    );
    let message = "failed to allocate network ID for network blue_c: the masquerade-ips pool is \
                   exhausted: network IDs 1..=2 are all taken (bounded by the masquerade subnet \
                   169.254.0.0/28 (2 IPs per network))";
    wait_condition(
        &cluster,
        Kind::Udn,
        Some("blue"),
        "c",
        ("False", "NetworkPoolExhausted", message),
    )
    .await;
    let event = eventually("the pool-exhausted event", || {
        cluster
            .events_for("c")
            .into_iter()
            .find(|e| e["reason"] == "NetworkPoolExhausted")
    })
    .await;
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["note"], message);
    assert!(cluster.get(Kind::Nad, Some("blue"), "c").is_none());

    cluster.delete(Kind::Udn, Some("blue"), "a");
    let nad = eventually("c's NAD with the freed ID", || {
        cluster
            .get(Kind::Nad, Some("blue"), "c")
            .filter(|nad| annotation(nad, "k8s.ovn.org/network-id").is_some())
    })
    .await;
    assert_eq!(annotation(&nad, "k8s.ovn.org/network-id").unwrap(), "1");
    wait_condition(
        &cluster,
        Kind::Udn,
        Some("blue"),
        "c",
        (
            "True",
            "NetworkAttachmentDefinitionCreated",
            "NetworkAttachmentDefinition has been created",
        ),
    )
    .await;
    manager.stop().await;
}
