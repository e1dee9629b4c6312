//! The OVS database steps against a private `ovsdb-server` with the Open vSwitch schema (no
//! vswitchd): what `ovs-vsctl`, a separate client, reads back after each.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udn_node::ovs::pod_port::{IFACE_ID, plan_pod_port};
use udn_node::ovs::sandbox::plan_delete_sandbox;
use udn_node::ovs::{
    BR_INT, ChassisConfig, DesiredBridge, Focus, MgmtPort, NadFilter, Ovs, OvsConfig, OvsState,
    PodPort, PodPortNetwork, legacy_mgmt_port_name, mgmt_iface_id, pod_iface_id,
};
use udn_ovsdb::testing::OvsdbServer;

async fn connect(server: &OvsdbServer) -> Ovs {
    let config = OvsConfig {
        endpoint: server.endpoint(),
        request_timeout: Duration::from_secs(10),
    };
    Ovs::connect(&config).await.unwrap()
}

/// A server with `br-int` made by [`DesiredBridge::integration`], and a client.
async fn with_br_int() -> (OvsdbServer, Ovs) {
    let server = OvsdbServer::start_vswitch().unwrap();
    let ovs = connect(&server).await;
    assert!(
        ovs.ensure_bridge(&DesiredBridge::integration("netdev"))
            .await
            .unwrap()
    );
    assert!(
        !ovs.ensure_bridge(&DesiredBridge::integration("netdev"))
            .await
            .unwrap()
    );
    (server, ovs)
}

fn vsctl(server: &OvsdbServer, args: &[&str]) -> String {
    server.vsctl(args).unwrap().trim().to_owned()
}

/// Waits (up to 10 s) until the client's replica shows what another client (`ovs-vsctl`)
/// committed: monitor updates arrive after that client's commit, not before our next call.
async fn seen(ovs: &Ovs, what: impl Fn(&OvsState) -> bool) {
    let mut changes = ovs.client().changes();
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            changes.borrow_and_update();
            if what(&ovs.state().unwrap()) {
                return;
            }
            changes.changed().await.unwrap();
        }
    })
    .await
    .unwrap();
}

fn pod_port(name: &str, sandbox: &str, network: Option<PodPortNetwork>) -> PodPort {
    let nad = network.as_ref().map(|n| n.nad_key.clone());
    PodPort {
        bridge: BR_INT.into(),
        name: name.into(),
        iface_id: pod_iface_id("ns1", "pod-a", nad.as_deref()),
        pod_uid: "7d1c6f6e-1111-2222-3333-444455556666".into(),
        sandbox: sandbox.into(),
        pod_if_name: if network.is_some() {
            "ovn-udn1"
        } else {
            "eth0"
        }
        .into(),
        mac: "0a:58:0a:f4:01:05".parse().unwrap(),
        ips: vec!["10.244.1.5/24".parse().unwrap()],
        network,
    }
}

fn blue() -> PodPortNetwork {
    PodPortNetwork {
        name: "ns1_blue".into(),
        nad_key: "ns1/blue".into(),
    }
}

#[tokio::test]
async fn chassis_config_and_bridge_mappings_merge_keeping_other_keys() {
    let server = OvsdbServer::start_vswitch().unwrap();
    vsctl(
        &server,
        &[
            "set",
            "Open_vSwitch",
            ".",
            "external_ids:system-id=chassis-1",
            "external_ids:ovn-bridge-mappings=other:br1",
        ],
    );
    let ovs = connect(&server).await;
    let mut config = ChassisConfig::new("172.18.0.2", "node1");
    config.ovn_remote = Some("unix:/var/run/ovn/ovnsb_db.sock".into());
    assert!(ovs.ensure_chassis_config(&config).await.unwrap());
    assert!(!ovs.ensure_chassis_config(&config).await.unwrap());
    assert!(
        ovs.ensure_bridge_mapping("physnet", "breth0")
            .await
            .unwrap()
    );
    assert!(
        !ovs.ensure_bridge_mapping("physnet", "breth0")
            .await
            .unwrap()
    );
    assert_eq!(
        vsctl(&server, &["get", "Open_vSwitch", ".", "external_ids"]),
        "{hostname=node1, ovn-bridge-mappings=\"other:br1,physnet:breth0\", \
         ovn-bridge-remote-probe-interval=\"0\", ovn-enable-lflow-cache=\"true\", \
         ovn-encap-ip=\"172.18.0.2\", ovn-encap-type=geneve, ovn-is-interconn=\"true\", \
         ovn-monitor-all=\"true\", ovn-ofctrl-wait-before-clear=\"0\", \
         ovn-remote=\"unix:/var/run/ovn/ovnsb_db.sock\", ovn-remote-probe-interval=\"100000\", \
         ovn-set-local-ip=\"true\", system-id=chassis-1}"
    );
    assert_eq!(
        vsctl(&server, &["get", "Open_vSwitch", ".", "other_config"]),
        "{bundle-idle-timeout=\"0\"}"
    );
}

#[tokio::test]
async fn br_int_is_made_as_ovn_controller_would() {
    let (server, ovs) = with_br_int().await;
    assert_eq!(
        vsctl(
            &server,
            &[
                "get",
                "Bridge",
                "br-int",
                "fail_mode",
                "datapath_type",
                "other_config"
            ]
        ),
        "secure\nnetdev\n{disable-in-band=\"true\"}"
    );
    assert_eq!(
        vsctl(&server, &["get", "Interface", "br-int", "type"]),
        "internal"
    );
    assert_eq!(
        ovs.datapath_type(BR_INT).unwrap().as_deref(),
        Some("netdev")
    );
    assert_eq!(ovs.datapath_type("br-none").unwrap(), None);
}

#[tokio::test]
async fn pod_port_is_added_with_upstreams_external_ids() {
    let (server, ovs) = with_br_int().await;
    let plan = ovs
        .add_pod_port(&pod_port("3f1b2c4d5e6f7a8", "3f1b2c4d5e6f7a8b9c", None))
        .await
        .unwrap();
    assert!(plan.stale_ports.is_empty());
    assert_eq!(
        vsctl(
            &server,
            &["get", "Interface", "3f1b2c4d5e6f7a8", "external_ids"]
        ),
        "{attached_mac=\"0a:58:0a:f4:01:05\", iface-id=ns1_pod-a, \
         iface-id-ver=\"7d1c6f6e-1111-2222-3333-444455556666\", ip_addresses=\"10.244.1.5/24\", \
         pod-if-name=eth0, sandbox=\"3f1b2c4d5e6f7a8b9c\"}"
    );
    assert_eq!(
        vsctl(&server, &["get", "Port", "3f1b2c4d5e6f7a8", "other_config"]),
        "{transient=\"true\"}"
    );
    assert_eq!(vsctl(&server, &["list-ports", "br-int"]), "3f1b2c4d5e6f7a8");
    // A UDN port: the network and NAD keys, the network-scoped iface-id.
    ovs.add_pod_port(&pod_port(
        "3f1b2c4d5e6f7_3",
        "3f1b2c4d5e6f7a8b9c",
        Some(blue()),
    ))
    .await
    .unwrap();
    assert_eq!(
        vsctl(
            &server,
            &[
                "get",
                "Interface",
                "3f1b2c4d5e6f7_3",
                "external_ids:iface-id",
                "external_ids:k8s.ovn.org/network",
                "external_ids:k8s.ovn.org/nad"
            ]
        ),
        "ns1.blue_ns1_pod-a\nns1_blue\n\"ns1/blue\""
    );
    // Re-adding the same port sends nothing.
    let again = ovs
        .add_pod_port(&pod_port("3f1b2c4d5e6f7a8", "3f1b2c4d5e6f7a8b9c", None))
        .await
        .unwrap();
    assert!(again.ops.is_empty());
    let listed: Vec<(String, Option<String>)> = ovs
        .pod_ports(BR_INT)
        .unwrap()
        .into_iter()
        .map(|record| (record.name, record.nad_key))
        .collect();
    assert_eq!(
        listed,
        [
            ("3f1b2c4d5e6f7_3".to_owned(), Some("ns1/blue".to_owned())),
            ("3f1b2c4d5e6f7a8".to_owned(), None),
        ]
    );
}

#[tokio::test]
async fn an_older_sandbox_port_of_the_pod_is_removed() {
    let (server, ovs) = with_br_int().await;
    vsctl(
        &server,
        &[
            "add-port",
            "br-int",
            "oldsandbox12345",
            "--",
            "set",
            "Interface",
            "oldsandbox12345",
            "external_ids:iface-id=ns1_pod-a",
        ],
    );
    seen(&ovs, |state| state.port("oldsandbox12345").is_some()).await;
    let plan = ovs
        .add_pod_port(&pod_port("newsandbox12345", "new", None))
        .await
        .unwrap();
    assert_eq!(plan.stale_ports, ["oldsandbox12345"]);
    assert_eq!(vsctl(&server, &["list-ports", "br-int"]), "newsandbox12345");
    assert_eq!(
        vsctl(
            &server,
            &["--if-exists", "get", "Interface", "oldsandbox12345", "name"]
        ),
        ""
    );
}

/// The focused snapshot a pod's port is planned from plans exactly as the whole replica
/// would, for a new port, the same port again, a port taking over a pod's older sandbox, a
/// host veth bound to another pod, and a sandbox's deletion.
#[tokio::test]
async fn focused_snapshots_plan_as_the_whole_replica() {
    let (server, ovs) = with_br_int().await;
    for (name, sandbox) in [("aaaaaaaaaaaaaaa", "s1"), ("bbbbbbbbbbbbbbb", "s2")] {
        let mut port = pod_port(name, sandbox, None);
        port.iface_id = format!("ns1_{name}");
        ovs.add_pod_port(&port).await.unwrap();
    }
    vsctl(
        &server,
        &[
            "add-port",
            "br-int",
            "stale1234567890",
            "--",
            "set",
            "Interface",
            "stale1234567890",
            "external_ids:iface-id=ns1_pod-a",
        ],
    );
    seen(&ovs, |state| state.port("stale1234567890").is_some()).await;
    let mut other = pod_port("aaaaaaaaaaaaaaa", "s1", None);
    other.iface_id = "ns1_somebody-else".into();
    let mut again = pod_port("aaaaaaaaaaaaaaa", "s1", None);
    again.iface_id = "ns1_aaaaaaaaaaaaaaa".into();
    let cases = [
        pod_port("newsandbox12345", "new", None),
        pod_port("newsandbox12345", "new", Some(blue())),
        again,
        other,
    ];
    let whole = ovs.state().unwrap();
    for port in &cases {
        let focused = ovs
            .focused_state(&Focus {
                names: vec![&port.name],
                external_ids: vec![(IFACE_ID, &port.iface_id)],
                bridges: Vec::new(),
            })
            .unwrap();
        assert!(focused.interfaces.len() < whole.interfaces.len());
        assert_eq!(
            format!("{:?}", plan_pod_port(&focused, port)),
            format!("{:?}", plan_pod_port(&whole, port)),
            "{port:?}"
        );
    }
    let focused = ovs
        .focused_state(&Focus {
            external_ids: vec![("sandbox", "s2")],
            ..Focus::default()
        })
        .unwrap();
    let plan = plan_delete_sandbox(&focused, BR_INT, "s2", &NadFilter::Any);
    assert_eq!(plan.ports, ["bbbbbbbbbbbbbbb"]);
    assert_eq!(
        plan,
        plan_delete_sandbox(&whole, BR_INT, "s2", &NadFilter::Any)
    );
    assert_eq!(ovs.pod_interface_count(), 2);
}

#[tokio::test]
async fn a_host_veth_bound_to_another_pod_is_refused() {
    let (server, ovs) = with_br_int().await;
    vsctl(
        &server,
        &[
            "add-port",
            "br-int",
            "3f1b2c4d5e6f7a8",
            "--",
            "set",
            "Interface",
            "3f1b2c4d5e6f7a8",
            "external_ids:iface-id=ns1_pod-b",
        ],
    );
    seen(&ovs, |state| state.port("3f1b2c4d5e6f7a8").is_some()).await;
    let error = ovs
        .add_pod_port(&pod_port("3f1b2c4d5e6f7a8", "s", None))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "OVS port 3f1b2c4d5e6f7a8 was added for iface-id (ns1_pod-b), now readding it for (ns1_pod-a)"
    );
    assert_eq!(
        vsctl(
            &server,
            &["get", "Interface", "3f1b2c4d5e6f7a8", "external_ids"]
        ),
        "{iface-id=ns1_pod-b}"
    );
}

#[tokio::test]
async fn del_removes_a_sandboxs_ports_by_nad_and_is_idempotent() {
    let (server, ovs) = with_br_int().await;
    ovs.add_pod_port(&pod_port("sbx1_default123", "sbx1", None))
        .await
        .unwrap();
    ovs.add_pod_port(&pod_port("sbx1_udn1234_3", "sbx1", Some(blue())))
        .await
        .unwrap();
    let mut other = pod_port("sbx2_default123", "sbx2", None);
    other.iface_id = pod_iface_id("ns1", "pod-b", None);
    ovs.add_pod_port(&other).await.unwrap();
    let udn_only = ovs
        .delete_sandbox_ports(BR_INT, "sbx1", &NadFilter::Nad("ns1/blue".into()))
        .await
        .unwrap();
    assert_eq!(udn_only, ["sbx1_udn1234_3"]);
    let rest = ovs
        .delete_sandbox_ports(BR_INT, "sbx1", &NadFilter::Any)
        .await
        .unwrap();
    assert_eq!(rest, ["sbx1_default123"]);
    assert!(
        ovs.delete_sandbox_ports(BR_INT, "sbx1", &NadFilter::Any)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(vsctl(&server, &["list-ports", "br-int"]), "sbx2_default123");
    assert!(ovs.delete_port(BR_INT, "sbx2_default123").await.unwrap());
    assert!(!ovs.delete_port(BR_INT, "sbx2_default123").await.unwrap());
    assert_eq!(vsctl(&server, &["list-ports", "br-int"]), "");
}

#[tokio::test]
async fn management_ports_default_and_udn() {
    let (server, ovs) = with_br_int().await;
    vsctl(
        &server,
        &[
            "add-port",
            "br-int",
            "k8s-node1",
            "--",
            "set",
            "Interface",
            "k8s-node1",
            "type=internal",
        ],
    );
    seen(&ovs, |state| state.port("k8s-node1").is_some()).await;
    let mp0 = MgmtPort {
        bridge: BR_INT.into(),
        name: "ovn-k8s-mp0".into(),
        mac: "0a:58:0a:f4:01:02".parse().unwrap(),
        mtu: 1400,
        iface_id: mgmt_iface_id("node1", None),
        network: None,
        remove_ports: vec![legacy_mgmt_port_name("node1")],
    };
    assert!(ovs.ensure_mgmt_port(&mp0).await.unwrap());
    assert!(!ovs.ensure_mgmt_port(&mp0).await.unwrap());
    assert_eq!(
        vsctl(
            &server,
            &[
                "get",
                "Interface",
                "ovn-k8s-mp0",
                "type",
                "mac",
                "mtu_request",
                "external_ids"
            ]
        ),
        "internal\n\"0a:58:0a:f4:01:02\"\n1400\n{iface-id=k8s-node1}"
    );
    let mp3 = MgmtPort {
        name: "ovn-k8s-mp3".into(),
        mac: "0a:58:64:80:00:02".parse().unwrap(),
        iface_id: mgmt_iface_id("node1", Some("ns1_blue")),
        network: Some("ns1_blue".into()),
        remove_ports: Vec::new(),
        ..mp0.clone()
    };
    assert!(ovs.ensure_mgmt_port(&mp3).await.unwrap());
    assert_eq!(
        vsctl(
            &server,
            &["get", "Interface", "ovn-k8s-mp3", "external_ids"]
        ),
        "{iface-id=k8s-ns1_blue_node1, \"k8s.ovn.org/network\"=ns1_blue}"
    );
    assert_eq!(
        vsctl(&server, &["list-ports", "br-int"]),
        "ovn-k8s-mp0\novn-k8s-mp3"
    );
    assert!(ovs.delete_port(BR_INT, "ovn-k8s-mp3").await.unwrap());
    assert_eq!(vsctl(&server, &["list-ports", "br-int"]), "ovn-k8s-mp0");
}
