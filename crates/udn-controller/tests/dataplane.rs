//! The acceptance dataplane: two nodes in two zones (own NB/SB/northd, userspace OVS,
//! ovn-controller, geneve), one zone controller each, pods wired as the CNI wires them
//! (veth, `iface-id` = the LSP name, addresses and routes from `k8s.ovn.org/pod-networks`),
//! and the node agent's part done by the test (management port, breth0 flows).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde_json::json;
use support::*;
use udn_api::annotations::{MacAddress, PodNetworkAnnotation, PodNetworkRole, PodRoute};
use udn_ovn_lab::{Lab, LabConfig, MgmtPortSpec, Ping, PodSpec};
use udn_test_support::TestCluster;

const WAIT: Duration = Duration::from_secs(60);

/// Networks of the test: (namespace, network, NetConf fields, network ID).
fn networks() -> Vec<(&'static str, &'static str, serde_json::Value, u32)> {
    vec![
        (
            "blue",
            "blue_net",
            json!({"topology": "layer3", "role": "primary", "subnets": "10.128.0.0/16/24", "mtu": 1400}),
            1,
        ),
        (
            "red",
            "red_net",
            json!({"topology": "layer3", "role": "primary", "subnets": "10.200.0.0/16/24", "mtu": 1400}),
            2,
        ),
        (
            "yellow",
            "yellow_net",
            json!({"topology": "layer3", "role": "primary", "subnets": "10.200.0.0/16/24", "mtu": 1400}),
            3,
        ),
        (
            "green",
            "green_net",
            json!({"topology": "layer2", "role": "primary", "subnets": "10.100.0.0/24", "mtu": 1400}),
            4,
        ),
    ]
}

fn host_subnets(index: u8) -> BTreeMap<String, Vec<String>> {
    BTreeMap::from([
        ("default".to_owned(), vec![format!("10.244.{index}.0/24")]),
        (
            "blue_net".to_owned(),
            vec![format!("10.128.{}.0/24", index + 1)],
        ),
        (
            "red_net".to_owned(),
            vec![format!("10.200.{}.0/24", index + 1)],
        ),
        (
            "yellow_net".to_owned(),
            vec![format!("10.200.{}.0/24", index + 1)],
        ),
    ])
}

/// The Layer2 entry cluster-manager writes for a primary Layer2 pod.
fn layer2_entry(ip: &str, tunnel_id: u32) -> PodNetworkAnnotation {
    let ip: ipnetwork::IpNetwork = ip.parse().unwrap();
    let gw: IpAddr = "10.100.0.1".parse().unwrap();
    let IpAddr::V4(v4) = ip.ip() else { panic!() };
    let [a, b, c, d] = v4.octets();
    PodNetworkAnnotation {
        ip_addresses: vec![ip],
        mac_address: MacAddress([0x0a, 0x58, a, b, c, d]),
        gateway_ips: vec![gw],
        routes: vec![
            PodRoute {
                dest: net("10.96.0.0/16"),
                next_hop: Some(gw),
            },
            PodRoute {
                dest: net("100.65.0.0/16"),
                next_hop: Some(gw),
            },
        ],
        ipv6_lla_gateway_ip: None,
        tunnel_id,
        role: Some(PodNetworkRole::Primary),
    }
}

struct Cluster {
    lab: Lab,
    _cluster: TestCluster,
    client: kube::Client,
    zones: Vec<RunningZone>,
}

impl Cluster {
    /// The lab and one zone controller per node, each with `config(node)`.
    async fn start(config: fn(&str) -> udn_controller::model::ZoneConfig) -> Self {
        let lab = Lab::start(LabConfig::with_nodes(2)).expect("lab starts");
        let cluster = TestCluster::new();
        let client = cluster.client();
        for (index, node) in lab.nodes().iter().enumerate() {
            let index = u8::try_from(index).unwrap();
            let annotations = NodeAnnotations {
                name: node.name().to_owned(),
                id: u32::from(index) + 2,
                chassis: node.chassis_id().to_owned(),
                node_cidr: format!("{}/{}", node.node_ip(), node.node_prefix_len()),
                node_ip: node.node_ip().to_string(),
                mac: node.breth0_mac().to_owned(),
                next_hop: node.next_hop().to_string(),
                subnets: host_subnets(index),
                layer2_tunnel_ids: BTreeMap::from([("green_net".to_owned(), u32::from(index) + 1)]),
            };
            put_node(&client, &annotations).await;
        }
        put_namespace(&client, "plain", false).await;
        for (ns, network, body, id) in networks() {
            put_namespace(&client, ns, true).await;
            put_nad(&client, nad_json(ns, "net", network, body, id)).await;
        }
        let mut zones = Vec::new();
        for node in lab.nodes() {
            zones.push(
                start_zone(
                    &cluster,
                    config(node.name()),
                    node.nb_endpoint(),
                    node.sb_endpoint(),
                )
                .await,
            );
        }
        Self {
            lab,
            _cluster: cluster,
            client,
            zones,
        }
    }

    /// Does what the node agent does for the default network: the management port, and the
    /// gateway bridge's flows (geneve to the host, traffic to the bridge MAC to every patch
    /// port and the host).
    fn node_agent(&self, patch_ports: &[&str]) {
        for (index, node) in self.lab.nodes().iter().enumerate() {
            let spec = MgmtPortSpec::new(node.name(), &format!("0a:58:0a:f4:{index:02x}:02"))
                .ip(net(&format!("10.244.{index}.2/24")))
                .route(
                    net("10.244.0.0/16"),
                    format!("10.244.{index}.1").parse().unwrap(),
                );
            node.add_mgmt_port(&spec).unwrap();
            let mut outputs = Vec::new();
            for base in patch_ports {
                let port = format!("patch-breth0_{base}{}-to-br-int", node.name());
                node.wait_port("breth0", &port, WAIT).unwrap();
                let ofport = node.vsctl(&["get", "Interface", &port, "ofport"]).unwrap();
                outputs.push(format!("output:{}", ofport.trim()));
            }
            let mac = node.breth0_mac();
            node.add_flows(
                "breth0",
                &[
                    &format!("table=0,priority=205,dl_dst={mac},udp,udp_dst=6081,actions=LOCAL"),
                    &format!(
                        "table=0,priority=10,dl_dst={mac},actions={},LOCAL",
                        outputs.join(",")
                    ),
                ],
            )
            .unwrap();
        }
    }

    /// Creates a pod, waits for its addresses (writing a Layer2 entry as cluster-manager
    /// would) and wires it; returns the entries by NAD key.
    async fn pod(
        &self,
        ns: &str,
        name: &str,
        node: &str,
        layer2: Option<(&str, u32)>,
    ) -> BTreeMap<String, PodNetworkAnnotation> {
        put_pod(&self.client, ns, name, node, json!({})).await;
        let primary = if ns == "plain" {
            None
        } else {
            Some(format!("{ns}/net"))
        };
        if let Some((ip, tunnel)) = layer2 {
            annotate_layer2(
                &self.client,
                ns,
                name,
                &format!("{ns}/net"),
                layer2_entry(ip, tunnel),
            )
            .await;
        }
        let mut keys = vec!["default".to_owned()];
        keys.extend(primary.clone());
        let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let entries = pod_networks(&self.client, ns, name, &key_refs, WAIT).await;
        let uid = pod_uid(&self.client, ns, name).await;
        let id = (ns, name, uid.as_str());
        let mut spec = PodSpec::new(&format!("{ns}-{name}"), node).interface(interface(
            "eth0",
            "default",
            id,
            &entries["default"],
        ));
        if let Some(key) = &primary {
            spec = spec.interface(interface("ovn-udn1", key, id, &entries[key.as_str()]));
        }
        self.lab.add_pod(spec.disable_ipv6()).unwrap();
        self.lab
            .wait_installed(&format!("{ns}-{name}"), WAIT)
            .unwrap_or_else(|e| {
                panic!(
                    "pod {ns}/{name} not installed: {e}\n{}",
                    self.lab.diagnostics()
                )
            });
        entries.into_iter().collect()
    }

    fn netns(&self, ns: &str, name: &str) -> String {
        self.lab.pod(&format!("{ns}-{name}")).unwrap().netns
    }

    fn ping(&self, ns: &str, name: &str, dst: IpAddr) -> bool {
        self.lab
            .ping(
                &self.netns(ns, name),
                dst,
                Ping::new(2, Duration::from_secs(5)),
            )
            .unwrap()
    }

    fn no_ping(&self, ns: &str, name: &str, dst: IpAddr) -> bool {
        !self
            .lab
            .ping(
                &self.netns(ns, name),
                dst,
                Ping::new(1, Duration::from_secs(2)),
            )
            .unwrap()
    }
}

const SERVICE_IP: &str = "10.96.0.50";
const SERVICE_PORT: u16 = 5010;

/// A TCP Service `web` in namespace `blue` (port = target port) with the mirrored
/// EndpointSlice of `blue_net` listing `backend`.
async fn blue_service(client: &kube::Client, backend: IpAddr) {
    use k8s_openapi::api::core::v1::Service;
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    use kube::api::{Api, PostParams};
    let service: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "blue"},
        "spec": {"selector": {"app": "web"}, "clusterIP": SERVICE_IP, "clusterIPs": [SERVICE_IP],
            "ports": [{"name": "tcp", "port": SERVICE_PORT, "targetPort": SERVICE_PORT,
                "protocol": "TCP"}]},
    }))
    .unwrap();
    Api::<Service>::namespaced(client.clone(), "blue")
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let slice: EndpointSlice = serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-blue-net", "namespace": "blue",
            "labels": {"endpointslice.kubernetes.io/managed-by": "endpointslice-mirror-controller.k8s.ovn.org",
                "k8s.ovn.org/service-name": "web"},
            "annotations": {"k8s.ovn.org/endpointslice-network": "blue_net",
                "k8s.ovn.org/source-endpointslice": "web-abc"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [backend.to_string()],
            "conditions": {"ready": true, "serving": true, "terminating": false}}],
        "ports": [{"name": "tcp", "port": SERVICE_PORT, "protocol": "TCP"}],
    }))
    .unwrap();
    Api::<EndpointSlice>::namespaced(client.clone(), "blue")
        .create(&PostParams::default(), &slice)
        .await
        .unwrap();
}

fn ip_of(entries: &BTreeMap<String, PodNetworkAnnotation>, key: &str) -> IpAddr {
    entries[key].ip_addresses[0].ip()
}

/// With the default savings (`--lean-*`: join peering, no multicast rows, no
/// allow-from-node ACL on UDN switches), as `udn-controller` runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_connect_within_their_networks_and_nowhere_else() {
    connectivity(lean_zone_config).await;
}

/// The same with every saving off: upstream's exact rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_connect_within_their_networks_and_nowhere_else_upstream_shape() {
    connectivity(zone_config).await;
}

async fn connectivity(config: fn(&str) -> udn_controller::model::ZoneConfig) {
    let mut c = Cluster::start(config).await;
    let d1 = c.pod("plain", "d1", "node1", None).await;
    let d2 = c.pod("plain", "d2", "node2", None).await;
    let b1 = c.pod("blue", "b1", "node1", None).await;
    let b2 = c.pod("blue", "b2", "node2", None).await;
    let r1 = c.pod("red", "r1", "node1", None).await;
    let r2 = c.pod("red", "r2", "node2", None).await;
    let y1 = c.pod("yellow", "y1", "node1", None).await;
    let y2 = c.pod("yellow", "y2", "node2", None).await;
    let _g1 = c
        .pod("green", "g1", "node1", Some(("10.100.0.3/24", 3)))
        .await;
    let g2 = c
        .pod("green", "g2", "node2", Some(("10.100.0.4/24", 4)))
        .await;
    for zone in &mut c.zones {
        zone.converged(WAIT).await;
    }
    c.node_agent(&["", "blue_net_", "red_net_", "yellow_net_", "green_net_"]);
    let diag = |c: &Cluster| c.lab.diagnostics();

    // Default network across nodes: ping and TCP.
    assert!(
        c.ping("plain", "d1", ip_of(&d2, "default")),
        "default network d1 -> d2\n{}",
        diag(&c)
    );
    assert!(
        c.lab
            .tcp_check(
                &c.netns("plain", "d1"),
                &c.netns("plain", "d2"),
                ip_of(&d2, "default"),
                5001,
                WAIT
            )
            .unwrap(),
        "default network TCP d1 -> d2"
    );
    // A primary Layer3 and a primary Layer2 UDN, across nodes.
    assert!(
        c.ping("blue", "b1", ip_of(&b2, "blue/net")),
        "blue b1 -> b2\n{}",
        diag(&c)
    );
    assert!(
        c.lab
            .tcp_check(
                &c.netns("blue", "b1"),
                &c.netns("blue", "b2"),
                ip_of(&b2, "blue/net"),
                5002,
                WAIT
            )
            .unwrap(),
        "blue TCP b1 -> b2"
    );
    assert!(
        c.ping("green", "g1", ip_of(&g2, "green/net")),
        "green g1 -> g2\n{}",
        diag(&c)
    );
    // A Service on the Layer3 UDN (the mirrored slice cluster-manager would write): b1
    // reaches b2 through the cluster IP, across nodes.
    blue_service(&c.client, ip_of(&b2, "blue/net")).await;
    for zone in &mut c.zones {
        zone.converged(WAIT).await;
    }
    for node in c.lab.nodes() {
        node.wait_hv().unwrap();
    }
    assert!(
        c.lab
            .tcp_check(
                &c.netns("blue", "b1"),
                &c.netns("blue", "b2"),
                SERVICE_IP.parse().unwrap(),
                SERVICE_PORT,
                WAIT
            )
            .unwrap(),
        "blue Service {SERVICE_IP}:{SERVICE_PORT} -> b2\n{}",
        diag(&c)
    );
    // Two networks with the same subnet, at the same time, each reaching only its own pods:
    // r2 and y2 have the same address; a listener in r2 is reached from r1, not from y1.
    assert_eq!(ip_of(&r2, "red/net"), ip_of(&y2, "yellow/net"));
    assert!(
        c.ping("red", "r1", ip_of(&r2, "red/net"))
            && c.ping("yellow", "y1", ip_of(&y2, "yellow/net"))
    );
    let target = ip_of(&r2, "red/net");
    assert!(
        c.lab
            .tcp_check(
                &c.netns("red", "r1"),
                &c.netns("red", "r2"),
                target,
                5003,
                WAIT
            )
            .unwrap()
    );
    {
        let listener = c.lab.listen_tcp(&c.netns("red", "r2"), 5004, WAIT).unwrap();
        assert!(
            !c.lab
                .tcp_send(
                    &c.netns("yellow", "y1"),
                    target,
                    5004,
                    b"x",
                    Duration::from_secs(3)
                )
                .unwrap(),
            "yellow reached red's listener"
        );
        drop(listener);
    }
    // An address only red has answers red, not yellow.
    let r3 = c.pod("red", "r3", "node2", None).await;
    let red_only = ip_of(&r3, "red/net");
    assert!(c.ping("red", "r1", red_only), "red r1 -> r3");
    assert!(
        c.no_ping("yellow", "y1", red_only),
        "yellow reached red's {red_only}"
    );
    assert_eq!(ip_of(&r1, "red/net"), ip_of(&y1, "yellow/net"));
    // The default network cannot reach a primary-UDN pod's default-network leg; the node's
    // management port can (kubelet probes).
    let b1_default = ip_of(&b1, "default");
    assert!(
        c.no_ping("plain", "d1", b1_default),
        "d1 reached a primary-UDN pod's default IP"
    );
    let node1 = c.lab.node("node1").unwrap();
    assert!(
        c.lab
            .ping(
                node1.netns(),
                b1_default,
                Ping::new(2, Duration::from_secs(5))
            )
            .unwrap(),
        "the management port cannot reach b1's default IP\n{}",
        diag(&c)
    );
    assert!(
        c.lab
            .ping(node1.netns(), ip_of(&d1, "default"), Ping::default())
            .unwrap()
    );

    // open-default-ports tcp 8080 opens exactly that port of b1's default leg.
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(c.client.clone(), "blue");
    api.patch(
        "b1",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"annotations": {
            "k8s.ovn.org/open-default-ports": "- protocol: tcp\n  port: 8080\n"}}})),
    )
    .await
    .unwrap();
    for zone in &mut c.zones {
        zone.converged(WAIT).await;
    }
    node1.wait_hv().unwrap();
    assert!(
        c.lab
            .tcp_check(
                &c.netns("plain", "d1"),
                &c.netns("blue", "b1"),
                b1_default,
                8080,
                WAIT
            )
            .unwrap(),
        "port 8080 not opened\n{}",
        diag(&c)
    );
    {
        let listener = c
            .lab
            .listen_tcp(&c.netns("blue", "b1"), 8081, WAIT)
            .unwrap();
        assert!(
            !c.lab
                .tcp_send(
                    &c.netns("plain", "d1"),
                    b1_default,
                    8081,
                    b"x",
                    Duration::from_secs(3)
                )
                .unwrap()
        );
        drop(listener);
    }

    // Egress: a UDN pod's packets leave the gateway router with its network's masquerade IP.
    let external = IpAddr::V4(c.lab.external().ip());
    for (ns, masquerade) in [("blue", "169.254.0.11"), ("red", "169.254.0.13")] {
        let capture = c
            .lab
            .capture_external(&format!("icmp and src host {masquerade}"))
            .unwrap();
        let _ = c.lab.ping(
            &c.netns(ns, &format!("{}1", &ns[..1])),
            external,
            Ping::new(1, Duration::from_secs(2)),
        );
        let seen = capture.wait_source(Duration::from_secs(10));
        assert_eq!(
            seen,
            Some(masquerade.parse().unwrap()),
            "{ns}: egress source\n{}",
            diag(&c)
        );
    }

    // Every row compiles: no logical-flow parse errors, every port bound in SB.
    for node in c.lab.nodes() {
        let log = node.northd_log().unwrap();
        for line in log.lines() {
            assert!(
                !(line.contains("parse")
                    || line.contains("Syntax error")
                    || line.contains("|ERR|")),
                "{}: northd: {line}",
                node.name()
            );
        }
        let lsps = node
            .nbctl(&["--bare", "--columns=name", "list", "Logical_Switch_Port"])
            .unwrap();
        let lrps = node
            .nbctl(&["--bare", "--columns=name", "list", "Logical_Router_Port"])
            .unwrap();
        let bindings = node
            .sbctl(&["--bare", "--columns=logical_port", "list", "Port_Binding"])
            .unwrap();
        let bound: std::collections::BTreeSet<&str> =
            bindings.lines().filter(|l| !l.is_empty()).collect();
        for port in lsps.lines().chain(lrps.lines()).filter(|l| !l.is_empty()) {
            assert!(
                bound.contains(port),
                "{}: {port} has no Port_Binding",
                node.name()
            );
        }
    }
    for zone in c.zones.drain(..) {
        zone.stop().await;
    }
}
