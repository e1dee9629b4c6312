//! The masquerade SNAT of primary UDNs on breth0 with real OVN gateway routers: on one lab
//! node, the default network and two UDNs with the same pod subnet (and the same pod IP) each
//! get a gateway router bound to the node's chassis, an external switch with a localnet port
//! (so ovn-controller makes the network's patch port on breth0) and a pod behind it. The GRs
//! do what upstream's do: the default one SNATs its pods to the node IP, a UDN's to its own
//! masquerade IP (169.254.0.11, .13), and all send with the bridge MAC as source. With the
//! agent's flows on breth0, all three pods hold TCP connections from the same source port to
//! the same port of the external host at once: the host sees the node IP for each (with the
//! port conntrack picked to keep them apart), and every reply reaches the pod that sent.
//!
//! Simplifications against upstream's topology: the pod switch hangs off the GR directly (no
//! cluster router, join switch or transit switch: they do not change what the GR sends to
//! breth0), and the GRs carry only the options that matter here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gateway_support;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use gateway_support::ovn::{Network, WAIT, add_pod, build_gateway, in_named_netns};
use gateway_support::*;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use udn_node::gateway::{GatewaySync, VswitchdCtl, desired_flows, plan_flows};
use udn_node::netlink::{NetnsPath, in_netns};
use udn_ovn_lab::{DaemonKind, Lab, LabConfig, Ping};

/// The external host's port (inside the lab's own netns, so it cannot collide).
const SERVER_PORT: u16 = 7000;
/// The source port every pod connects from.
const POD_PORT: u16 = 40000;

/// What the external host's server saw on one connection.
#[derive(Debug)]
struct Seen {
    peer: SocketAddr,
    line: String,
}

/// A server on the external host: accepts `count` connections (reporting each on `accepted`),
/// reads a line from each, and only then answers each with `<line> via <peer>` and closes.
fn serve(
    netns: &str,
    count: usize,
    listening: mpsc::Sender<()>,
    accepted: mpsc::Sender<usize>,
) -> JoinHandle<Vec<Seen>> {
    in_named_netns(netns, move || async move {
        let listener = tokio::net::TcpListener::bind(("0.0.0.0", SERVER_PORT))
            .await
            .unwrap();
        listening.send(()).unwrap();
        let mut connections = Vec::new();
        while connections.len() < count {
            let (stream, peer) = tokio::time::timeout(WAIT, listener.accept())
                .await
                .expect("a connection within the deadline")
                .unwrap();
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            tokio::time::timeout(WAIT, reader.read_line(&mut line))
                .await
                .expect("a line within the deadline")
                .unwrap();
            connections.push((
                reader,
                Seen {
                    peer,
                    line: line.trim().to_owned(),
                },
            ));
            accepted.send(connections.len()).unwrap();
        }
        let mut seen = Vec::new();
        for (reader, entry) in connections {
            let mut stream = reader.into_inner();
            let reply = format!("{} via {}\n", entry.line, entry.peer);
            stream.write_all(reply.as_bytes()).await.unwrap();
            stream.shutdown().await.unwrap();
            seen.push(entry);
        }
        seen
    })
}

/// A client in a pod: connects from `POD_PORT` to the server, sends `line`, returns what the
/// server answered (after it has closed).
fn client(netns: &str, source: Ipv4Addr, server: Ipv4Addr, line: String) -> JoinHandle<String> {
    in_named_netns(netns, move || async move {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket
            .bind(SocketAddr::new(IpAddr::V4(source), POD_PORT))
            .unwrap();
        let mut stream = tokio::time::timeout(
            WAIT,
            socket.connect(SocketAddr::new(IpAddr::V4(server), SERVER_PORT)),
        )
        .await
        .expect("connected within the deadline")
        .unwrap();
        stream
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        let mut reply = String::new();
        tokio::time::timeout(WAIT, stream.read_to_string(&mut reply))
            .await
            .expect("an answer within the deadline")
            .unwrap();
        reply
    })
}

#[test]
fn udns_leave_with_the_node_ip_and_get_their_own_replies() {
    let lab = Lab::start(LabConfig::with_nodes(1)).unwrap();
    let node = lab.node("node1").unwrap();
    let external = lab.external();
    let networks = [
        Network::default_network(),
        Network::udn("blue_net", 1, Ipv4Addr::new(169, 254, 0, 11)),
        Network::udn("red_net", 2, Ipv4Addr::new(169, 254, 0, 13)),
    ];
    for network in &networks {
        build_gateway(node, network);
    }
    let pods: Vec<String> = networks
        .iter()
        .map(|network| add_pod(&lab, node, network))
        .collect();
    let mut ofports = Vec::new();
    for network in &networks {
        let port = network.patch_port(node);
        node.wait_port("breth0", &port, WAIT)
            .unwrap_or_else(|error| panic!("{port}: {error}\n{}", lab.diagnostics()));
        ofports.push(ofport(node, &port));
    }
    node.wait_hv().unwrap();
    // On the userspace datapath OVS reads eth0 through a packet socket, and the node's kernel
    // still sees every frame arriving on eth0 (same MAC as breth0): it would answer replies
    // for the node IP that OVS steers into OVN with a RST. A kernel-datapath OVS takes the
    // frames away from the stack; here a netdev ingress drop does (packet sockets see frames
    // before that hook).
    for command in [
        "add table netdev lab_uplink",
        "add chain netdev lab_uplink ingress { type filter hook ingress device eth0 priority 0; policy drop; }",
    ] {
        let out = node.exec(&["nft", command]).unwrap();
        assert!(out.success(), "nft {command}: {}", out.stderr);
    }
    // Without the agent's flows breth0 only switches (NORMAL learns the bridge MAC on the
    // GR's patch port, so the GR gets its ARP answer): a UDN's traffic leaves with its
    // masquerade source, which the outside cannot answer.
    let capture = lab
        .capture_external("icmp and src host 169.254.0.11")
        .unwrap();
    assert!(
        !lab.ping(
            &pods[1],
            IpAddr::V4(external.ip()),
            Ping::new(1, Duration::from_secs(2))
        )
        .unwrap()
    );
    assert_eq!(
        capture.wait_source(WAIT),
        Some(IpAddr::V4(Ipv4Addr::new(169, 254, 0, 11))),
        "the GR SNATs to its masquerade IP\n{}\n{}\n{}\n{}",
        node.nbctl(&["show"]).unwrap(),
        node.ofctl(&["dump-flows", "breth0"]).unwrap(),
        node.ofctl(&["show", "breth0"]).unwrap(),
        node.appctl(DaemonKind::Vswitchd, &["fdb/show", "breth0"])
            .unwrap_or_default(),
    );
    drop(capture);

    // What gateway init does: the bridge MAC stays on the host's port whatever the GRs send.
    let mac = node.breth0_mac().parse().unwrap();
    block_on(
        VswitchdCtl::new()
            .with_socket(node.log_dir().join("ovs-vswitchd.ctl"))
            .with_rundir(node.log_dir())
            .add_static_fdb("breth0", "breth0", 0, mac),
    )
    .unwrap();

    let udns = vec![
        udn("blue_net", 1, Some(ofports[1])),
        udn("red_net", 2, Some(ofports[2])),
    ];
    let inputs = inputs(node, ofports[0], udns);
    let ofctl = ofctl(node);
    let sync_inputs = inputs.clone();
    let sync_ofctl = ofctl.clone();
    let report = block_on(in_netns(
        &NetnsPath::named(node.netns()),
        move |netlink| async move {
            Ok(GatewaySync::new(sync_ofctl, Some(netlink))
                .sync(&sync_inputs)
                .await)
        },
    ))
    .unwrap()
    .unwrap();
    assert!(report.changed());
    assert_eq!(report.neighbors.replace.len(), 2);
    let desired = desired_flows(&inputs).unwrap();
    assert!(
        block_on(plan_flows(&ofctl, "breth0", &desired))
            .unwrap()
            .is_empty()
    );

    // The host's own traffic still goes out and back.
    assert!(
        lab.ping(node.netns(), IpAddr::V4(external.ip()), Ping::default())
            .unwrap()
    );

    // Three connections from the same source port to the same server port, held open at
    // once; each is established before the next starts, so the default network's (no SNAT
    // on breth0) owns the port and the UDNs' get another.
    let tcp_capture = lab.capture_external("tcp").unwrap();
    let (listening_tx, listening) = mpsc::channel();
    let (accepted_tx, accepted) = mpsc::channel();
    let server = serve(external.netns(), networks.len(), listening_tx, accepted_tx);
    listening.recv_timeout(WAIT).unwrap();
    let mut clients = Vec::new();
    for (index, (network, netns)) in networks.iter().zip(&pods).enumerate() {
        let line = format!("hello from {}", network.pod_name());
        clients.push((
            line.clone(),
            client(netns, network.pod_ip, external.ip(), line),
        ));
        assert_eq!(
            accepted.recv_timeout(WAIT),
            Ok(index + 1),
            "connection of {} not accepted\n{:#?}\n{}\n{}",
            network.pod_name(),
            tcp_capture
                .packets()
                .iter()
                .map(|p| p.line.clone())
                .collect::<Vec<_>>(),
            node.ofctl(&["dump-flows", "breth0"]).unwrap(),
            node.appctl(DaemonKind::Vswitchd, &["dpctl/dump-conntrack"])
                .unwrap(),
        );
    }
    let seen = server.join().unwrap();
    let replies: Vec<(String, String)> = clients
        .into_iter()
        .map(|(line, handle)| (line, handle.join().unwrap()))
        .collect();

    // The external host saw the node IP on every connection, from three different ports, the
    // default network's keeping the pods' port.
    let node_ip = IpAddr::V4(node.node_ip());
    for entry in &seen {
        assert_eq!(entry.peer.ip(), node_ip, "{seen:?}");
    }
    let mut ports: Vec<u16> = seen.iter().map(|entry| entry.peer.port()).collect();
    assert_eq!(seen[0].peer.port(), POD_PORT, "{seen:?}");
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 3, "{seen:?}");
    // Every pod got the answer to its own line: replies went back to the right network.
    for ((line, reply), entry) in replies.iter().zip(&seen) {
        assert_eq!(entry.line, *line);
        assert_eq!(
            reply.trim(),
            format!("{line} via {}", entry.peer),
            "{replies:?}"
        );
    }
    // Zone 64000 holds the UDN connections SNATed from their masquerade IPs, marked with
    // their network's conntrack mark (3 + network ID).
    let conntrack = node
        .appctl(
            DaemonKind::Vswitchd,
            &["dpctl/dump-conntrack", "zone=64000"],
        )
        .unwrap();
    for (masq, mark) in [("169.254.0.11", "mark=4"), ("169.254.0.13", "mark=5")] {
        assert!(
            conntrack.lines().any(|line| line.contains("tcp")
                && line.contains(&format!("src={masq}"))
                && line.contains(&format!("dport={SERVER_PORT}"))
                && line.contains(mark)),
            "no {masq} {mark} entry in\n{conntrack}"
        );
    }

    // A UDN pod's traffic to a service CIDR that no load balancer took is dropped on breth0
    // (priority 115), while its other traffic leaves.
    let capture = lab.capture_external("icmp").unwrap();
    assert!(
        !lab.ping(
            &pods[1],
            "10.96.0.10".parse().unwrap(),
            Ping::new(1, Duration::from_secs(1))
        )
        .unwrap()
    );
    assert!(
        lab.ping(&pods[1], IpAddr::V4(external.ip()), Ping::default())
            .unwrap()
    );
    assert!(
        capture
            .wait_for(WAIT, |packet| packet.dst == Some(IpAddr::V4(external.ip())))
            .is_some()
    );
    let service_packets: Vec<_> = capture
        .packets()
        .into_iter()
        .filter(|packet| packet.dst == Some("10.96.0.10".parse().unwrap()))
        .collect();
    assert!(service_packets.is_empty(), "{service_packets:?}");
    let drop = node
        .ofctl(&[
            "dump-flows",
            "breth0",
            &format!("table=0,ip,in_port={},nw_dst=10.96.0.0/16", ofports[1]),
        ])
        .unwrap();
    let drop_flow = drop
        .lines()
        .find(|line| line.contains("priority=115") && line.contains("actions=drop"))
        .unwrap_or_else(|| panic!("no drop flow in\n{drop}"));
    assert!(!drop_flow.contains("n_packets=0,"), "{drop_flow}");
}
