//! Spec §7 items 9-11 for `isolatednet` on `node1`, read back from the server: upstream's
//! `expectedGWEntities` (`expectedGWRouterPlusNATAndStaticRoutes`, `gwRouterOptions`,
//! `gwRouterExternalIDs`, `expectedStaticMACBindings`, `expectedExternalSwitchAndLSPs`).

use udn_ovsdb::testing::OvsdbServer;

use super::copp_uuid;
use super::inputs::CHASSIS;
use super::layer3::{MARKERS, NODE, SWITCH_MARKERS};
use super::read::{find, get, lines, names, nat_lines, pairs, stamped, target_names, targets};

const GR: &str = "GR_isolatednet_node1";

/// Item 9: the gateway router, its NATs and static routes.
pub(crate) fn gateway_router(server: &OvsdbServer) {
    let gr = get(server, "Logical_Router", GR);
    assert_eq!(
        gr.map("options"),
        pairs(&[
            ("lb_force_snat_ip", "router_ip"),
            ("mac_binding_age_threshold", "300"),
            ("chassis", CHASSIS),
            ("always_learn_from_arp_request", "false"),
            ("dynamic_neigh_routers", "false"),
            ("disable_garp_rarp", "true"),
        ])
    );
    // `gwRouterExternalIDs`: the node IPs, then the network's GR masquerade IP.
    let mut upstream = SWITCH_MARKERS.to_vec();
    upstream.extend([
        ("physical_ip", "192.168.126.202"),
        ("physical_ips", "192.168.126.202,169.254.169.13"),
    ]);
    assert_eq!(gr.map("external_ids"), stamped(&upstream, NODE, GR));
    assert_eq!(
        target_names(server, &gr, "load_balancer_group", "Load_Balancer_Group"),
        names(&[
            "isolatednet_clusterLBGroup",
            "isolatednet_clusterRouterLBGroup"
        ])
    );
    assert_eq!(gr.text("copp"), copp_uuid(server));
    assert_eq!(
        target_names(server, &gr, "ports", "Logical_Router_Port"),
        names(&["rtoj-GR_isolatednet_node1", "rtoe-GR_isolatednet_node1"])
    );

    let mut nats: Vec<(String, String, String, String)> = targets(server, &gr, "nat", "NAT")
        .iter()
        .map(|n| {
            assert_eq!(n.map("options"), pairs(&[("stateless", "false")]));
            assert!(!n.has("match"), "NB 7.0.0 has no NAT.match");
            let kind = if n.text("logical_ip") == "100.65.0.4" {
                "join"
            } else {
                "cluster-subnet"
            };
            let id = format!("{GR}:snat:{kind}:{}", n.text("logical_ip"));
            assert_eq!(n.map("external_ids"), stamped(&MARKERS, NODE, &id));
            (
                n.text("type"),
                n.text("external_ip"),
                n.text("logical_ip"),
                n.text("logical_port"),
            )
        })
        .collect();
    nats.sort();
    let snat = |logical: &str| {
        (
            "snat".to_owned(),
            "169.254.169.13".to_owned(),
            logical.to_owned(),
            String::new(),
        )
    };
    assert_eq!(nats, [snat("100.65.0.4"), snat("192.168.0.0/16")]);

    let mut routes: Vec<(String, String, String, String)> =
        targets(server, &gr, "static_routes", "Logical_Router_Static_Route")
            .iter()
            .map(|r| {
                let id = format!("{GR}:route:dst-ip:{}", r.text("ip_prefix"));
                assert_eq!(r.map("external_ids"), stamped(&MARKERS, NODE, &id));
                (
                    r.text("ip_prefix"),
                    r.text("nexthop"),
                    r.text("output_port"),
                    r.text("policy"),
                )
            })
            .collect();
    routes.sort();
    let rtoe = "rtoe-GR_isolatednet_node1".to_owned();
    // The cluster subnet goes to the cluster router's join IP `100.65.0.1`: upstream's test
    // shows `169.254.169.13` there only because it overrides the controller's
    // `ovnClusterLRPToJoinIfAddrs` with `dummyJoinIPs()`.
    assert_eq!(
        routes,
        [
            (
                "0.0.0.0/0".into(),
                "192.168.126.1".into(),
                rtoe.clone(),
                String::new()
            ),
            (
                "169.254.169.0/24".into(),
                "169.254.169.4".into(),
                rtoe,
                String::new()
            ),
            (
                "192.168.0.0/16".into(),
                "100.65.0.1".into(),
                String::new(),
                String::new()
            ),
        ]
    );
    assert_eq!(
        lines(&server.nbctl(&["lr-route-list", GR]).unwrap()),
        [
            "IPv4 Routes",
            "Route Table <main>:",
            "169.254.169.0/24 169.254.169.4 dst-ip rtoe-GR_isolatednet_node1",
            "192.168.0.0/16 100.65.0.1 dst-ip",
            "0.0.0.0/0 192.168.126.1 dst-ip rtoe-GR_isolatednet_node1",
        ]
    );
    assert_eq!(
        nat_lines(server, GR),
        [
            "snat 169.254.169.13 100.65.0.4",
            "snat 169.254.169.13 192.168.0.0/16"
        ]
    );
}

/// Item 10: the gateway router's ports and the static MAC bindings on `rtoe-`.
pub(crate) fn gateway_router_ports(server: &OvsdbServer) {
    let rtoj = get(server, "Logical_Router_Port", "rtoj-GR_isolatednet_node1");
    assert_eq!(rtoj.set("networks"), names(&["100.65.0.4/16"]));
    assert_eq!(rtoj.text("mac"), "0a:58:64:41:00:04");
    assert_eq!(rtoj.map("options"), pairs(&[("gateway_mtu", "1400")]));
    assert_eq!(
        rtoj.map("external_ids"),
        stamped(&MARKERS, NODE, "rtoj-GR_isolatednet_node1")
    );
    let rtoe = get(server, "Logical_Router_Port", "rtoe-GR_isolatednet_node1");
    assert_eq!(
        rtoe.set("networks"),
        names(&["192.168.126.202/24", "169.254.169.13/32"])
    );
    // The MAC of the first network (the node IP), here also the bridge MAC.
    assert_eq!(rtoe.text("mac"), "0a:58:c0:a8:7e:ca");
    assert!(rtoe.map("options").is_empty());
    assert_eq!(
        rtoe.map("external_ids"),
        stamped(&MARKERS, NODE, "rtoe-GR_isolatednet_node1")
    );
    let mut bindings: Vec<(String, String, String)> = find(
        server,
        "Static_MAC_Binding",
        &["logical_port=rtoe-GR_isolatednet_node1"],
    )
    .iter()
    .map(|b| (b.text("ip"), b.text("mac"), b.text("override_dynamic_mac")))
    .collect();
    bindings.sort();
    assert_eq!(
        bindings,
        [
            (
                "169.254.169.2".into(),
                "0a:58:a9:fe:a9:02".into(),
                "true".into()
            ),
            (
                "169.254.169.4".into(),
                "0a:58:a9:fe:a9:04".into(),
                "true".into()
            ),
        ]
    );
}

/// Item 11: the external switch and its localnet and router ports.
pub(crate) fn external_switch(server: &OvsdbServer) {
    let ext = get(server, "Logical_Switch", "ext_isolatednet_node1");
    assert_eq!(
        ext.map("external_ids"),
        stamped(&SWITCH_MARKERS, NODE, "ext_isolatednet_node1")
    );
    assert_eq!(
        target_names(server, &ext, "ports", "Logical_Switch_Port"),
        names(&["breth0_isolatednet_node1", "etor-GR_isolatednet_node1"])
    );
    let localnet = get(server, "Logical_Switch_Port", "breth0_isolatednet_node1");
    assert_eq!(localnet.text("type"), "localnet");
    assert_eq!(localnet.set("addresses"), names(&["unknown"]));
    assert_eq!(
        localnet.map("options"),
        pairs(&[("network_name", "physnet")])
    );
    assert_eq!(localnet.text("tag_request"), "");
    assert_eq!(
        localnet.map("external_ids"),
        stamped(&MARKERS, NODE, "breth0_isolatednet_node1")
    );
    let etor = get(server, "Logical_Switch_Port", "etor-GR_isolatednet_node1");
    assert_eq!(etor.text("type"), "router");
    assert_eq!(etor.set("addresses"), names(&["0a:58:c0:a8:7e:ca"]));
    assert_eq!(
        etor.map("options"),
        pairs(&[("router-port", "rtoe-GR_isolatednet_node1")])
    );
    assert_eq!(
        etor.map("external_ids"),
        stamped(&MARKERS, NODE, "etor-GR_isolatednet_node1")
    );
}
