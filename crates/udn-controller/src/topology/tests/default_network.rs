//! The default network (node-and-interconnect §4): unprefixed names, no network markers,
//! `arp_proxy`, `snat-ct-zone=0`, `nat-addresses`, hashed port group names, the COPP, and
//! the UDN isolation of spec §2.7.

use std::num::NonZeroU16;

use udn_api::annotations::{OpenPort, PodNetworkRole};

use super::fixtures::*;
use crate::model::Network;
use crate::topology::{CLUSTER_UNIT, NODE_UNIT, POD_UNIT, SchemaFeatures, UDN_ISOLATION_UNIT};

fn rendered(pods: &[crate::model::PodAttachment]) -> crate::topology::NetworkDesired {
    let config = zone_config();
    render(&Network::default_network(), &config, &[node1()], pods)
}

#[test]
fn default_network_names_have_no_prefix_and_no_markers() {
    let d = rendered(&[]);
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert_eq!(d.controller, "default-network-controller");
    assert_eq!(
        keys(&d),
        [
            "Node/default/node1",
            "Cluster/default",
            "UDNIsolation/default"
        ]
    );
    let cr = row(&d, "Logical_Router", "ovn_cluster_router");
    assert_eq!(
        map(cr, "external_ids"),
        pairs(&[("k8s-cluster-router", "yes")])
    );
    assert_eq!(refs(cr, "copp"), ["ovnkube-default".to_owned()].into());
    let join = row(&d, "Logical_Switch", "join");
    assert!(map(join, "external_ids").is_empty());
    let rtoj = row(&d, "Logical_Router_Port", "rtoj-ovn_cluster_router");
    assert_eq!(set(rtoj, "networks"), ["100.64.0.1/16".to_owned()].into());
    assert_eq!(s(rtoj, "mac"), "0a:58:64:40:00:01");
    assert!(map(rtoj, "external_ids").is_empty());
    let ls = row(&d, "Logical_Switch", "node1");
    assert!(map(ls, "external_ids").is_empty());
    assert_eq!(
        map(ls, "other_config"),
        pairs(&[("subnet", "10.244.1.0/24")])
    );
    let ts = row(&d, "Logical_Switch", "transit_switch");
    assert!(map(ts, "external_ids").is_empty());
    assert_eq!(map(ts, "other_config")["requested-tnl-key"], "16711683");
    assert_eq!(map(ts, "other_config")["interconn-ts"], "transit_switch");
    for (base, hash) in [
        ("clusterPortGroup", "a13298398610555951118"),
        ("clusterRtrPortGroup", "a4743249366342378346"),
    ] {
        let pg = row(
            &d,
            "Port_Group",
            &format!("default-network-controller:Cluster:{base}"),
        );
        assert_eq!(s(pg, "name"), hash);
    }
    assert_eq!(
        d.load_balancer_groups,
        [
            "clusterLBGroup",
            "clusterSwitchLBGroup",
            "clusterRouterLBGroup"
        ]
    );
    assert_references_resolve(&d);
    assert_unique(&d);
}

#[test]
fn default_network_node_ports() {
    let d = rendered(&[]);
    let stor = row(&d, "Logical_Switch_Port", "stor-node1");
    assert_eq!(
        map(stor, "options"),
        pairs(&[
            ("router-port", "rtos-node1"),
            (
                "arp_proxy",
                "0a:58:a9:fe:01:01 169.254.1.1 fe80::1 10.244.0.0/16"
            ),
        ])
    );
    let rtos = row(&d, "Logical_Router_Port", "rtos-node1");
    assert_eq!(set(rtos, "networks"), ["10.244.1.1/24".to_owned()].into());
    assert_eq!(s(rtos, "mac"), "0a:58:0a:f4:01:01");
    let mgmt = row(&d, "Logical_Switch_Port", "k8s-node1");
    assert_eq!(
        set(mgmt, "addresses"),
        ["0a:58:0a:f4:01:02 10.244.1.2".to_owned()].into()
    );
    let acl = row(
        &d,
        "ACL",
        "default-network-controller:NetpolNode:node1:10.244.1.2",
    );
    assert_eq!(s(acl, "match"), "ip4.src==10.244.1.2");
}

#[test]
fn default_network_gateway() {
    let d = rendered(&[]);
    let gr = row(&d, "Logical_Router", "GR_node1");
    let options = map(gr, "options");
    assert_eq!(options["snat-ct-zone"], "0");
    assert!(!options.contains_key("disable_garp_rarp"));
    assert_eq!(
        map(gr, "external_ids"),
        pairs(&[
            ("physical_ip", "192.168.126.202"),
            ("physical_ips", "192.168.126.202")
        ])
    );
    let rtoj = row(&d, "Logical_Router_Port", "rtoj-GR_node1");
    assert_eq!(set(rtoj, "networks"), ["100.64.0.4/16".to_owned()].into());
    assert!(map(rtoj, "external_ids").is_empty());
    assert!(
        map(
            row(&d, "Logical_Switch_Port", "jtor-GR_node1"),
            "external_ids"
        )
        .is_empty()
    );
    let rtoe = row(&d, "Logical_Router_Port", "rtoe-GR_node1");
    assert_eq!(
        map(rtoe, "external_ids"),
        pairs(&[("gateway-physical-ip", "yes")])
    );
    assert_eq!(
        set(rtoe, "networks"),
        ["192.168.126.202/24".to_owned()].into()
    );
    assert!(map(row(&d, "Logical_Switch", "ext_node1"), "external_ids").is_empty());
    let localnet = row(&d, "Logical_Switch_Port", "breth0_node1");
    assert!(map(localnet, "external_ids").is_empty());
    let etor = row(&d, "Logical_Switch_Port", "etor-GR_node1");
    assert_eq!(
        map(etor, "options"),
        pairs(&[
            ("router-port", "rtoe-GR_node1"),
            ("nat-addresses", "router"),
            ("exclude-lb-vips-from-garp", "true"),
        ])
    );
    let mut routes: Vec<(String, String, std::collections::BTreeMap<String, String>)> =
        targets(&d, gr, "static_routes")
            .into_iter()
            .map(|r| (s(r, "ip_prefix"), s(r, "nexthop"), map(r, "external_ids")))
            .collect();
    routes.sort();
    assert_eq!(
        routes,
        [
            ("0.0.0.0/0".into(), "192.168.126.1".into(), pairs(&[])),
            ("10.244.0.0/16".into(), "100.64.0.1".into(), pairs(&[])),
            (
                "169.254.169.0/24".into(),
                "169.254.169.4".into(),
                pairs(&[("k8s.ovn.org/node-masquerade-subnet", "")])
            ),
        ]
    );
    let mut nats: Vec<(String, String)> = targets(&d, gr, "nat")
        .into_iter()
        .map(|n| {
            assert!(map(n, "external_ids").is_empty());
            (s(n, "external_ip"), s(n, "logical_ip"))
        })
        .collect();
    nats.sort();
    assert_eq!(
        nats,
        [
            ("192.168.126.202".into(), "10.244.0.0/16".into()),
            ("192.168.126.202".into(), "100.64.0.4".into()),
        ]
    );
    // Only the dummy next hop: the default network is no primary UDN.
    let bindings: Vec<String> = d
        .static_mac_bindings
        .iter()
        .map(|b| b.ip.to_string())
        .collect();
    assert_eq!(bindings, ["169.254.169.4"]);
}

#[test]
fn default_network_cluster_router_routes_and_policies() {
    let d = rendered(&[]);
    let cr = row(&d, "Logical_Router", "ovn_cluster_router");
    let mut routes: Vec<(Option<String>, String, String)> = targets(&d, cr, "static_routes")
        .into_iter()
        .map(|r| {
            assert!(map(r, "external_ids").is_empty());
            (get(r, "policy"), s(r, "ip_prefix"), s(r, "nexthop"))
        })
        .collect();
    routes.sort();
    assert_eq!(
        routes,
        [
            (None, "100.64.0.4".into(), "100.64.0.4".into()),
            (
                Some("src-ip".into()),
                "10.244.1.0/24".into(),
                "100.64.0.4".into()
            ),
        ]
    );
    // Host CIDRs and the node IP, each once.
    let mut policies: Vec<String> = targets(&d, cr, "policies")
        .into_iter()
        .map(|p| {
            assert!(map(p, "external_ids").is_empty());
            assert_eq!(set(p, "nexthops"), ["10.244.1.2".to_owned()].into());
            s(p, "match")
        })
        .collect();
    policies.sort();
    assert_eq!(
        policies,
        [
            "inport == \"rtos-node1\" && ip4.dst == 172.19.0.2 /* node1 */",
            "inport == \"rtos-node1\" && ip4.dst == 192.168.126.202 /* node1 */",
        ]
    );
}

#[test]
fn the_copp_and_its_meters() {
    let d = rendered(&[]);
    let copp = row(&d, "Copp", "ovnkube-default");
    let meters = map(copp, "meters");
    assert_eq!(meters.len(), 9);
    assert_eq!(meters["arp"], "arp-rate-limiter");
    assert_eq!(meters["svc-monitor"], "svc-monitor-rate-limiter");
    for name in meters.values() {
        let meter = row(&d, "Meter", name);
        assert_eq!(s(meter, "fair"), "true");
        assert_eq!(s(meter, "unit"), "pktps");
        let bands = targets(&d, meter, "bands");
        assert_eq!(
            (s(bands[0], "rate"), s(bands[0], "action")),
            ("25".into(), "drop".into())
        );
    }
    let logging = row(&d, "Meter", "acl-logging");
    assert_eq!(s(targets(&d, logging, "bands")[0], "rate"), "20");
    assert!(
        unit(&d, CLUSTER_UNIT, "default")
            .rows
            .iter()
            .any(|r| r.table == "Copp")
    );
}

fn udn_pod(open_ports: Vec<OpenPort>) -> crate::model::PodAttachment {
    let mut p = pod("ns1", "pod1", "node1", "default", &["10.244.1.5/24"]);
    p.role = PodNetworkRole::InfrastructureLocked;
    p.open_ports = open_ports;
    p
}

#[test]
fn udn_isolation_port_group_and_acls() {
    let plain = pod("ns2", "web", "node1", "default", &["10.244.1.6/24"]);
    let d = rendered(&[udn_pod(Vec::new()), plain]);
    let pg = row(
        &d,
        "Port_Group",
        "default-network-controller:UDNIsolation:SecondaryPods",
    );
    assert_eq!(s(pg, "name"), "a8747502060113802905");
    assert_eq!(
        map(pg, "external_ids"),
        pairs(&[("k8s.ovn.org/name", "SecondaryPods")])
    );
    assert_eq!(refs(pg, "ports"), ["ns1_pod1".to_owned()].into());
    let acls = targets(&d, pg, "acls");
    assert_eq!(acls.len(), 5);
    let expect = [
        (
            "DenyPrimaryUDN:Egress",
            "from-lport",
            "1000",
            "drop",
            "inport == @a8747502060113802905",
        ),
        (
            "DenyPrimaryUDN:Ingress",
            "to-lport",
            "1000",
            "drop",
            "outport == @a8747502060113802905",
        ),
        (
            "AllowHostARPPrimaryUDN:Egress",
            "from-lport",
            "1001",
            "allow",
            "inport == @a8747502060113802905 && (( arp && arp.tpa == 10.244.1.2 ))",
        ),
        (
            "AllowHostARPPrimaryUDN:Ingress",
            "to-lport",
            "1001",
            "allow",
            "outport == @a8747502060113802905 && (( arp && arp.spa == 10.244.1.2 ))",
        ),
        (
            "AllowHostPrimaryUDN:Ingress",
            "to-lport",
            "1001",
            "allow-related",
            "outport == @a8747502060113802905 && (ip4.src==10.244.1.2)",
        ),
    ];
    for (suffix, direction, priority, action, match_) in expect {
        let id = format!("default-network-controller:UDNIsolation:{suffix}");
        let acl = row(&d, "ACL", &id);
        let (name, dir) = suffix.split_once(':').unwrap();
        assert_eq!(
            map(acl, "external_ids"),
            pairs(&[("k8s.ovn.org/name", name), ("direction", dir)])
        );
        assert_eq!(
            (
                s(acl, "direction"),
                s(acl, "priority"),
                s(acl, "action"),
                s(acl, "match")
            ),
            (
                direction.into(),
                priority.into(),
                action.into(),
                match_.into()
            ),
            "{id}"
        );
        assert_eq!(s(acl, "tier"), "0", "ACLs are in the primary tier");
        assert_eq!(s(acl, "meter"), "acl-logging");
    }
    assert_eq!(unit(&d, UDN_ISOLATION_UNIT, "default").rows.len(), 6);
    // Both pods' ports exist; only the infrastructure-locked one is isolated.
    unit(&d, POD_UNIT, "ns1_pod1");
    let web = row(&d, "Logical_Switch_Port", "ns2_web");
    assert_eq!(
        map(web, "external_ids"),
        pairs(&[("namespace", "ns2"), ("pod", "true")])
    );
    let ls = row(&d, "Logical_Switch", "node1");
    assert!(refs(ls, "ports").contains("ns2_web"));
    assert!(
        unit(&d, NODE_UNIT, "node1")
            .rows
            .iter()
            .all(|r| r.id != "ns2_web")
    );
}

#[test]
fn legacy_acl_names_and_tiers_are_not_written() {
    let config = zone_config();
    let d = render_with(
        &Network::default_network(),
        &config,
        &[node1()],
        &[],
        SchemaFeatures::VENDORED,
    );
    for acl in rows(&d, "ACL") {
        assert!(!acl.columns.contains_key("tier"), "{}", acl.id);
        assert!(!acl.id.contains("Secondary"), "{}", acl.id);
    }
}

#[test]
fn open_default_ports_acls() {
    let ports = vec![
        OpenPort::Tcp(NonZeroU16::new(80).unwrap()),
        OpenPort::Udp(NonZeroU16::new(53).unwrap()),
        OpenPort::Icmp,
    ];
    let d = rendered(&[udn_pod(ports)]);
    let ingress = row(
        &d,
        "ACL",
        "default-network-controller:UDNIsolation:OpenPort-ns1/pod1:Ingress",
    );
    assert_eq!(
        s(ingress, "match"),
        "outport == \"ns1_pod1\" && (arp || nd || (tcp.dst == 80 || udp.dst == 53 || icmp))"
    );
    assert_eq!(
        (s(ingress, "action"), s(ingress, "priority")),
        ("allow-related".into(), "1001".into())
    );
    let egress = row(
        &d,
        "ACL",
        "default-network-controller:UDNIsolation:OpenPort-ns1/pod1:Egress",
    );
    assert_eq!(s(egress, "match"), "inport == \"ns1_pod1\" && (arp || nd)");
    assert_eq!(s(egress, "action"), "allow");
    assert_eq!(s(egress, "direction"), "from-lport");
    let pg = row(
        &d,
        "Port_Group",
        "default-network-controller:UDNIsolation:SecondaryPods",
    );
    assert_eq!(refs(pg, "acls").len(), 7);
    // No open ports, no ACLs.
    let d = rendered(&[udn_pod(Vec::new())]);
    assert!(
        find(
            &d,
            "ACL",
            "default-network-controller:UDNIsolation:OpenPort-ns1/pod1:Egress"
        )
        .is_none()
    );
}

#[test]
fn no_isolation_without_segmentation() {
    let mut config = zone_config();
    config.segmentation = false;
    let d = render(
        &Network::default_network(),
        &config,
        &[node1()],
        &[udn_pod(Vec::new())],
    );
    assert!(
        rows(&d, "Port_Group")
            .iter()
            .all(|pg| !pg.id.contains("UDNIsolation"))
    );
    assert!(
        d.units
            .iter()
            .all(|u| u.key.owner_type != UDN_ISOLATION_UNIT)
    );
}
