//! The topology of four networks (the default network, a dual-stack primary Layer3 UDN, a
//! primary Layer2 UDN and a localnet network with a VLAN) for one local and two remote nodes
//! and a few pods, written through one engine per network controller to a real
//! ovsdb-server: read back with ovn-nbctl, reconciled again as nothing, and one network's
//! deletion removing its rows and nothing else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU16;
use std::time::Duration;

use ipnetwork::IpNetwork;
use udn_api::annotations::{MacAddress, OpenPort, PodNetworkRole};
use udn_api::cluster::ClusterConfig;
use udn_api::netconf::{NetConf, NetInfo};
use udn_controller::model::{
    GatewayConfig, GatewayConfigMode, Network, Node, PodAttachment, ZoneConfig,
};
use udn_controller::topology::keyed::{KeyedDesired, plan_keyed};
use udn_controller::topology::{
    DEFAULT_COPP, NetworkDesired, SchemaFeatures, ZoneInputs, load_balancer_groups,
    network_desired, network_engine, network_scope,
};
use udn_ovsdb::client::{Client, ClientConfig};
use udn_ovsdb::engine::{ApplyPolicy, Engine, INDEXED_KEYS, OWNER_CONTROLLER_KEY};
use udn_ovsdb::nb;
use udn_ovsdb::protocol::{Atom, Operation, Uuid, Value};
use udn_ovsdb::schema::Requirements;
use udn_ovsdb::testing::OvsdbServer;

const CHASSIS1: &str = "3a4b8e7c-1111-4c1e-9f00-000000000001";
const CHASSIS2: &str = "3a4b8e7c-2222-4c1e-9f00-000000000002";
const CHASSIS3: &str = "3a4b8e7c-3333-4c1e-9f00-000000000003";

fn net(s: &str) -> IpNetwork {
    s.parse().unwrap()
}

fn config(server: &OvsdbServer) -> ClientConfig {
    let schema = nb::schema().unwrap();
    let mut config = ClientConfig::new(server.endpoint(), nb::DATABASE);
    config.monitor = Requirements::everything_in(&schema);
    config.indexed_keys = INDEXED_KEYS.iter().map(|k| (*k).to_owned()).collect();
    config.request_timeout = Duration::from_secs(60);
    config
}

fn zone_config() -> ZoneConfig {
    ZoneConfig {
        zone: "node1".into(),
        cluster: ClusterConfig::default(),
        multi_network: true,
        segmentation: true,
    }
}

fn udn(config: &ZoneConfig, edit: impl FnOnce(&mut NetConf), id: u32) -> Network {
    let mut conf = NetConf {
        mtu: 1400,
        ..NetConf::default()
    };
    edit(&mut conf);
    let info = NetInfo::from_netconf(&conf, &config.cluster).unwrap();
    Network {
        name: conf.name.clone(),
        id,
        info,
        nads: BTreeSet::from([conf.nad_name]),
        tunnel_keys: Vec::new(),
    }
}

/// The default network, `ns1_blue` (Layer3, primary, dual-stack), `ns2_green` (Layer2,
/// primary, dual-stack), `cluster_udn_ln` (localnet, VLAN 10).
fn networks(config: &ZoneConfig) -> Vec<Network> {
    vec![
        Network::default_network(),
        udn(
            config,
            |c| {
                c.name = "ns1_blue".into();
                c.topology = "layer3".into();
                c.role = "primary".into();
                c.subnets = "103.103.0.0/16/24,fd33::/48/64".into();
                c.nad_name = "ns1/blue".into();
            },
            1,
        ),
        udn(
            config,
            |c| {
                c.name = "ns2_green".into();
                c.topology = "layer2".into();
                c.role = "primary".into();
                c.subnets = "10.200.0.0/16,fd20::/64".into();
                c.nad_name = "ns2/green".into();
            },
            2,
        ),
        udn(
            config,
            |c| {
                c.name = "cluster_udn_ln".into();
                c.topology = "localnet".into();
                c.subnets = "192.0.2.0/24".into();
                c.vlan_id = 10;
                c.physical_network_name = "physnet-ln".into();
                c.nad_name = "ns3/ln".into();
            },
            3,
        ),
    ]
}

fn node(name: &str, id: u32, chassis: &str, local: bool) -> Node {
    let mut node = Node::new(name, local);
    node.id = Some(id);
    node.chassis_id = Some(chassis.into());
    node.transit_ips = vec![
        net(&format!("100.88.0.{id}/16")),
        net(&format!("fd97::{id}/64")),
    ];
    node.subnets = BTreeMap::from([
        (
            "default".into(),
            vec![
                net(&format!("10.244.{id}.0/24")),
                net(&format!("fd00:10:244:{id}::/64")),
            ],
        ),
        (
            "ns1_blue".into(),
            vec![
                net(&format!("103.103.{id}.0/24")),
                net(&format!("fd33:0:0:{id}::/64")),
            ],
        ),
    ]);
    node.layer2_gateway_tunnel_ids = BTreeMap::from([("ns2_green".into(), id + 10)]);
    node.encap_ips = vec![format!("172.18.0.{id}").parse().unwrap()];
    if local {
        node.gateway = Some(GatewayConfig {
            mode: GatewayConfigMode::Shared,
            bridge_id: "breth0".into(),
            interface_id: format!("breth0_{name}"),
            mac: "02:42:ac:12:00:02".parse().unwrap(),
            ips: vec![net("172.18.0.2/16"), net("fc00:f853:ccd:e793::2/64")],
            next_hops: vec![
                "172.18.0.1".parse().unwrap(),
                "fc00:f853:ccd:e793::1".parse().unwrap(),
            ],
            node_port_enable: true,
            vlan_id: 0,
        });
        node.host_cidrs = vec![net("172.18.0.2/16"), net("fc00:f853:ccd:e793::2/64")];
    }
    node
}

fn nodes() -> Vec<Node> {
    vec![
        node("node1", 2, CHASSIS1, true),
        node("node2", 3, CHASSIS2, false),
        node("node3", 4, CHASSIS3, false),
    ]
}

fn attachment(ns: &str, pod: &str, node: &str, nad: &str, ips: &[&str], mac: u8) -> PodAttachment {
    PodAttachment {
        namespace: ns.into(),
        pod: pod.into(),
        uid: format!("{pod}-uid"),
        node: node.into(),
        nad_key: nad.into(),
        mac: MacAddress([0x0a, 0x58, 0, 0, 0, mac]),
        ips: ips.iter().map(|s| net(s)).collect(),
        tunnel_id: None,
        role: PodNetworkRole::Primary,
        open_ports: Vec::new(),
    }
}

fn pods(network: &str) -> Vec<PodAttachment> {
    match network {
        "default" => {
            let mut pod = attachment("ns1", "pod1", "node1", "default", &["10.244.2.5/24"], 1);
            pod.role = PodNetworkRole::InfrastructureLocked;
            pod.open_ports = vec![OpenPort::Tcp(NonZeroU16::new(80).unwrap())];
            vec![pod]
        }
        "ns1_blue" => vec![attachment(
            "ns1",
            "pod1",
            "node1",
            "ns1/blue",
            &["103.103.2.5/24", "fd33:0:0:2::5/64"],
            2,
        )],
        "ns2_green" => {
            let mut a = attachment("ns2", "a", "node1", "ns2/green", &["10.200.0.5/16"], 3);
            a.tunnel_id = Some(21);
            let mut b = attachment("ns2", "b", "node2", "ns2/green", &["10.200.0.6/16"], 4);
            b.tunnel_id = Some(22);
            vec![a, b]
        }
        _ => vec![
            attachment("ns3", "x", "node1", "ns3/ln", &["192.0.2.10/24"], 5),
            attachment("ns3", "y", "node3", "ns3/ln", &["192.0.2.11/24"], 6),
        ],
    }
}

fn string_column(row: &udn_ovsdb::protocol::Row, column: &str) -> Option<String> {
    match row.get(column) {
        Some(Value::Atom(Atom::String(s))) => Some(s.clone()),
        _ => None,
    }
}

/// UUIDs by name of the COPP and the load balancer groups in the replica.
fn shared_rows(client: &Client) -> (Option<Uuid>, BTreeMap<String, Uuid>) {
    let replica = client.replica();
    let copp = replica
        .rows(nb::copp::TABLE)
        .find(|(_, row)| string_column(row, "name").as_deref() == Some(DEFAULT_COPP))
        .map(|(uuid, _)| *uuid);
    let groups = replica
        .rows(nb::load_balancer_group::TABLE)
        .filter_map(|(uuid, row)| string_column(row, "name").map(|name| (name, *uuid)))
        .collect();
    (copp, groups)
}

async fn transact(client: &Client, ops: Vec<Operation>) {
    if !ops.is_empty() {
        client.transact(ops).await.unwrap();
    }
}

/// One reconcile of every network as the runtime does it: load balancer groups first, the
/// default network (owner of the COPP) before the others, static MAC bindings and stale
/// keyed rows after the units. Returns the operations sent.
async fn pass(client: &Client, engines: &BTreeMap<String, Engine>, networks: &[Network]) -> usize {
    let config = zone_config();
    let nodes = nodes();
    let mut ops = 0;
    let groups = KeyedDesired {
        load_balancer_groups: networks.iter().flat_map(load_balancer_groups).collect(),
        ..KeyedDesired::default()
    };
    let lb_plan = plan_keyed(&groups, &*client.replica());
    let lb_inserts: Vec<Operation> = lb_plan
        .upserts
        .into_iter()
        .filter(|op| matches!(op, Operation::Insert { table, .. } if table == nb::load_balancer_group::TABLE))
        .collect();
    ops += lb_inserts.len();
    transact(client, lb_inserts).await;
    let mut all = Vec::new();
    for network in networks {
        let (copp, groups) = shared_rows(client);
        let mut zone = ZoneInputs::new(&config, &nodes);
        zone.copp = copp;
        zone.load_balancer_groups = groups;
        zone.features = SchemaFeatures::of(client.replica().schema());
        let desired = network_desired(network, &zone, &pods(&network.name));
        assert!(
            desired.problems.is_empty(),
            "{}: {:?}",
            network.name,
            desired.problems
        );
        let engine = &engines[&desired.controller];
        let report = engine
            .reconcile(
                client,
                desired.units.clone(),
                &network_scope(),
                &ApplyPolicy::default(),
            )
            .await
            .unwrap();
        assert!(report.is_success(), "{}: {report:?}", network.name);
        ops += report.ops;
        all.push(desired);
    }
    ops + keyed(client, &all, engines).await
}

/// The keyed plan of `desired` (with every controller's ports counted as ours).
async fn keyed(
    client: &Client,
    desired: &[NetworkDesired],
    engines: &BTreeMap<String, Engine>,
) -> usize {
    let mut wanted = KeyedDesired::from_networks(desired);
    wanted.controllers.extend(engines.keys().cloned());
    let plan = plan_keyed(&wanted, &*client.replica());
    let count = plan.upserts.len() + plan.deletes.len();
    transact(client, plan.upserts).await;
    transact(client, plan.deletes).await;
    count
}

/// Rows per owner controller, over every table.
fn rows_by_controller(client: &Client) -> BTreeMap<String, usize> {
    let replica = client.replica();
    let mut counts = BTreeMap::new();
    for table in replica.schema().tables.keys() {
        for (_, row) in replica.rows(table) {
            if let Some(Value::Map(ids)) = row.get("external_ids") {
                for (k, v) in ids {
                    if let (Atom::String(k), Atom::String(v)) = (k, v)
                        && k == OWNER_CONTROLLER_KEY
                    {
                        *counts.entry(v.clone()).or_insert(0) += 1;
                    }
                }
            }
        }
    }
    counts
}

fn nbctl(server: &OvsdbServer, args: &[&str]) -> String {
    server.nbctl(args).unwrap()
}

fn assert_contains(text: &str, expected: &[&str]) {
    for e in expected {
        assert!(text.contains(e), "{e:?} missing from\n{text}");
    }
}

#[tokio::test]
async fn four_networks_converge_read_back_and_delete_cleanly() {
    let server = OvsdbServer::start_nb().unwrap();
    let client = Client::connect(config(&server)).await.unwrap();
    let config = zone_config();
    let networks = networks(&config);
    let engines: BTreeMap<String, Engine> = networks
        .iter()
        .map(|n| (n.controller_name(), network_engine(&n.controller_name())))
        .collect();
    let first = pass(&client, &engines, &networks).await;
    assert!(first > 100, "{first} operations");
    let again = pass(&client, &engines, &networks).await;
    assert_eq!(again, 0, "a second reconcile sends nothing");

    check_layer3(&server);
    check_default_network(&server);
    check_layer2_and_localnet(&server);

    // Deleting ns1_blue: its engine reconciles no units in its scope, then the keyed rows
    // of the remaining networks are planned.
    let before = rows_by_controller(&client);
    assert!(before["ns1_blue-network-controller"] > 40, "{before:?}");
    let report = engines["ns1_blue-network-controller"]
        .reconcile(
            &client,
            Vec::new(),
            &network_scope(),
            &ApplyPolicy::default(),
        )
        .await
        .unwrap();
    assert!(report.is_success(), "{report:?}");
    let remaining: Vec<Network> = networks
        .iter()
        .filter(|n| n.name != "ns1_blue")
        .cloned()
        .collect();
    pass(&client, &engines, &remaining).await;
    let after = rows_by_controller(&client);
    let mut expected = before.clone();
    expected.remove("ns1_blue-network-controller");
    assert_eq!(after, expected, "only ns1_blue's rows are gone");
    for table in [
        "Logical_Router",
        "Logical_Switch",
        "Logical_Switch_Port",
        "Logical_Router_Port",
    ] {
        let names = nbctl(&server, &["--bare", "--columns=name", "list", table]);
        assert!(!names.contains("blue"), "{table}: {names}");
    }
    for table in [
        "NAT",
        "Logical_Router_Static_Route",
        "Logical_Router_Policy",
        "ACL",
        "Port_Group",
    ] {
        let ids = nbctl(
            &server,
            &["--bare", "--columns=external_ids", "list", table],
        );
        assert!(!ids.contains("ns1_blue"), "{table}: {ids}");
    }
    let groups = nbctl(
        &server,
        &["--bare", "--columns=name", "list", "Load_Balancer_Group"],
    );
    assert!(
        !groups.contains("blue") && groups.contains("ns2_green_clusterLBGroup"),
        "{groups}"
    );
    let bindings = nbctl(
        &server,
        &[
            "--bare",
            "--columns=logical_port",
            "list",
            "Static_MAC_Binding",
        ],
    );
    assert!(
        !bindings.contains("blue") && bindings.contains("rtoe-GR_node1"),
        "{bindings}"
    );
    assert_eq!(pass(&client, &engines, &remaining).await, 0);
}

fn check_layer3(server: &OvsdbServer) {
    let routes = nbctl(server, &["lr-route-list", "ns1_blue_ovn_cluster_router"]);
    assert_contains(
        &routes,
        &[
            "103.103.2.0/24",
            "100.65.0.2",
            "src-ip",
            "103.103.3.0/24",
            "100.88.0.3",
            "fd33:0:0:4::/64",
            "fd97::4",
            "100.88.0.4 dst-ip",
            "fd97::3 dst-ip",
        ],
    );
    let gr_routes = nbctl(server, &["lr-route-list", "GR_ns1_blue_node1"]);
    assert_contains(
        &gr_routes,
        &[
            "103.103.0.0/16",
            "100.65.0.1",
            "0.0.0.0/0",
            "172.18.0.1",
            "rtoe-GR_ns1_blue_node1",
            "169.254.0.0/17",
            "169.254.0.4",
            "fd69::/112",
            "fc00:f853:ccd:e793::1",
        ],
    );
    let nats = nbctl(server, &["lr-nat-list", "GR_ns1_blue_node1"]);
    assert_contains(
        &nats,
        &[
            "snat",
            "169.254.0.11",
            "100.65.0.2",
            "103.103.0.0/16",
            "fd69::b",
            "fd33::/48",
        ],
    );
    let cr_nats = nbctl(server, &["lr-nat-list", "ns1_blue_ovn_cluster_router"]);
    assert_contains(&cr_nats, &["169.254.0.12", "103.103.2.0/24", "fd69::c"]);
    let port = nbctl(
        server,
        &[
            "--bare",
            "--columns=logical_port",
            "find",
            "NAT",
            "external_ip=\"169.254.0.12\"",
        ],
    );
    assert_eq!(port.trim(), "rtos-ns1_blue_node1");
    let policies = nbctl(server, &["lr-policy-list", "ns1_blue_ovn_cluster_router"]);
    assert_contains(
        &policies,
        &[
            "1004",
            "inport == \"rtos-ns1_blue_node1\" && ip4.dst == 172.18.0.2 /* ns1_blue_node1 */",
            "ip4.dst == 169.254.0.11",
            "ip6.dst == fc00:f853:ccd:e793::2",
            "reroute",
            "103.103.2.2",
        ],
    );
    let acls = nbctl(server, &["acl-list", "ns1_blue_node1"]);
    assert_contains(
        &acls,
        &[
            "to-lport  1001 (ip4.src==103.103.2.2) allow-related",
            "ip6.src==fd33:0:0:2::2",
        ],
    );
    let owner_type = nbctl(
        server,
        &[
            "--bare",
            "--columns=external_ids",
            "find",
            "ACL",
            "match=\"ip4.src==103.103.2.2\"",
        ],
    );
    assert_contains(
        &owner_type,
        &[
            "k8s.ovn.org/owner-type=NetpolNode",
            "k8s.ovn.org/id=ns1_blue-network-controller:NetpolNode:ns1_blue_node1:103.103.2.2",
        ],
    );
    let remote = nbctl(
        server,
        &[
            "--bare",
            "--columns=name",
            "find",
            "Logical_Switch_Port",
            "type=remote",
        ],
    );
    assert_contains(
        &remote,
        &[
            "ns1_blue_tstor-node2",
            "ns1_blue_tstor-node3",
            "tstor-node2",
            "stor-ns2_green_ovn_layer2_switch_node3",
        ],
    );
    let chassis = nbctl(
        server,
        &[
            "get",
            "Logical_Switch_Port",
            "ns1_blue_tstor-node2",
            "options",
        ],
    );
    assert_contains(&chassis, &[CHASSIS2, "requested-tnl-key=\"3\""]);
    let ports = nbctl(server, &["lsp-list", "ns1_blue_node1"]);
    assert_contains(
        &ports,
        &[
            "stor-ns1_blue_node1",
            "k8s-ns1_blue_node1",
            "ns1.blue_ns1_pod1",
        ],
    );
}

fn check_default_network(server: &OvsdbServer) {
    let acls = nbctl(server, &["acl-list", "a8747502060113802905"]);
    assert_contains(
        &acls,
        &[
            "from-lport  1000 (inport == @a8747502060113802905) drop",
            "to-lport  1000 (outport == @a8747502060113802905) drop",
            "to-lport  1001 (outport == @a8747502060113802905 && (ip4.src==10.244.2.2 || ip6.src==fd00:10:244:2::2)) allow-related",
            "arp.tpa == 10.244.2.2",
            "nd.target == fd00:10:244:2::2",
            "outport == \"ns1_pod1\" && (arp || nd || (tcp.dst == 80))",
        ],
    );
    let members = nbctl(
        server,
        &[
            "--bare",
            "--columns=ports",
            "list",
            "Port_Group",
            "a8747502060113802905",
        ],
    );
    assert_eq!(members.split_whitespace().count(), 1, "{members}");
    let stor = nbctl(
        server,
        &[
            "get",
            "Logical_Switch_Port",
            "stor-node1",
            "options:arp_proxy",
        ],
    );
    assert_contains(
        &stor,
        &["0a:58:a9:fe:01:01 169.254.1.1 fe80::1 10.244.0.0/16 fd00:10:244::/48"],
    );
    let gr = nbctl(
        server,
        &["get", "Logical_Router", "GR_node1", "options:snat-ct-zone"],
    );
    assert_eq!(gr.trim().trim_matches('"'), "0");
    let copp = nbctl(
        server,
        &["get", "Logical_Router", "GR_ns1_blue_node1", "copp"],
    );
    let copp_name = nbctl(server, &["get", "Copp", copp.trim(), "name"]);
    assert_eq!(copp_name.trim().trim_matches('"'), DEFAULT_COPP);
    let meters = nbctl(server, &["--bare", "--columns=name", "list", "Meter"]);
    assert_contains(
        &meters,
        &[
            "acl-logging",
            "arp-rate-limiter",
            "svc-monitor-rate-limiter",
        ],
    );
    let bindings = nbctl(server, &["list", "Static_MAC_Binding"]);
    assert_contains(
        &bindings,
        &[
            "rtoe-GR_node1",
            "169.254.0.4",
            "fd69::4",
            "rtoe-GR_ns1_blue_node1",
            "169.254.0.2",
        ],
    );
    let transit = nbctl(
        server,
        &[
            "get",
            "Logical_Switch",
            "transit_switch",
            "other_config:requested-tnl-key",
        ],
    );
    assert_eq!(transit.trim().trim_matches('"'), "16711683");
}

fn check_layer2_and_localnet(server: &OvsdbServer) {
    let ports = nbctl(server, &["lsp-list", "ns2_green_ovn_layer2_switch"]);
    assert_contains(
        &ports,
        &[
            "stor-ns2_green_ovn_layer2_switch",
            "stor-ns2_green_ovn_layer2_switch_node2",
            "k8s-ns2_green_node1",
            "ns2.green_ns2_a",
            "ns2.green_ns2_b",
        ],
    );
    let peer = nbctl(
        server,
        &[
            "get",
            "Logical_Switch_Port",
            "stor-ns2_green_ovn_layer2_switch",
            "options",
        ],
    );
    assert_contains(
        &peer,
        &[
            "requested-tnl-key=\"12\"",
            "router-port=rtos-ns2_green_ovn_layer2_switch",
        ],
    );
    let remote_pod = nbctl(
        server,
        &["get", "Logical_Switch_Port", "ns2.green_ns2_b", "type"],
    );
    assert_eq!(remote_pod.trim(), "remote");
    let policies = nbctl(server, &["lr-policy-list", "GR_ns2_green_node1"]);
    assert_contains(
        &policies,
        &[
            "ip4.dst == 172.18.0.2 /* ns2_green_ovn_layer2_switch */",
            "10.200.0.2",
        ],
    );
    let nats = nbctl(server, &["lr-nat-list", "GR_ns2_green_node1"]);
    assert_contains(&nats, &["169.254.0.13", "10.200.0.0/16", "100.65.0.2"]);
    let localnet = nbctl(
        server,
        &[
            "get",
            "Logical_Switch_Port",
            "cluster_udn_ln_ovn_localnet_port",
            "tag_request",
        ],
    );
    assert_eq!(localnet.trim(), "10");
    let ln_ports = nbctl(server, &["lsp-list", "cluster_udn_ln_ovn_localnet_switch"]);
    assert_contains(
        &ln_ports,
        &["cluster_udn_ln_ovn_localnet_port", "ns3.ln_ns3_x"],
    );
    assert!(!ln_ports.contains("ns3_y"), "{ln_ports}");
}
