//! The Kubernetes objects of `cargo xtask bench controller`, as cluster-manager and the node
//! agent leave them before the NB controller of zone `node1` starts:
//! - N namespaces `tenant-<i>` labelled for a primary UDN, each with the NAD `net` of a
//!   primary Layer3 UDN rendered as cluster-manager renders it (`udn_api::render`), every
//!   network on the same subnet ([`UDN_SUBNET`], overlapping is what UDNs are for), with
//!   `k8s.ovn.org/network-id` 1..N (no owner reference: there is no UDN object here, and the
//!   API server's garbage collector would delete a NAD whose owner does not exist);
//! - M nodes with cluster-manager's annotations (node ID, transit switch port address, host
//!   subnets of `default` and every network) and the node agent's (chassis ID, shared-gateway
//!   `l3-gateway-config`, encap IP, host CIDRs): `node1` is the lab's node (its chassis,
//!   `breth0` MAC and address, next hop), the others are remote nodes with random chassis IDs
//!   and the next addresses of the lab's underlay;
//! - P pods on `node1`, round-robin over the namespaces, without any annotation: the
//!   controller allocates their default-network and UDN addresses.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use anyhow::{Context, anyhow};
use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use ipnetwork::{IpNetwork, Ipv4Network};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::json;
use udn_api::annotations::{
    IfAddrs, L3GatewayConfig, L3GatewayMode, MacAddress, NadNetworkAnnotations, format_host_cidrs,
    format_l3_gateway_config, format_node_encap_ips, format_node_id, format_node_subnets,
    format_node_transit_switch_port_ifaddr,
};
use udn_api::cluster::ClusterConfig;
use udn_api::cluster_args::ClusterArgs;
use udn_api::crd::UserDefinedNetwork;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::{
    ANNOTATION_HOST_CIDRS, ANNOTATION_L3_GATEWAY_CONFIG, ANNOTATION_NODE_CHASSIS_ID,
    ANNOTATION_NODE_ENCAP_IPS, ANNOTATION_NODE_ID, ANNOTATION_NODE_SUBNETS,
    ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR, LABEL_PRIMARY_UDN_NAMESPACE, udn_network_name,
};
use udn_api::render::{NetworkSource, render_nad};

/// The local zone and node (the lab's node).
pub const ZONE: &str = "node1";
/// Every network's subnet (as the upstream-shaped generator: all UDNs on the same ranges).
pub const UDN_SUBNET: &str = "10.128.0.0/14";
/// Host subnet length of the networks.
pub const UDN_HOST_LEN: u8 = 23;
/// The default network's cluster subnet and host length: a /22 per node so that up to 1000
/// pods fit on node1 (one pod per network at 500 networks, as the upstream-shaped generator
/// has).
pub const CLUSTER_SUBNETS: &str = "10.244.0.0/16/22";
/// Service CIDRs.
pub const SERVICE_CIDRS: &str = "10.96.0.0/16";
/// The NAD name in every namespace.
pub const NAD_NAME: &str = "net";
/// Concurrent creates.
const CONCURRENCY: usize = 16;

/// The cluster flags the controller is started with (IPv4 only, shared gateway).
pub fn cluster_flags() -> Vec<String> {
    [
        "--cluster-subnets",
        CLUSTER_SUBNETS,
        "--k8s-service-cidrs",
        SERVICE_CIDRS,
        "--gateway-mode",
        "shared",
    ]
    .map(str::to_owned)
    .to_vec()
}

#[derive(Debug, Parser)]
struct Flags {
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// The cluster those flags describe (what the controller builds from them), to render the
/// NADs against.
pub fn cluster_config() -> anyhow::Result<ClusterConfig> {
    let flags = Flags::try_parse_from(std::iter::once("bench".to_owned()).chain(cluster_flags()))
        .context("parsing the bench's cluster flags")?;
    flags
        .cluster
        .cluster()
        .context("the bench's cluster flags are invalid")
}

/// The namespace of network `i` (1-based).
pub fn namespace_name(i: usize) -> String {
    format!("tenant-{i}")
}

/// The network name of network `i` (upstream: `<namespace>_<udn>`).
pub fn network_name(i: usize) -> String {
    udn_network_name(&namespace_name(i), NAD_NAME)
}

/// How a node is reached: what the node agent reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHost {
    /// Node name.
    pub name: String,
    /// Chassis ID (OVS `system-id`).
    pub chassis: String,
    /// Node IP with its prefix length (`breth0`'s address).
    pub cidr: Ipv4Network,
    /// `breth0`'s MAC.
    pub mac: String,
    /// The default gateway.
    pub next_hop: Ipv4Addr,
}

/// The i-th (0-based) subnet of length `len` in `range` (IPv4).
pub fn nth_subnet(range: Ipv4Network, len: u8, i: usize) -> anyhow::Result<Ipv4Network> {
    let size = 1u64 << (32 - u32::from(len));
    let count = 1u64 << (u32::from(len) - u32::from(range.prefix()));
    let index = u64::try_from(i)?;
    anyhow::ensure!(
        len >= range.prefix() && index < count,
        "{range} has no subnet /{len} number {i}"
    );
    let base = u64::from(u32::from(range.network())) + index * size;
    let addr = Ipv4Addr::from(u32::try_from(base)?);
    Ok(Ipv4Network::new(addr, len)?)
}

/// The remote node `k` (0-based over all nodes, k >= 1): the underlay address `k + 2` of
/// `node1`'s network (the lab gives node1 the second host address), a lab-style MAC, a
/// random chassis.
pub fn remote_host(local: &NodeHost, k: usize) -> anyhow::Result<NodeHost> {
    let network = local.cidr.network();
    let offset = u32::try_from(k + 2)?;
    let ip = Ipv4Addr::from(u32::from(network) + offset);
    anyhow::ensure!(
        local.cidr.contains(ip),
        "{} has no room for node {}",
        local.cidr,
        k + 1
    );
    let [a, b, c, d] = ip.octets();
    Ok(NodeHost {
        name: format!("node{}", k + 1),
        chassis: uuid::Uuid::new_v4().to_string(),
        cidr: Ipv4Network::new(ip, local.cidr.prefix())?,
        mac: format!("02:00:{a:02x}:{b:02x}:{c:02x}:{d:02x}"),
        next_hop: local.next_hop,
    })
}

/// The annotations the node agent writes on `host`'s Node: chassis ID, shared-gateway
/// `l3-gateway-config`, encap IP, host CIDRs.
pub fn agent_annotations(host: &NodeHost) -> anyhow::Result<BTreeMap<&'static str, String>> {
    let cidr = IpNetwork::V4(host.cidr);
    let mac: MacAddress = host
        .mac
        .parse()
        .map_err(|e| anyhow!("node {}: {e}", host.name))?;
    let gateway = L3GatewayConfig {
        mode: L3GatewayMode::Shared,
        bridge_id: "breth0".to_owned(),
        interface_id: format!("breth0_{}", host.name),
        mac_address: Some(mac),
        ip_addresses: vec![cidr],
        next_hops: vec![IpAddr::V4(host.next_hop)],
        node_port_enable: true,
        vlan_id: Some(0),
        ..L3GatewayConfig::default()
    };
    let annotation_error = |what: &str, e: udn_api::annotations::AnnotationError| {
        anyhow!("node {}: {what}: {e}", host.name)
    };
    Ok(BTreeMap::from([
        (ANNOTATION_NODE_CHASSIS_ID, host.chassis.clone()),
        (
            ANNOTATION_L3_GATEWAY_CONFIG,
            format_l3_gateway_config(&gateway)
                .map_err(|e| annotation_error("l3-gateway-config", e))?,
        ),
        (
            ANNOTATION_NODE_ENCAP_IPS,
            format_node_encap_ips(&[IpAddr::V4(host.cidr.ip())])
                .map_err(|e| annotation_error("node-encap-ips", e))?,
        ),
        (
            ANNOTATION_HOST_CIDRS,
            format_host_cidrs(&[cidr]).map_err(|e| annotation_error("host-cidrs", e))?,
        ),
    ]))
}

/// The node object of node `k` (0-based; node ID `k + 2`, as upstream hands out IDs from 2)
/// with the annotations of both writers; `networks` are the UDN network names.
pub fn node_object(
    host: &NodeHost,
    k: usize,
    networks: &[String],
    cluster: &ClusterConfig,
) -> anyhow::Result<Node> {
    let id = u32::try_from(k + 2)?;
    let transit =
        udn_ipam::transit_switch_port_ips(&[IpNetwork::V4(cluster.transit_subnet_v4)], id)
            .map_err(|e| anyhow!("node {}: transit address: {e}", host.name))?;
    let default_range = cluster
        .cluster_subnets
        .iter()
        .find_map(|s| match s.cidr {
            IpNetwork::V4(v4) => Some((v4, s.host_subnet_length)),
            IpNetwork::V6(_) => None,
        })
        .ok_or_else(|| anyhow!("the cluster has no IPv4 subnet"))?;
    let udn_range: Ipv4Network = UDN_SUBNET.parse()?;
    let mut subnets = BTreeMap::new();
    subnets.insert(
        "default".to_owned(),
        vec![IpNetwork::V4(nth_subnet(
            default_range.0,
            default_range.1,
            k,
        )?)],
    );
    let udn_subnet = IpNetwork::V4(nth_subnet(udn_range, UDN_HOST_LEN, k)?);
    for network in networks {
        subnets.insert(network.clone(), vec![udn_subnet]);
    }
    let annotation_error = |what: &str, e: udn_api::annotations::AnnotationError| {
        anyhow!("node {}: {what}: {e}", host.name)
    };
    let mut annotations = agent_annotations(host)?;
    annotations.extend([
        (ANNOTATION_NODE_ID, format_node_id(id)),
        (
            ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR,
            format_node_transit_switch_port_ifaddr(&IfAddrs::from_cidrs(&transit)),
        ),
        (
            ANNOTATION_NODE_SUBNETS,
            format_node_subnets(&subnets)
                .map_err(|e| annotation_error("node-subnets", e))?
                .unwrap_or_default(),
        ),
    ]);
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": host.name, "annotations": annotations},
    }))?)
}

/// The NAD of network `i` (1-based) as cluster-manager leaves it: rendered from a primary
/// Layer3 UDN, with the network name, ID `i` and (empty) tunnel keys.
pub fn nad_object(
    i: usize,
    cluster: &ClusterConfig,
) -> anyhow::Result<NetworkAttachmentDefinition> {
    let namespace = namespace_name(i);
    let udn: UserDefinedNetwork = serde_json::from_value(json!({
        "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
        "metadata": {"name": NAD_NAME, "namespace": namespace, "uid": format!("bench-udn-{i}")},
        "spec": {"topology": "Layer3", "layer3": {"role": "Primary",
            "subnets": [{"cidr": UDN_SUBNET, "hostSubnet": UDN_HOST_LEN}]}},
    }))?;
    let mut nad = render_nad(&NetworkSource::Udn(&udn), cluster)
        .map_err(|e| anyhow!("rendering the NAD of {namespace}: {e}"))?;
    nad.metadata.owner_references = None;
    let identity = NadNetworkAnnotations {
        network_name: Some(network_name(i)),
        network_id: Some(u32::try_from(i)?),
        tunnel_keys: Vec::new(),
    };
    nad.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .extend(identity.to_annotations());
    Ok(nad)
}

/// The objects' counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Primary Layer3 networks (namespaces, NADs).
    pub networks: usize,
    /// Nodes (node1 local, the others remote).
    pub nodes: usize,
    /// Pods on node1.
    pub pods: usize,
}

impl Shape {
    /// Checks the counts fit the bench's address plan.
    pub fn new(networks: usize, nodes: usize, pods: usize) -> anyhow::Result<Self> {
        anyhow::ensure!(networks >= 1, "--networks must be at least 1");
        anyhow::ensure!(nodes >= 1, "--nodes must be at least 1 (node1 is the zone)");
        // node IDs: transit addresses in 100.88.0.0/16, default subnets: 64 /22s in a /16.
        anyhow::ensure!(
            nodes <= 64,
            "--nodes: at most 64 nodes fit the bench's /16 of /22s"
        );
        // A /22 holds 1021 pod addresses (gateway, management port).
        anyhow::ensure!(
            pods <= 1000,
            "--pods: at most 1000 pods fit node1's default-network /22"
        );
        Ok(Self {
            networks,
            nodes,
            pods,
        })
    }

    /// The network names.
    pub fn network_names(&self) -> Vec<String> {
        (1..=self.networks).map(network_name).collect()
    }

    /// `namespace` and name of pod `j` (0-based).
    pub fn pod(&self, j: usize) -> (String, String) {
        (namespace_name(j % self.networks + 1), format!("pod-{j}"))
    }
}

/// Creates `objects`, [`CONCURRENCY`] at a time, each through the API `api_of` gives.
pub async fn create_all<K>(api_of: impl Fn(&K) -> Api<K>, objects: Vec<K>) -> anyhow::Result<()>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    futures::stream::iter(objects.into_iter().map(|object| {
        let api = api_of(&object);
        async move {
            api.create(&PostParams::default(), &object)
                .await
                .with_context(|| {
                    format!(
                        "creating {} {}",
                        K::kind(&()),
                        object.meta().name.as_deref().unwrap_or_default()
                    )
                })
        }
    }))
    .buffer_unordered(CONCURRENCY)
    .try_collect::<Vec<_>>()
    .await
    .map(drop)
}

/// Creates every object: namespaces, NADs, nodes (the hosts in node order, node1 first),
/// pods.
pub async fn create(
    client: &Client,
    shape: Shape,
    hosts: &[NodeHost],
    cluster: &ClusterConfig,
) -> anyhow::Result<()> {
    let namespaces = (1..=shape.networks)
        .map(|i| {
            serde_json::from_value::<Namespace>(json!({"metadata": {
                "name": namespace_name(i), "labels": {LABEL_PRIMARY_UDN_NAMESPACE: ""}}}))
        })
        .collect::<Result<Vec<_>, _>>()?;
    create_all(|_| Api::all(client.clone()), namespaces).await?;
    let nads = (1..=shape.networks)
        .map(|i| nad_object(i, cluster))
        .collect::<anyhow::Result<Vec<_>>>()?;
    create_all(
        |nad: &NetworkAttachmentDefinition| {
            Api::namespaced(
                client.clone(),
                nad.metadata.namespace.as_deref().unwrap_or_default(),
            )
        },
        nads,
    )
    .await?;
    let networks = shape.network_names();
    let nodes = hosts
        .iter()
        .enumerate()
        .map(|(k, host)| node_object(host, k, &networks, cluster))
        .collect::<anyhow::Result<Vec<_>>>()?;
    create_all(|_| Api::all(client.clone()), nodes).await?;
    let pods = (0..shape.pods)
        .map(|j| {
            let (namespace, name) = shape.pod(j);
            serde_json::from_value::<Pod>(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"nodeName": ZONE,
                    "containers": [{"name": "c", "image": "registry.example/app:1"}]},
            }))
        })
        .collect::<Result<Vec<_>, _>>()?;
    create_all(
        |pod: &Pod| {
            Api::namespaced(
                client.clone(),
                pod.metadata.namespace.as_deref().unwrap_or_default(),
            )
        },
        pods,
    )
    .await
}

#[cfg(test)]
mod tests {
    use udn_api::annotations::{
        node_l3_gateway, parse_node_id, parse_node_subnets, parse_node_transit_switch_port_ifaddr,
    };
    use udn_api::netconf::NetConf;

    use super::*;

    fn local() -> NodeHost {
        NodeHost {
            name: ZONE.to_owned(),
            chassis: "5d2f8f9e-7f43-4c2a-9d52-1b1f8b1c0a11".to_owned(),
            cidr: "172.18.0.2/16".parse().unwrap(),
            mac: "02:00:ac:12:00:02".to_owned(),
            next_hop: "172.18.0.1".parse().unwrap(),
        }
    }

    #[test]
    fn subnets_are_cut_in_order_and_bounded() {
        let range: Ipv4Network = "10.128.0.0/14".parse().unwrap();
        assert_eq!(
            nth_subnet(range, 23, 0).unwrap().to_string(),
            "10.128.0.0/23"
        );
        assert_eq!(
            nth_subnet(range, 23, 3).unwrap().to_string(),
            "10.128.6.0/23"
        );
        assert_eq!(
            nth_subnet(range, 23, 511).unwrap().to_string(),
            "10.131.254.0/23"
        );
        assert!(nth_subnet(range, 23, 512).is_err());
    }

    #[test]
    fn nodes_carry_what_the_controller_reads() {
        let cluster = cluster_config().unwrap();
        let remote = remote_host(&local(), 2).unwrap();
        assert_eq!(remote.name, "node3");
        assert_eq!(remote.cidr.to_string(), "172.18.0.4/16");
        assert_eq!(remote.mac, "02:00:ac:12:00:04");
        let networks = Shape::new(2, 3, 0).unwrap().network_names();
        assert_eq!(networks, ["tenant-1_net", "tenant-2_net"]);
        let node = node_object(&remote, 2, &networks, &cluster).unwrap();
        let annotations = node.metadata.annotations.unwrap();
        assert_eq!(parse_node_id(&annotations[ANNOTATION_NODE_ID]).unwrap(), 4);
        let transit = parse_node_transit_switch_port_ifaddr(
            &annotations[ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR],
        )
        .unwrap();
        assert_eq!(transit.ipv4.unwrap().to_string(), "100.88.0.4/16");
        let subnets = parse_node_subnets(&annotations[ANNOTATION_NODE_SUBNETS]).unwrap();
        assert_eq!(subnets["default"][0].to_string(), "10.244.8.0/22");
        assert_eq!(subnets["tenant-2_net"][0].to_string(), "10.128.4.0/23");
        let gateway = node_l3_gateway(&annotations).unwrap().unwrap();
        assert_eq!(gateway.chassis_id.as_deref(), Some(remote.chassis.as_str()));
        assert_eq!(gateway.config.interface_id, "breth0_node3");
        assert_eq!(gateway.config.next_hops[0].to_string(), "172.18.0.1");
        assert_eq!(annotations[ANNOTATION_NODE_ENCAP_IPS], r#"["172.18.0.4"]"#);
    }

    #[test]
    fn nads_are_primary_layer3_with_their_network_id() {
        let cluster = cluster_config().unwrap();
        let nad = nad_object(7, &cluster).unwrap();
        assert_eq!(nad.metadata.namespace.as_deref(), Some("tenant-7"));
        assert!(nad.metadata.owner_references.is_none());
        let annotations = nad.metadata.annotations.clone().unwrap();
        assert_eq!(annotations["k8s.ovn.org/network-id"], "7");
        assert_eq!(annotations["k8s.ovn.org/network-name"], "tenant-7_net");
        let config = nad.spec.config.as_deref().unwrap();
        let conf = NetConf::parse(config, cluster.mtu).unwrap();
        let text = format!("{conf:?}");
        assert!(config.contains(r#""role":"primary""#), "{config}");
        assert!(config.contains(r#""topology":"layer3""#), "{config}");
        assert!(config.contains("10.128.0.0/14/23"), "{config}");
        assert!(text.contains("tenant-7/net"), "{text}");
    }

    #[test]
    fn pods_go_round_robin_and_counts_are_checked() {
        let shape = Shape::new(3, 20, 7).unwrap();
        assert_eq!(shape.pod(0), ("tenant-1".to_owned(), "pod-0".to_owned()));
        assert_eq!(shape.pod(4), ("tenant-2".to_owned(), "pod-4".to_owned()));
        assert!(Shape::new(0, 1, 0).is_err());
        assert!(Shape::new(1, 65, 0).is_err());
        assert!(Shape::new(1, 1, 1001).is_err());
    }
}
