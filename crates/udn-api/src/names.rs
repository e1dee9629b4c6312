//! Upstream names: annotation keys, labels, finalizers, condition strings and network
//! naming. Every string here must match OVN-Kubernetes exactly.

/// API group of the UDN CRDs.
pub const GROUP: &str = "k8s.ovn.org";
/// Finalizer on UDNs, CUDNs and every NAD rendered from them.
pub const FINALIZER_UDN_PROTECTION: &str = "k8s.ovn.org/user-defined-network-protection";
/// Label on every NAD rendered from a UDN/CUDN (empty value).
pub const LABEL_USER_DEFINED_NETWORK: &str = "k8s.ovn.org/user-defined-network";
/// Namespace label required (at creation) for a primary network.
pub const LABEL_PRIMARY_UDN_NAMESPACE: &str = "k8s.ovn.org/primary-user-defined-network";
/// Prefix of annotations owned by OVN-Kubernetes (not copied from UDN to NAD).
pub const OVN_ANNOTATION_PREFIX: &str = "k8s.ovn.org";

/// Pod annotation: per-NAD IP/MAC/routes.
pub const ANNOTATION_POD_NETWORKS: &str = "k8s.ovn.org/pod-networks";
/// Node annotation: per-network host subnets.
pub const ANNOTATION_NODE_SUBNETS: &str = "k8s.ovn.org/node-subnets";
/// NAD annotation: the network ID.
pub const ANNOTATION_NETWORK_ID: &str = "k8s.ovn.org/network-id";
/// NAD annotation: the network name.
pub const ANNOTATION_NETWORK_NAME: &str = "k8s.ovn.org/network-name";
/// NAD annotation: tunnel keys (JSON int array).
pub const ANNOTATION_TUNNEL_KEYS: &str = "k8s.ovn.org/tunnel-keys";
/// Legacy node annotation: network name -> network ID (decimal string).
pub const ANNOTATION_NODE_NETWORK_IDS: &str = "k8s.ovn.org/network-ids";
/// Node annotation (cluster-manager): the node's ID, a decimal string (`"2"`).
pub const ANNOTATION_NODE_ID: &str = "k8s.ovn.org/node-id";
/// Node annotation (cluster-manager): the node's transit switch port addresses,
/// `{"ipv4":"100.88.0.2/16","ipv6":"fd97::2/64"}`.
pub const ANNOTATION_NODE_TRANSIT_SWITCH_PORT_IFADDR: &str =
    "k8s.ovn.org/node-transit-switch-port-ifaddr";
/// Node annotation (cluster-manager, legacy Layer2 topology only): per primary Layer2
/// network, the tunnel ID of the node's gateway router port, `{"ns1_blue":"5"}`.
pub const ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS: &str =
    "k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids";
/// Obsolete node annotation (per-network gateway router join addresses); nothing reads it
/// any more and cluster-manager deletes it.
pub const ANNOTATION_NODE_GATEWAY_ROUTER_LRP_IFADDRS: &str =
    "k8s.ovn.org/node-gateway-router-lrp-ifaddrs";
/// Node annotation (the zone's controller): `"2.0"` when the node uses the Layer2 transit
/// router topology.
pub const ANNOTATION_LAYER2_TOPOLOGY_VERSION: &str = "k8s.ovn.org/layer2-topology-version";
/// The [`ANNOTATION_LAYER2_TOPOLOGY_VERSION`] value of the transit router topology.
pub const LAYER2_TRANSIT_ROUTER_TOPOLOGY_VERSION: &str = "2.0";
/// Node annotation (node agent): the gateway configuration per network (only `default`).
pub const ANNOTATION_L3_GATEWAY_CONFIG: &str = "k8s.ovn.org/l3-gateway-config";
/// Node annotation (node agent): the OVS `system-id` of the node's chassis.
pub const ANNOTATION_NODE_CHASSIS_ID: &str = "k8s.ovn.org/node-chassis-id";
/// Node annotation (node agent): the geneve encapsulation IPs, a JSON array.
pub const ANNOTATION_NODE_ENCAP_IPS: &str = "k8s.ovn.org/node-encap-ips";
/// Node annotation (node agent): the host's addresses with prefix lengths, a sorted JSON array.
pub const ANNOTATION_HOST_CIDRS: &str = "k8s.ovn.org/host-cidrs";
/// Node annotation (node agent): the first address of each family on the gateway interface.
pub const ANNOTATION_NODE_PRIMARY_IFADDR: &str = "k8s.ovn.org/node-primary-ifaddr";
/// Node annotation (node agent): the masquerade subnets the node is configured with.
pub const ANNOTATION_NODE_MASQUERADE_SUBNET: &str = "k8s.ovn.org/node-masquerade-subnet";
/// Node annotation (node agent): `"false"` when the gateway cannot check packet lengths;
/// absent means supported.
pub const ANNOTATION_GATEWAY_MTU_SUPPORT: &str = "k8s.ovn.org/gateway-mtu-support";
/// Obsolete node annotation: the node's zone, which is always the node name now.
pub const ANNOTATION_ZONE_NAME: &str = "k8s.ovn.org/zone-name";
/// Pod annotation: default-network ports open on primary-UDN pods.
pub const ANNOTATION_OPEN_DEFAULT_PORTS: &str = "k8s.ovn.org/open-default-ports";
/// Pod annotation written by Multus: the attachments and their IPs.
pub const ANNOTATION_NETWORK_STATUS: &str = "k8s.v1.cni.cncf.io/network-status";
/// Pod annotation: requested secondary attachments.
pub const ANNOTATION_NETWORKS: &str = "k8s.v1.cni.cncf.io/networks";

/// CNI plugin type of every OVN-Kubernetes NAD.
pub const CNI_TYPE: &str = "ovn-k8s-cni-overlay";
/// CNI spec version written into rendered NADs.
pub const CNI_VERSION: &str = "1.1.0";
/// Prefix of CUDN network names.
pub const CUDN_PREFIX: &str = "cluster_udn_";
/// Name of the default network.
pub const DEFAULT_NETWORK_NAME: &str = "default";

/// Network name of a UDN: `<namespace>_<name>`.
pub fn udn_network_name(namespace: &str, name: &str) -> String {
    format!("{namespace}_{name}")
}

/// Network name of a CUDN: `cluster_udn_<name>`.
pub fn cudn_network_name(name: &str) -> String {
    format!("{CUDN_PREFIX}{name}")
}

/// NAD key: `<namespace>/<name>`.
pub fn nad_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// Which object a network name belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParsedNetworkName {
    /// `cluster_udn_<name>`.
    Cudn {
        /// CUDN name.
        name: String,
    },
    /// `<namespace>_<name>`.
    Udn {
        /// UDN namespace.
        namespace: String,
        /// UDN name.
        name: String,
    },
}

/// Reverse of [`udn_network_name`] / [`cudn_network_name`]; `None` when the name is
/// neither (upstream `ParseNetworkName`).
pub fn parse_network_name(network: &str) -> Option<ParsedNetworkName> {
    if let Some(name) = network.strip_prefix(CUDN_PREFIX) {
        return Some(ParsedNetworkName::Cudn {
            name: name.to_owned(),
        });
    }
    let mut parts = network.split('_');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(namespace), Some(name), None) => Some(ParsedNetworkName::Udn {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }),
        _ => None,
    }
}

/// Prefix of OVN NB object names for a network: `-` and `/` become `.`, plus a trailing `_`
/// (upstream `GetUserDefinedNetworkPrefix`).
pub fn ovn_prefix(network: &str) -> String {
    let mut prefix: String = network
        .chars()
        .map(|c| if c == '-' || c == '/' { '.' } else { c })
        .collect();
    prefix.push('_');
    prefix
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_names_round_trip() {
        assert_eq!(
            udn_network_name("blue", "blue-network"),
            "blue_blue-network"
        );
        assert_eq!(cudn_network_name("berlin"), "cluster_udn_berlin");
        assert_eq!(
            parse_network_name("blue_blue-network"),
            Some(ParsedNetworkName::Udn {
                namespace: "blue".into(),
                name: "blue-network".into()
            })
        );
        assert_eq!(
            parse_network_name("cluster_udn_berlin"),
            Some(ParsedNetworkName::Cudn {
                name: "berlin".into()
            })
        );
        assert_eq!(parse_network_name("default"), None);
        assert_eq!(parse_network_name("a_b_c"), None);
    }

    #[test]
    fn ovn_prefix_replaces_dash_and_slash() {
        assert_eq!(ovn_prefix("blue_blue-network"), "blue_blue.network_");
        assert_eq!(ovn_prefix("cluster_udn_tenant-a"), "cluster_udn_tenant.a_");
    }
}
