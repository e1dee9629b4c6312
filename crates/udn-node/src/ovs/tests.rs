//! Plans against hand-made snapshots: names, the pod port transaction (snapshotted as the
//! JSON sent), refusals, DEL filters, the chassis configuration merge, management ports and
//! bridges.

use std::collections::{BTreeMap, BTreeSet};

use udn_ovsdb::protocol::{Operation, Uuid};
use udn_ovsdb::vswitch::{Bridge, Interface, OpenVswitch, Port};

use super::ops::pairs;
use super::*;

fn uuid(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn json(ops: &[Operation]) -> serde_json::Value {
    serde_json::Value::Array(ops.iter().map(Operation::to_json).collect())
}

/// `Open_vSwitch` (1) with `br-int` (10) holding its internal port (20, interface 30).
fn base() -> OvsState {
    let mut state = OvsState {
        open_vswitch: Some(OpenVswitch {
            uuid: Some(uuid(1)),
            bridges: BTreeSet::from([uuid(10)]),
            external_ids: pairs(&[
                ("system-id", "chassis-1"),
                ("ovn-bridge-mappings", "other:br1"),
            ]),
            ..Default::default()
        }),
        ..Default::default()
    };
    add_bridge(&mut state, 10, "br-int", "netdev");
    add_port(&mut state, 10, 20, "br-int", "internal", &[]);
    state
}

fn add_bridge(state: &mut OvsState, id: u128, name: &str, datapath: &str) {
    state.bridges.insert(
        uuid(id),
        Bridge {
            uuid: Some(uuid(id)),
            name: name.into(),
            datapath_type: datapath.into(),
            fail_mode: Some("secure".into()),
            other_config: pairs(&[("disable-in-band", "true")]),
            ..Default::default()
        },
    );
}

/// Port `id` (interface `id + 10`) on bridge `bridge`.
fn add_port(
    state: &mut OvsState,
    bridge: u128,
    id: u128,
    name: &str,
    kind: &str,
    ids: &[(&str, &str)],
) {
    state.interfaces.insert(
        uuid(id + 10),
        Interface {
            uuid: Some(uuid(id + 10)),
            name: name.into(),
            type_: kind.into(),
            external_ids: pairs(ids),
            ..Default::default()
        },
    );
    state.ports.insert(
        uuid(id),
        Port {
            uuid: Some(uuid(id)),
            name: name.into(),
            interfaces: BTreeSet::from([uuid(id + 10)]),
            other_config: pairs(&[("transient", "true")]),
            ..Default::default()
        },
    );
    if let Some(bridge) = state.bridges.get_mut(&uuid(bridge)) {
        bridge.ports.insert(uuid(id));
    }
}

fn pod_port(network: Option<PodPortNetwork>) -> PodPort {
    let nad = network.as_ref().map(|n| n.nad_key.clone());
    PodPort {
        bridge: BR_INT.into(),
        name: "3f1b2c4d5e6f7a8".into(),
        iface_id: pod_iface_id("ns1", "pod-a", nad.as_deref()),
        pod_uid: "7d1c6f6e-1111-2222-3333-444455556666".into(),
        sandbox: "3f1b2c4d5e6f7a8b9c0d".into(),
        pod_if_name: "eth0".into(),
        mac: "0a:58:0a:f4:01:05".parse().unwrap(),
        ips: vec![
            "10.244.1.5/24".parse().unwrap(),
            "fd00:10:244:1::5/64".parse().unwrap(),
        ],
        network,
    }
}

fn udn() -> PodPortNetwork {
    PodPortNetwork {
        name: "ns1_blue".into(),
        nad_key: "ns1/blue-net".into(),
    }
}

#[test]
fn iface_ids_and_mgmt_names_as_upstream() {
    assert_eq!(pod_iface_id("ns1", "pod-a", None), "ns1_pod-a");
    assert_eq!(
        pod_iface_id("ns1", "pod-a", Some("ns1/l3-net")),
        "ns1.l3.net_ns1_pod-a"
    );
    assert_eq!(mgmt_port_name(None), "ovn-k8s-mp0");
    assert_eq!(mgmt_port_name(Some(3)), "ovn-k8s-mp3");
    assert_eq!(mgmt_iface_id("node1", None), "k8s-node1");
    assert_eq!(
        mgmt_iface_id("node1", Some("ns1_blue-net")),
        "k8s-ns1_blue.net_node1"
    );
    assert_eq!(
        legacy_mgmt_port_name("a-very-long-node-name"),
        "k8s-a-very-long"
    );
    assert_eq!(legacy_mgmt_port_name("node1"), "k8s-node1");
    let ips = [
        "10.244.1.5/24".parse().unwrap(),
        "fd00::5/64".parse().unwrap(),
    ];
    assert_eq!(go_ip_list(&ips), "[10.244.1.5/24 fd00::5/64]");
}

#[test]
fn default_network_pod_port_is_one_insert_transaction() {
    let plan = pod_port::plan_pod_port(&base(), &pod_port(None)).unwrap();
    assert!(plan.stale_ports.is_empty());
    insta::assert_json_snapshot!(json(&plan.ops));
}

#[test]
fn udn_pod_port_carries_network_and_nad() {
    let ids = pod_port(Some(udn())).external_ids();
    assert_eq!(ids["k8s.ovn.org/network"], "ns1_blue");
    assert_eq!(ids["k8s.ovn.org/nad"], "ns1/blue-net");
    assert_eq!(ids["iface-id"], "ns1.blue.net_ns1_pod-a");
    assert_eq!(ids["ip_addresses"], "10.244.1.5/24,fd00:10:244:1::5/64");
    let default_ids = pod_port(None).external_ids();
    assert!(!default_ids.contains_key("k8s.ovn.org/network"));
    assert!(!default_ids.contains_key("k8s.ovn.org/nad"));
}

#[test]
fn stale_ports_of_the_iface_id_go_in_the_same_transaction() {
    let mut state = base();
    add_port(
        &mut state,
        10,
        40,
        "oldsandbox12345",
        "",
        &[("iface-id", "ns1_pod-a"), ("sandbox", "old")],
    );
    // The same iface-id on another bridge is not ours to remove (upstream scopes to br-int).
    add_bridge(&mut state, 11, "br-other", "netdev");
    add_port(
        &mut state,
        11,
        50,
        "elsewhere123456",
        "",
        &[("iface-id", "ns1_pod-a")],
    );
    let plan = pod_port::plan_pod_port(&state, &pod_port(None)).unwrap();
    assert_eq!(plan.stale_ports, ["oldsandbox12345"]);
    insta::assert_json_snapshot!(json(&plan.ops));
}

#[test]
fn a_host_veth_of_another_pod_or_nad_is_refused() {
    let mut state = base();
    add_port(
        &mut state,
        10,
        40,
        "3f1b2c4d5e6f7a8",
        "",
        &[("iface-id", "ns1_pod-b")],
    );
    let error = pod_port::plan_pod_port(&state, &pod_port(None)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "OVS port 3f1b2c4d5e6f7a8 was added for iface-id (ns1_pod-b), now readding it for (ns1_pod-a)"
    );
    let mut state = base();
    let id = pod_iface_id("ns1", "pod-a", None);
    add_port(
        &mut state,
        10,
        40,
        "3f1b2c4d5e6f7a8",
        "",
        &[("iface-id", &id), ("k8s.ovn.org/nad", "ns1/blue-net")],
    );
    let error = pod_port::plan_pod_port(&state, &pod_port(None)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "OVS port 3f1b2c4d5e6f7a8 was added for NAD (ns1/blue-net), expect (default)"
    );
}

#[test]
fn re_adding_the_same_port_plans_nothing_and_a_new_sandbox_only_its_keys() {
    let port = pod_port(Some(udn()));
    let mut state = base();
    let ids = port.external_ids();
    let ids: Vec<(&str, &str)> = ids.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut with_installed = ids.clone();
    with_installed.push(("ovn-installed", "true"));
    add_port(&mut state, 10, 40, &port.name, "", &with_installed);
    assert_eq!(pod_port::plan_pod_port(&state, &port).unwrap().ops, []);
    let newer = PodPort {
        sandbox: "newsandbox".into(),
        ..port
    };
    insta::assert_json_snapshot!(json(&pod_port::plan_pod_port(&state, &newer).unwrap().ops));
}

#[test]
fn a_port_on_another_bridge_is_refused() {
    let mut state = base();
    add_bridge(&mut state, 11, "breth0", "netdev");
    add_port(
        &mut state,
        11,
        40,
        "3f1b2c4d5e6f7a8",
        "",
        &[("iface-id", "ns1_pod-a")],
    );
    let error = pod_port::plan_pod_port(&state, &pod_port(None)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "port \"3f1b2c4d5e6f7a8\" is already attached to bridge \"breth0\""
    );
}

#[test]
fn delete_by_sandbox_filters_by_nad() {
    let mut state = base();
    add_port(
        &mut state,
        10,
        40,
        "sbx_default",
        "",
        &[("sandbox", "sbx"), ("iface-id", "ns1_pod-a")],
    );
    add_port(
        &mut state,
        10,
        50,
        "sbx_3",
        "",
        &[("sandbox", "sbx"), ("k8s.ovn.org/nad", "ns1/blue-net")],
    );
    add_port(
        &mut state,
        10,
        60,
        "other_sandbox",
        "",
        &[("sandbox", "other")],
    );
    let names =
        |filter: &NadFilter| sandbox::plan_delete_sandbox(&state, BR_INT, "sbx", filter).ports;
    assert_eq!(names(&NadFilter::Any), ["sbx_3", "sbx_default"]);
    assert_eq!(names(&NadFilter::Nad("ns1/blue-net".into())), ["sbx_3"]);
    assert_eq!(names(&NadFilter::DefaultNetwork), ["sbx_default"]);
    assert!(
        sandbox::plan_delete_sandbox(&state, BR_INT, "gone", &NadFilter::Any)
            .ops
            .is_empty()
    );
    let plan = sandbox::plan_delete_sandbox(&state, BR_INT, "sbx", &NadFilter::Any);
    insta::assert_json_snapshot!(json(&plan.ops));
    let listed: Vec<String> = sandbox::list_pod_ports(&state, BR_INT)
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(listed, ["other_sandbox", "sbx_3", "sbx_default"]);
}

#[test]
fn chassis_config_is_upstreams_list_and_merges_keeping_other_keys() {
    let mut config = ChassisConfig::new("172.18.0.2", "node1");
    config.ovn_remote = Some("unix:/var/run/ovn/ovnsb_db.sock".into());
    insta::assert_json_snapshot!(serde_json::json!({
        "external_ids": config.external_ids(),
        "other_config": config.other_config(),
    }));
    let mut state = base();
    let ops =
        open_vswitch::plan_open_vswitch(&state, &config.external_ids(), &config.other_config())
            .unwrap();
    insta::assert_json_snapshot!(json(&ops));
    // Applied: nothing left to do, and system-id stays.
    if let Some(row) = state.open_vswitch.as_mut() {
        row.external_ids.extend(config.external_ids());
        row.other_config.extend(config.other_config());
    }
    assert_eq!(
        open_vswitch::plan_open_vswitch(&state, &config.external_ids(), &config.other_config())
            .unwrap(),
        []
    );
    assert_eq!(
        open_vswitch::plan_open_vswitch(&OvsState::default(), &BTreeMap::new(), &BTreeMap::new())
            .unwrap_err()
            .to_string(),
        "the OVS database has no Open_vSwitch row"
    );
}

#[test]
fn bridge_mappings_keep_other_networks() {
    assert_eq!(
        merge_bridge_mappings("", "physnet", "breth0"),
        "physnet:breth0"
    );
    assert_eq!(
        merge_bridge_mappings("other:br1", "physnet", "breth0"),
        "other:br1,physnet:breth0"
    );
    assert_eq!(
        merge_bridge_mappings("physnet:brold,other:br1", "physnet", "breth0"),
        "other:br1,physnet:breth0"
    );
    let state = base();
    let ops = open_vswitch::plan_bridge_mapping(&state, "physnet", "breth0").unwrap();
    insta::assert_json_snapshot!(json(&ops));
}

#[test]
fn mgmt_port_plans_and_converges() {
    let port = MgmtPort {
        bridge: BR_INT.into(),
        name: "ovn-k8s-mp0".into(),
        mac: "0a:58:0a:f4:01:02".parse().unwrap(),
        mtu: 1400,
        iface_id: mgmt_iface_id("node1", None),
        network: None,
        remove_ports: vec![legacy_mgmt_port_name("node1")],
    };
    let mut state = base();
    add_port(
        &mut state,
        10,
        40,
        "k8s-node1",
        "internal",
        &[("iface-id", "k8s-node1")],
    );
    insta::assert_json_snapshot!(json(&mgmt_port::plan_mgmt_port(&state, &port).unwrap()));
    let mut converged = base();
    add_port(
        &mut converged,
        10,
        40,
        "ovn-k8s-mp0",
        "internal",
        &[("iface-id", "k8s-node1"), ("other", "kept")],
    );
    if let Some(iface) = converged.interfaces.get_mut(&uuid(50)) {
        iface.mac = Some("0a:58:0a:f4:01:02".into());
        iface.mtu_request = Some(1400);
    }
    assert_eq!(mgmt_port::plan_mgmt_port(&converged, &port).unwrap(), []);
    let mut other_mtu = converged.clone();
    if let Some(iface) = other_mtu.interfaces.get_mut(&uuid(50)) {
        iface.mtu_request = Some(1500);
    }
    let ops = mgmt_port::plan_mgmt_port(&other_mtu, &port).unwrap();
    assert_eq!(
        json(&ops).to_string(),
        r#"[{"op":"update","table":"Interface","where":[["_uuid","==",["uuid","00000000-0000-0000-0000-000000000032"]]],"row":{"mtu_request":1400}}]"#
    );
}

#[test]
fn a_missing_bridge_is_created_with_its_internal_port() {
    let state = OvsState {
        open_vswitch: base().open_vswitch,
        ..Default::default()
    };
    let desired = DesiredBridge::integration("netdev");
    insta::assert_json_snapshot!(json(&bridge::plan_bridge(&state, &desired).unwrap()));
    assert_eq!(bridge::plan_bridge(&base(), &desired).unwrap(), []);
    let system = DesiredBridge::integration("system");
    let ops = bridge::plan_bridge(&base(), &system).unwrap();
    assert_eq!(
        json(&ops).to_string(),
        r#"[{"op":"update","table":"Bridge","where":[["_uuid","==",["uuid","00000000-0000-0000-0000-00000000000a"]]],"row":{"datapath_type":"system"}}]"#
    );
    let error = pod_port::plan_pod_port(&OvsState::default(), &pod_port(None)).unwrap_err();
    assert_eq!(error.to_string(), "OVS bridge br-int does not exist");
}
