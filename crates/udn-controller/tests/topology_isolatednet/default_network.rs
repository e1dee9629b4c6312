//! The default network's equivalents (node-and-interconnect §4) read back from the server:
//! unprefixed names, no network markers, `arp_proxy` on `stor-node1`, `snat-ct-zone=0` on
//! `GR_node1`, `nat-addresses=router` and `exclude-lb-vips-from-garp=true` on
//! `etor-GR_node1`, the hashed cluster port groups, the COPP and its meters (the UDN
//! isolation rows: `isolation.rs`).

use std::collections::BTreeSet;

use udn_ovsdb::testing::OvsdbServer;

use super::copp_uuid;
use super::inputs::CHASSIS;
use super::read::{
    Owner, find, get, lines, list, names, nat_lines, pairs, stamped, target_names, targets,
};

pub(crate) const CONTROLLER: &str = "default-network-controller";
const CLUSTER: Owner<'static> = Owner {
    controller: CONTROLLER,
    owner_type: "Cluster",
    name: "default",
};
const NODE: Owner<'static> = Owner {
    controller: CONTROLLER,
    owner_type: "Node",
    // Node units are `<network>/<node>`.
    name: "default/node1",
};

fn owned_names(server: &OvsdbServer, table: &str) -> BTreeSet<String> {
    list(server, table)
        .iter()
        .filter(|r| r.map("external_ids")["k8s.ovn.org/owner-controller"] == CONTROLLER)
        .map(|r| r.text("name"))
        .collect()
}

/// Names without a network prefix; no `k8s.ovn.org/network`, `topology` or `role` on any
/// of the default network's rows.
pub(crate) fn names_and_markers(server: &OvsdbServer) {
    assert_eq!(
        owned_names(server, "Logical_Router"),
        names(&["ovn_cluster_router", "GR_node1"])
    );
    assert_eq!(
        owned_names(server, "Logical_Switch"),
        names(&["join", "node1", "ext_node1", "transit_switch"])
    );
    for table in [
        "Logical_Router",
        "Logical_Router_Port",
        "Logical_Switch",
        "Logical_Switch_Port",
        "NAT",
        "Logical_Router_Static_Route",
        "Logical_Router_Policy",
        "ACL",
        "Port_Group",
        "Gateway_Chassis",
        "Copp",
        "Meter",
        "Meter_Band",
    ] {
        for row in list(server, table) {
            let ids = row.map("external_ids");
            if ids["k8s.ovn.org/owner-controller"] != CONTROLLER {
                continue;
            }
            for marker in [
                "k8s.ovn.org/network",
                "k8s.ovn.org/topology",
                "k8s.ovn.org/role",
            ] {
                assert!(!ids.contains_key(marker), "{table} {ids:?}");
            }
        }
    }
}

/// The cluster router, the join switch and their ports; the transit switch.
pub(crate) fn cluster_rows(server: &OvsdbServer) {
    let cr = get(server, "Logical_Router", "ovn_cluster_router");
    assert_eq!(
        cr.map("external_ids"),
        stamped(
            &[("k8s-cluster-router", "yes")],
            CLUSTER,
            "ovn_cluster_router"
        )
    );
    assert_eq!(
        cr.map("options"),
        pairs(&[("always_learn_from_arp_request", "false")])
    );
    assert_eq!(cr.text("copp"), copp_uuid(server));
    assert_eq!(
        target_names(server, &cr, "ports", "Logical_Router_Port"),
        names(&["rtos-node1", "rtoj-ovn_cluster_router", "rtots-node1"])
    );
    let join = get(server, "Logical_Switch", "join");
    assert_eq!(join.map("external_ids"), stamped(&[], CLUSTER, "join"));
    assert_eq!(
        target_names(server, &join, "ports", "Logical_Switch_Port"),
        names(&["jtor-ovn_cluster_router", "jtor-GR_node1"])
    );
    let rtoj = get(server, "Logical_Router_Port", "rtoj-ovn_cluster_router");
    assert_eq!(rtoj.set("networks"), names(&["100.64.0.1/16"]));
    assert_eq!(rtoj.text("mac"), "0a:58:64:40:00:01");
    let jtor = get(server, "Logical_Switch_Port", "jtor-ovn_cluster_router");
    assert_eq!(jtor.text("type"), "router");
    assert_eq!(
        jtor.map("options"),
        pairs(&[("router-port", "rtoj-ovn_cluster_router")])
    );

    let ts = get(server, "Logical_Switch", "transit_switch");
    assert_eq!(
        ts.map("external_ids"),
        stamped(&[], CLUSTER, "transit_switch")
    );
    assert_eq!(ts.map("other_config")["requested-tnl-key"], "16711683");
    assert_eq!(ts.map("other_config")["interconn-ts"], "transit_switch");
    let tstor = get(server, "Logical_Switch_Port", "tstor-node1");
    assert_eq!(
        tstor.map("options"),
        pairs(&[("router-port", "rtots-node1"), ("requested-tnl-key", "4")])
    );
    let rtots = get(server, "Logical_Router_Port", "rtots-node1");
    assert_eq!(rtots.set("networks"), names(&["100.88.0.3/16"]));
    assert_eq!(rtots.text("mac"), "0a:58:64:58:00:03");

    for (name, base, ports) in [
        (
            "a13298398610555951118",
            "clusterPortGroup",
            names(&["k8s-node1"]),
        ),
        ("a4743249366342378346", "clusterRtrPortGroup", names(&[])),
    ] {
        let pg = get(server, "Port_Group", name);
        let id = format!("{CONTROLLER}:Cluster:{base}");
        assert_eq!(
            pg.map("external_ids"),
            stamped(
                &[
                    ("k8s.ovn.org/name", base),
                    ("k8s.ovn.org/id", &id),
                    ("k8s.ovn.org/owner-controller", CONTROLLER),
                    ("k8s.ovn.org/owner-type", "Cluster"),
                ],
                CLUSTER,
                &id
            )
        );
        assert_eq!(
            target_names(server, &pg, "ports", "Logical_Switch_Port"),
            ports
        );
    }
    for group in [
        "clusterLBGroup",
        "clusterSwitchLBGroup",
        "clusterRouterLBGroup",
    ] {
        get(server, "Load_Balancer_Group", group);
    }
}

/// The node switch `node1`, `stor-node1` with `arp_proxy`, `rtos-node1`, the management port
/// and its ACL, the pod's port; the cluster router's routes and policy for the node.
pub(crate) fn node_rows(server: &OvsdbServer) {
    let ls = get(server, "Logical_Switch", "node1");
    assert_eq!(ls.map("external_ids"), stamped(&[], NODE, "node1"));
    assert_eq!(
        ls.map("other_config"),
        pairs(&[("subnet", "10.244.1.0/24")])
    );
    assert_eq!(
        target_names(server, &ls, "load_balancer_group", "Load_Balancer_Group"),
        names(&["clusterLBGroup", "clusterSwitchLBGroup"])
    );
    assert_eq!(
        target_names(server, &ls, "ports", "Logical_Switch_Port"),
        names(&["stor-node1", "k8s-node1", "namespace1_myPod"])
    );
    let stor = get(server, "Logical_Switch_Port", "stor-node1");
    assert_eq!(
        stor.map("options"),
        pairs(&[
            ("router-port", "rtos-node1"),
            (
                "arp_proxy",
                "0a:58:a9:fe:01:01 169.254.1.1 fe80::1 10.244.0.0/16"
            ),
        ])
    );
    let rtos = get(server, "Logical_Router_Port", "rtos-node1");
    assert_eq!(rtos.set("networks"), names(&["10.244.1.1/24"]));
    assert_eq!(rtos.text("mac"), "0a:58:0a:f4:01:01");
    assert_eq!(rtos.map("options"), pairs(&[("gateway_mtu", "1400")]));
    let chassis = targets(server, &rtos, "gateway_chassis", "Gateway_Chassis");
    assert_eq!(chassis.len(), 1);
    assert_eq!(chassis[0].text("name"), format!("rtos-node1-{CHASSIS}"));
    assert_eq!(chassis[0].text("priority"), "1");
    let mgmt = get(server, "Logical_Switch_Port", "k8s-node1");
    assert_eq!(
        mgmt.set("addresses"),
        names(&["0a:58:0a:f4:01:02 10.244.1.2"])
    );
    let pod = get(server, "Logical_Switch_Port", "namespace1_myPod");
    let address = "0a:58:0a:f4:01:03 10.244.1.3";
    assert_eq!(pod.set("addresses"), names(&[address]));
    assert_eq!(pod.set("port_security"), names(&[address]));
    assert_eq!(
        pod.map("options"),
        pairs(&[("requested-chassis", CHASSIS), ("iface-id-ver", "myPod")])
    );
    let pod_owner = Owner {
        owner_type: "Pod",
        name: "namespace1_myPod",
        ..NODE
    };
    assert_eq!(
        pod.map("external_ids"),
        stamped(
            &[("namespace", "namespace1"), ("pod", "true")],
            pod_owner,
            "namespace1_myPod"
        )
    );

    let acls = targets(server, &ls, "acls", "ACL");
    assert_eq!(acls.len(), 1);
    let id = "default-network-controller:NetpolNode:node1:10.244.1.2";
    assert_eq!(
        acls[0].map("external_ids"),
        stamped(
            &[
                ("k8s.ovn.org/name", "node1"),
                ("ip", "10.244.1.2"),
                ("k8s.ovn.org/id", id),
                ("k8s.ovn.org/owner-controller", CONTROLLER),
                ("k8s.ovn.org/owner-type", "NetpolNode"),
            ],
            Owner {
                owner_type: "NetpolNode",
                ..NODE
            },
            id
        )
    );
    assert_eq!(
        lines(&server.nbctl(&["acl-list", "node1"]).unwrap()),
        ["to-lport 1001 (ip4.src==10.244.1.2) allow-related"]
    );
    assert_eq!(
        lines(
            &server
                .nbctl(&["lr-route-list", "ovn_cluster_router"])
                .unwrap()
        ),
        [
            "IPv4 Routes",
            "Route Table <main>:",
            "100.64.0.4 100.64.0.4 dst-ip",
            "10.244.1.0/24 100.64.0.4 src-ip",
        ]
    );
    assert_eq!(
        lines(
            &server
                .nbctl(&["lr-policy-list", "ovn_cluster_router"])
                .unwrap()
        ),
        [
            "Routing Policies",
            "1004 inport == \"rtos-node1\" && ip4.dst == 192.168.126.202 /* node1 */ reroute 10.244.1.2",
        ]
    );
}

/// `GR_node1` (`snat-ct-zone=0`, no `disable_garp_rarp`), its ports, routes, NATs and MAC
/// binding; `ext_node1` with `etor-GR_node1`'s `nat-addresses` and
/// `exclude-lb-vips-from-garp`.
pub(crate) fn gateway_rows(server: &OvsdbServer) {
    let gr = get(server, "Logical_Router", "GR_node1");
    assert_eq!(
        gr.map("options"),
        pairs(&[
            ("always_learn_from_arp_request", "false"),
            ("dynamic_neigh_routers", "false"),
            ("chassis", CHASSIS),
            ("lb_force_snat_ip", "router_ip"),
            ("mac_binding_age_threshold", "300"),
            ("snat-ct-zone", "0"),
        ])
    );
    assert_eq!(
        gr.map("external_ids"),
        stamped(
            &[
                ("physical_ip", "192.168.126.202"),
                ("physical_ips", "192.168.126.202")
            ],
            NODE,
            "GR_node1"
        )
    );
    assert_eq!(
        target_names(server, &gr, "load_balancer_group", "Load_Balancer_Group"),
        names(&["clusterLBGroup", "clusterRouterLBGroup"])
    );
    assert_eq!(gr.text("copp"), copp_uuid(server));
    let rtoj = get(server, "Logical_Router_Port", "rtoj-GR_node1");
    assert_eq!(rtoj.set("networks"), names(&["100.64.0.4/16"]));
    assert_eq!(rtoj.text("mac"), "0a:58:64:40:00:04");
    assert_eq!(rtoj.map("options"), pairs(&[("gateway_mtu", "1400")]));
    let rtoe = get(server, "Logical_Router_Port", "rtoe-GR_node1");
    assert_eq!(rtoe.set("networks"), names(&["192.168.126.202/24"]));
    assert_eq!(rtoe.text("mac"), "0a:58:c0:a8:7e:ca");
    assert_eq!(
        rtoe.map("external_ids"),
        stamped(&[("gateway-physical-ip", "yes")], NODE, "rtoe-GR_node1")
    );

    let ext = get(server, "Logical_Switch", "ext_node1");
    assert_eq!(ext.map("external_ids"), stamped(&[], NODE, "ext_node1"));
    let localnet = get(server, "Logical_Switch_Port", "breth0_node1");
    assert_eq!(localnet.text("type"), "localnet");
    assert_eq!(localnet.set("addresses"), names(&["unknown"]));
    assert_eq!(
        localnet.map("options"),
        pairs(&[("network_name", "physnet")])
    );
    let etor = get(server, "Logical_Switch_Port", "etor-GR_node1");
    assert_eq!(etor.set("addresses"), names(&["0a:58:c0:a8:7e:ca"]));
    assert_eq!(
        etor.map("options"),
        pairs(&[
            ("router-port", "rtoe-GR_node1"),
            ("nat-addresses", "router"),
            ("exclude-lb-vips-from-garp", "true"),
        ])
    );

    let masquerade_route = find(
        server,
        "Logical_Router_Static_Route",
        &[
            "ip_prefix=\"169.254.169.0/24\"",
            "output_port=rtoe-GR_node1",
        ],
    );
    assert_eq!(masquerade_route.len(), 1);
    assert_eq!(
        masquerade_route[0].map("external_ids"),
        stamped(
            &[("k8s.ovn.org/node-masquerade-subnet", "")],
            NODE,
            "GR_node1:route:dst-ip:169.254.169.0/24"
        )
    );
    assert_eq!(
        lines(&server.nbctl(&["lr-route-list", "GR_node1"]).unwrap()),
        [
            "IPv4 Routes",
            "Route Table <main>:",
            "169.254.169.0/24 169.254.169.4 dst-ip rtoe-GR_node1",
            "10.244.0.0/16 100.64.0.1 dst-ip",
            "0.0.0.0/0 192.168.126.1 dst-ip rtoe-GR_node1",
        ]
    );
    assert_eq!(
        nat_lines(server, "GR_node1"),
        [
            "snat 192.168.126.202 10.244.0.0/16",
            "snat 192.168.126.202 100.64.0.4"
        ]
    );
    // Only the dummy next hop: the default network is no primary UDN.
    let bindings = find(
        server,
        "Static_MAC_Binding",
        &["logical_port=rtoe-GR_node1"],
    );
    assert_eq!(bindings.len(), 1);
    assert_eq!(
        (
            bindings[0].text("ip"),
            bindings[0].text("mac"),
            bindings[0].text("override_dynamic_mac")
        ),
        (
            "169.254.169.4".into(),
            "0a:58:a9:fe:a9:04".into(),
            "true".into()
        )
    );
}

/// The COPP `ovnkube-default`: nine `<protocol>-rate-limiter` meters (fair, pktps, one drop
/// band of rate 25), and the `acl-logging` meter (rate 20, `--acl-logging-rate-limit`).
pub(crate) fn copp_and_meters(server: &OvsdbServer) {
    let copps = find(server, "Copp", &["name=ovnkube-default"]);
    assert_eq!(copps.len(), 1);
    let copp = &copps[0];
    let meters = copp.map("meters");
    let protocols = [
        "arp",
        "arp-resolve",
        "bfd",
        "event-elb",
        "icmp4-error",
        "icmp6-error",
        "reject",
        "svc-monitor",
        "tcp-reset",
    ];
    assert_eq!(
        meters,
        protocols
            .iter()
            .map(|p| ((*p).to_owned(), format!("{p}-rate-limiter")))
            .collect()
    );
    let mut expected = meters.values().cloned().collect::<BTreeSet<_>>();
    expected.insert("acl-logging".into());
    assert_eq!(
        list(server, "Meter")
            .iter()
            .map(|m| m.text("name"))
            .collect::<BTreeSet<_>>(),
        expected
    );
    for name in &expected {
        let meter = get(server, "Meter", name);
        assert_eq!(
            (meter.text("fair"), meter.text("unit")),
            ("true".into(), "pktps".into())
        );
        let bands = targets(server, &meter, "bands", "Meter_Band");
        assert_eq!(bands.len(), 1);
        let rate = if name == "acl-logging" { "20" } else { "25" };
        assert_eq!(
            (bands[0].text("action"), bands[0].text("rate")),
            ("drop".into(), rate.into()),
            "{name}"
        );
    }
}
