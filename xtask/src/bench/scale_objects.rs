//! The objects of `cargo xtask bench scale`, as users leave them for the control plane:
//! - N namespaces `tenant-<i>` labelled for a primary UDN, each with a primary Layer3
//!   `UserDefinedNetwork` `net` (all on [`UDN_CIDR`], host subnets /24): cluster-manager
//!   renders their NADs and gives them network IDs;
//! - M nodes `node1..nodeM` with the node agent's annotations only (chassis ID,
//!   `l3-gateway-config`, encap IP, host CIDRs) and an InternalIP: `node1` is the lab's node,
//!   the others remote nodes with random chassis IDs; cluster-manager writes the rest;
//! - pods bound to nodes (`spec.nodeName`, no kubelet): the [`Plan`] places two pods of
//!   each network on two different nodes, every node hosting pods of at most A networks and
//!   node1 of A (when there are enough networks). Pods mark activity for Dynamic UDN; only
//!   node1's get addresses (from node1's udn-controller).

use anyhow::Context;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::Client;
use kube::api::Api;
use serde_json::json;
use udn_api::crd::UserDefinedNetwork;
use udn_api::names::LABEL_PRIMARY_UDN_NAMESPACE;

use super::controller_objects::{NAD_NAME, NodeHost, agent_annotations, create_all};
pub use super::controller_objects::{namespace_name, network_name};

/// Every UDN's subnet (overlapping is what UDNs are for).
pub const UDN_CIDR: &str = "10.132.0.0/16";
/// Its host subnet length: 256 nodes.
pub const UDN_HOST_LEN: u8 = 24;
/// The most nodes: the default network's `10.244.0.0/16/24` and [`UDN_HOST_LEN`].
pub const MAX_NODES: usize = 256;
/// Pods per network (on that many different nodes).
pub const REPLICAS: usize = 2;

/// Where the pods go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Primary Layer3 UDNs.
    pub networks: usize,
    /// Nodes (node1 is the real zone's).
    pub nodes: usize,
    /// The most networks any node hosts pods of.
    pub active_per_node: usize,
}

impl Plan {
    /// Checks the sizes.
    pub fn new(networks: usize, nodes: usize, active_per_node: usize) -> anyhow::Result<Self> {
        anyhow::ensure!(networks >= 1, "--networks must be at least 1");
        anyhow::ensure!(
            (1..=MAX_NODES).contains(&nodes),
            "--nodes must be 1..={MAX_NODES}"
        );
        anyhow::ensure!(active_per_node >= 1, "--active-per-node must be at least 1");
        Ok(Self {
            networks,
            nodes,
            active_per_node,
        })
    }

    /// Pods per network: [`REPLICAS`], or 1 with a single node.
    pub fn replicas(&self) -> usize {
        REPLICAS.min(self.nodes)
    }

    /// Pods in all: a network's pods are consecutive slots, slots go round-robin over the
    /// nodes, and no more slots than the nodes can take (networks beyond have no pods).
    pub fn pods(&self) -> usize {
        (self.replicas() * self.networks).min(self.nodes * self.active_per_node)
    }

    /// Slot `s`'s network (0-based) and node (0-based). A network's slots are consecutive,
    /// so its pods land on different nodes.
    pub fn slot(&self, s: usize) -> (usize, usize) {
        (s / self.replicas(), s % self.nodes)
    }

    /// The networks (0-based) with a pod on node `k` (0-based).
    pub fn active_on(&self, k: usize) -> Vec<usize> {
        (0..self.pods())
            .map(|s| self.slot(s))
            .filter(|(_, node)| *node == k)
            .map(|(network, _)| network)
            .collect()
    }

    /// The networks with a pod on some node.
    pub fn active_networks(&self) -> usize {
        self.pods().div_ceil(self.replicas())
    }
}

/// Node `k`'s name (0-based).
pub fn node_name(k: usize) -> String {
    format!("node{}", k + 1)
}

/// Namespace of network `n` (0-based).
pub fn namespace_of(n: usize) -> String {
    namespace_name(n + 1)
}

/// The UDN object of `namespace`.
pub fn udn_object(namespace: &str) -> anyhow::Result<UserDefinedNetwork> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
        "metadata": {"name": NAD_NAME, "namespace": namespace},
        "spec": {"topology": "Layer3", "layer3": {"role": "Primary",
            "subnets": [{"cidr": UDN_CIDR, "hostSubnet": UDN_HOST_LEN}]}},
    }))?)
}

/// A namespace labelled for a primary UDN.
pub fn namespace_object(name: &str) -> anyhow::Result<Namespace> {
    Ok(serde_json::from_value(json!({"metadata": {
        "name": name, "labels": {LABEL_PRIMARY_UDN_NAMESPACE: ""}}}))?)
}

/// A pod bound to `node`.
pub fn pod_object(namespace: &str, name: &str, node: &str) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node,
            "containers": [{"name": "c", "image": "registry.example/app:1"}]},
    }))?)
}

/// Node `host` with the node agent's annotations and its InternalIP.
pub fn node_object(host: &NodeHost) -> anyhow::Result<Node> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": host.name, "annotations": agent_annotations(host)?,
            "labels": {"kubernetes.io/hostname": host.name}},
        "status": {"addresses": [{"type": "InternalIP", "address": host.cidr.ip().to_string()}]},
    }))?)
}

fn namespaced<K>(client: &Client) -> impl Fn(&K) -> Api<K> + '_
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    |object: &K| {
        Api::namespaced(
            client.clone(),
            object.meta().namespace.as_deref().unwrap_or_default(),
        )
    }
}

/// Creates the nodes (`hosts`, node1 first), namespaces, UDNs and pods of `plan`.
pub async fn create(client: &Client, plan: &Plan, hosts: &[NodeHost]) -> anyhow::Result<()> {
    let nodes = hosts
        .iter()
        .map(node_object)
        .collect::<anyhow::Result<Vec<_>>>()?;
    create_all(|_| Api::all(client.clone()), nodes).await?;
    let namespaces = (0..plan.networks)
        .map(|n| namespace_object(&namespace_of(n)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    create_all(|_| Api::all(client.clone()), namespaces).await?;
    let udns = (0..plan.networks)
        .map(|n| udn_object(&namespace_of(n)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    create_all(namespaced(client), udns).await?;
    let pods = (0..plan.pods())
        .map(|s| {
            let (network, node) = plan.slot(s);
            pod_object(
                &namespace_of(network),
                &format!("pod-{}", node_name(node)),
                &node_name(node),
            )
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    create_all(namespaced(client), pods)
        .await
        .context("creating the pods")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_network_has_its_pods_on_different_nodes_and_no_node_too_many() {
        let plan = Plan::new(10_000, 100, 200).unwrap();
        assert_eq!(plan.pods(), 20_000);
        assert_eq!(plan.active_on(0).len(), 200);
        for k in [1, 37, 99] {
            assert!(plan.active_on(k).len() <= 200);
        }
        assert_eq!(plan.slot(0), (0, 0));
        assert_eq!(plan.slot(1), (0, 1));
        assert_eq!(plan.slot(2), (1, 2));
    }

    #[test]
    fn small_sizes_cap_the_pods_by_the_nodes_room() {
        let plan = Plan::new(500, 10, 20).unwrap();
        assert_eq!(plan.pods(), 200);
        assert_eq!(plan.active_networks(), 100);
        assert_eq!(plan.active_on(0).len(), 20);
        let few = Plan::new(5, 10, 20).unwrap();
        assert_eq!(few.pods(), 10);
        assert_eq!(few.active_on(0), vec![0]);
        let one = Plan::new(3, 1, 2).unwrap();
        assert_eq!(one.active_on(0), vec![0, 1]);
        assert!(Plan::new(1, 0, 1).is_err());
    }
}
