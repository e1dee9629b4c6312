//! What a network's rows cost in a real zone (ignored: a measurement, run by hand and read
//! in `docs/topology-costs.md`). One lab node (`node1`, its own zone: NB, SB, northd,
//! ovn-controller, userspace OVS) with the in-process controller, remote nodes as node
//! annotations only. `COSTS_NETWORKS` picks the networks (`blue`: primary Layer3, `green`:
//! primary Layer2; empty: the default network alone), `COSTS_COUNT` how many of each (1),
//! `COSTS_REMOTES` the remote nodes every network is on (2).
//! The test converges, waits for `hv_cfg`, stops the controller and leaves the lab running
//! (`Lab::detach`): it prints the sockets for `ovn-nbctl`/`ovn-sbctl`/`ovs-ofctl`, so
//! per-datapath counts and row-kind deltas are taken by hand on a quiet zone.
//!
//! ```text
//! COSTS_NETWORKS=blue cargo test -p udn-controller --test topology_costs -- --ignored --nocapture
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;
use support::*;
use udn_api::annotations::{MacAddress, PodNetworkAnnotation, PodNetworkRole};
use udn_controller::model::ZoneConfig;
use udn_ovn_lab::{Lab, LabConfig, PodSpec};
use udn_test_support::TestCluster;

const WAIT: Duration = Duration::from_secs(60);

fn layer2_entry(ip: &str, tunnel_id: u32) -> PodNetworkAnnotation {
    let ip: ipnetwork::IpNetwork = ip.parse().unwrap();
    let gw: std::net::IpAddr = "10.100.0.1".parse().unwrap();
    let std::net::IpAddr::V4(v4) = ip.ip() else {
        panic!()
    };
    let [a, b, c, d] = v4.octets();
    PodNetworkAnnotation {
        ip_addresses: vec![ip],
        mac_address: MacAddress([0x0a, 0x58, a, b, c, d]),
        gateway_ips: vec![gw],
        routes: Vec::new(),
        ipv6_lla_gateway_ip: None,
        tunnel_id,
        role: Some(PodNetworkRole::Primary),
    }
}

/// The zone configuration of the measurement: the default savings, or upstream's exact rows
/// with `COSTS_UPSTREAM=1`.
fn config(zone: &str) -> ZoneConfig {
    if std::env::var("COSTS_UPSTREAM").is_ok_and(|v| v == "1") {
        zone_config(zone)
    } else {
        lean_zone_config(zone)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run by hand, leaves a lab running"]
async fn one_network_in_a_real_zone() {
    let kinds = std::env::var("COSTS_NETWORKS").unwrap_or_default();
    let count: u32 = std::env::var("COSTS_COUNT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    // (namespace, Layer2, network ID): `blue`, `blue1`, ... and `green`, `green1`, ...
    let networks: Vec<(String, bool, u32)> = kinds
        .split(',')
        .filter(|s| !s.is_empty())
        .flat_map(|kind| {
            (0..count).map(move |i| {
                let ns = if i == 0 {
                    kind.to_owned()
                } else {
                    format!("{kind}{i}")
                };
                match kind {
                    "blue" => (ns, false, 1 + i),
                    "green" => (ns, true, 1000 + i),
                    other => panic!("unknown network {other}"),
                }
            })
        })
        .collect();
    let remotes: u32 = std::env::var("COSTS_REMOTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    if let Ok(dir) = std::env::var("COSTS_TEAR_DOWN") {
        udn_ovn_lab::tear_down(std::path::Path::new(&dir)).unwrap();
        return;
    }
    // Outside the temp dir: a later lab's stale-lab sweep would take it down.
    let base = std::env::var("COSTS_DIR").unwrap_or_else(|_| "/var/tmp/udn-costs".to_owned());
    std::fs::create_dir_all(&base).unwrap();
    let lab = Lab::start(LabConfig::with_nodes(1).run_base(base.into())).expect("lab starts");
    let cluster = TestCluster::new();
    let client = cluster.client();
    let node1 = &lab.nodes()[0];
    let subnets = |index: u32| {
        let mut subnets =
            BTreeMap::from([("default".to_owned(), vec![format!("10.244.{index}.0/24")])]);
        for (ns, _, _) in networks.iter().filter(|n| !n.1) {
            subnets.insert(
                format!("{ns}_net"),
                vec![format!("10.128.{}.0/24", index + 1)],
            );
        }
        subnets
    };
    let tunnel_ids = |index: u32| {
        networks
            .iter()
            .filter(|n| n.1)
            .map(|(ns, _, _)| (format!("{ns}_net"), index + 1))
            .collect::<BTreeMap<_, _>>()
    };
    put_node(
        &client,
        &NodeAnnotations {
            name: "node1".to_owned(),
            id: 2,
            chassis: node1.chassis_id().to_owned(),
            node_cidr: format!("{}/{}", node1.node_ip(), node1.node_prefix_len()),
            node_ip: node1.node_ip().to_string(),
            mac: node1.breth0_mac().to_owned(),
            next_hop: node1.next_hop().to_string(),
            subnets: subnets(0),
            layer2_tunnel_ids: tunnel_ids(0),
        },
    )
    .await;
    for k in 1..=remotes {
        let mut remote = node(&format!("node{}", k + 1), k + 2, &[]);
        remote.subnets = subnets(k);
        remote.layer2_tunnel_ids = tunnel_ids(k);
        put_node(&client, &remote).await;
    }
    let mut zone = start_zone(
        &cluster,
        config("node1"),
        node1.nb_endpoint(),
        node1.sb_endpoint(),
    )
    .await;
    for (ns, layer2, id) in &networks {
        let (ns, layer2, id) = (ns.as_str(), *layer2, *id);
        let body = if layer2 {
            json!({"topology": "layer2", "role": "primary", "subnets": "10.100.0.0/24", "mtu": 1400})
        } else {
            json!({"topology": "layer3", "role": "primary", "subnets": "10.128.0.0/16/24", "mtu": 1400})
        };
        put_namespace(&client, ns, true).await;
        put_nad(&client, nad_json(ns, "net", &format!("{ns}_net"), body, id)).await;
        put_pod(&client, ns, "p1", "node1", json!({})).await;
        for k in 1..=remotes {
            put_pod(
                &client,
                ns,
                &format!("r{k}"),
                &format!("node{}", k + 1),
                json!({}),
            )
            .await;
            if layer2 {
                let ip = format!("10.100.0.{}/24", 10 + k);
                annotate_layer2(
                    &client,
                    ns,
                    &format!("r{k}"),
                    &format!("{ns}/net"),
                    layer2_entry(&ip, 10 + k),
                )
                .await;
            }
        }
        if layer2 {
            annotate_layer2(
                &client,
                ns,
                "p1",
                &format!("{ns}/net"),
                layer2_entry("10.100.0.3/24", 3),
            )
            .await;
        }
        let key = format!("{ns}/net");
        let entries = pod_networks(&client, ns, "p1", &["default", &key], WAIT).await;
        let uid = pod_uid(&client, ns, "p1").await;
        let spec = PodSpec::new(&format!("{ns}-p1"), "node1")
            .interface(interface(
                "eth0",
                "default",
                (ns, "p1", &uid),
                &entries["default"],
            ))
            .interface(interface(
                "ovn-udn1",
                &key,
                (ns, "p1", &uid),
                &entries[key.as_str()],
            ));
        lab.add_pod(spec.disable_ipv6()).unwrap();
        lab.wait_installed(&format!("{ns}-p1"), WAIT).unwrap();
    }
    zone.converged(WAIT).await;
    node1.wait_hv().unwrap();
    zone.stop().await;
    node1.wait_hv().unwrap();
    println!(
        "COSTS nb={} sb={} ovs_rundir={} flows={} lflows={}",
        node1.nb_socket().display(),
        node1.sb_socket().display(),
        node1.ovs_rundir().display(),
        node1.flow_count("br-int").unwrap(),
        node1
            .sbctl(&["--bare", "--columns=_uuid", "list", "Logical_Flow"])
            .unwrap()
            .lines()
            .filter(|l| !l.is_empty())
            .count(),
    );
    println!("COSTS run_dir={}", lab.detach().display());
}
