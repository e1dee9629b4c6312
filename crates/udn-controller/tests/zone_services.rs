//! Services as load balancers, against the in-memory API server and a real Northbound
//! ovsdb-server: a Service on a primary UDN gets load balancers named and stamped as upstream,
//! with the mirrored slices' UDN addresses, in that network's `clusterLBGroup` only; the
//! default network's never list UDN endpoints, and neither network sees the other's Service.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use support::*;
use udn_ovsdb::testing::OvsdbServer;
use udn_test_support::TestCluster;

const WAIT: Duration = Duration::from_secs(30);

async fn put_service(client: &kube::Client, ns: &str, cluster_ip: &str) {
    let api: Api<Service> = Api::namespaced(client.clone(), ns);
    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"selector": {"app": "web"}, "clusterIP": cluster_ip, "clusterIPs": [cluster_ip],
            "sessionAffinity": "ClientIP",
            "ports": [{"name": "http", "port": 88, "targetPort": 8080, "protocol": "TCP"},
                      {"name": "dns", "port": 53, "targetPort": 5353, "protocol": "UDP"}]},
    }))
    .unwrap();
    api.create(&PostParams::default(), &svc).await.unwrap();
}

/// A slice of Kubernetes' controller (`mirror_of` unset) or a mirror of one on `network`.
fn slice_json(ns: &str, name: &str, mirror: Option<(&str, &str)>, ips: &[&str]) -> Value {
    let (labels, annotations) = match mirror {
        None => (
            json!({"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                   "kubernetes.io/service-name": "web"}),
            json!({}),
        ),
        Some((network, source)) => (
            json!({"endpointslice.kubernetes.io/managed-by": "endpointslice-mirror-controller.k8s.ovn.org",
                   "k8s.ovn.org/service-name": "web"}),
            json!({"k8s.ovn.org/endpointslice-network": network,
                   "k8s.ovn.org/source-endpointslice": source}),
        ),
    };
    let endpoints: Vec<Value> = ips
        .iter()
        .map(|ip| json!({"addresses": [ip], "conditions": {"ready": true, "serving": true, "terminating": false}}))
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": annotations},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "dns", "port": 5353, "protocol": "UDP"}],
    })
}

async fn put_slice(client: &kube::Client, slice: Value) -> EndpointSlice {
    let ns = slice["metadata"]["namespace"].as_str().unwrap().to_owned();
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), &ns);
    let slice: EndpointSlice = serde_json::from_value(slice).unwrap();
    api.create(&PostParams::default(), &slice).await.unwrap()
}

fn lb_field(nb: &OvsdbServer, name: &str, column: &str) -> Option<String> {
    nb.nbctl(&[
        "--bare",
        "--columns",
        column,
        "find",
        "Load_Balancer",
        &format!("name=\"{name}\""),
    ])
    .ok()
    .map(|s| s.trim().to_owned())
    .filter(|s| !s.is_empty())
}

fn lb_uuid(nb: &OvsdbServer, name: &str) -> Option<String> {
    lb_field(nb, name, "_uuid")
}

fn group_members(nb: &OvsdbServer, group: &str) -> String {
    nb.nbctl(&[
        "--bare",
        "--columns",
        "load_balancer",
        "find",
        "Load_Balancer_Group",
        &format!("name={group}"),
    ])
    .unwrap()
    .trim()
    .to_owned()
}

async fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Databases and an API server with node1 (default and blue subnets), namespace `other` on
/// the default network and `blue` on its primary Layer3 UDN `blue_net`.
async fn blue_cluster(other: &str) -> (OvsdbServer, OvsdbServer, TestCluster) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("warn")
        .with_test_writer()
        .try_init();
    let nb = OvsdbServer::start_nb().unwrap();
    let sb = OvsdbServer::start_sb().unwrap();
    let cluster = TestCluster::new();
    let client = cluster.client();
    put_node(
        &client,
        &node(
            "node1",
            2,
            &[("default", "10.244.0.0/24"), ("blue_net", "103.103.0.0/24")],
        ),
    )
    .await;
    put_namespace(&client, other, false).await;
    put_namespace(&client, "blue", true).await;
    put_nad(
        &client,
        nad_json(
            "blue",
            "net",
            "blue_net",
            json!({"topology": "layer3", "role": "primary", "subnets": "103.103.0.0/16/24", "mtu": 1400}),
            1,
        ),
    )
    .await;
    (nb, sb, cluster)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_network_balances_its_own_services_over_its_own_addresses() {
    let (nb, sb, cluster) = blue_cluster("plain").await;
    let client = cluster.client();
    put_service(&client, "plain", "10.96.0.20").await;
    put_service(&client, "blue", "10.96.0.10").await;
    put_slice(
        &client,
        slice_json("plain", "web-aaaaa", None, &["10.244.0.7"]),
    )
    .await;
    // blue's default slice lists the pods' default-network IPs; its mirror their UDN IPs.
    put_slice(
        &client,
        slice_json("blue", "web-bbbbb", None, &["10.244.0.5"]),
    )
    .await;
    let mirror = put_slice(
        &client,
        slice_json(
            "blue",
            "web-ccccc",
            Some(("blue_net", "web-bbbbb")),
            &["103.103.0.5", "103.103.0.6"],
        ),
    )
    .await;

    let mut zone = start_zone(&cluster, zone_config("node1"), nb.endpoint(), sb.endpoint()).await;
    zone.converged(WAIT).await;

    let default_tcp = "Service_plain/web_TCP_cluster";
    let udn_tcp = "blue_net_Service_blue/web_TCP_cluster";
    let udn_udp = "blue_net_Service_blue/web_UDP_cluster";
    eventually("the load balancers", || lb_uuid(&nb, udn_tcp)).await;
    assert_eq!(
        lb_field(&nb, default_tcp, "vips").unwrap(),
        "10.96.0.20:88=10.244.0.7:8080"
    );
    assert_eq!(
        lb_field(&nb, udn_tcp, "vips").unwrap(),
        "10.96.0.10:88=103.103.0.5:8080,103.103.0.6:8080"
    );
    assert_eq!(
        lb_field(&nb, udn_udp, "vips").unwrap(),
        "10.96.0.10:53=103.103.0.5:5353,103.103.0.6:5353"
    );
    assert_eq!(lb_field(&nb, udn_udp, "protocol").unwrap(), "udp");
    // The default network does not serve blue's Service, nor the UDN plain's.
    assert_eq!(lb_uuid(&nb, "Service_blue/web_TCP_cluster"), None);
    assert_eq!(lb_uuid(&nb, "blue_net_Service_plain/web_TCP_cluster"), None);
    let ids = lb_field(&nb, udn_tcp, "external_ids").unwrap();
    for pair in [
        "k8s.ovn.org/kind=Service",
        "k8s.ovn.org/owner=blue/web",
        "k8s.ovn.org/network=blue_net",
        "k8s.ovn.org/role=primary",
    ] {
        assert!(ids.contains(pair), "{pair} not in {ids}");
    }
    let options = lb_field(&nb, udn_tcp, "options").unwrap();
    for pair in [
        "affinity_timeout=10800",
        "event=false",
        "hairpin_snat_ip=169.254.0.5 fd69::5",
        "neighbor_responder=none",
        "reject=true",
        "skip_snat=false",
    ] {
        assert!(options.contains(pair), "{pair} not in {options}");
    }
    // Each in its own network's group only.
    let udn_group = group_members(&nb, "blue_net_clusterLBGroup");
    let default_group = group_members(&nb, "clusterLBGroup");
    let udn_tcp_uuid = lb_uuid(&nb, udn_tcp).unwrap();
    let default_uuid = lb_uuid(&nb, default_tcp).unwrap();
    assert!(
        udn_group.contains(&udn_tcp_uuid) && !udn_group.contains(&default_uuid),
        "{udn_group}"
    );
    assert!(
        default_group.contains(&default_uuid) && !default_group.contains(&udn_tcp_uuid),
        "{default_group}"
    );
    assert_eq!(group_members(&nb, "blue_net_clusterSwitchLBGroup"), "");

    // An endpoint change updates the load balancer; a deleted Service takes its own away.
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), "blue");
    let mut changed = mirror;
    changed.endpoints.truncate(1);
    api.replace("web-ccccc", &PostParams::default(), &changed)
        .await
        .unwrap();
    eventually("the endpoint change", || {
        (lb_field(&nb, udn_tcp, "vips").as_deref() == Some("10.96.0.10:88=103.103.0.5:8080"))
            .then_some(())
    })
    .await;
    let services: Api<Service> = Api::namespaced(client.clone(), "blue");
    services.delete("web", &Default::default()).await.unwrap();
    eventually("blue's load balancers gone", || {
        (lb_uuid(&nb, udn_tcp).is_none() && lb_uuid(&nb, udn_udp).is_none()).then_some(())
    })
    .await;
    assert_eq!(group_members(&nb, "blue_net_clusterLBGroup"), "");
    assert!(lb_uuid(&nb, default_tcp).is_some());
    zone.stop().await;
}

fn column(nb: &OvsdbServer, table: &str, name: &str, column: &str) -> String {
    nb.nbctl(&[
        "--bare",
        "--columns",
        column,
        "find",
        table,
        &format!("name=\"{name}\""),
    ])
    .unwrap()
    .trim()
    .to_owned()
}

fn udn_enabled_route(nb: &OvsdbServer) -> Option<String> {
    nb.nbctl(&[
        "--bare",
        "--columns",
        "ip_prefix,nexthop,policy,external_ids",
        "find",
        "Logical_Router_Static_Route",
        "external_ids:k8s.ovn.org/udn-enabled-default-service=kube-system/kube-dns",
    ])
    .ok()
    .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
    .filter(|s| !s.is_empty())
}

async fn create(client: &kube::Client, ns: &str, body: Value) {
    let api: Api<Service> = Api::namespaced(client.clone(), ns);
    let svc: Service = serde_json::from_value(body).unwrap();
    api.create(&PostParams::default(), &svc).await.unwrap();
}

/// NodePorts get per-node load balancers on the node's own switch and gateway router of the
/// Service's network, with the node's address as VIP; the default Services UDNs may reach
/// (`--udn-allowed-default-services`) get a route to the management port on each UDN's
/// cluster router.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_ports_sit_on_the_nodes_switch_and_router_and_allowed_default_services_get_routes() {
    let (nb, sb, cluster) = blue_cluster("kube-system").await;
    let client = cluster.client();
    create(
        &client,
        "blue",
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "blue"},
            "spec": {"type": "NodePort", "selector": {"app": "web"},
                "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                "ports": [{"name": "http", "port": 88, "targetPort": 8080, "nodePort": 30088, "protocol": "TCP"}]}}),
    )
    .await;
    put_slice(
        &client,
        slice_json(
            "blue",
            "web-ccccc",
            Some(("blue_net", "web-bbbbb")),
            &["103.103.0.5"],
        ),
    )
    .await;
    create(
        &client,
        "kube-system",
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system"},
            "spec": {"selector": {"k8s-app": "kube-dns"},
                "clusterIP": "10.96.0.53", "clusterIPs": ["10.96.0.53"],
                "ports": [{"name": "dns", "port": 53, "targetPort": 53, "protocol": "UDP"}]}}),
    )
    .await;

    let mut zone = start_zone(&cluster, zone_config("node1"), nb.endpoint(), sb.endpoint()).await;
    zone.converged(WAIT).await;

    let per_node = "blue_net_Service_blue/web_TCP_node_router+switch_node1";
    let uuid = eventually("the NodePort load balancer", || lb_uuid(&nb, per_node)).await;
    assert_eq!(
        lb_field(&nb, per_node, "vips").unwrap(),
        "172.18.0.2:30088=103.103.0.5:8080"
    );
    // On blue's node switch and gateway router directly, in no group, not on the default
    // network's.
    let attached = |table: &str, name: &str| column(&nb, table, name, "load_balancer");
    eventually("attached to the switch and router", || {
        (attached("Logical_Switch", "blue_net_node1") == uuid
            && attached("Logical_Router", "GR_blue_net_node1") == uuid)
            .then_some(())
    })
    .await;
    assert_eq!(attached("Logical_Switch", "node1"), "");
    assert_eq!(attached("Logical_Router", "GR_node1"), "");
    for group in ["blue_net_clusterLBGroup", "blue_net_clusterSwitchLBGroup"] {
        assert!(!group_members(&nb, group).contains(&uuid), "{group}");
    }
    // The ClusterIP stays cluster-wide, in the group.
    let cluster_lb = lb_uuid(&nb, "blue_net_Service_blue/web_TCP_cluster").unwrap();
    assert!(group_members(&nb, "blue_net_clusterLBGroup").contains(&cluster_lb));

    // kube-dns: a route to blue's management port on blue's cluster router only.
    let route = eventually("the allowed default service route", || {
        udn_enabled_route(&nb)
    })
    .await;
    assert!(
        route.starts_with("10.96.0.53 103.103.0.2 dst-ip"),
        "{route}"
    );
    for pair in [
        "k8s.ovn.org/network=blue_net",
        "k8s.ovn.org/topology=layer3",
    ] {
        assert!(route.contains(pair), "{pair} not in {route}");
    }
    let routes = column(
        &nb,
        "Logical_Router",
        "blue_net_ovn_cluster_router",
        "static_routes",
    );
    let route_uuid = nb
        .nbctl(&[
            "--bare",
            "--columns",
            "_uuid",
            "find",
            "Logical_Router_Static_Route",
            "external_ids:k8s.ovn.org/udn-enabled-default-service=kube-system/kube-dns",
        ])
        .unwrap();
    assert!(routes.contains(route_uuid.trim()), "{routes}");

    // Without its NodePort the per-node load balancer and its attachments go.
    let services: Api<Service> = Api::namespaced(client.clone(), "blue");
    let mut svc = services.get("web").await.unwrap();
    let spec = svc.spec.as_mut().unwrap();
    spec.type_ = Some("ClusterIP".to_owned());
    spec.ports.as_mut().unwrap()[0].node_port = None;
    services
        .replace("web", &PostParams::default(), &svc)
        .await
        .unwrap();
    eventually("the NodePort load balancer gone", || {
        (lb_uuid(&nb, per_node).is_none()
            && attached("Logical_Switch", "blue_net_node1").is_empty()
            && attached("Logical_Router", "GR_blue_net_node1").is_empty())
        .then_some(())
    })
    .await;
    // Without the Service its route goes.
    let system: Api<Service> = Api::namespaced(client.clone(), "kube-system");
    system
        .delete("kube-dns", &Default::default())
        .await
        .unwrap();
    eventually("the route gone", || {
        udn_enabled_route(&nb).is_none().then_some(())
    })
    .await;
    zone.stop().await;
}
