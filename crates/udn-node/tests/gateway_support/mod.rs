//! What the gateway tests share: the inputs of a lab node's breth0, ofports read back from
//! its OVS, an ovs-ofctl runner with the node's run dir, and a runtime for the async calls
//! (the lab itself is synchronous).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

pub(crate) mod ovn;

use std::future::Future;
use std::time::{Duration, Instant};

use ipnetwork::IpNetwork;
use udn_api::cluster::ClusterConfig;
use udn_node::gateway::{BridgeInputs, GatewayCluster, OfPort, Ofctl, UdnPatch};
use udn_node::services::{Protocol, ServiceNetwork, ServicePortView, ServiceView};
use udn_ovn_lab::Node;

/// Runs `future` to completion on a fresh current-thread runtime.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// ovs-ofctl for `node`'s OVS (its run dir holds `breth0.mgmt`).
pub(crate) fn ofctl(node: &Node) -> Ofctl {
    Ofctl::new().with_rundir(node.log_dir())
}

/// The ofport OVS gave interface `name`.
pub(crate) fn ofport(node: &Node, name: &str) -> u32 {
    let text = node
        .vsctl(&["get", "Interface", name, "ofport"])
        .unwrap_or_else(|error| panic!("ofport of {name}: {error}"));
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("ofport of {name}: {text:?}"))
}

/// Adds an internal port `name` to breth0 and returns its ofport (a stand-in for a patch port
/// where only the port number matters).
pub(crate) fn add_internal_port(node: &Node, name: &str) -> u32 {
    node.vsctl(&[
        "add-port",
        "breth0",
        name,
        "--",
        "set",
        "Interface",
        name,
        "type=internal",
    ])
    .unwrap();
    ofport(node, name)
}

/// A primary UDN with `network_id` on patch port `ofport`.
pub(crate) fn udn(network: &str, network_id: u32, ofport: Option<u32>) -> UdnPatch {
    UdnPatch {
        network: network.to_owned(),
        network_id,
        ofport: ofport.map(OfPort::Number),
    }
}

/// The inputs of `node`'s breth0 (IPv4 cluster, kind defaults): uplink eth0, the node IP as
/// bridge IP and host address.
pub(crate) fn inputs(node: &Node, default_patch: u32, udns: Vec<UdnPatch>) -> BridgeInputs {
    let cidr = IpNetwork::V4(node.node_cidr());
    BridgeInputs {
        bridge: node.gateway_bridge().to_owned(),
        mac: node.breth0_mac().parse().unwrap(),
        ofport_phys: Some(OfPort::Number(ofport(node, "eth0"))),
        ofport_host: OfPort::Local,
        default_patch: OfPort::Number(default_patch),
        bridge_ips: vec![cidr],
        host_addresses: vec![cidr],
        udns,
        bridge_ports: vec![],
        services: vec![],
        cluster: GatewayCluster::from_cluster(&ClusterConfig::ipv4_only()),
    }
}

/// A Service on `network` with the ports `(protocol, port, node port)` and these external
/// and ingress IPs.
pub(crate) fn service(
    namespace: &str,
    name: &str,
    network: ServiceNetwork,
    cluster_ips: &[&str],
    ports: &[(Protocol, u16, Option<u16>)],
    external_ips: &[&str],
    ingress_ips: &[&str],
) -> ServiceView {
    let ips = |list: &[&str]| list.iter().map(|ip| ip.parse().unwrap()).collect();
    ServiceView {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        network,
        cluster_ips: ips(cluster_ips),
        ports: ports
            .iter()
            .map(|(protocol, port, node_port)| ServicePortView {
                protocol: *protocol,
                port: *port,
                node_port: *node_port,
            })
            .collect(),
        external_ips: ips(external_ips),
        ingress_ips: ips(ingress_ips),
        external_traffic_local: false,
    }
}

/// Every port of breth0 as `ovs-ofctl show` lists them (numbers ascending, LOCAL last).
pub(crate) fn bridge_ports(node: &Node) -> Vec<OfPort> {
    let text = node.ofctl(&["show", "breth0"]).unwrap();
    let mut numbers = Vec::new();
    let mut local = false;
    for line in text.lines().filter(|line| line.contains("addr:")) {
        let port = line.trim().split('(').next().unwrap().trim();
        match port.parse::<u32>() {
            Ok(number) => numbers.push(number),
            Err(_) => local |= port == "LOCAL",
        }
    }
    numbers.sort_unstable();
    let mut ports: Vec<OfPort> = numbers.into_iter().map(OfPort::Number).collect();
    if local {
        ports.push(OfPort::Local);
    }
    ports
}

/// The flows on breth0 as OVS prints them (no counters), sorted.
pub(crate) fn dump(node: &Node) -> Vec<String> {
    let mut flows = block_on(ofctl(node).dump_flows("breth0")).unwrap();
    flows.sort();
    flows
}

/// Polls `check` until it is true or `timeout` passes; returns the last answer. Each check
/// runs a process (ovs-ofctl, ip), which paces the loop.
pub(crate) fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
    }
}
