//! Layer2 secondary, Localnet with a VLAN and a physical network name, and a dual-stack
//! cluster through whole zones: pods get upstream-format annotations and ports with both
//! addresses.

use serde_json::json;
use udn_api::cluster::ClusterConfig;
use udn_controller::model::ZoneConfig;

use super::support::*;
use super::zone_common::*;
use super::{layer3, secondary_entry};

fn dual_stack_config(zone: &str) -> ZoneConfig {
    ZoneConfig {
        cluster: ClusterConfig::default(),
        ..zone_config(zone)
    }
}

/// `column` of the row `record` of `table` as ovn-nbctl prints it.
fn nb_get(zone: &ZoneUnderTest, table: &str, record: &str, column: &str) -> String {
    zone.nb
        .nbctl(&["get", table, record, column])
        .unwrap()
        .trim()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_stack_layer2_and_localnet_pods_get_upstream_annotations_and_ports() {
    let zones = Zones::start(&["node1", "node2"], dual_stack_config).await;
    let client = zones.client.clone();
    for (index, name) in [(1u32, "node1"), (2, "node2")] {
        let node = test_node(
            name,
            index + 1,
            &[
                (
                    "default",
                    &[
                        &format!("10.244.{}.0/24", index - 1),
                        &format!("fd00:10:244:{index}::/64"),
                    ],
                ),
                (
                    "blue_net",
                    &[
                        &format!("10.128.{index}.0/24"),
                        &format!("fd28:0:0:{index}::/64"),
                    ],
                ),
            ],
        );
        put_node_json(&client, node_json(&node, true)).await;
    }
    put_namespace(&client, "blue", true).await;
    put_namespace(&client, "mix", false).await;
    put_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "blue_net",
            layer3("10.128.0.0/16/24,fd28::/48/64", 1400),
            1,
        ),
    )
    .await;
    put_nad(
        &client,
        nad_json(
            "mix",
            "l2",
            "mix_l2",
            json!({"topology": "layer2", "role": "secondary", "subnets": "10.100.0.0/16,fd10:100::/64"}),
            2,
        ),
    )
    .await;
    // A ClusterUserDefinedNetwork's localnet NAD: VLAN 20 on physical network physnet-a.
    put_nad(
        &client,
        nad_json(
            "mix",
            "phys",
            "cluster_udn_phys",
            json!({"topology": "localnet", "role": "secondary",
                "subnets": "192.0.2.0/24,2001:db8:2::/64", "vlanID": 20,
                "physicalNetworkName": "physnet-a"}),
            3,
        ),
    )
    .await;
    put_pod(&client, "blue", "b", "node1", json!({})).await;
    for (pod, node) in [("p1", "node1"), ("p2", "node2")] {
        put_pod(
            &client,
            "mix",
            pod,
            node,
            json!({"k8s.v1.cni.cncf.io/networks": "l2,phys"}),
        )
        .await;
    }

    // The zone's own entries, byte for byte as upstream's ovnkube-controller writes them
    // (dual-stack: no single-stack `ip_address`/`gateway_ip`; routes per family).
    pod_networks(&client, "blue", "b", &["default", "blue/net"], WAIT).await;
    assert_eq!(
        raw_pod_networks(&client, "blue", "b").await.unwrap(),
        concat!(
            r#"{"blue/net":{"ip_addresses":["10.128.1.3/24","fd28:0:0:1::3/64"],"mac_address":"0a:58:0a:80:01:03","#,
            r#""gateway_ips":["10.128.1.1","fd28:0:0:1::1"],"routes":[{"dest":"10.128.0.0/16","nextHop":"10.128.1.1"},"#,
            r#"{"dest":"10.96.0.0/16","nextHop":"10.128.1.1"},{"dest":"100.65.0.0/16","nextHop":"10.128.1.1"},"#,
            r#"{"dest":"fd28::/48","nextHop":"fd28:0:0:1::1"},{"dest":"fd00:10:96::/112","nextHop":"fd28:0:0:1::1"},"#,
            r#"{"dest":"fd99::/64","nextHop":"fd28:0:0:1::1"}],"role":"primary"},"#,
            r#""default":{"ip_addresses":["10.244.0.3/24","fd00:10:244:1::3/64"],"mac_address":"0a:58:0a:f4:00:03","#,
            r#""routes":[{"dest":"10.244.0.0/16","nextHop":"10.244.0.1"},{"dest":"100.64.0.0/16","nextHop":"10.244.0.1"},"#,
            r#"{"dest":"fd00:10:244::/48","nextHop":"fd00:10:244:1::1"},{"dest":"fd98::/64","nextHop":"fd00:10:244:1::1"}],"#,
            r#""role":"infrastructure-locked"}}"#,
        )
    );
    pod_networks(&client, "mix", "p1", &["default"], WAIT).await;
    assert_eq!(
        raw_pod_networks(&client, "mix", "p1").await.unwrap(),
        concat!(
            r#"{"default":{"ip_addresses":["10.244.0.4/24","fd00:10:244:1::4/64"],"mac_address":"0a:58:0a:f4:00:04","#,
            r#""gateway_ips":["10.244.0.1","fd00:10:244:1::1"],"routes":[{"dest":"10.244.0.0/16","nextHop":"10.244.0.1"},"#,
            r#"{"dest":"10.96.0.0/16","nextHop":"10.244.0.1"},{"dest":"169.254.0.5/32","nextHop":"10.244.0.1"},"#,
            r#"{"dest":"100.64.0.0/16","nextHop":"10.244.0.1"},{"dest":"fd00:10:244::/48","nextHop":"fd00:10:244:1::1"},"#,
            r#"{"dest":"fd00:10:96::/112","nextHop":"fd00:10:244:1::1"},{"dest":"fd69::5/128","nextHop":"fd00:10:244:1::1"},"#,
            r#"{"dest":"fd98::/64","nextHop":"fd00:10:244:1::1"}],"role":"primary"}}"#,
        )
    );
    let p2 = pod_networks(&client, "mix", "p2", &["default"], WAIT).await;
    assert_eq!(
        p2["default"].ip_addresses,
        [net("10.244.1.3/24"), net("fd00:10:244:2::3/64")]
    );

    // Cluster-manager's entries for the Layer2 and localnet attachments.
    for (pod, last) in [("p1", 5u8), ("p2", 6)] {
        let l2 = secondary_entry(
            &[
                &format!("10.100.0.{last}/16"),
                &format!("fd10:100::{last}/64"),
            ],
            [0x0a, 0x58, 10, 100, 0, last],
            u32::from(last),
        );
        annotate_layer2(&client, "mix", pod, "mix/l2", l2).await;
        let phys = secondary_entry(
            &[
                &format!("192.0.2.{last}/24"),
                &format!("2001:db8:2::{last}/64"),
            ],
            [0x0a, 0x58, 192, 0, 2, last],
            0,
        );
        annotate_layer2(&client, "mix", pod, "mix/phys", phys).await;
    }
    for zone in &zones.zones {
        eventually("the secondary ports exist", || async {
            let dump = nb_dump(&zone.nb).await;
            ["mix.l2_mix_p1", "mix.l2_mix_p2"]
                .iter()
                .all(|port| named(&dump, "Logical_Switch_Port", port).is_some())
        })
        .await;
    }
    zones.converged().await;

    let zone1 = zones.zone("node1");
    let zone2 = zones.zone("node2");
    for (zone, port, addresses) in [
        (
            zone1,
            "blue_b",
            "0a:58:0a:f4:00:03 10.244.0.3 fd00:10:244:1::3",
        ),
        (
            zone1,
            "blue.net_blue_b",
            "0a:58:0a:80:01:03 10.128.1.3 fd28:0:0:1::3",
        ),
        (
            zone1,
            "k8s-blue_net_node1",
            "0a:58:0a:80:01:02 10.128.1.2 fd28:0:0:1::2",
        ),
        (
            zone1,
            "mix_p1",
            "0a:58:0a:f4:00:04 10.244.0.4 fd00:10:244:1::4",
        ),
        (
            zone2,
            "mix_p2",
            "0a:58:0a:f4:01:03 10.244.1.3 fd00:10:244:2::3",
        ),
        (
            zone1,
            "mix.phys_mix_p1",
            "0a:58:c0:00:02:05 192.0.2.5 2001:db8:2::5",
        ),
        (
            zone2,
            "mix.phys_mix_p2",
            "0a:58:c0:00:02:06 192.0.2.6 2001:db8:2::6",
        ),
    ] {
        let expected = format!(r#"["{addresses}"]"#);
        assert_eq!(
            nb_get(zone, "Logical_Switch_Port", port, "addresses"),
            expected,
            "{port}"
        );
        if !port.starts_with("k8s-") {
            assert_eq!(
                nb_get(zone, "Logical_Switch_Port", port, "port_security"),
                expected,
                "{port}"
            );
        }
    }
    // Layer2: local ports with their tunnel key, the other zone's pods as remote ports bound
    // to their node's chassis, on the one switch.
    for (zone, local, remote, remote_node) in [
        (zone1, ("p1", 5), ("p2", 6), "node2"),
        (zone2, ("p2", 6), ("p1", 5), "node1"),
    ] {
        let port = format!("mix.l2_mix_{}", local.0);
        let last = local.1;
        assert_eq!(
            nb_get(zone, "Logical_Switch_Port", &port, "addresses"),
            format!(r#"["0a:58:0a:64:00:0{last} 10.100.0.{last} fd10:100::{last}"]"#)
        );
        assert_eq!(nb_get(zone, "Logical_Switch_Port", &port, "type"), r#""""#);
        assert_eq!(
            nb_get(
                zone,
                "Logical_Switch_Port",
                &port,
                "options:requested-tnl-key"
            ),
            format!(r#""{last}""#)
        );
        let port = format!("mix.l2_mix_{}", remote.0);
        let last = remote.1;
        assert_eq!(nb_get(zone, "Logical_Switch_Port", &port, "type"), "remote");
        assert_eq!(
            nb_get(zone, "Logical_Switch_Port", &port, "addresses"),
            format!(r#"["0a:58:0a:64:00:0{last} 10.100.0.{last} fd10:100::{last}"]"#)
        );
        assert_eq!(
            nb_get(
                zone,
                "Logical_Switch_Port",
                &port,
                "options:requested-chassis"
            ),
            format!("chassis-{remote_node}")
        );
        let ports = nb_get(zone, "Logical_Switch", "mix_l2_ovn_layer2_switch", "ports");
        for name in [local.0, remote.0] {
            let uuid = zone
                .nb
                .nbctl(&[
                    "get",
                    "Logical_Switch_Port",
                    &format!("mix.l2_mix_{name}"),
                    "_uuid",
                ])
                .unwrap();
            assert!(
                ports.contains(uuid.trim()),
                "{name} not on the Layer2 switch"
            );
        }
        // Localnet: the physical network, the VLAN, local pods only.
        assert_eq!(
            nb_get(
                zone,
                "Logical_Switch_Port",
                "cluster_udn_phys_ovn_localnet_port",
                "type"
            ),
            "localnet"
        );
        assert_eq!(
            nb_get(
                zone,
                "Logical_Switch_Port",
                "cluster_udn_phys_ovn_localnet_port",
                "addresses"
            ),
            r#"[unknown]"#
        );
        assert_eq!(
            nb_get(
                zone,
                "Logical_Switch_Port",
                "cluster_udn_phys_ovn_localnet_port",
                "options:network_name"
            ),
            "physnet-a"
        );
        assert_eq!(
            nb_get(
                zone,
                "Logical_Switch_Port",
                "cluster_udn_phys_ovn_localnet_port",
                "tag_request"
            ),
            "20"
        );
        let remote_localnet = zone
            .nb
            .nbctl(&[
                "--bare",
                "--columns=name",
                "find",
                "Logical_Switch_Port",
                &format!("name=mix.phys_mix_{}", remote.0),
            ])
            .unwrap();
        assert_eq!(
            remote_localnet.trim(),
            "",
            "a remote localnet pod got a port"
        );
    }
    let other_config = nb_get(zone1, "Logical_Switch", "blue_net_node1", "other_config");
    assert!(
        other_config.contains(r#"subnet="10.128.1.0/24""#)
            && other_config.contains(r#"ipv6_prefix="fd28:0:0:1::""#),
        "{other_config}"
    );
    let other_config = nb_get(
        zone1,
        "Logical_Switch",
        "mix_l2_ovn_layer2_switch",
        "other_config",
    );
    assert!(
        other_config.contains(r#"subnet="10.100.0.0/16""#),
        "{other_config}"
    );
    zones.stop().await;
}
