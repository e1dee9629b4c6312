use super::*;
use udn_api::annotations::{NetworkSelectionElement, PodNetworkRole, format_pod_networks};
use udn_api::cluster::ClusterConfig;
use udn_api::netconf::{NetConf, NetInfo};

fn info(name: &str, role: &str, subnets: &str, persistent: bool) -> UserDefinedNetInfo {
    let conf = NetConf {
        name: name.into(),
        topology: "layer2".into(),
        role: role.into(),
        subnets: subnets.into(),
        nad_name: "ns/net".into(),
        allow_persistent_ips: persistent,
        ..NetConf::default()
    };
    NetInfo::from_netconf(&conf, &ClusterConfig::default())
        .unwrap()
        .user_defined()
        .unwrap()
        .clone()
}

fn keys(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| (*k).to_owned()).collect()
}

fn attachment(nad_key: &str, network: &str, role: PodNetworkRole, claim: &str) -> Attachment {
    Attachment {
        nad_key: nad_key.into(),
        network: network.into(),
        role,
        element: NetworkSelectionElement {
            name: "net".into(),
            namespace: "ns".into(),
            ipam_claim_reference: claim.into(),
            ..NetworkSelectionElement::default()
        },
    }
}

fn plan(
    state: &mut IpamState,
    name: &str,
    uid: &str,
    existing: &PodNetworks,
    attachments: &[Attachment],
    claims: &dyn Fn(&str) -> Option<ClaimView>,
) -> PodPlan {
    state.plan_pod(
        &PodInput {
            key: &format!("ns/{name}"),
            namespace: "ns",
            name,
            uid,
            existing,
            attachments,
        },
        &[],
        true,
        claims,
    )
}

fn no_claims(_: &str) -> Option<ClaimView> {
    None
}

fn primary_state() -> IpamState {
    let mut state = IpamState::default();
    state.sync_network(
        "ns_net",
        Some(&info("ns_net", "primary", "10.100.0.0/24", false)),
        &keys(&["ns/net"]),
        &[],
        &[],
    );
    state
}

#[test]
fn primary_pod_gets_dot_three_and_tunnel_ten() {
    let mut state = primary_state();
    let attachments = [attachment("ns/net", "ns_net", PodNetworkRole::Primary, "")];
    let first = plan(
        &mut state,
        "a",
        "u1",
        &PodNetworks::new(),
        &attachments,
        &no_claims,
    );
    assert!(first.errors.is_empty());
    assert_eq!(
        format_pod_networks(&first.desired).unwrap(),
        r#"{"ns/net":{"ip_addresses":["10.100.0.3/24"],"mac_address":"0a:58:0a:64:00:03","gateway_ips":["10.100.0.1"],"routes":[{"dest":"100.65.0.0/16","nextHop":"10.100.0.1"}],"ip_address":"10.100.0.3/24","gateway_ip":"10.100.0.1","tunnel_id":10,"role":"primary"}}"#
    );
    assert_eq!(first.new.len(), 2);
    // Idempotent for the annotated pod.
    let again = plan(
        &mut state,
        "a",
        "u1",
        &first.desired,
        &attachments,
        &no_claims,
    );
    assert_eq!(again.desired, first.desired);
    assert!(again.new.is_empty());
    let second = plan(
        &mut state,
        "b",
        "u2",
        &PodNetworks::new(),
        &attachments,
        &no_claims,
    );
    assert_eq!(
        second.desired["ns/net"].ip_addresses[0].to_string(),
        "10.100.0.4/24"
    );
    assert_eq!(second.desired["ns/net"].tunnel_id, 11);
}

#[test]
fn release_frees_ips_and_tunnel() {
    let mut state = primary_state();
    let attachments = [attachment("ns/net", "ns_net", PodNetworkRole::Primary, "")];
    plan(
        &mut state,
        "a",
        "u1",
        &PodNetworks::new(),
        &attachments,
        &no_claims,
    );
    let free = state.free_ips("ns_net").unwrap();
    assert_eq!(state.release_pod("ns/a"), keys(&["ns_net"]));
    assert_eq!(state.free_ips("ns_net").unwrap(), free + 1);
    assert!(state.pod_keys().is_empty());
}

#[test]
fn rollback_undoes_new_allocations_only() {
    let mut state = primary_state();
    let attachments = [attachment("ns/net", "ns_net", PodNetworkRole::Primary, "")];
    let free = state.free_ips("ns_net").unwrap();
    let planned = plan(
        &mut state,
        "a",
        "u1",
        &PodNetworks::new(),
        &attachments,
        &no_claims,
    );
    state.rollback("ns/a", &planned);
    assert_eq!(state.free_ips("ns_net").unwrap(), free);
    assert!(state.release_pod("ns/a").is_empty());
}

#[test]
fn restore_holds_annotated_allocations_before_new_ones() {
    let mut state = primary_state();
    let attachments = [attachment("ns/net", "ns_net", PodNetworkRole::Primary, "")];
    let a = plan(
        &mut state,
        "a",
        "u1",
        &PodNetworks::new(),
        &attachments,
        &no_claims,
    );
    // A fresh state restored from the annotation never hands the same IP/tunnel out again.
    let mut restored = IpamState::default();
    restored.sync_network(
        "ns_net",
        Some(&info("ns_net", "primary", "10.100.0.0/24", false)),
        &keys(&["ns/net"]),
        &[PodSnapshot {
            key: "ns/a".into(),
            uid: "u1".into(),
            active: true,
            networks: a.desired,
        }],
        &[],
    );
    let b = plan(
        &mut restored,
        "b",
        "u2",
        &PodNetworks::new(),
        &attachments,
        &no_claims,
    );
    assert_eq!(
        b.desired["ns/net"].ip_addresses[0].to_string(),
        "10.100.0.4/24"
    );
    assert_eq!(b.desired["ns/net"].tunnel_id, 11);
    assert_eq!(restored.pod_uid("ns/a"), Some("u1"));
    assert_eq!(restored.release_pod("ns/a"), keys(&["ns_net"]));
}

#[test]
fn persistent_ips_belong_to_the_claim() {
    let mut state = IpamState::default();
    state.sync_network(
        "ns_vm",
        Some(&info("ns_vm", "secondary", "10.200.0.0/24", true)),
        &keys(&["ns/net"]),
        &[],
        &[],
    );
    let attachments = [attachment(
        "ns/net",
        "ns_vm",
        PodNetworkRole::Secondary,
        "vm-a",
    )];
    // No claim yet: retried error.
    let missing = plan(
        &mut state,
        "a",
        "u1",
        &PodNetworks::new(),
        &attachments,
        &no_claims,
    );
    assert_eq!(
        missing.errors,
        [AttachmentError {
            message: r#"error retrieving IPAMClaim for pod ns/a: failed to get IPAMClaim "vm-a": not found"#.into(),
            retry: true,
        }]
    );
    let empty_claim = |key: &str| {
        (key == "ns/vm-a").then(|| ClaimView {
            key: key.into(),
            network: "ns_vm".into(),
            ips: Vec::new(),
        })
    };
    let first = plan(
        &mut state,
        "a",
        "u1",
        &PodNetworks::new(),
        &attachments,
        &empty_claim,
    );
    let ips = first.desired["ns/net"].ip_addresses.clone();
    assert_eq!(ips[0].to_string(), "10.200.0.1/24");
    assert_eq!(
        first.claim_writes,
        [ClaimWrite {
            key: "ns/vm-a".into(),
            pod: "a".into(),
            ips: ips.clone(),
            failure: None,
        }]
    );
    // The pod goes; the IPs stay with the claim.
    state.release_pod("ns/a");
    let filled_claim = |key: &str| {
        (key == "ns/vm-a").then(|| ClaimView {
            key: key.into(),
            network: "ns_vm".into(),
            ips: ips.clone(),
        })
    };
    let other = plan(
        &mut state,
        "b",
        "u2",
        &PodNetworks::new(),
        &[attachment("ns/net", "ns_vm", PodNetworkRole::Secondary, "")],
        &no_claims,
    );
    assert_eq!(
        other.desired["ns/net"].ip_addresses[0].to_string(),
        "10.200.0.2/24"
    );
    let migrated = plan(
        &mut state,
        "a2",
        "u3",
        &PodNetworks::new(),
        &attachments,
        &filled_claim,
    );
    assert_eq!(migrated.desired["ns/net"].ip_addresses, ips);
    assert!(migrated.claim_writes.is_empty());
    assert_eq!(
        migrated.desired["ns/net"].mac_address,
        first.desired["ns/net"].mac_address
    );
    // Deleting the claim frees them.
    assert_eq!(state.release_claim("ns/vm-a"), Some("ns_vm".into()));
    state.release_pod("ns/a2");
    let third = plan(
        &mut state,
        "c",
        "u4",
        &PodNetworks::new(),
        &[attachment("ns/net", "ns_vm", PodNetworkRole::Secondary, "")],
        &no_claims,
    );
    assert_eq!(
        third.desired["ns/net"].ip_addresses[0].to_string(),
        "10.200.0.3/24"
    );
}

#[test]
fn exhausted_pool_reports_claim_failure_and_rolls_back_the_tunnel() {
    let mut state = IpamState::default();
    state.sync_network(
        "ns_vm",
        Some(&info("ns_vm", "secondary", "10.200.0.0/30", true)),
        &keys(&["ns/net"]),
        &[],
        &[],
    );
    let plain = [attachment("ns/net", "ns_vm", PodNetworkRole::Secondary, "")];
    plan(
        &mut state,
        "a",
        "u1",
        &PodNetworks::new(),
        &plain,
        &no_claims,
    );
    plan(
        &mut state,
        "b",
        "u2",
        &PodNetworks::new(),
        &plain,
        &no_claims,
    );
    let claim = |key: &str| {
        Some(ClaimView {
            key: key.into(),
            network: "ns_vm".into(),
            ips: Vec::new(),
        })
    };
    let full = plan(
        &mut state,
        "c",
        "u3",
        &PodNetworks::new(),
        &[attachment(
            "ns/net",
            "ns_vm",
            PodNetworkRole::Secondary,
            "vm",
        )],
        &claim,
    );
    assert_eq!(full.errors.len(), 1);
    assert!(
        full.errors[0]
            .message
            .starts_with("failed to assign pod addresses for ns/net/ns/c: ")
    );
    assert_eq!(
        full.claim_writes[0].failure.as_ref().map(|f| f.0),
        Some("SubnetExhausted")
    );
    assert!(full.new.is_empty());
    assert!(!full.desired.contains_key("ns/net"));
}

#[test]
fn network_without_subnets_gets_mac_and_tunnel_only() {
    let mut state = IpamState::default();
    state.sync_network(
        "ns_bare",
        Some(&info("ns_bare", "secondary", "", false)),
        &keys(&["ns/net"]),
        &[],
        &[],
    );
    let planned = plan(
        &mut state,
        "a",
        "u1",
        &PodNetworks::new(),
        &[attachment(
            "ns/net",
            "ns_bare",
            PodNetworkRole::Secondary,
            "",
        )],
        &no_claims,
    );
    let entry = &planned.desired["ns/net"];
    assert!(entry.ip_addresses.is_empty());
    assert_eq!(entry.tunnel_id, 10);
    assert_eq!(entry.mac_address.0[0] & 0x03, 0x02);
}

#[test]
fn base_keys() {
    assert_eq!(base_nad_key("ns/net"), "ns/net");
    assert_eq!(base_nad_key("ns/net/1"), "ns/net");
    assert_eq!(base_nad_key("default"), "default");
}

mod node_tunnels {
    //! The legacy topology's node gateway router tunnel IDs, from the pod tunnel ID pools.

    use super::*;
    use crate::layer2_ipam::state::node_tunnels::node_tunnel_owner;

    const KEY: &str = "k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids";

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn legacy_state(nodes: &[(&str, &str)]) -> IpamState {
        let mut state = IpamState::default();
        state.set_topology(Layer2Topology::Legacy);
        for (node, text) in nodes {
            state.observe_node(node, Some(text));
        }
        state.sync_network(
            "ns_net",
            Some(&info("ns_net", "primary", "10.100.0.0/24", false)),
            &keys(&["ns/net"]),
            &[],
            &[],
        );
        state.sync_network(
            "ns_sec",
            Some(&info("ns_sec", "secondary", "10.101.0.0/24", false)),
            &keys(&["ns/sec"]),
            &[],
            &[],
        );
        state
    }

    #[test]
    fn topology_is_legacy_unless_every_zone_runs_the_transit_router() {
        let legacy = annotations(&[(KEY, r#"{"a":"5"}"#)]);
        let migrated = annotations(&[
            (KEY, r#"{"a":"5"}"#),
            ("k8s.ovn.org/layer2-topology-version", "2.0"),
        ]);
        let fresh = annotations(&[]);
        assert_eq!(
            Layer2Topology::of_nodes([Some(&migrated), Some(&migrated)]),
            Layer2Topology::TransitRouter
        );
        assert_eq!(
            Layer2Topology::of_nodes([Some(&migrated), Some(&legacy)]),
            Layer2Topology::Legacy
        );
        assert_eq!(
            Layer2Topology::of_nodes([None, Some(&fresh)]),
            Layer2Topology::Legacy
        );
        assert_eq!(
            Layer2Topology::of_nodes(std::iter::empty()),
            Layer2Topology::Legacy
        );
    }

    #[test]
    fn legacy_nodes_and_pods_share_one_pool() {
        // A node annotated by an earlier run, plus a stale network entry.
        let mut state = legacy_state(&[("a", r#"{"gone_net":"3","ns_net":"2"}"#)]);
        assert_eq!(state.node_tunnel_id("ns_net", "a"), Some(2));
        let a = state
            .plan_node("a", Some(r#"{"gone_net":"3","ns_net":"2"}"#))
            .unwrap();
        assert_eq!(a.value.as_deref(), Some(r#"{"ns_net":"2"}"#));
        assert!(a.write && a.allocated.is_empty());
        state.node_written("a", &a);
        assert!(state.node_is_planned("a", Some(r#"{"ns_net":"2"}"#)));
        // A new node and a pod: no platform IDs in the legacy topology, no collision.
        let b = state.plan_node("b", None).unwrap();
        assert_eq!(b.value.as_deref(), Some(r#"{"ns_net":"1"}"#));
        assert_eq!(
            b.allocated,
            [("ns_net".to_owned(), node_tunnel_owner("ns_net", "b"))]
        );
        let attachments = [attachment("ns/net", "ns_net", PodNetworkRole::Primary, "")];
        let pod = plan(
            &mut state,
            "p",
            "u1",
            &PodNetworks::new(),
            &attachments,
            &no_claims,
        );
        assert_eq!(pod.desired["ns/net"].tunnel_id, 3);
        // The secondary Layer2 network gives nodes nothing.
        assert!(!b.value.unwrap_or_default().contains("ns_sec"));
    }

    #[test]
    fn failed_writes_and_gone_nodes_release_their_ids() {
        let mut state = legacy_state(&[]);
        let plan_a = state.plan_node("a", None).unwrap();
        assert_eq!(state.node_tunnel_id("ns_net", "a"), Some(1));
        state.node_unwritten(&plan_a);
        assert_eq!(state.node_tunnel_id("ns_net", "a"), None);
        let plan_a = state.plan_node("a", None).unwrap();
        state.node_written("a", &plan_a);
        assert_eq!(
            state.forget_node("a"),
            BTreeSet::from(["ns_net".to_owned()])
        );
        assert_eq!(state.node_tunnel_id("ns_net", "a"), None);
        assert!(state.node_names().is_empty());
    }

    #[test]
    fn a_removed_network_leaves_the_annotation() {
        let mut state = legacy_state(&[]);
        let plan_a = state.plan_node("a", None).unwrap();
        state.node_written("a", &plan_a);
        let text = plan_a.value.clone();
        state.sync_network("ns_net", None, &BTreeSet::new(), &[], &[]);
        let after = state.plan_node("a", text.as_deref()).unwrap();
        assert!(after.write);
        assert_eq!(after.value, None);
    }

    #[test]
    fn gated_networks_follow_the_dynamic_udn_scope() {
        use crate::dynamic_udn::scope::{CurrentScope, NodeScope, Rescope};
        let only = |nodes: &[&str]| {
            let rendered = BTreeMap::from([(
                "ns_net".to_owned(),
                nodes.iter().map(|n| (*n).to_owned()).collect(),
            )]);
            CurrentScope(Some(NodeScope::Only(std::sync::Arc::new(rendered))))
        };
        let mut state = legacy_state(&[("b", r#"{"ns_net":"4"}"#)]);
        assert!(state.set_gated("ns_net", true));
        assert!(!state.set_gated("ns_net", true));
        // Before the first scope: entries stay as they are.
        state.set_scope(CurrentScope(None));
        let a = state.plan_node("a", None).unwrap();
        assert!(!a.write && a.value.is_none());
        let b = state.plan_node("b", Some(r#"{"ns_net":"4"}"#)).unwrap();
        assert!(!b.write);
        // a renders the network, b does not: b's ID goes back once its annotation is written.
        assert_eq!(state.set_scope(only(&["a"])), Rescope::Everything);
        let a = state.plan_node("a", None).unwrap();
        assert_eq!(a.value.as_deref(), Some(r#"{"ns_net":"1"}"#));
        state.node_written("a", &a);
        let b = state.plan_node("b", Some(r#"{"ns_net":"4"}"#)).unwrap();
        assert!(b.write && b.value.is_none());
        assert_eq!(state.node_tunnel_id("ns_net", "b"), Some(4));
        state.node_written("b", &b);
        assert_eq!(state.node_tunnel_id("ns_net", "b"), None);
        // b comes back: only b moved.
        let change = state.set_scope(only(&["a", "b"]));
        let moved = BTreeMap::from([("b".to_owned(), BTreeSet::from(["ns_net".to_owned()]))]);
        assert_eq!(change, Rescope::Pairs(moved));
        let b = state.plan_node("b", None).unwrap();
        assert!(b.write && b.value.is_some());
        // A network that is not gated is on every node whatever the scope.
        assert!(state.set_gated("ns_net", false));
        state.set_scope(only(&[]));
        let c = state.plan_node("c", None).unwrap();
        assert!(c.write && c.value.is_some());
    }

    #[test]
    fn transit_router_topology_allocates_nothing_and_keeps_live_entries() {
        let mut state = IpamState::default();
        state.observe_node("a", Some(r#"{"gone":"4","ns_net":"7"}"#));
        state.sync_network(
            "ns_net",
            Some(&info("ns_net", "primary", "10.100.0.0/24", false)),
            &keys(&["ns/net"]),
            &[],
            &[],
        );
        let a = state
            .plan_node("a", Some(r#"{"gone":"4","ns_net":"7"}"#))
            .unwrap();
        assert_eq!(a.value.as_deref(), Some(r#"{"ns_net":"7"}"#));
        assert!(a.allocated.is_empty());
        let b = state.plan_node("b", None).unwrap();
        assert!(!b.write && b.value.is_none());
        assert!(state.node_is_planned("b", None));
        assert_eq!(state.node_tunnel_id("ns_net", "a"), None);
        // Pods skip the platform IDs.
        let attachments = [attachment("ns/net", "ns_net", PodNetworkRole::Primary, "")];
        let pod = plan(
            &mut state,
            "p",
            "u1",
            &PodNetworks::new(),
            &attachments,
            &no_claims,
        );
        assert_eq!(pod.desired["ns/net"].tunnel_id, 10);
    }
}
