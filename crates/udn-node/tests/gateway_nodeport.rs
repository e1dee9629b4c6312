//! A primary UDN's NodePort through breth0 with real OVN: on one lab node, the default
//! network's and blue's gateway routers (as in `gateway_masquerade.rs`), a pod on blue that
//! answers TCP, and on blue's GR the load balancer `<node IP>:30080 -> <pod>:8080` that
//! udn-controller writes for a NodePort Service (written by hand here). The external host
//! connects to the node IP's NodePort: with the Service in the gateway's inputs, the agent's
//! priority 110 flows send it to blue's patch port and the answer back out, and the host gets
//! the pod's answer (the pod sees the client's own address); without them, or once the Service
//! is gone, the node's kernel gets the SYN and refuses it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gateway_support;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::mpsc;

use gateway_support::ovn::{Network, WAIT, add_pod, build_gateway, in_named_netns};
use gateway_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use udn_node::gateway::{BridgeInputs, VswitchdCtl, sync_flows};
use udn_node::services::{Protocol, ServiceNetwork};
use udn_ovn_lab::{DaemonKind, Lab, LabConfig, Node};

const NODE_PORT: u16 = 30080;
const POD_PORT: u16 = 8080;

/// The external host's TCP connection to the node IP's NodePort: what it read, or why not.
fn connect_node_port(external_netns: &str, node_ip: Ipv4Addr) -> Result<String, String> {
    in_named_netns(external_netns, move || async move {
        let target = SocketAddr::new(IpAddr::V4(node_ip), NODE_PORT);
        let mut stream = tokio::time::timeout(WAIT, tokio::net::TcpStream::connect(target))
            .await
            .map_err(|_| "connect timed out".to_owned())?
            .map_err(|error| format!("connect: {error}"))?;
        let mut answer = String::new();
        tokio::time::timeout(WAIT, stream.read_to_string(&mut answer))
            .await
            .map_err(|_| "read timed out".to_owned())?
            .map_err(|error| format!("read: {error}"))?;
        Ok(answer)
    })
    .join()
    .unwrap()
}

/// Applies the flows of `inputs` to breth0, and waits until the datapath's cached flows
/// were revalidated against them (a packet right after `replace-flows` may otherwise still
/// take a cached path of the old table, e.g. to the host).
fn apply(node: &Node, inputs: &BridgeInputs) {
    block_on(sync_flows(&ofctl(node), inputs)).unwrap();
    node.appctl(DaemonKind::Vswitchd, &["revalidator/wait"])
        .unwrap();
}

#[test]
fn a_udn_nodeport_reaches_the_udn_pod_only_with_the_service_flows() {
    let lab = Lab::start(LabConfig::with_nodes(1)).unwrap();
    let node = lab.node("node1").unwrap();
    let external = lab.external();
    let default = Network::default_network();
    let blue = Network::udn("blue_net", 1, Ipv4Addr::new(169, 254, 0, 11));
    build_gateway(node, &default);
    build_gateway(node, &blue);
    let gr = format!("GR_{}{}", blue.prefix, node.name());
    let vip = format!("{}:{NODE_PORT}", node.node_ip());
    let backend = format!("{}:{POD_PORT}", blue.pod_ip);
    node.nbctl(&[
        "lb-add",
        "blue-nodeport",
        &vip,
        &backend,
        "tcp",
        "--",
        "lr-lb-add",
        &gr,
        "blue-nodeport",
    ])
    .unwrap();
    let pod = add_pod(&lab, node, &blue);
    let mut ofports = Vec::new();
    for network in [&default, &blue] {
        let port = network.patch_port(node);
        node.wait_port("breth0", &port, WAIT)
            .unwrap_or_else(|error| panic!("{port}: {error}\n{}", lab.diagnostics()));
        ofports.push(ofport(node, &port));
    }
    node.wait_hv().unwrap();
    // As in gateway_masquerade.rs: on the userspace datapath the node's kernel also gets
    // every frame arriving on eth0; only breth0 (LOCAL) may hand it packets.
    for command in [
        "add table netdev lab_uplink",
        "add chain netdev lab_uplink ingress { type filter hook ingress device eth0 priority 0; policy drop; }",
    ] {
        let out = node.exec(&["nft", command]).unwrap();
        assert!(out.success(), "nft {command}: {}", out.stderr);
    }
    block_on(
        VswitchdCtl::new()
            .with_socket(node.log_dir().join("ovs-vswitchd.ctl"))
            .with_rundir(node.log_dir())
            .add_static_fdb("breth0", "breth0", 0, node.breth0_mac().parse().unwrap()),
    )
    .unwrap();

    // The pod answers one connection with what it saw.
    let (listening_tx, listening) = mpsc::channel();
    let pod_ip = blue.pod_ip;
    let server = in_named_netns(&pod, move || async move {
        let listener = tokio::net::TcpListener::bind((pod_ip, POD_PORT))
            .await
            .unwrap();
        listening_tx.send(()).unwrap();
        let (mut stream, peer) = tokio::time::timeout(WAIT * 2, listener.accept())
            .await
            .expect("a connection within the deadline")
            .unwrap();
        let answer = format!("blue pod answers {peer}\n");
        stream.write_all(answer.as_bytes()).await.unwrap();
        stream.shutdown().await.unwrap();
        peer
    });
    listening.recv_timeout(WAIT).unwrap();

    let without = inputs(node, ofports[0], vec![udn("blue_net", 1, Some(ofports[1]))]);
    let mut with = without.clone();
    with.bridge_ports = bridge_ports(node);
    with.services = vec![service(
        "blue",
        "web",
        ServiceNetwork::Udn("blue_net".to_owned()),
        &["10.96.0.50"],
        &[(Protocol::Tcp, 80, Some(NODE_PORT))],
        &[],
        &[],
    )];

    // Without the Service's flows the SYN ends in the node's kernel, which refuses it.
    apply(node, &without);
    let refused = connect_node_port(external.netns(), node.node_ip());
    assert!(refused.is_err(), "{refused:?}");

    // With them the pod answers, and it saw the external host itself.
    apply(node, &with);
    let answer = connect_node_port(external.netns(), node.node_ip()).unwrap_or_else(|error| {
        panic!(
            "{error}\n{}\n{}",
            node.ofctl(&["dump-flows", "breth0"]).unwrap(),
            node.nbctl(&["lb-list"]).unwrap()
        )
    });
    let peer = server.join().unwrap();
    assert_eq!(peer.ip(), IpAddr::V4(external.ip()));
    assert_eq!(answer, format!("blue pod answers {peer}\n"));
    let flows = node.ofctl(&["dump-flows", "breth0"]).unwrap();
    let to_blue = flows
        .lines()
        .find(|line| {
            line.contains(&format!("tp_dst={NODE_PORT}"))
                && line.contains(&format!("actions=output:{}", ofports[1]))
        })
        .unwrap_or_else(|| panic!("no NodePort flow in\n{flows}"));
    assert!(!to_blue.contains("n_packets=0,"), "{to_blue}");

    // The Service is deleted: its flows go, and the NodePort is refused again.
    apply(node, &without);
    let gone = connect_node_port(external.netns(), node.node_ip());
    assert!(gone.is_err(), "{gone:?}");
}
