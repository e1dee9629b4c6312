//! A primary Layer3 UDN on a local node: upstream's expectations for `isolatednet` on
//! `node1` (spec §7 items 2-13).

use udn_api::cluster::GatewayMode;

use super::fixtures::*;
use crate::topology::{NODE_UNIT, SchemaFeatures};

const CR: &str = "isolatednet_ovn_cluster_router";
const GR: &str = "GR_isolatednet_node1";

fn markers() -> std::collections::BTreeMap<String, String> {
    pairs(&[
        ("k8s.ovn.org/network", "isolatednet"),
        ("k8s.ovn.org/topology", "layer3"),
    ])
}

fn rendered() -> crate::topology::NetworkDesired {
    let config = zone_config();
    render(&isolatednet(&config), &config, &[node1()], &[])
}

#[test]
fn cluster_router_has_the_network_markers_and_the_copp() {
    let d = rendered();
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert_eq!(d.controller, "isolatednet-network-controller");
    let cr = row(&d, "Logical_Router", CR);
    let mut ids = markers();
    ids.insert("k8s-cluster-router".into(), "yes".into());
    assert_eq!(map(cr, "external_ids"), ids);
    assert_eq!(
        map(cr, "options"),
        pairs(&[("always_learn_from_arp_request", "false")])
    );
    assert_eq!(refs(cr, "copp").len(), 1);
    assert_eq!(
        refs(cr, "ports"),
        [
            "rtos-isolatednet_node1",
            "rtoj-isolatednet_ovn_cluster_router",
            "isolatednet_rtots-node1",
        ]
        .map(String::from)
        .into()
    );
    assert_references_resolve(&d);
    assert_unique(&d);
}

#[test]
fn cluster_router_ports() {
    let d = rendered();
    let rtos = row(&d, "Logical_Router_Port", "rtos-isolatednet_node1");
    assert_eq!(set(rtos, "networks"), ["192.168.1.1/24".to_owned()].into());
    assert_eq!(s(rtos, "mac"), "0a:58:c0:a8:01:01");
    assert_eq!(map(rtos, "options"), pairs(&[("gateway_mtu", "1400")]));
    let gc = targets(&d, rtos, "gateway_chassis");
    assert_eq!(gc.len(), 1);
    assert_eq!(
        s(gc[0], "name"),
        format!("rtos-isolatednet_node1-{CHASSIS}")
    );
    assert_eq!(s(gc[0], "chassis_name"), CHASSIS);
    assert_eq!(s(gc[0], "priority"), "1");

    let rtoj = row(
        &d,
        "Logical_Router_Port",
        "rtoj-isolatednet_ovn_cluster_router",
    );
    assert_eq!(set(rtoj, "networks"), ["100.65.0.1/16".to_owned()].into());
    assert_eq!(s(rtoj, "mac"), "0a:58:64:41:00:01");
    assert_eq!(map(rtoj, "external_ids"), markers());

    let rtots = row(&d, "Logical_Router_Port", "isolatednet_rtots-node1");
    assert_eq!(set(rtots, "networks"), ["100.88.0.3/16".to_owned()].into());
    assert_eq!(s(rtots, "mac"), "0a:58:64:58:00:03");
    assert_eq!(map(rtots, "options"), pairs(&[("mcast_flood", "true")]));
    assert!(map(rtots, "external_ids").is_empty());
    let tstor = row(&d, "Logical_Switch_Port", "isolatednet_tstor-node1");
    assert_eq!(s(tstor, "type"), "router");
    assert_eq!(
        map(tstor, "options"),
        pairs(&[
            ("router-port", "isolatednet_rtots-node1"),
            ("requested-tnl-key", "4")
        ])
    );
    assert_eq!(map(tstor, "external_ids"), pairs(&[("node", "node1")]));
}

#[test]
fn masquerade_snat_on_the_cluster_router() {
    let d = rendered();
    let cr = row(&d, "Logical_Router", CR);
    let nats = targets(&d, cr, "nat");
    assert_eq!(nats.len(), 1);
    let snat = nats[0];
    assert_eq!(s(snat, "type"), "snat");
    assert_eq!(s(snat, "external_ip"), "169.254.169.14");
    assert_eq!(s(snat, "logical_ip"), "192.168.1.0/24");
    assert_eq!(s(snat, "logical_port"), "rtos-isolatednet_node1");
    assert_eq!(s(snat, "match"), "eth.dst == 0a:58:c0:a8:01:02");
    assert_eq!(map(snat, "options"), pairs(&[("stateless", "false")]));
    assert_eq!(map(snat, "external_ids"), markers());
}

#[test]
fn without_nat_match_the_masquerade_snat_has_no_match() {
    let config = zone_config();
    let d = render_with(
        &isolatednet(&config),
        &config,
        &[node1()],
        &[],
        SchemaFeatures::VENDORED,
    );
    let snat = targets(&d, row(&d, "Logical_Router", CR), "nat")[0];
    assert_eq!(get(snat, "match"), None);
    assert!(!snat.columns.contains_key("match"));
    let acl = rows(&d, "ACL")[0];
    assert!(!acl.columns.contains_key("tier"));
}

fn cluster_routes(d: &crate::topology::NetworkDesired) -> Vec<(Option<String>, String, String)> {
    let mut routes: Vec<_> = targets(d, row(d, "Logical_Router", CR), "static_routes")
        .into_iter()
        .map(|r| {
            assert_eq!(map(r, "external_ids"), markers());
            (get(r, "policy"), s(r, "ip_prefix"), s(r, "nexthop"))
        })
        .collect();
    routes.sort();
    routes
}

#[test]
fn cluster_router_routes_shared_and_local_gateway() {
    let d = rendered();
    assert_eq!(
        cluster_routes(&d),
        [
            (None, "100.65.0.4".into(), "100.65.0.4".into()),
            (
                Some("src-ip".into()),
                "192.168.1.0/24".into(),
                "100.65.0.4".into()
            ),
        ]
    );
    let mut config = zone_config();
    config.cluster.gateway_mode = GatewayMode::Local;
    let d = render(&isolatednet(&config), &config, &[node1()], &[]);
    assert_eq!(
        cluster_routes(&d),
        [
            (None, "100.65.0.4".into(), "100.65.0.4".into()),
            (
                Some("src-ip".into()),
                "192.168.1.0/24".into(),
                "192.168.1.2".into()
            ),
        ]
    );
    let cr = row(&d, "Logical_Router", CR);
    assert_eq!(map(cr, "options")["ct-commit-all"], "true");
}

#[test]
fn same_node_policies() {
    let d = rendered();
    let mut policies: Vec<(String, String, String)> =
        targets(&d, row(&d, "Logical_Router", CR), "policies")
            .into_iter()
            .map(|p| {
                assert_eq!(s(p, "action"), "reroute");
                assert_eq!(map(p, "external_ids"), markers());
                (
                    s(p, "priority"),
                    s(p, "match"),
                    set(p, "nexthops").into_iter().collect(),
                )
            })
            .collect();
    policies.sort();
    assert_eq!(
        policies,
        [
            (
                "1004".into(),
                "inport == \"rtos-isolatednet_node1\" && ip4.dst == 169.254.169.13 /* isolatednet_node1 */".into(),
                "192.168.1.2".into()
            ),
            (
                "1004".into(),
                "inport == \"rtos-isolatednet_node1\" && ip4.dst == 192.168.126.202 /* isolatednet_node1 */".into(),
                "192.168.1.2".into()
            ),
        ]
    );
}

#[test]
fn gateway_router() {
    let d = rendered();
    let gr = row(&d, "Logical_Router", GR);
    assert_eq!(
        map(gr, "options"),
        pairs(&[
            ("lb_force_snat_ip", "router_ip"),
            ("mac_binding_age_threshold", "300"),
            ("chassis", CHASSIS),
            ("always_learn_from_arp_request", "false"),
            ("dynamic_neigh_routers", "false"),
            ("disable_garp_rarp", "true"),
        ])
    );
    let mut ids = markers();
    ids.insert("k8s.ovn.org/role".into(), "primary".into());
    ids.insert("physical_ip".into(), "192.168.126.202".into());
    ids.insert(
        "physical_ips".into(),
        "192.168.126.202,169.254.169.13".into(),
    );
    assert_eq!(map(gr, "external_ids"), ids);
    assert_eq!(refs(gr, "load_balancer_group").len(), 2);
    assert_eq!(refs(gr, "copp").len(), 1);
    let mut nats: Vec<(String, String, String)> = targets(&d, gr, "nat")
        .into_iter()
        .map(|n| {
            assert_eq!(map(n, "external_ids"), markers());
            assert_eq!(map(n, "options"), pairs(&[("stateless", "false")]));
            (s(n, "external_ip"), s(n, "logical_ip"), s(n, "match"))
        })
        .collect();
    nats.sort();
    assert_eq!(
        nats,
        [
            ("169.254.169.13".into(), "100.65.0.4".into(), String::new()),
            (
                "169.254.169.13".into(),
                "192.168.0.0/16".into(),
                String::new()
            ),
        ]
    );
    let mut routes: Vec<(String, String, Option<String>)> = targets(&d, gr, "static_routes")
        .into_iter()
        .map(|r| {
            assert_eq!(map(r, "external_ids"), markers());
            (s(r, "ip_prefix"), s(r, "nexthop"), get(r, "output_port"))
        })
        .collect();
    routes.sort();
    let rtoe = Some("rtoe-GR_isolatednet_node1".to_owned());
    assert_eq!(
        routes,
        [
            ("0.0.0.0/0".into(), "192.168.126.1".into(), rtoe.clone()),
            ("169.254.169.0/24".into(), "169.254.169.4".into(), rtoe),
            ("192.168.0.0/16".into(), "100.65.0.1".into(), None),
        ]
    );
}

#[test]
fn gateway_router_ports_and_mac_bindings() {
    let d = rendered();
    let rtoj = row(&d, "Logical_Router_Port", "rtoj-GR_isolatednet_node1");
    assert_eq!(set(rtoj, "networks"), ["100.65.0.4/16".to_owned()].into());
    assert_eq!(s(rtoj, "mac"), "0a:58:64:41:00:04");
    assert_eq!(map(rtoj, "options"), pairs(&[("gateway_mtu", "1400")]));
    assert_eq!(map(rtoj, "external_ids"), markers());
    let rtoe = row(&d, "Logical_Router_Port", "rtoe-GR_isolatednet_node1");
    assert_eq!(
        set(rtoe, "networks"),
        ["192.168.126.202/24", "169.254.169.13/32"]
            .map(String::from)
            .into()
    );
    assert_eq!(s(rtoe, "mac"), "0a:58:c0:a8:7e:ca");
    assert_eq!(map(rtoe, "external_ids"), markers());
    let bindings: Vec<(String, String, String, bool)> = d
        .static_mac_bindings
        .iter()
        .map(|b| {
            (
                b.logical_port.clone(),
                b.ip.to_string(),
                b.mac.to_string(),
                b.override_dynamic_mac,
            )
        })
        .collect();
    assert_eq!(
        bindings,
        [
            (
                "rtoe-GR_isolatednet_node1".into(),
                "169.254.169.2".into(),
                "0a:58:a9:fe:a9:02".into(),
                true
            ),
            (
                "rtoe-GR_isolatednet_node1".into(),
                "169.254.169.4".into(),
                "0a:58:a9:fe:a9:04".into(),
                true
            ),
        ]
    );
}

#[test]
fn external_switch() {
    let d = rendered();
    let ext = row(&d, "Logical_Switch", "ext_isolatednet_node1");
    let mut switch_ids = markers();
    switch_ids.insert("k8s.ovn.org/role".into(), "primary".into());
    assert_eq!(map(ext, "external_ids"), switch_ids);
    let localnet = row(&d, "Logical_Switch_Port", "breth0_isolatednet_node1");
    assert_eq!(s(localnet, "type"), "localnet");
    assert_eq!(set(localnet, "addresses"), ["unknown".to_owned()].into());
    assert_eq!(
        map(localnet, "options"),
        pairs(&[("network_name", "physnet")])
    );
    assert_eq!(map(localnet, "external_ids"), markers());
    assert_eq!(get(localnet, "tag_request"), None);
    let etor = row(&d, "Logical_Switch_Port", "etor-GR_isolatednet_node1");
    assert_eq!(s(etor, "type"), "router");
    assert_eq!(
        set(etor, "addresses"),
        ["0a:58:c0:a8:7e:ca".to_owned()].into()
    );
    assert_eq!(
        map(etor, "options"),
        pairs(&[("router-port", "rtoe-GR_isolatednet_node1")])
    );
    assert_eq!(
        refs(ext, "ports"),
        ["breth0_isolatednet_node1", "etor-GR_isolatednet_node1"]
            .map(String::from)
            .into()
    );
}

#[test]
fn join_switch() {
    let d = rendered();
    let join = row(&d, "Logical_Switch", "isolatednet_join");
    assert_eq!(map(join, "external_ids"), markers());
    assert_eq!(
        refs(join, "ports"),
        [
            "jtor-GR_isolatednet_node1",
            "jtor-isolatednet_ovn_cluster_router"
        ]
        .map(String::from)
        .into()
    );
    let jtor_gr = row(&d, "Logical_Switch_Port", "jtor-GR_isolatednet_node1");
    assert_eq!(map(jtor_gr, "external_ids"), markers());
    assert_eq!(
        map(jtor_gr, "options"),
        pairs(&[("router-port", "rtoj-GR_isolatednet_node1")])
    );
    let jtor_cr = row(
        &d,
        "Logical_Switch_Port",
        "jtor-isolatednet_ovn_cluster_router",
    );
    assert!(map(jtor_cr, "external_ids").is_empty());
    assert_eq!(s(jtor_cr, "type"), "router");
}

#[test]
fn node_switch_and_management_port() {
    let d = rendered();
    let ls = row(&d, "Logical_Switch", "isolatednet_node1");
    assert_eq!(
        map(ls, "external_ids"),
        pairs(&[
            ("k8s.ovn.org/network", "isolatednet"),
            ("k8s.ovn.org/role", "primary"),
            ("k8s.ovn.org/topology", "layer3"),
        ])
    );
    assert_eq!(
        map(ls, "other_config"),
        pairs(&[("subnet", "192.168.1.0/24")])
    );
    assert_eq!(refs(ls, "load_balancer_group").len(), 2);
    let stor = row(&d, "Logical_Switch_Port", "stor-isolatednet_node1");
    assert_eq!(
        map(stor, "options"),
        pairs(&[("router-port", "rtos-isolatednet_node1")])
    );
    let mgmt = row(&d, "Logical_Switch_Port", "k8s-isolatednet_node1");
    assert_eq!(
        set(mgmt, "addresses"),
        ["0a:58:c0:a8:01:02 192.168.1.2".to_owned()].into()
    );
    let pg = row(
        &d,
        "Port_Group",
        "isolatednet-network-controller:Cluster:clusterPortGroup",
    );
    assert_eq!(
        refs(pg, "ports"),
        ["k8s-isolatednet_node1".to_owned()].into()
    );
    assert_eq!(
        s(pg, "name"),
        crate::topology::hash_for_ovn("isolatednet-network-controller:Cluster:clusterPortGroup")
    );
    assert_eq!(
        map(pg, "external_ids"),
        pairs(&[("k8s.ovn.org/name", "clusterPortGroup")])
    );
}

#[test]
fn management_port_allow_acl() {
    let d = rendered();
    let id = "isolatednet-network-controller:NetpolNode:isolatednet_node1:192.168.1.2";
    let acl = row(&d, "ACL", id);
    assert_eq!(s(acl, "action"), "allow-related");
    assert_eq!(s(acl, "direction"), "to-lport");
    assert_eq!(s(acl, "priority"), "1001");
    assert_eq!(s(acl, "tier"), "2");
    assert_eq!(s(acl, "meter"), "acl-logging");
    assert_eq!(s(acl, "match"), "ip4.src==192.168.1.2");
    assert_eq!(s(acl, "log"), "false");
    assert_eq!(get(acl, "name"), None);
    assert_eq!(
        map(acl, "external_ids"),
        pairs(&[
            ("k8s.ovn.org/name", "isolatednet_node1"),
            ("ip", "192.168.1.2")
        ])
    );
    let ls = row(&d, "Logical_Switch", "isolatednet_node1");
    assert_eq!(refs(ls, "acls"), [id.to_owned()].into());
    // The ACL lives in the node's unit, stamped with upstream's owner type.
    assert!(unit(&d, NODE_UNIT, "node1").rows.iter().any(|r| r.id == id));
    assert_eq!(acl.owner_type.as_deref(), Some("NetpolNode"));
}

#[test]
fn secondary_layer3_has_no_gateway_management_port_or_port_groups() {
    let config = zone_config();
    let net = udn(
        "isolatednet",
        "layer3",
        "secondary",
        "192.168.0.0/16/24",
        2,
        &config,
    );
    let d = render(&net, &config, &[node1(), remote("node2", 2, CHASSIS2)], &[]);
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert!(find(&d, "Logical_Router", GR).is_none());
    assert!(find(&d, "Logical_Switch", "isolatednet_join").is_none());
    assert!(rows(&d, "Port_Group").is_empty());
    assert!(rows(&d, "NAT").is_empty());
    let ls = row(&d, "Logical_Switch", "isolatednet_node1");
    assert_eq!(map(ls, "external_ids")["k8s.ovn.org/role"], "secondary");
    assert_eq!(
        map(ls, "other_config"),
        pairs(&[("subnet", "192.168.1.0/24"), ("exclude_ips", "192.168.1.2")])
    );
    // Remote routes to the subnet only (no gateway router join IP).
    let cr = row(&d, "Logical_Router", CR);
    let routes: Vec<String> = targets(&d, cr, "static_routes")
        .iter()
        .map(|r| s(r, "ip_prefix"))
        .collect();
    assert_eq!(routes, ["192.168.2.0/24"]);
    assert_eq!(d.load_balancer_groups.len(), 3);
}

#[test]
fn rendering_is_deterministic() {
    let config = zone_config();
    let nodes = [
        remote("node3", 3, CHASSIS3),
        node1(),
        remote("node2", 2, CHASSIS2),
    ];
    let pods = [
        pod("ns1", "b", "node1", "ns1/isolatednet", &["192.168.1.6/24"]),
        pod("ns1", "a", "node1", "ns1/isolatednet", &["192.168.1.5/24"]),
    ];
    let first = render(&isolatednet(&config), &config, &nodes, &pods);
    let mut reversed_nodes = nodes.clone();
    reversed_nodes.reverse();
    let mut reversed_pods = pods.clone();
    reversed_pods.reverse();
    let again = render(&isolatednet(&config), &config, &nodes, &pods);
    assert_eq!(first, again);
    let reordered = render(
        &isolatednet(&config),
        &config,
        &reversed_nodes,
        &reversed_pods,
    );
    assert_eq!(first, reordered);
}
