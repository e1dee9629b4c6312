//! End to end on a real OVN node (udn-ovn-lab: OVS with the userspace datapath and
//! ovn-controller in a node netns): a pod wired by this crate's functions alone (veth by
//! netlink, port by the OVS database client) gets `ovn-installed` from ovn-controller and
//! talks (ping and byte-exact TCP) to a pod the lab plumbed; DEL takes it apart again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udn_node::netlink::{
    NetnsPath, PodInterfaceSpec, TxChecksumOffload, delete_link, in_netns, setup_pod_interface,
};
use udn_node::ovs::{BR_INT, InstalledWait, NadFilter, Ovs, OvsConfig, PodPort, pod_iface_id};
use udn_ovn_lab::{InterfaceSpec, Lab, LabConfig, Ping, PodSpec};

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_wired_by_udn_node_is_installed_and_talks() {
    let lab = Lab::start(LabConfig::with_nodes(1)).unwrap();
    let node = lab.node("node1").unwrap();
    let iface_id = pod_iface_id("ns1", "pod-a", None);
    node.nbctl(&[
        "ls-add",
        "net",
        "--",
        "lsp-add",
        "net",
        &iface_id,
        "--",
        "lsp-set-addresses",
        &iface_id,
        "0a:58:0a:00:00:0a 10.0.0.10",
        "--",
        "lsp-add",
        "net",
        "b",
        "--",
        "lsp-set-addresses",
        "b",
        "0a:58:0a:00:00:0b 10.0.0.11",
    ])
    .unwrap();
    let b = lab
        .add_pod(
            PodSpec::new("b", "node1").interface(
                InterfaceSpec::new("eth0", "b", "0a:58:0a:00:00:0b")
                    .ip("10.0.0.11/24".parse().unwrap()),
            ),
        )
        .unwrap();
    lab.wait_installed("b", WAIT).unwrap();
    // Pod a: only its netns comes from the lab.
    let a = lab.add_pod(PodSpec::new("a", "node1")).unwrap();

    let ovs = Ovs::connect(&OvsConfig {
        endpoint: node.ovs_endpoint(),
        request_timeout: Duration::from_secs(10),
    })
    .await
    .unwrap();
    let userspace = ovs.datapath_type(BR_INT).unwrap().as_deref() == Some("netdev");
    assert!(userspace, "the lab runs the userspace datapath");
    let container_id = format!("{:08x}{}", std::process::id(), "c0ffee00".repeat(7));
    let spec = PodInterfaceSpec {
        pod_netns: NetnsPath::named(&a.netns),
        host_netns: NetnsPath::named(node.netns()),
        container_id: container_id.clone(),
        ifname: "eth0".into(),
        default_network: true,
        mac: "0a:58:0a:00:00:0a".parse().unwrap(),
        mtu: 1400,
        routable_mtu: None,
        ips: vec!["10.0.0.10/24".parse().unwrap()],
        gateways: Vec::new(),
        routes: Vec::new(),
        skip_ip_config: false,
        tx_checksum_offload: if userspace {
            TxChecksumOffload::Disable
        } else {
            TxChecksumOffload::Keep
        },
    };
    let plumbed = setup_pod_interface(&spec).await.unwrap();
    let port = PodPort {
        bridge: BR_INT.into(),
        name: plumbed.host.name.clone(),
        iface_id: iface_id.clone(),
        pod_uid: "uid-a".into(),
        sandbox: container_id.clone(),
        pod_if_name: "eth0".into(),
        mac: spec.mac,
        ips: spec.ips.clone(),
        network: None,
    };
    ovs.add_pod_port(&port).await.unwrap();
    let wait = InstalledWait {
        port: port.name.clone(),
        iface_id,
        mac: port.mac,
        ips: port.ips.clone(),
    };
    ovs.wait_ovn_installed(&wait, WAIT, std::future::pending())
        .await
        .unwrap_or_else(|error| panic!("{error}\n{}", lab.diagnostics()));

    let b_ip = b.ip().unwrap();
    let (a_netns, b_netns) = (a.netns.clone(), b.netns.clone());
    let talks = tokio::task::block_in_place(|| {
        let ping = lab.ping(&a_netns, b_ip, Ping::default()).unwrap();
        let tcp = lab.tcp_check(&a_netns, &b_netns, b_ip, 7000, WAIT).unwrap();
        (ping, tcp)
    });
    assert_eq!(talks, (true, true), "{}", lab.diagnostics());

    // DEL: the sandbox's ports go, then the host veth (and with it the pod end).
    let removed = ovs
        .delete_sandbox_ports(BR_INT, &container_id, &NadFilter::Any)
        .await
        .unwrap();
    assert_eq!(removed, std::slice::from_ref(&plumbed.host.name));
    let host_name = plumbed.host.name.clone();
    let deleted = in_netns(&NetnsPath::named(node.netns()), move |netlink| async move {
        delete_link(&netlink, &host_name).await
    })
    .await
    .unwrap();
    assert!(deleted);
    let ports = node.vsctl(&["list-ports", "br-int"]).unwrap();
    assert!(!ports.contains(&plumbed.host.name), "{ports}");
    let gone = tokio::task::block_in_place(|| {
        lab.ping(&b.netns, "10.0.0.10".parse().unwrap(), Ping::default())
            .unwrap()
    });
    assert!(!gone);
}
