//! OVN object names of one network, as upstream builds them (`pkg/types/const.go` prefixes,
//! `util.NetInfo` `GetNetworkScoped*` methods): the default network's names are unprefixed,
//! a user-defined network's carry its prefix (`ns1_blue` -> `ns1_blue_`, `l3-net` -> `l3.net_`).

use udn_api::names::ovn_prefix;

/// Name of the distributed (cluster) router (`types.OVNClusterRouter`).
pub(crate) const CLUSTER_ROUTER: &str = "ovn_cluster_router";
/// Name of the join switch (`types.OVNJoinSwitch`).
pub(crate) const JOIN_SWITCH: &str = "join";
/// Name of the transit switch (`types.TransitSwitch`).
pub(crate) const TRANSIT_SWITCH: &str = "transit_switch";
/// Name of a Layer2 network's switch (`types.OVNLayer2Switch`).
pub(crate) const LAYER2_SWITCH: &str = "ovn_layer2_switch";
/// Name of a localnet network's switch (`types.OVNLocalnetSwitch`).
pub(crate) const LOCALNET_SWITCH: &str = "ovn_localnet_switch";
/// Name of a localnet network's localnet port (`types.OVNLocalnetPort`).
pub(crate) const LOCALNET_PORT: &str = "ovn_localnet_port";
/// Physical network of the gateway bridge (`types.PhysicalNetworkName`).
pub(crate) const PHYSICAL_NETWORK: &str = "physnet";

/// Load balancer group bases (`types.Cluster*LBGroupName`).
pub(crate) const CLUSTER_LB_GROUP: &str = "clusterLBGroup";
pub(crate) const CLUSTER_SWITCH_LB_GROUP: &str = "clusterSwitchLBGroup";
pub(crate) const CLUSTER_ROUTER_LB_GROUP: &str = "clusterRouterLBGroup";
/// The three load balancer group bases, in upstream's creation order.
pub(crate) const LB_GROUP_BASES: [&str; 3] = [
    CLUSTER_LB_GROUP,
    CLUSTER_SWITCH_LB_GROUP,
    CLUSTER_ROUTER_LB_GROUP,
];

/// Cluster port group bases (`types.ClusterPortGroupNameBase`, `ClusterRtrPortGroupNameBase`).
pub(crate) const CLUSTER_PORT_GROUP: &str = "clusterPortGroup";
pub(crate) const CLUSTER_RTR_PORT_GROUP: &str = "clusterRtrPortGroup";

/// Port prefixes (`types.*Prefix`).
pub(crate) const RTOS: &str = "rtos-";
pub(crate) const STOR: &str = "stor-";
pub(crate) const RTOJ: &str = "rtoj-";
pub(crate) const JTOR: &str = "jtor-";
pub(crate) const RTOE: &str = "rtoe-";
pub(crate) const ETOR: &str = "etor-";
pub(crate) const RTOTS: &str = "rtots-";
pub(crate) const TSTOR: &str = "tstor-";
pub(crate) const GR: &str = "GR_";
pub(crate) const EXT: &str = "ext_";
pub(crate) const K8S: &str = "k8s-";

/// The names of one network's objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Names {
    prefix: String,
    layer2: bool,
}

impl Names {
    /// Names for a network with OVN prefix `prefix` (empty for the default network); `layer2`
    /// when the network is Layer2 (one switch for every node).
    pub(crate) fn new(prefix: String, layer2: bool) -> Self {
        Self { prefix, layer2 }
    }

    /// `prefix + name` (`GetNetworkScopedName`).
    pub(crate) fn scoped(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// The cluster router (Layer3 and the default network).
    pub(crate) fn cluster_router(&self) -> String {
        self.scoped(CLUSTER_ROUTER)
    }

    /// The join switch.
    pub(crate) fn join_switch(&self) -> String {
        self.scoped(JOIN_SWITCH)
    }

    /// The transit switch of a Layer3 (or the default) network.
    pub(crate) fn transit_switch(&self) -> String {
        self.scoped(TRANSIT_SWITCH)
    }

    /// The switch pods of `node` attach to: the node switch (Layer3, default), or the one
    /// Layer2 switch (`GetNetworkScopedSwitchName`).
    pub(crate) fn node_switch(&self, node: &str) -> String {
        if self.layer2 {
            self.scoped(LAYER2_SWITCH)
        } else {
            self.scoped(node)
        }
    }

    /// The Layer2 switch.
    pub(crate) fn layer2_switch(&self) -> String {
        self.scoped(LAYER2_SWITCH)
    }

    /// The localnet switch and its localnet port.
    pub(crate) fn localnet_switch(&self) -> String {
        self.scoped(LOCALNET_SWITCH)
    }

    /// The localnet port of a localnet network.
    pub(crate) fn localnet_port(&self) -> String {
        self.scoped(LOCALNET_PORT)
    }

    /// The router port towards `node`'s switch (`rtos-<switch>`).
    pub(crate) fn router_to_switch(&self, node: &str) -> String {
        format!("{RTOS}{}", self.node_switch(node))
    }

    /// The switch port towards the router (`stor-<switch>`).
    pub(crate) fn switch_to_router(&self, node: &str) -> String {
        format!("{STOR}{}", self.node_switch(node))
    }

    /// The management port of `node` (`k8s-<prefix><node>`).
    pub(crate) fn management_port(&self, node: &str) -> String {
        format!("{K8S}{}", self.scoped(node))
    }

    /// The gateway router of `node` (`GR_<prefix><node>`).
    pub(crate) fn gateway_router(&self, node: &str) -> String {
        format!("{GR}{}", self.scoped(node))
    }

    /// The external switch of `node` (`ext_<prefix><node>`).
    pub(crate) fn external_switch(&self, node: &str) -> String {
        format!("{EXT}{}", self.scoped(node))
    }

    /// The localnet port of `node`'s external switch (`<bridge>_<prefix><node>`).
    pub(crate) fn external_port(&self, bridge: &str, node: &str) -> String {
        format!("{bridge}_{}", self.scoped(node))
    }

    /// The cluster router's port to the join switch (`rtoj-<cluster router>`).
    pub(crate) fn cluster_router_to_join(&self) -> String {
        format!("{RTOJ}{}", self.cluster_router())
    }

    /// The join switch's port to the cluster router (`jtor-<cluster router>`).
    pub(crate) fn join_to_cluster_router(&self) -> String {
        format!("{JTOR}{}", self.cluster_router())
    }

    /// The gateway router's port to the join switch (`rtoj-GR_<prefix><node>`).
    pub(crate) fn gateway_router_to_join(&self, node: &str) -> String {
        format!("{RTOJ}{}", self.gateway_router(node))
    }

    /// The join switch's port to the gateway router (`jtor-GR_<prefix><node>`).
    pub(crate) fn join_to_gateway_router(&self, node: &str) -> String {
        format!("{JTOR}{}", self.gateway_router(node))
    }

    /// The gateway router's port to the external switch (`rtoe-GR_<prefix><node>`).
    pub(crate) fn gateway_router_to_external(&self, node: &str) -> String {
        format!("{RTOE}{}", self.gateway_router(node))
    }

    /// The external switch's port to the gateway router (`etor-GR_<prefix><node>`).
    pub(crate) fn external_to_gateway_router(&self, node: &str) -> String {
        format!("{ETOR}{}", self.gateway_router(node))
    }

    /// The cluster router's port to the transit switch (`<prefix>rtots-<node>`: the prefix
    /// goes before the port prefix here).
    pub(crate) fn router_to_transit(&self, node: &str) -> String {
        self.scoped(&format!("{RTOTS}{node}"))
    }

    /// The transit switch's port for `node` (`<prefix>tstor-<node>`).
    pub(crate) fn transit_to_router(&self, node: &str) -> String {
        self.scoped(&format!("{TSTOR}{node}"))
    }

    /// A remote node's gateway router port on the Layer2 switch (legacy topology:
    /// `stor-<layer2 switch>_<node>`).
    pub(crate) fn layer2_remote_gateway_port(&self, node: &str) -> String {
        format!("{STOR}{}_{node}", self.layer2_switch())
    }

    /// A load balancer group (`<prefix><base>`).
    pub(crate) fn load_balancer_group(&self, base: &str) -> String {
        self.scoped(base)
    }
}

/// The logical switch port of a pod's attachment: `<ns>_<pod>` on the default network,
/// `<prefix of the NAD key><ns>_<pod>` on a user-defined one
/// (`util.GetUserDefinedNetworkLogicalPortName`).
pub(crate) fn pod_port_name(default_network: bool, nad_key: &str, ns: &str, pod: &str) -> String {
    if default_network {
        format!("{ns}_{pod}")
    } else {
        format!("{}{ns}_{pod}", ovn_prefix(nad_key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_port_names_follow_upstream() {
        let names = Names::new("isolatednet_".into(), false);
        assert_eq!(names.router_to_switch("node1"), "rtos-isolatednet_node1");
        assert_eq!(names.router_to_transit("node1"), "isolatednet_rtots-node1");
        assert_eq!(names.transit_to_router("node1"), "isolatednet_tstor-node1");
        assert_eq!(names.gateway_router("node1"), "GR_isolatednet_node1");
        assert_eq!(
            names.gateway_router_to_external("node1"),
            "rtoe-GR_isolatednet_node1"
        );
        assert_eq!(
            names.external_port("breth0", "node1"),
            "breth0_isolatednet_node1"
        );
        assert_eq!(names.management_port("node1"), "k8s-isolatednet_node1");
        let l2 = Names::new("l2.net_".into(), true);
        assert_eq!(
            l2.router_to_switch("node1"),
            "rtos-l2.net_ovn_layer2_switch"
        );
        assert_eq!(
            l2.layer2_remote_gateway_port("node2"),
            "stor-l2.net_ovn_layer2_switch_node2"
        );
        assert_eq!(
            pod_port_name(false, "ns1/l3-net", "ns1", "pod1"),
            "ns1.l3.net_ns1_pod1"
        );
        assert_eq!(pod_port_name(true, "default", "ns1", "pod1"), "ns1_pod1");
    }
}
