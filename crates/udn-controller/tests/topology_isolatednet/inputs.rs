//! The zone of upstream's Layer3 UDN tests (`layer3_user_defined_network_controller_test.go`):
//! network `isolatednet` (ID 2, `192.168.0.0/16`, /24 per node, NAD `namespace1/blue-net`),
//! node `node1` (node ID 4, transit IP `100.88.0.3/16`, host subnet `192.168.1.0/24`, node IP
//! `192.168.126.202/24`, next hop `192.168.126.1`, bridge MAC derived from the node IP), the
//! masquerade subnet `169.254.169.0/24`, MTU 1400, and pod `namespace1/myPod`. The default
//! network's values are the kind/helm ones of node-and-interconnect §4 (`10.244.0.0/16`).

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU16;

use ipnetwork::{IpNetwork, Ipv4Network};
use udn_api::annotations::{MacAddress, OpenPort, PodNetworkRole};
use udn_api::cluster::ClusterConfig;
use udn_api::netconf::{NetConf, NetInfo};
use udn_controller::model::{
    GatewayConfig, GatewayConfigMode, Lean, Network, Node, PodAttachment, ZoneConfig,
};

/// Upstream's `chassisIDForNode("node1")` (a SHA-1 UUID of the name in the OID namespace).
pub(crate) const CHASSIS: &str = "2f6f9b99-82ef-5507-b6b6-cbab28bda9cb";
/// Upstream's NAD of the network.
pub(crate) const NAD: &str = "namespace1/blue-net";

fn net(s: &str) -> IpNetwork {
    s.parse().unwrap()
}

/// IPv4, masquerade subnet `169.254.169.0/24` (upstream's `dummyMasqueradeSubnet`), MTU 1400.
pub(crate) fn zone_config() -> ZoneConfig {
    let mut cluster = ClusterConfig::ipv4_only();
    cluster.masquerade_subnet_v4 = "169.254.169.0/24".parse::<Ipv4Network>().unwrap();
    assert_eq!(cluster.mtu, 1400);
    ZoneConfig {
        zone: "node1".into(),
        cluster,
        multi_network: true,
        segmentation: true,
        dynamic_udn: false,
        // Exact upstream rows: every saving off.
        lean: Lean::UPSTREAM,
    }
}

/// The primary Layer3 `isolatednet` with network ID 2.
pub(crate) fn isolatednet(config: &ZoneConfig) -> Network {
    let conf = NetConf {
        name: "isolatednet".into(),
        topology: "layer3".into(),
        role: "primary".into(),
        subnets: "192.168.0.0/16/24".into(),
        nad_name: NAD.into(),
        mtu: 1400,
        ..NetConf::default()
    };
    Network {
        name: conf.name.clone(),
        id: 2,
        info: NetInfo::from_netconf(&conf, &config.cluster).unwrap(),
        nads: BTreeSet::from([NAD.to_owned()]),
        tunnel_keys: Vec::new(),
    }
}

/// The default network, then isolatednet: the order the runtime applies them in.
pub(crate) fn networks(config: &ZoneConfig) -> Vec<Network> {
    vec![Network::default_network(), isolatednet(config)]
}

/// `node1`, local, with the annotations of upstream's `newNodeWithUserDefinedNetworks`.
pub(crate) fn node1() -> Node {
    let mut node = Node::new("node1", true);
    node.id = Some(4);
    node.chassis_id = Some(CHASSIS.into());
    node.transit_ips = vec![net("100.88.0.3/16")];
    node.subnets = BTreeMap::from([
        ("isolatednet".into(), vec![net("192.168.1.0/24")]),
        ("default".into(), vec![net("10.244.1.0/24")]),
    ]);
    node.gateway = Some(GatewayConfig {
        mode: GatewayConfigMode::Shared,
        bridge_id: "breth0".into(),
        interface_id: "breth0_node1".into(),
        mac: "0a:58:c0:a8:7e:ca".parse::<MacAddress>().unwrap(),
        ips: vec![net("192.168.126.202/24")],
        next_hops: vec!["192.168.126.1".parse().unwrap()],
        node_port_enable: true,
        vlan_id: 0,
    });
    node.host_cidrs = vec![net("192.168.126.202/24")];
    node
}

fn attachment(nad_key: &str, ip: &str, mac: [u8; 6], role: PodNetworkRole) -> PodAttachment {
    PodAttachment {
        namespace: "namespace1".into(),
        pod: "myPod".into(),
        // Upstream's fake pods have their name as UID (`iface-id-ver`).
        uid: "myPod".into(),
        node: "node1".into(),
        nad_key: nad_key.into(),
        mac: MacAddress(mac),
        ips: vec![net(ip)],
        tunnel_id: None,
        role,
        open_ports: Vec::new(),
    }
}

/// `namespace1/myPod` in a primary-UDN namespace: infrastructure-locked on the default
/// network (with TCP 80 open there, `k8s.ovn.org/open-default-ports`), primary on
/// isolatednet (`192.168.1.3/24`, `0a:58:c0:a8:01:03` as upstream's `newPodWithPrimaryUDN`).
pub(crate) fn pods(network: &str) -> Vec<PodAttachment> {
    match network {
        "default" => {
            let mut pod = attachment(
                "default",
                "10.244.1.3/24",
                [0x0a, 0x58, 0x0a, 0xf4, 0x01, 0x03],
                PodNetworkRole::InfrastructureLocked,
            );
            pod.open_ports = vec![OpenPort::Tcp(NonZeroU16::new(80).unwrap())];
            vec![pod]
        }
        "isolatednet" => vec![attachment(
            NAD,
            "192.168.1.3/24",
            [0x0a, 0x58, 0xc0, 0xa8, 0x01, 0x03],
            PodNetworkRole::Primary,
        )],
        _ => Vec::new(),
    }
}
