//! The workload's world: what users, cluster-manager and the node agent write into the API
//! server (namespaces, NADs with network IDs, node annotations with host subnets and Layer2
//! gateway tunnel IDs, pods, and the Layer2 entries of `k8s.ovn.org/pod-networks`), and a
//! model of it that the checks compare the databases with.
//!
//! The test plays cluster-manager as it behaves: IDs, host subnets, Layer2 addresses and
//! tunnel IDs are the lowest free ones (so a deleted object's values are handed out again),
//! and a network or node is deleted only after the pods using it (its finalizer, pod GC).

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use udn_api::annotations::{MacAddress, PodNetworkAnnotation, PodNetworkRole, PodRoute};
use udn_api::names::{ANNOTATION_NETWORKS, ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS};

use crate::support::{
    NodeAnnotations, annotate_layer2, delete_nad, delete_pod, nad_json, net, put_nad,
    put_namespace, put_pod,
};

/// The zone's node (the zone is named after it).
pub(crate) const LOCAL: &str = "node1";
/// Node slots: the local node and two remote ones.
pub(crate) const NODES: [&str; 3] = [LOCAL, "node2", "node3"];
/// Namespace slots: `plain` (default network as primary), and the namespaces of the primary
/// Layer3 and Layer2 networks (labelled).
pub(crate) const NAMESPACES: [&str; 3] = ["plain", "l3p", "l2p"];
/// Pod names per namespace.
pub(crate) const PODS: usize = 3;
/// The default network's host subnets: `10.244.<index>.0/24`.
const DEFAULT_BASE: [u8; 2] = [10, 244];
/// Tunnel IDs of Layer2 pods start above the nodes' gateway router port IDs.
const FIRST_POD_TUNNEL_ID: u32 = 10;

/// A network's topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Topo {
    Layer3,
    Layer2,
}

/// One network slot of the workload.
#[derive(Debug)]
pub(crate) struct NetDef {
    pub(crate) namespace: &'static str,
    pub(crate) nad: &'static str,
    pub(crate) topology: Topo,
    pub(crate) primary: bool,
    /// First two octets of its subnets (Layer3: `/16` cut in `/24`s; Layer2: `x.y.0.0/24`).
    pub(crate) base: [u8; 2],
}

/// Network slots: primary Layer3 (`l3p`), primary Layer2 (`l2p`), and secondary Layer3 and
/// Layer2 NADs in `plain`, which pods of any namespace may request.
pub(crate) const NETWORKS: [NetDef; 4] = [
    NetDef {
        namespace: "l3p",
        nad: "net",
        topology: Topo::Layer3,
        primary: true,
        base: [10, 128],
    },
    NetDef {
        namespace: "l2p",
        nad: "net",
        topology: Topo::Layer2,
        primary: true,
        base: [10, 100],
    },
    NetDef {
        namespace: "plain",
        nad: "sec3",
        topology: Topo::Layer3,
        primary: false,
        base: [10, 150],
    },
    NetDef {
        namespace: "plain",
        nad: "sec2",
        topology: Topo::Layer2,
        primary: false,
        base: [10, 160],
    },
];

impl NetDef {
    /// The network name cluster-manager gives a UDN (`<namespace>_<name>`).
    pub(crate) fn name(&self) -> String {
        format!("{}_{}", self.namespace, self.nad)
    }

    /// `namespace/name` of its NAD.
    pub(crate) fn nad_key(&self) -> String {
        format!("{}/{}", self.namespace, self.nad)
    }

    /// The prefix of its OVN names.
    pub(crate) fn prefix(&self) -> String {
        format!("{}_", self.name())
    }

    /// Its network controller (owner of its rows).
    pub(crate) fn controller(&self) -> String {
        format!("{}-network-controller", self.name())
    }

    fn netconf(&self) -> Value {
        let [a, b] = self.base;
        let (topology, subnets) = match self.topology {
            Topo::Layer3 => ("layer3", format!("{a}.{b}.0.0/16/24")),
            Topo::Layer2 => ("layer2", format!("{a}.{b}.0.0/24")),
        };
        let role = if self.primary { "primary" } else { "secondary" };
        json!({"topology": topology, "role": role, "subnets": subnets, "mtu": 1400})
    }

    /// The Layer2 entry cluster-manager writes for a pod (MAC from the IP; a primary
    /// network's gateway and routes to the service CIDR and the join subnet).
    fn layer2_entry(&self, host: u8, tunnel_id: u32) -> PodNetworkAnnotation {
        let [a, b] = self.base;
        let ip = Ipv4Addr::new(a, b, 0, host);
        let gateway = IpAddr::V4(Ipv4Addr::new(a, b, 0, 1));
        let (gateway_ips, routes, role) = if self.primary {
            let routes = ["10.96.0.0/16", "100.65.0.0/16"]
                .iter()
                .map(|dest| PodRoute {
                    dest: net(dest),
                    next_hop: Some(gateway),
                })
                .collect();
            (vec![gateway], routes, PodNetworkRole::Primary)
        } else {
            (Vec::new(), Vec::new(), PodNetworkRole::Secondary)
        };
        PodNetworkAnnotation {
            ip_addresses: vec![net(&format!("{ip}/24"))],
            mac_address: MacAddress([0x0a, 0x58, a, b, 0, host]),
            gateway_ips,
            routes,
            ipv6_lla_gateway_ip: None,
            tunnel_id,
            role: Some(role),
        }
    }
}

/// The primary network slot of a namespace slot (`None`: the default network).
pub(crate) fn primary_of(namespace: usize) -> Option<usize> {
    NETWORKS
        .iter()
        .position(|n| n.primary && n.namespace == NAMESPACES[namespace])
}

/// A live pod of the model.
#[derive(Clone, Debug)]
pub(crate) struct PodModel {
    pub(crate) node: usize,
    /// Secondary network slots it requested (live when it was created).
    pub(crate) secondaries: Vec<usize>,
    /// Layer2 entries written: network slot -> (last octet, tunnel ID).
    pub(crate) layer2: BTreeMap<usize, (u8, u32)>,
}

/// The cluster as the test wrote it.
pub(crate) struct World {
    client: kube::Client,
    /// Live networks: slot -> network ID.
    pub(crate) networks: BTreeMap<usize, u32>,
    /// Live nodes: slot -> host subnet index (`x.y.<index>.0/24`) per Layer3 network name
    /// (`default` included).
    pub(crate) nodes: BTreeMap<usize, BTreeMap<String, u8>>,
    /// Live pods: (namespace slot, pod slot) -> pod.
    pub(crate) pods: BTreeMap<(usize, usize), PodModel>,
}

/// The lowest value from `first` not in `used`.
fn lowest_free<T: Ord + Copy>(used: impl IntoIterator<Item = T>, first: T, next: fn(T) -> T) -> T {
    let used: BTreeSet<T> = used.into_iter().collect();
    let mut value = first;
    while used.contains(&value) {
        value = next(value);
    }
    value
}

impl World {
    /// The namespaces and the local node.
    pub(crate) async fn new(client: kube::Client) -> Self {
        for (index, ns) in NAMESPACES.iter().enumerate() {
            put_namespace(&client, ns, primary_of(index).is_some()).await;
        }
        let mut world = Self {
            client,
            networks: BTreeMap::new(),
            nodes: BTreeMap::new(),
            pods: BTreeMap::new(),
        };
        world.add_node(0).await;
        world
    }

    /// The Layer3 network names every node has a host subnet of.
    fn layer3_networks(&self) -> Vec<String> {
        let mut out = vec!["default".to_owned()];
        out.extend(
            self.networks
                .keys()
                .filter(|slot| NETWORKS[**slot].topology == Topo::Layer3)
                .map(|slot| NETWORKS[*slot].name()),
        );
        out
    }

    fn base_of(network: &str) -> [u8; 2] {
        NETWORKS
            .iter()
            .find(|n| n.name() == network)
            .map_or(DEFAULT_BASE, |n| n.base)
    }

    /// A host subnet of `network` for `node` (lowest free), when it has none.
    fn allocate_host_subnet(&mut self, node: usize, network: &str) {
        let index = lowest_free(
            self.nodes.values().filter_map(|s| s.get(network).copied()),
            0u8,
            |i| i + 1,
        );
        if let Some(subnets) = self.nodes.get_mut(&node) {
            subnets.entry(network.to_owned()).or_insert(index);
        }
    }

    /// The node's annotations as cluster-manager and the node agent write them.
    fn node_annotations(&self, slot: usize) -> NodeAnnotations {
        let name = NODES[slot];
        let id = u32::try_from(slot).unwrap() + 2;
        let subnets = self.nodes[&slot]
            .iter()
            .map(|(network, index)| {
                let [a, b] = Self::base_of(network);
                (network.clone(), vec![format!("{a}.{b}.{index}.0/24")])
            })
            .collect();
        let layer2_tunnel_ids = self
            .networks
            .keys()
            .map(|s| &NETWORKS[*s])
            .filter(|n| n.primary && n.topology == Topo::Layer2)
            .map(|n| (n.name(), id - 1))
            .collect();
        NodeAnnotations {
            name: name.to_owned(),
            id,
            chassis: format!("chassis-{name}"),
            node_cidr: format!("172.18.0.{id}/16"),
            node_ip: format!("172.18.0.{id}"),
            mac: format!("02:00:ac:12:00:{id:02x}"),
            next_hop: "172.18.0.1".to_owned(),
            subnets,
            layer2_tunnel_ids,
        }
    }

    /// Creates the node or replaces its annotations (a key no longer written is removed).
    async fn write_node(&self, slot: usize) {
        let annotations = self.node_annotations(slot);
        let api: Api<KubeNode> = Api::all(self.client.clone());
        let mut body = annotations.to_json();
        if api.get_opt(&annotations.name).await.unwrap().is_some() {
            if annotations.layer2_tunnel_ids.is_empty() {
                body["metadata"]["annotations"][ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS] =
                    Value::Null;
            }
            api.patch(
                &annotations.name,
                &PatchParams::default(),
                &Patch::Merge(&body),
            )
            .await
            .unwrap();
        } else {
            let node: KubeNode = serde_json::from_value(body).unwrap();
            api.create(&PostParams::default(), &node).await.unwrap();
        }
    }

    /// A network's NAD with the lowest free network ID, then its host subnets (Layer3) or
    /// gateway router port tunnel IDs (primary Layer2) on every node, then the Layer2
    /// entries of pods that now want it.
    pub(crate) async fn add_network(&mut self, slot: usize) {
        if self.networks.contains_key(&slot) {
            return;
        }
        let id = lowest_free(self.networks.values().copied(), 1u32, |i| i + 1);
        self.networks.insert(slot, id);
        let def = &NETWORKS[slot];
        put_nad(
            &self.client,
            nad_json(def.namespace, def.nad, &def.name(), def.netconf(), id),
        )
        .await;
        let nodes: Vec<usize> = self.nodes.keys().copied().collect();
        for node in nodes {
            if def.topology == Topo::Layer3 {
                self.allocate_host_subnet(node, &def.name());
            }
            if def.topology == Topo::Layer3 || def.primary {
                self.write_node(node).await;
            }
        }
        self.write_layer2_entries().await;
    }

    /// The pods using a network, then its NAD, then its node annotations.
    pub(crate) async fn delete_network(&mut self, slot: usize) {
        if !self.networks.contains_key(&slot) {
            return;
        }
        let def = &NETWORKS[slot];
        let users: Vec<(usize, usize)> = self
            .pods
            .iter()
            .filter(|((ns, _), pod)| {
                primary_of(*ns) == Some(slot) || pod.secondaries.contains(&slot)
            })
            .map(|(key, _)| *key)
            .collect();
        for key in users {
            self.delete_pod(key.0, key.1).await;
        }
        delete_nad(&self.client, def.namespace, def.nad).await;
        self.networks.remove(&slot);
        let nodes: Vec<usize> = self.nodes.keys().copied().collect();
        for node in nodes {
            if let Some(subnets) = self.nodes.get_mut(&node) {
                subnets.remove(&def.name());
            }
            if def.topology == Topo::Layer3 || def.primary {
                self.write_node(node).await;
            }
        }
    }

    /// A node with every annotation (host subnets of every Layer3 network).
    pub(crate) async fn add_node(&mut self, slot: usize) {
        if self.nodes.contains_key(&slot) {
            return;
        }
        self.nodes.insert(slot, BTreeMap::new());
        for network in self.layer3_networks() {
            self.allocate_host_subnet(slot, &network);
        }
        self.write_node(slot).await;
    }

    /// The node's pods, then the node.
    pub(crate) async fn delete_node(&mut self, slot: usize) {
        if !self.nodes.contains_key(&slot) {
            return;
        }
        let on_node: Vec<(usize, usize)> = self
            .pods
            .iter()
            .filter(|(_, pod)| pod.node == slot)
            .map(|(key, _)| *key)
            .collect();
        for key in on_node {
            self.delete_pod(key.0, key.1).await;
        }
        let api: Api<KubeNode> = Api::all(self.client.clone());
        api.delete(NODES[slot], &Default::default()).await.unwrap();
        self.nodes.remove(&slot);
    }

    /// A pod on a live node, requesting the live secondary networks of `mask` (bit per
    /// network slot).
    pub(crate) async fn add_pod(&mut self, namespace: usize, pod: usize, node: usize, mask: u8) {
        if self.pods.contains_key(&(namespace, pod)) || !self.nodes.contains_key(&node) {
            return;
        }
        let secondaries: Vec<usize> = self
            .networks
            .keys()
            .copied()
            .filter(|slot| !NETWORKS[*slot].primary && mask & (1 << slot) != 0)
            .collect();
        let mut annotations = json!({});
        if !secondaries.is_empty() {
            let list: Vec<String> = secondaries.iter().map(|s| NETWORKS[*s].nad_key()).collect();
            annotations[ANNOTATION_NETWORKS] = json!(list.join(","));
        }
        put_pod(
            &self.client,
            NAMESPACES[namespace],
            &format!("p{pod}"),
            NODES[node],
            annotations,
        )
        .await;
        self.pods.insert(
            (namespace, pod),
            PodModel {
                node,
                secondaries,
                layer2: BTreeMap::new(),
            },
        );
        self.write_layer2_entries().await;
    }

    pub(crate) async fn delete_pod(&mut self, namespace: usize, pod: usize) {
        if self.pods.remove(&(namespace, pod)).is_none() {
            return;
        }
        delete_pod(&self.client, NAMESPACES[namespace], &format!("p{pod}")).await;
    }

    /// The attachments a pod wants: (NAD key, network slot; `None` for the default
    /// network), or `None` when it can have none (its namespace's primary network is
    /// missing).
    pub(crate) fn wanted(
        &self,
        namespace: usize,
        pod: &PodModel,
    ) -> Option<Vec<(String, Option<usize>)>> {
        let mut out = vec![("default".to_owned(), None)];
        if let Some(primary) = primary_of(namespace) {
            if !self.networks.contains_key(&primary) {
                return None;
            }
            out.push((NETWORKS[primary].nad_key(), Some(primary)));
        }
        out.extend(
            pod.secondaries
                .iter()
                .map(|s| (NETWORKS[*s].nad_key(), Some(*s))),
        );
        Some(out)
    }

    /// Cluster-manager's part for pods: a Layer2 entry for every Layer2 attachment of a pod
    /// that can have attachments.
    async fn write_layer2_entries(&mut self) {
        let keys: Vec<(usize, usize)> = self.pods.keys().copied().collect();
        for key in keys {
            let pod = self.pods[&key].clone();
            let Some(wanted) = self.wanted(key.0, &pod) else {
                continue;
            };
            for (nad_key, slot) in wanted {
                let Some(slot) = slot else { continue };
                if NETWORKS[slot].topology != Topo::Layer2 || pod.layer2.contains_key(&slot) {
                    continue;
                }
                let held = self.pods.values().filter_map(|p| p.layer2.get(&slot));
                let (hosts, tunnels): (Vec<u8>, Vec<u32>) = held.copied().unzip();
                let host = lowest_free(hosts, 3u8, |h| h + 1);
                let tunnel = lowest_free(tunnels, FIRST_POD_TUNNEL_ID, |t| t + 1);
                let entry = NETWORKS[slot].layer2_entry(host, tunnel);
                annotate_layer2(
                    &self.client,
                    NAMESPACES[key.0],
                    &format!("p{}", key.1),
                    &nad_key,
                    entry,
                )
                .await;
                if let Some(model) = self.pods.get_mut(&key) {
                    model.layer2.insert(slot, (host, tunnel));
                }
            }
        }
    }
}
