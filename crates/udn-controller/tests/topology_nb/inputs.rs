//! The zone of the real-server test: four networks, one local and two remote nodes, pods.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU16;

use ipnetwork::IpNetwork;
use udn_api::annotations::{MacAddress, OpenPort, PodNetworkRole};
use udn_api::cluster::ClusterConfig;
use udn_api::netconf::{NetConf, NetInfo};
use udn_controller::model::{
    GatewayConfig, GatewayConfigMode, Lean, Network, Node, PodAttachment, ZoneConfig,
};

const CHASSIS1: &str = "3a4b8e7c-1111-4c1e-9f00-000000000001";
pub(crate) const CHASSIS2: &str = "3a4b8e7c-2222-4c1e-9f00-000000000002";
const CHASSIS3: &str = "3a4b8e7c-3333-4c1e-9f00-000000000003";

fn net(s: &str) -> IpNetwork {
    s.parse().unwrap()
}

pub(crate) fn zone_config() -> ZoneConfig {
    ZoneConfig {
        zone: "node1".into(),
        cluster: ClusterConfig::default(),
        multi_network: true,
        segmentation: true,
        dynamic_udn: false,
        // Exact upstream rows: every saving off.
        lean: Lean::UPSTREAM,
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
pub(crate) fn networks(config: &ZoneConfig) -> Vec<Network> {
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

pub(crate) fn nodes() -> Vec<Node> {
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

pub(crate) fn pods(network: &str) -> Vec<PodAttachment> {
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
