//! Networks, nodes and topologies coming and going through whole zones: two zones (one per
//! node, each with its own Northbound and Southbound ovsdb-server and its own controller)
//! against one in-memory API server.
//!
//! - deleting a network removes all its rows in every zone and nothing else (full dumps
//!   before and after);
//! - an incompatible network change (MTU, Layer3 -> Layer2) rebuilds the network, a
//!   compatible one (a Layer3 subnet appended) reconciles it in place;
//! - a deleted node leaves its own zone and every other zone (remote units, remote chassis);
//! - (`zone_lifecycle/topologies.rs`) Layer2 secondary, Localnet with VLAN and physical
//!   network name, and a dual-stack cluster: pods get upstream-format annotations and ports
//!   with both addresses.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
#[path = "zone_lifecycle/topologies.rs"]
mod topologies;
mod zone_common;

use std::collections::BTreeSet;

use serde_json::{Value, json};
use support::*;
use udn_api::annotations::{MacAddress, PodNetworkAnnotation, PodNetworkRole};
use udn_ovsdb::engine::{OWNER_CONTROLLER_KEY, OWNER_KEY, OWNER_TYPE_KEY};
use zone_common::*;

/// A primary Layer3 NetConf's network part.
fn layer3(subnets: &str, mtu: u32) -> Value {
    json!({"topology": "layer3", "role": "primary", "subnets": subnets, "mtu": mtu})
}

/// Whether a row belongs to network `network` (owned by its controller, or named after it:
/// pod ports, load balancer groups, static MAC bindings).
fn of_network(row: &DumpRow, network: &str, nad_prefix: &str) -> bool {
    external_id(row, OWNER_CONTROLLER_KEY) == Some(&format!("{network}-network-controller"))
        || mentions(row, network)
        || mentions(row, nad_prefix)
}

/// Node `index` (0 or 1) of the lifecycle tests, with host subnets of the default network
/// and of the Layer3 networks `layer3` (`10.<second octet>.<index + 1>.0/24` each).
fn lifecycle_node(index: u32, layer3: &[(&str, u8)]) -> NodeAnnotations {
    let name = format!("node{}", index + 1);
    let mut node = test_node(&name, index + 2, &[]);
    node.subnets
        .insert("default".into(), vec![format!("10.244.{index}.0/24")]);
    for (network, octet) in layer3 {
        node.subnets.insert(
            (*network).to_owned(),
            vec![format!("10.{octet}.{}.0/24", index + 1)],
        );
    }
    node
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_network_removes_its_rows_in_every_zone_and_nothing_else() {
    let zones = Zones::start(&["node1", "node2"], zone_config).await;
    let client = zones.client.clone();
    for index in 0..2 {
        put_node(
            &client,
            &lifecycle_node(index, &[("blue_net", 128), ("red_net", 129)]),
        )
        .await;
    }
    for (ns, primary) in [
        ("plain", false),
        ("blue", true),
        ("red", true),
        ("green", false),
    ] {
        put_namespace(&client, ns, primary).await;
    }
    put_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "blue_net",
            layer3("10.128.0.0/16/24", 1400),
            1,
        ),
    )
    .await;
    put_nad(
        &client,
        nad_json("red", "net", "red_net", layer3("10.129.0.0/16/24", 1400), 2),
    )
    .await;
    put_nad(
        &client,
        nad_json(
            "green",
            "l2",
            "green_l2",
            json!({"topology": "layer2", "role": "secondary", "subnets": "10.100.0.0/16"}),
            3,
        ),
    )
    .await;
    for (ns, pod, node) in [
        ("plain", "a", "node1"),
        ("plain", "b", "node2"),
        ("blue", "b1", "node1"),
        ("blue", "b2", "node2"),
        ("red", "r1", "node1"),
    ] {
        put_pod(&client, ns, pod, node, json!({})).await;
    }
    for (pod, node, last) in [("g1", "node1", 5u8), ("g2", "node2", 6)] {
        put_pod(
            &client,
            "green",
            pod,
            node,
            json!({"k8s.v1.cni.cncf.io/networks": "l2"}),
        )
        .await;
        let entry = secondary_entry(
            &[&format!("10.100.0.{last}/16")],
            [0x0a, 0x58, 10, 100, 0, last],
            u32::from(last),
        );
        annotate_layer2(&client, "green", pod, "green/l2", entry).await;
    }
    for (ns, pod) in [("blue", "b1"), ("red", "r1"), ("plain", "a")] {
        pod_networks(&client, ns, pod, &["default"], WAIT).await;
    }
    zones.converged().await;

    // Blue (Layer3 primary: gateway, load balancer groups, tens of rows), then green (Layer2
    // secondary: its switch and its pods' ports only).
    for (network, nad, pods, least) in [
        (
            "blue_net",
            ("blue", "net"),
            [("blue", "b1"), ("blue", "b2")],
            30,
        ),
        (
            "green_l2",
            ("green", "l2"),
            [("green", "g1"), ("green", "g2")],
            1,
        ),
    ] {
        let nad_prefix = format!("{}.{}_", nad.0, nad.1);
        let belongs = |_: &str, row: &DumpRow| of_network(row, network, &nad_prefix);
        let with_pods: Vec<Dump> = dumps(&zones).await;
        for (zone, dump) in zones.zones.iter().zip(&with_pods) {
            // Each zone holds the pods' ports: its local ones (and, on Layer2, the remote
            // ones).
            let ports = filter(dump, |table, row| {
                table == "Logical_Switch_Port" && mentions(row, &nad_prefix)
            });
            assert!(count(&ports) >= 1, "{}: no {network} pod ports", zone.name);
        }
        // As cluster-manager's finalizer has it, the pods go first.
        for (ns, pod) in pods {
            delete_pod(&client, ns, pod).await;
        }
        for zone in &zones.zones {
            eventually("the pods' ports are gone", || async {
                let dump = nb_dump(&zone.nb).await;
                count(&filter(&dump, |table, row| {
                    table == "Logical_Switch_Port" && mentions(row, &nad_prefix)
                })) == 0
            })
            .await;
        }
        zones.converged().await;
        let before = dumps(&zones).await;
        delete_nad(&client, nad.0, nad.1).await;
        for zone in &zones.zones {
            eventually("the network's rows are gone", || async {
                count(&filter(&nb_dump(&zone.nb).await, belongs)) == 0
            })
            .await;
        }
        zones.converged().await;
        let after = dumps(&zones).await;
        for ((zone, before), after) in zones.zones.iter().zip(&before).zip(&after) {
            let gone = filter(before, belongs);
            let owned = owned_by(before, &format!("{network}-network-controller"));
            assert!(
                count(&owned) >= least,
                "{}: {network} had only {} rows",
                zone.name,
                count(&owned)
            );
            let groups: BTreeSet<&str> = gone["Load_Balancer_Group"]
                .values()
                .filter_map(|row| row.get("name").map(String::as_str))
                .collect();
            assert!(
                !groups.is_empty(),
                "{}: {network} had no load balancer groups",
                zone.name
            );
            if network == "blue_net" {
                for group in [
                    "clusterLBGroup",
                    "clusterRouterLBGroup",
                    "clusterSwitchLBGroup",
                ] {
                    let name = format!("\"blue_net_{group}\"");
                    assert!(groups.contains(name.as_str()), "{}: {groups:?}", zone.name);
                }
            }
            let rest = filter(before, |t, r| !belongs(t, r));
            assert_eq!(
                &rest,
                after,
                "{}: deleting {network} changed other rows:\n{}",
                zone.name,
                diff(&rest, after)
            );
        }
    }
    zones.stop().await;
}

/// Every zone's Northbound dump, in zone order.
async fn dumps(zones: &Zones) -> Vec<Dump> {
    let mut out = Vec::new();
    for zone in &zones.zones {
        out.push(nb_dump(&zone.nb).await);
    }
    out
}

/// The route of `router` to `prefix` in a dump (its UUID), by the router's `static_routes`.
fn has_route(dump: &Dump, router: &str, prefix: &str) -> bool {
    let Some((_, router)) = named(dump, "Logical_Router", router) else {
        return false;
    };
    let quoted = format!("{prefix:?}");
    dump["Logical_Router_Static_Route"]
        .iter()
        .any(|(uuid, row)| {
            row.get("ip_prefix") == Some(&quoted)
                && router["static_routes"].contains(&format!("{uuid:?}"))
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incompatible_changes_rebuild_a_network_and_compatible_ones_reconcile_in_place() {
    let zones = Zones::start(&["node1"], zone_config).await;
    let client = zones.client.clone();
    for index in 0..2 {
        put_node(&client, &lifecycle_node(index, &[("blue_net", 128)])).await;
    }
    put_namespace(&client, "plain", false).await;
    put_namespace(&client, "blue", true).await;
    put_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "blue_net",
            layer3("10.128.0.0/16/24", 1400),
            1,
        ),
    )
    .await;
    put_pod(&client, "plain", "a", "node1", json!({})).await;
    pod_networks(&client, "plain", "a", &["default"], WAIT).await;
    zones.converged().await;
    let nb = &zones.zone("node1").nb.endpoint();
    let blue = |_: &str, row: &DumpRow| of_network(row, "blue_net", "blue.net_");
    let first = nb_dump_at(nb).await;
    let (router, _) = named(&first, "Logical_Router", "blue_net_ovn_cluster_router").unwrap();
    let router = *router;
    assert!(!has_route(&first, "GR_blue_net_node1", "10.129.0.0/16"));

    // Compatible: a Layer3 subnet appended. Same network, the new range reaches the
    // gateway router; no row is replaced.
    update_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "blue_net",
            layer3("10.128.0.0/16/24,10.129.0.0/16/24", 1400),
            1,
        ),
    )
    .await;
    eventually("the appended subnet is routed", || async {
        has_route(&nb_dump_at(nb).await, "GR_blue_net_node1", "10.129.0.0/16")
    })
    .await;
    zones.converged().await;
    let expanded = nb_dump_at(nb).await;
    assert_eq!(
        named(&expanded, "Logical_Router", "blue_net_ovn_cluster_router").map(|(u, _)| *u),
        Some(router),
        "the cluster router was replaced"
    );
    let kept = owned_by(&first, "blue_net-network-controller");
    let now = owned_by(&expanded, "blue_net-network-controller");
    assert!(
        uuids(&kept).is_subset(&uuids(&now)),
        "rows were replaced by a compatible change:\n{}",
        diff(&kept, &now)
    );
    assert!(
        count(&now) > count(&kept),
        "nothing was added for the new subnet"
    );
    assert_eq!(
        filter(&first, |t, r| !blue(t, r)),
        filter(&expanded, |t, r| !blue(t, r))
    );

    // Incompatible: the MTU. Every owned row is deleted and created again, the same rows.
    update_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "blue_net",
            layer3("10.128.0.0/16/24,10.129.0.0/16/24", 1300),
            1,
        ),
    )
    .await;
    let old = uuids(&now);
    eventually("the network is rebuilt", || async {
        let rebuilt = owned_by(&nb_dump_at(nb).await, "blue_net-network-controller");
        uuids(&rebuilt).is_disjoint(&old) && identities(&rebuilt) == identities(&now)
    })
    .await;
    zones.converged().await;
    let remtu = nb_dump_at(nb).await;
    let rebuilt = owned_by(&remtu, "blue_net-network-controller");
    assert!(
        uuids(&rebuilt).is_disjoint(&old),
        "{}",
        diff(&now, &rebuilt)
    );
    assert_eq!(identities(&rebuilt), identities(&now));
    assert_eq!(
        filter(&expanded, |t, r| !blue(t, r)),
        filter(&remtu, |t, r| !blue(t, r))
    );

    // Incompatible: Layer3 -> Layer2 under the same name (cluster-manager then drops the
    // Layer3 host subnets and hands out the Layer2 gateway tunnel keys).
    update_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "blue_net",
            json!({"topology": "layer2", "role": "primary", "subnets": "10.128.0.0/16", "mtu": 1400}),
            1,
        ),
    )
    .await;
    for index in 0..2 {
        let mut node = lifecycle_node(index, &[]);
        node.layer2_tunnel_ids.insert("blue_net".into(), 20 + index);
        put_node(&client, &node).await;
    }
    let old = uuids(&rebuilt);
    eventually("the network is rebuilt as Layer2", || async {
        let dump = nb_dump_at(nb).await;
        named(&dump, "Logical_Switch", "blue_net_ovn_layer2_switch").is_some()
            && named(&dump, "Logical_Router", "GR_blue_net_node1").is_some()
            && named(&dump, "Logical_Router", "blue_net_ovn_cluster_router").is_none()
    })
    .await;
    zones.converged().await;
    let layer2 = nb_dump_at(nb).await;
    let owned = owned_by(&layer2, "blue_net-network-controller");
    assert!(
        uuids(&owned).is_disjoint(&old),
        "old rows survived:\n{}",
        diff(&rebuilt, &owned)
    );
    for (table, name) in [
        ("Logical_Router", "blue_net_ovn_cluster_router"),
        ("Logical_Switch", "blue_net_node1"),
        ("Logical_Switch", "blue_net_join"),
        ("Logical_Switch", "blue_net_transit_switch"),
        ("Logical_Router_Port", "rtos-blue_net_node1"),
    ] {
        assert!(
            named(&layer2, table, name).is_none(),
            "{table} {name} is left"
        );
    }
    let (_, switch) = named(&layer2, "Logical_Switch", "blue_net_ovn_layer2_switch").unwrap();
    assert!(
        switch["other_config"].contains(r#""subnet"="10.128.0.0/16""#),
        "{switch:?}"
    );
    assert!(
        named(
            &layer2,
            "Logical_Router_Port",
            "rtos-blue_net_ovn_layer2_switch"
        )
        .is_some()
    );
    assert!(
        !has_route(&layer2, "GR_blue_net_node1", "10.129.0.0/16"),
        "a route of the Layer3 ranges is left"
    );
    zones.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_node_leaves_its_own_zone_and_every_other_zone() {
    let zones = Zones::start(&["node1", "node2"], zone_config).await;
    let client = zones.client.clone();
    for index in 0..2 {
        let mut node = lifecycle_node(index, &[("blue_net", 128)]);
        node.layer2_tunnel_ids
            .insert("green_net".into(), 20 + index);
        put_node(&client, &node).await;
    }
    for (ns, primary) in [("plain", false), ("blue", true), ("green", true)] {
        put_namespace(&client, ns, primary).await;
    }
    put_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "blue_net",
            layer3("10.128.0.0/16/24", 1400),
            1,
        ),
    )
    .await;
    put_nad(
        &client,
        nad_json(
            "green",
            "net",
            "green_net",
            json!({"topology": "layer2", "role": "primary", "subnets": "10.200.0.0/16", "mtu": 1400}),
            2,
        ),
    )
    .await;
    for (ns, pod, node) in [
        ("plain", "a", "node1"),
        ("plain", "b", "node2"),
        ("blue", "b1", "node1"),
        ("blue", "b2", "node2"),
        ("green", "g1", "node1"),
        ("green", "g2", "node2"),
    ] {
        put_pod(&client, ns, pod, node, json!({})).await;
    }
    for (pod, last) in [("g1", 5u8), ("g2", 6)] {
        let entry = PodNetworkAnnotation {
            ip_addresses: vec![net(&format!("10.200.0.{last}/16"))],
            mac_address: MacAddress([0x0a, 0x58, 10, 200, 0, last]),
            gateway_ips: vec!["10.200.0.1".parse().unwrap()],
            routes: Vec::new(),
            ipv6_lla_gateway_ip: None,
            tunnel_id: u32::from(last),
            role: Some(PodNetworkRole::Primary),
        };
        annotate_layer2(&client, "green", pod, "green/net", entry).await;
    }
    for (ns, pod) in [
        ("plain", "a"),
        ("plain", "b"),
        ("blue", "b1"),
        ("blue", "b2"),
    ] {
        pod_networks(&client, ns, pod, &["default"], WAIT).await;
    }
    zones.converged().await;
    // Node units are named `<network>/<node>`.
    let by_owner = |dump: &Dump, owner_type: &str, node: &str| {
        count(&filter(dump, |_, row| {
            external_id(row, OWNER_TYPE_KEY) == Some(owner_type)
                && external_id(row, OWNER_KEY)
                    .is_some_and(|owner| owner.ends_with(&format!("/{node}")))
        }))
    };
    let own = nb_dump(&zones.zone("node2").nb).await;
    let other = nb_dump(&zones.zone("node1").nb).await;
    assert!(by_owner(&own, "Node", "node2") > 30, "node2's own units");
    assert!(
        by_owner(&other, "RemoteNode", "node2") > 3,
        "node2's remote units in node1"
    );
    let remote_pod = named(&other, "Logical_Switch_Port", "green.net_green_g2")
        .unwrap()
        .1;
    assert_eq!(remote_pod["type"], r#""remote""#);
    let chassis = |zone: &str| {
        zones
            .zone(zone)
            .sb
            .sbctl(&["--bare", "--columns=name", "list", "Chassis"])
            .unwrap()
    };
    assert!(chassis("node1").contains("chassis-node2"));
    assert!(chassis("node2").contains("chassis-node1"));

    delete_node(&client, "node2").await;
    for zone in &zones.zones {
        eventually("nothing of node2 is left", || async {
            let dump = nb_dump(&zone.nb).await;
            count(&filter(&dump, |_, row| mentions(row, "node2"))) == 0
        })
        .await;
    }
    eventually("node2's chassis is gone from node1's zone", || async {
        !chassis("node1").contains("chassis-node2")
    })
    .await;
    zones.converged().await;
    let own_after = nb_dump(&zones.zone("node2").nb).await;
    let other_after = nb_dump(&zones.zone("node1").nb).await;
    for dump in [&own_after, &other_after] {
        let left = filter(dump, |_, row| {
            mentions(row, "node2") || mentions(row, "172.18.0.3")
        });
        assert_eq!(count(&left), 0, "{left:#?}");
    }
    assert_eq!(by_owner(&own_after, "Node", "node2"), 0);
    assert_eq!(by_owner(&other_after, "RemoteNode", "node2"), 0);
    // Node1's zone keeps everything else; node2's zone keeps node1 as a remote node.
    let not_node2 = |dump: &Dump| identities(&filter(dump, |_, row| !mentions(row, "node2")));
    assert_eq!(not_node2(&other), not_node2(&other_after));
    assert!(by_owner(&own_after, "RemoteNode", "node1") > 3);
    assert!(chassis("node2").contains("chassis-node1"));
    let encaps = zones
        .zone("node1")
        .sb
        .sbctl(&["--bare", "--columns=ip", "list", "Encap"])
        .unwrap();
    assert!(!encaps.contains("172.18.0.3"), "{encaps}");
    zones.stop().await;
}

/// A secondary attachment's entry as cluster-manager writes it (Layer2, Localnet).
fn secondary_entry(ips: &[&str], mac: [u8; 6], tunnel_id: u32) -> PodNetworkAnnotation {
    PodNetworkAnnotation {
        ip_addresses: ips.iter().map(|ip| net(ip)).collect(),
        mac_address: MacAddress(mac),
        gateway_ips: Vec::new(),
        routes: Vec::new(),
        ipv6_lla_gateway_ip: None,
        tunnel_id,
        role: Some(PodNetworkRole::Secondary),
    }
}
