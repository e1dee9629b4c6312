//! Every Northbound table udn writes, as a typed row, inserted into a real ovsdb-server in one
//! transaction (references by named UUID), read back through the client's replica and
//! decoded into the same typed value.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet};

use support::{Txn, check, connect};
use udn_ovsdb::nb::*;
use udn_ovsdb::testing::{OvsdbServer, Vendored};

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn ids(network: &str) -> BTreeMap<String, String> {
    map(&[
        ("k8s.ovn.org/network", network),
        ("k8s.ovn.org/topology", "layer3"),
    ])
}

#[tokio::test]
async fn every_written_table_round_trips_through_the_server() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = connect(&server, Vendored::Nb).await;

    let band = MeterBand {
        action: "drop".into(),
        rate: 25,
        burst_size: 50,
        external_ids: ids("n1"),
        ..Default::default()
    };
    let meter = Meter {
        name: "acl-logging".into(),
        unit: "pktps".into(),
        fair: Some(true),
        external_ids: ids("n1"),
        ..Default::default()
    };
    let copp = Copp {
        name: "ovnkube-default".into(),
        meters: map(&[("arp", "acl-logging"), ("icmp4-error", "acl-logging")]),
        external_ids: map(&[("k8s.ovn.org/owner-controller", "udn")]),
        ..Default::default()
    };
    let address_set = AddressSet {
        name: "a13298398610555951118".into(),
        addresses: set(&["10.128.1.2", "10.128.1.3"]),
        external_ids: map(&[
            ("k8s.ovn.org/owner-controller", "udn"),
            ("k8s.ovn.org/owner-type", "Namespace"),
            ("k8s.ovn.org/id", "udn:Namespace:blue:v4"),
        ]),
        ..Default::default()
    };
    let health_check = LoadBalancerHealthCheck {
        vip: "10.96.0.10:53".into(),
        options: map(&[("interval", "5"), ("timeout", "20")]),
        external_ids: ids("n1"),
        ..Default::default()
    };
    let lb = LoadBalancer {
        name: "Service_blue/dns_TCP_cluster".into(),
        protocol: Some("tcp".into()),
        vips: map(&[("10.96.0.10:53", "10.128.1.5:5353,10.128.2.5:5353")]),
        options: map(&[
            ("event", "false"),
            ("reject", "true"),
            ("skip_snat", "false"),
        ]),
        selection_fields: set(&["ip_dst", "ip_src"]),
        external_ids: map(&[
            ("k8s.ovn.org/kind", "Service"),
            ("k8s.ovn.org/owner", "blue/dns"),
            ("k8s.ovn.org/network", "n1"),
        ]),
        ..Default::default()
    };
    let lb_group = LoadBalancerGroup {
        name: "n1_clusterLBGroup".into(),
        ..Default::default()
    };
    let gateway_chassis = GatewayChassis {
        name: "rtos-n1_node1-chassis1".into(),
        chassis_name: "chassis1".into(),
        priority: 1,
        external_ids: ids("n1"),
        options: map(&[]),
        ..Default::default()
    };
    let ha_chassis = HaChassis {
        chassis_name: "chassis1".into(),
        priority: 10,
        ..Default::default()
    };
    let ha_group = HaChassisGroup {
        name: "n1_group".into(),
        ..Default::default()
    };
    let rtos = LogicalRouterPort {
        name: "rtos-n1_node1".into(),
        mac: "0a:58:0a:80:01:01".into(),
        networks: set(&["10.128.1.1/24", "fd00:10:128:1::1/64"]),
        options: map(&[("gateway_mtu", "1400")]),
        enabled: Some(true),
        peer: None,
        external_ids: ids("n1"),
        ..Default::default()
    };
    let route = LogicalRouterStaticRoute {
        ip_prefix: "10.128.2.0/24".into(),
        nexthop: "100.88.0.3".into(),
        policy: Some("dst-ip".into()),
        output_port: Some("rtots-n1_node1".into()),
        route_table: String::new(),
        options: map(&[("ecmp_symmetric_reply", "true")]),
        external_ids: map(&[("ic-node", "node2"), ("k8s.ovn.org/network", "n1")]),
        ..Default::default()
    };
    let policy = LogicalRouterPolicy {
        priority: 1004,
        match_: "inport == \"rtos-n1_node1\" && ip4.dst == 10.0.0.5 /* n1_node1 */".into(),
        action: "reroute".into(),
        nexthops: set(&["10.128.1.2"]),
        options: map(&[]),
        external_ids: ids("n1"),
        ..Default::default()
    };
    let nat = Nat {
        type_: "snat".into(),
        external_ip: "169.254.0.12".into(),
        logical_ip: "10.128.1.0/24".into(),
        logical_port: Some("rtos-n1_node1".into()),
        external_port_range: "1024-65535".into(),
        options: map(&[("stateless", "false")]),
        external_ids: ids("n1"),
        ..Default::default()
    };
    let router = LogicalRouter {
        name: "n1_ovn_cluster_router".into(),
        enabled: Some(true),
        options: map(&[("always_learn_from_arp_request", "false")]),
        external_ids: map(&[
            ("k8s-cluster-router", "yes"),
            ("k8s.ovn.org/network", "n1"),
            ("k8s.ovn.org/topology", "layer3"),
        ]),
        ..Default::default()
    };
    let stor = LogicalSwitchPort {
        name: "stor-n1_node1".into(),
        type_: "router".into(),
        addresses: set(&["router"]),
        options: map(&[("router-port", "rtos-n1_node1")]),
        external_ids: ids("n1"),
        ..Default::default()
    };
    let mgmt = LogicalSwitchPort {
        name: "k8s-n1_node1".into(),
        addresses: set(&["0a:58:0a:80:01:02 10.128.1.2"]),
        port_security: set(&["0a:58:0a:80:01:02 10.128.1.2"]),
        enabled: Some(true),
        tag_request: Some(0),
        external_ids: ids("n1"),
        ..Default::default()
    };
    let acl = Acl {
        priority: 1001,
        direction: "to-lport".into(),
        match_: "ip4.src==10.128.1.2".into(),
        action: "allow-related".into(),
        meter: Some("acl-logging".into()),
        severity: Some("info".into()),
        log: false,
        label: 0,
        options: map(&[("apply-after-lb", "true")]),
        external_ids: map(&[
            ("k8s.ovn.org/owner-controller", "n1-network-controller"),
            ("k8s.ovn.org/owner-type", "NetpolNode"),
            (
                "k8s.ovn.org/id",
                "n1-network-controller:NetpolNode:n1_node1:10.128.1.2",
            ),
            ("k8s.ovn.org/name", "n1_node1"),
            ("ip", "10.128.1.2"),
        ]),
        ..Default::default()
    };
    let switch = LogicalSwitch {
        name: "n1_node1".into(),
        other_config: map(&[
            ("subnet", "10.128.1.0/24"),
            ("exclude_ips", "10.128.1.2"),
            ("mcast_snoop", "true"),
        ]),
        external_ids: map(&[
            ("k8s.ovn.org/network", "n1"),
            ("k8s.ovn.org/role", "primary"),
            ("k8s.ovn.org/topology", "layer3"),
        ]),
        ..Default::default()
    };
    let port_group = PortGroup {
        name: "a6023288408186719228".into(),
        external_ids: map(&[
            ("k8s.ovn.org/owner-controller", "n1-network-controller"),
            ("k8s.ovn.org/owner-type", "Cluster"),
            (
                "k8s.ovn.org/id",
                "n1-network-controller:Cluster:clusterPortGroup",
            ),
            ("k8s.ovn.org/name", "clusterPortGroup"),
        ]),
        ..Default::default()
    };
    let dhcp = DhcpOptions {
        cidr: "10.128.1.0/24".into(),
        options: map(&[("lease_time", "3500"), ("router", "10.128.1.1")]),
        external_ids: ids("n1"),
        ..Default::default()
    };
    let qos = Qos {
        priority: 1000,
        direction: "from-lport".into(),
        match_: "ip4.src == 10.128.1.5".into(),
        action: BTreeMap::from([("dscp".to_owned(), 10)]),
        bandwidth: BTreeMap::from([("rate".to_owned(), 1000), ("burst".to_owned(), 100)]),
        external_ids: ids("n1"),
        ..Default::default()
    };
    let static_mac = StaticMacBinding {
        logical_port: "rtoe-GR_n1_node1".into(),
        ip: "172.18.0.1".into(),
        mac: "02:42:ac:12:00:01".into(),
        override_dynamic_mac: true,
        ..Default::default()
    };

    let mut txn = Txn::default();
    txn.insert("band", &band, &[]);
    txn.insert("meter", &meter, &[("bands", &["band"])]);
    txn.insert("copp", &copp, &[]);
    txn.insert("as", &address_set, &[]);
    txn.insert("hc", &health_check, &[]);
    txn.insert("lb", &lb, &[("health_check", &["hc"])]);
    txn.insert("lbg", &lb_group, &[("load_balancer", &["lb"])]);
    txn.insert("gwc", &gateway_chassis, &[]);
    txn.insert("hac", &ha_chassis, &[]);
    txn.insert("hag", &ha_group, &[("ha_chassis", &["hac"])]);
    txn.insert("rtos", &rtos, &[("gateway_chassis", &["gwc"])]);
    txn.insert("route", &route, &[]);
    txn.insert("policy", &policy, &[]);
    txn.insert("nat", &nat, &[("allowed_ext_ips", &["as"])]);
    txn.insert(
        "router",
        &router,
        &[
            ("ports", &["rtos"]),
            ("static_routes", &["route"]),
            ("policies", &["policy"]),
            ("nat", &["nat"]),
            ("copp", &["copp"]),
            ("load_balancer_group", &["lbg"]),
        ],
    );
    txn.insert("stor", &stor, &[]);
    txn.insert("mgmt", &mgmt, &[("ha_chassis_group", &["hag"])]);
    txn.insert("acl", &acl, &[]);
    txn.insert("qos", &qos, &[]);
    txn.insert(
        "switch",
        &switch,
        &[
            ("ports", &["stor", "mgmt"]),
            ("acls", &["acl"]),
            ("qos_rules", &["qos"]),
            ("load_balancer", &["lb"]),
            ("copp", &["copp"]),
        ],
    );
    txn.insert(
        "pg",
        &port_group,
        &[("ports", &["mgmt"]), ("acls", &["acl"])],
    );
    txn.insert("dhcp", &dhcp, &[]);
    txn.insert("smb", &static_mac, &[]);

    let uuids = txn.commit(&client).await;

    check(&client, &uuids, "band", band, |_, _| {});
    check(&client, &uuids, "meter", meter, |m, u| {
        m.bands = BTreeSet::from([u("band")]);
    });
    check(&client, &uuids, "copp", copp, |_, _| {});
    check(&client, &uuids, "as", address_set, |_, _| {});
    check(&client, &uuids, "hc", health_check, |_, _| {});
    check(&client, &uuids, "lb", lb, |l, u| {
        l.health_check = BTreeSet::from([u("hc")]);
    });
    check(&client, &uuids, "lbg", lb_group, |g, u| {
        g.load_balancer = BTreeSet::from([u("lb")]);
    });
    check(&client, &uuids, "gwc", gateway_chassis, |_, _| {});
    check(&client, &uuids, "hac", ha_chassis, |_, _| {});
    check(&client, &uuids, "hag", ha_group, |g, u| {
        g.ha_chassis = BTreeSet::from([u("hac")]);
    });
    check(&client, &uuids, "rtos", rtos, |p, u| {
        p.gateway_chassis = BTreeSet::from([u("gwc")]);
    });
    check(&client, &uuids, "route", route, |_, _| {});
    check(&client, &uuids, "policy", policy, |_, _| {});
    check(&client, &uuids, "nat", nat, |n, u| {
        n.allowed_ext_ips = Some(u("as"));
    });
    check(&client, &uuids, "router", router, |r, u| {
        r.ports = BTreeSet::from([u("rtos")]);
        r.static_routes = BTreeSet::from([u("route")]);
        r.policies = BTreeSet::from([u("policy")]);
        r.nat = BTreeSet::from([u("nat")]);
        r.copp = Some(u("copp"));
        r.load_balancer_group = BTreeSet::from([u("lbg")]);
    });
    check(&client, &uuids, "stor", stor, |_, _| {});
    check(&client, &uuids, "mgmt", mgmt, |p, u| {
        p.ha_chassis_group = Some(u("hag"));
    });
    check(&client, &uuids, "acl", acl, |_, _| {});
    check(&client, &uuids, "qos", qos, |_, _| {});
    check(&client, &uuids, "switch", switch, |s, u| {
        s.ports = BTreeSet::from([u("stor"), u("mgmt")]);
        s.acls = BTreeSet::from([u("acl")]);
        s.qos_rules = BTreeSet::from([u("qos")]);
        s.load_balancer = BTreeSet::from([u("lb")]);
        s.copp = Some(u("copp"));
    });
    check(&client, &uuids, "pg", port_group, |g, u| {
        g.ports = BTreeSet::from([u("mgmt")]);
        g.acls = BTreeSet::from([u("acl")]);
    });
    check(&client, &uuids, "dhcp", dhcp, |_, _| {});
    check(&client, &uuids, "smb", static_mac, |_, _| {});

    // What ovn-nbctl (a separate IDL client) reads back agrees.
    let show = server.nbctl(&["show"]).unwrap();
    for expected in [
        "router",
        "(n1_ovn_cluster_router)",
        "port rtos-n1_node1",
        "networks: [\"10.128.1.1/24\", \"fd00:10:128:1::1/64\"]",
        "gateway chassis: [chassis1]",
        "snat",
        "169.254.0.12",
        "switch",
        "(n1_node1)",
        "port stor-n1_node1",
        "type: router",
        "router-port: rtos-n1_node1",
        "port k8s-n1_node1",
        "addresses: [\"0a:58:0a:80:01:02 10.128.1.2\"]",
    ] {
        assert!(show.contains(expected), "{expected:?} not in:\n{show}");
    }
}
