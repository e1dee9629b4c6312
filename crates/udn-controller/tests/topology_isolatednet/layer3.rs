//! Spec §7 items 2-8, 12 and 13 for `isolatednet` on `node1`, read back from the server:
//! upstream's `expectedLayer3EgressEntities`, `expectedJoinSwitchAndLSPs`,
//! `allowAllFromMgmtPort` and the node switch, transit switch and port groups of
//! `multihoming_test.go`'s expectation machine (the gateway, items 9-11: `gateway.rs`).

use std::collections::BTreeSet;

use udn_ovsdb::testing::OvsdbServer;

use super::inputs::{CHASSIS, NAD};
use super::read::{Owner, get, lines, names, nat_lines, pairs, stamped, target_names, targets};
use super::{assert_no_column, copp_uuid};

pub(crate) const CONTROLLER: &str = "isolatednet-network-controller";
const CR: &str = "isolatednet_ovn_cluster_router";
/// `standardNonDefaultNetworkExtIDs`.
pub(crate) const MARKERS: [(&str, &str); 2] = [
    ("k8s.ovn.org/network", "isolatednet"),
    ("k8s.ovn.org/topology", "layer3"),
];
/// `standardNonDefaultNetworkExtIDsForLogicalSwitch` (and `GenerateExternalIDsForSwitchOrRouter`).
pub(crate) const SWITCH_MARKERS: [(&str, &str); 3] = [
    ("k8s.ovn.org/network", "isolatednet"),
    ("k8s.ovn.org/role", "primary"),
    ("k8s.ovn.org/topology", "layer3"),
];
const CLUSTER: Owner<'static> = Owner {
    controller: CONTROLLER,
    owner_type: "Cluster",
    name: "isolatednet",
};
pub(crate) const NODE: Owner<'static> = Owner {
    controller: CONTROLLER,
    owner_type: "Node",
    // Node units are `<network>/<node>`.
    name: "isolatednet/node1",
};

/// Item 2: the cluster router.
pub(crate) fn cluster_router(server: &OvsdbServer) {
    let cr = get(server, "Logical_Router", CR);
    let mut upstream = vec![("k8s-cluster-router", "yes")];
    upstream.extend(MARKERS);
    assert_eq!(cr.map("external_ids"), stamped(&upstream, CLUSTER, CR));
    // Shared gateway: no `ct-commit-all` (local gateway only).
    assert_eq!(
        cr.map("options"),
        pairs(&[("always_learn_from_arp_request", "false")])
    );
    assert_eq!(cr.text("copp"), copp_uuid(server));
    assert_eq!(
        target_names(server, &cr, "ports", "Logical_Router_Port"),
        names(&[
            "rtos-isolatednet_node1",
            "rtoj-isolatednet_ovn_cluster_router",
            "isolatednet_rtots-node1",
        ])
    );
    assert!(cr.set("load_balancer_group").is_empty());
}

/// Items 3-5: the cluster router's ports towards the node switch, the join switch and the
/// transit switch (and the transit switch's side).
pub(crate) fn cluster_router_ports(server: &OvsdbServer) {
    let rtos = get(server, "Logical_Router_Port", "rtos-isolatednet_node1");
    assert_eq!(rtos.set("networks"), names(&["192.168.1.1/24"]));
    assert_eq!(rtos.text("mac"), "0a:58:c0:a8:01:01");
    assert_eq!(rtos.map("options"), pairs(&[("gateway_mtu", "1400")]));
    // Upstream writes no external_ids here: only the engine's stamps.
    assert_eq!(
        rtos.map("external_ids"),
        stamped(&[], NODE, "rtos-isolatednet_node1")
    );
    let chassis = targets(server, &rtos, "gateway_chassis", "Gateway_Chassis");
    assert_eq!(chassis.len(), 1);
    let gc_name = format!("rtos-isolatednet_node1-{CHASSIS}");
    assert_eq!(chassis[0].text("name"), gc_name);
    assert_eq!(chassis[0].text("chassis_name"), CHASSIS);
    assert_eq!(chassis[0].text("priority"), "1");
    assert_eq!(chassis[0].map("external_ids"), stamped(&[], NODE, &gc_name));

    let rtoj = get(
        server,
        "Logical_Router_Port",
        "rtoj-isolatednet_ovn_cluster_router",
    );
    assert_eq!(rtoj.set("networks"), names(&["100.65.0.1/16"]));
    assert_eq!(rtoj.text("mac"), "0a:58:64:41:00:01");
    assert!(rtoj.map("options").is_empty());
    assert_eq!(
        rtoj.map("external_ids"),
        stamped(&MARKERS, CLUSTER, "rtoj-isolatednet_ovn_cluster_router")
    );

    let rtots = get(server, "Logical_Router_Port", "isolatednet_rtots-node1");
    assert_eq!(rtots.set("networks"), names(&["100.88.0.3/16"]));
    assert_eq!(rtots.text("mac"), "0a:58:64:58:00:03");
    assert_eq!(rtots.map("options"), pairs(&[("mcast_flood", "true")]));
    assert_eq!(
        rtots.map("external_ids"),
        stamped(&[], NODE, "isolatednet_rtots-node1")
    );

    let ts = get(server, "Logical_Switch", "isolatednet_transit_switch");
    assert_eq!(
        ts.map("external_ids"),
        stamped(&SWITCH_MARKERS, CLUSTER, "isolatednet_transit_switch")
    );
    assert_eq!(
        ts.map("other_config"),
        pairs(&[
            ("mcast_querier", "false"),
            ("mcast_flood_unregistered", "true"),
            ("interconn-ts", "isolatednet_transit_switch"),
            // 16711683 + network ID 2.
            ("requested-tnl-key", "16711685"),
            ("mcast_snoop", "true"),
        ])
    );
    assert_eq!(
        target_names(server, &ts, "ports", "Logical_Switch_Port"),
        names(&["isolatednet_tstor-node1"])
    );
    let tstor = get(server, "Logical_Switch_Port", "isolatednet_tstor-node1");
    assert_eq!(tstor.text("type"), "router");
    assert_eq!(tstor.set("addresses"), names(&["router"]));
    assert_eq!(
        tstor.map("options"),
        pairs(&[
            ("router-port", "isolatednet_rtots-node1"),
            ("requested-tnl-key", "4"),
        ])
    );
    assert_eq!(
        tstor.map("external_ids"),
        stamped(&[("node", "node1")], NODE, "isolatednet_tstor-node1")
    );
}

/// Item 6: the management port's masquerade SNAT on the cluster router.
pub(crate) fn masquerade_snat(server: &OvsdbServer) {
    let cr = get(server, "Logical_Router", CR);
    let nats = targets(server, &cr, "nat", "NAT");
    assert_eq!(nats.len(), 1);
    let snat = &nats[0];
    assert_eq!(snat.text("type"), "snat");
    assert_eq!(snat.text("external_ip"), "169.254.169.14");
    assert_eq!(snat.text("logical_ip"), "192.168.1.0/24");
    assert_eq!(snat.text("logical_port"), "rtos-isolatednet_node1");
    assert_eq!(snat.map("options"), pairs(&[("stateless", "false")]));
    assert_eq!(
        snat.map("external_ids"),
        stamped(
            &MARKERS,
            NODE,
            "isolatednet_ovn_cluster_router:snat:masquerade:192.168.1.0/24"
        )
    );
    // Upstream's `match` "eth.dst == 0a:58:c0:a8:01:02" (the management port's MAC) needs
    // `NAT.match`, which NB schema 7.0.0 does not have: the column is absent here and
    // nothing is written in its place.
    assert!(!snat.has("match"));
    assert_no_column(server, "NAT", &snat.uuid(), "match");
    assert_eq!(
        nat_lines(server, CR),
        ["snat 169.254.169.14 192.168.1.0/24"]
    );
}

/// Item 7: the cluster router's static routes (shared gateway: the host subnet's src-ip
/// route goes to the gateway router's join IP).
pub(crate) fn cluster_router_routes(server: &OvsdbServer) {
    let cr = get(server, "Logical_Router", CR);
    let mut routes: Vec<(String, String, String, String)> =
        targets(server, &cr, "static_routes", "Logical_Router_Static_Route")
            .iter()
            .map(|r| {
                let policy = r.text("policy");
                let prefix = r.text("ip_prefix");
                let id = format!(
                    "{CR}:route:{}:{prefix}",
                    if policy.is_empty() { "dst-ip" } else { &policy }
                );
                assert_eq!(r.map("external_ids"), stamped(&MARKERS, NODE, &id));
                (policy, prefix, r.text("nexthop"), r.text("output_port"))
            })
            .collect();
    routes.sort();
    assert_eq!(
        routes,
        [
            (
                String::new(),
                "100.65.0.4".into(),
                "100.65.0.4".into(),
                String::new()
            ),
            (
                "src-ip".into(),
                "192.168.1.0/24".into(),
                "100.65.0.4".into(),
                String::new()
            ),
        ]
    );
    assert_eq!(
        lines(&server.nbctl(&["lr-route-list", CR]).unwrap()),
        [
            "IPv4 Routes",
            "Route Table <main>:",
            "100.65.0.4 100.65.0.4 dst-ip",
            "192.168.1.0/24 100.65.0.4 src-ip",
        ]
    );
}

/// Item 8: the two 1004 reroute policies to the management port.
pub(crate) fn cluster_router_policies(server: &OvsdbServer) {
    let cr = get(server, "Logical_Router", CR);
    let mut policies: Vec<(String, String, String, BTreeSet<String>)> =
        targets(server, &cr, "policies", "Logical_Router_Policy")
            .iter()
            .map(|p| {
                let id = format!("{CR}:policy:1004:{}", p.text("match"));
                assert_eq!(p.map("external_ids"), stamped(&MARKERS, NODE, &id));
                assert!(p.map("options").is_empty());
                (
                    p.text("priority"),
                    p.text("action"),
                    p.text("match"),
                    p.set("nexthops"),
                )
            })
            .collect();
    policies.sort();
    let mgmt = names(&["192.168.1.2"]);
    assert_eq!(
        policies,
        [
            (
                "1004".into(),
                "reroute".into(),
                "inport == \"rtos-isolatednet_node1\" && ip4.dst == 169.254.169.13 /* isolatednet_node1 */".into(),
                mgmt.clone()
            ),
            (
                "1004".into(),
                "reroute".into(),
                "inport == \"rtos-isolatednet_node1\" && ip4.dst == 192.168.126.202 /* isolatednet_node1 */".into(),
                mgmt
            ),
        ]
    );
    assert_eq!(
        lines(&server.nbctl(&["lr-policy-list", CR]).unwrap()),
        [
            "Routing Policies",
            "1004 inport == \"rtos-isolatednet_node1\" && ip4.dst == 169.254.169.13 /* isolatednet_node1 */ reroute 192.168.1.2",
            "1004 inport == \"rtos-isolatednet_node1\" && ip4.dst == 192.168.126.202 /* isolatednet_node1 */ reroute 192.168.1.2",
        ]
    );
}

/// Item 12: the join switch and its two router ports.
pub(crate) fn join_switch(server: &OvsdbServer) {
    let join = get(server, "Logical_Switch", "isolatednet_join");
    // No role on the join switch.
    assert_eq!(
        join.map("external_ids"),
        stamped(&MARKERS, CLUSTER, "isolatednet_join")
    );
    assert_eq!(
        target_names(server, &join, "ports", "Logical_Switch_Port"),
        names(&[
            "jtor-GR_isolatednet_node1",
            "jtor-isolatednet_ovn_cluster_router"
        ])
    );
    let to_gr = get(server, "Logical_Switch_Port", "jtor-GR_isolatednet_node1");
    assert_eq!(to_gr.text("type"), "router");
    assert_eq!(to_gr.set("addresses"), names(&["router"]));
    assert_eq!(
        to_gr.map("options"),
        pairs(&[("router-port", "rtoj-GR_isolatednet_node1")])
    );
    assert_eq!(
        to_gr.map("external_ids"),
        stamped(&MARKERS, NODE, "jtor-GR_isolatednet_node1")
    );
    let to_cr = get(
        server,
        "Logical_Switch_Port",
        "jtor-isolatednet_ovn_cluster_router",
    );
    assert_eq!(to_cr.text("type"), "router");
    assert_eq!(to_cr.set("addresses"), names(&["router"]));
    assert_eq!(
        to_cr.map("options"),
        pairs(&[("router-port", "rtoj-isolatednet_ovn_cluster_router")])
    );
    // Upstream: no external_ids; only the stamps.
    assert_eq!(
        to_cr.map("external_ids"),
        stamped(&[], CLUSTER, "jtor-isolatednet_ovn_cluster_router")
    );
}

/// Item 13 and the node switch: the switch, its router, management and pod ports, the
/// management port's allow ACL, and the network's port groups.
pub(crate) fn node_switch(server: &OvsdbServer) {
    let ls = get(server, "Logical_Switch", "isolatednet_node1");
    assert_eq!(
        ls.map("external_ids"),
        stamped(&SWITCH_MARKERS, NODE, "isolatednet_node1")
    );
    assert_eq!(
        ls.map("other_config"),
        pairs(&[("subnet", "192.168.1.0/24")])
    );
    assert_eq!(
        target_names(server, &ls, "load_balancer_group", "Load_Balancer_Group"),
        names(&[
            "isolatednet_clusterLBGroup",
            "isolatednet_clusterSwitchLBGroup"
        ])
    );
    let pod_port = "namespace1.blue.net_namespace1_myPod";
    assert_eq!(
        target_names(server, &ls, "ports", "Logical_Switch_Port"),
        names(&["stor-isolatednet_node1", "k8s-isolatednet_node1", pod_port])
    );
    let stor = get(server, "Logical_Switch_Port", "stor-isolatednet_node1");
    assert_eq!(stor.text("type"), "router");
    assert_eq!(stor.set("addresses"), names(&["router"]));
    assert_eq!(
        stor.map("options"),
        pairs(&[("router-port", "rtos-isolatednet_node1")])
    );
    assert_eq!(
        stor.map("external_ids"),
        stamped(&[], NODE, "stor-isolatednet_node1")
    );
    let mgmt = get(server, "Logical_Switch_Port", "k8s-isolatednet_node1");
    assert_eq!(
        mgmt.set("addresses"),
        names(&["0a:58:c0:a8:01:02 192.168.1.2"])
    );
    assert_eq!(mgmt.text("type"), "");
    assert!(mgmt.map("options").is_empty());
    assert_eq!(
        mgmt.map("external_ids"),
        stamped(&[], NODE, "k8s-isolatednet_node1")
    );

    let pod = get(server, "Logical_Switch_Port", pod_port);
    let address = "0a:58:c0:a8:01:03 192.168.1.3";
    assert_eq!(pod.set("addresses"), names(&[address]));
    assert_eq!(pod.set("port_security"), names(&[address]));
    assert_eq!(
        pod.map("options"),
        pairs(&[("requested-chassis", CHASSIS), ("iface-id-ver", "myPod")])
    );
    let pod_owner = Owner {
        controller: CONTROLLER,
        owner_type: "Pod",
        name: pod_port,
    };
    assert_eq!(
        pod.map("external_ids"),
        stamped(
            &[
                ("pod", "true"),
                ("namespace", "namespace1"),
                ("k8s.ovn.org/network", "isolatednet"),
                ("k8s.ovn.org/nad", NAD),
                ("k8s.ovn.org/topology", "layer3"),
            ],
            pod_owner,
            pod_port
        )
    );

    let acls = targets(server, &ls, "acls", "ACL");
    assert_eq!(acls.len(), 1);
    let acl = &acls[0];
    assert_eq!(acl.text("action"), "allow-related");
    assert_eq!(acl.text("direction"), "to-lport");
    assert_eq!(acl.text("priority"), "1001");
    assert_eq!(acl.text("meter"), "acl-logging");
    assert_eq!(acl.text("match"), "ip4.src==192.168.1.2");
    assert_eq!(acl.text("log"), "false");
    assert_eq!(acl.text("name"), "");
    assert_eq!(acl.text("severity"), "");
    assert!(acl.map("options").is_empty());
    // `allowAllFromMgmtPort`'s external_ids are dbIDs: the engine's stamps add only
    // `k8s.ovn.org/owner` (the node's unit; the row keeps upstream's owner type).
    let id = "isolatednet-network-controller:NetpolNode:isolatednet_node1:192.168.1.2";
    let netpol_node = Owner {
        owner_type: "NetpolNode",
        ..NODE
    };
    assert_eq!(
        acl.map("external_ids"),
        stamped(
            &[
                ("k8s.ovn.org/name", "isolatednet_node1"),
                ("ip", "192.168.1.2"),
                ("k8s.ovn.org/id", id),
                ("k8s.ovn.org/owner-controller", CONTROLLER),
                ("k8s.ovn.org/owner-type", "NetpolNode"),
            ],
            netpol_node,
            id
        )
    );
    // Upstream's `Tier: 2` needs `ACL.tier`, which NB schema 7.0.0 does not have.
    assert!(!acl.has("tier"));
    assert_no_column(server, "ACL", &acl.uuid(), "tier");
    assert_eq!(
        lines(&server.nbctl(&["acl-list", "isolatednet_node1"]).unwrap()),
        ["to-lport 1001 (ip4.src==192.168.1.2) allow-related"]
    );

    port_groups(server);
}

/// The network's `clusterPortGroup` (holding the management port) and `clusterRtrPortGroup`,
/// named `HashForOVN` of their dbIDs; its three load balancer groups.
fn port_groups(server: &OvsdbServer) {
    for (name, base, ports) in [
        (
            "a14144725215374227681",
            "clusterPortGroup",
            names(&["k8s-isolatednet_node1"]),
        ),
        ("a9260434276805420823", "clusterRtrPortGroup", names(&[])),
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
        // Upstream's test also puts the network policy hairpin ACLs on `clusterPortGroup`;
        // network policy is not implemented and the `acls` column is left to it.
        assert_eq!(
            target_names(server, &pg, "ports", "Logical_Switch_Port"),
            ports
        );
    }
    for group in [
        "isolatednet_clusterLBGroup",
        "isolatednet_clusterSwitchLBGroup",
        "isolatednet_clusterRouterLBGroup",
    ] {
        assert!(
            get(server, "Load_Balancer_Group", group)
                .set("load_balancer")
                .is_empty()
        );
    }
}
