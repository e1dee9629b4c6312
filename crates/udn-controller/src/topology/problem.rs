//! Why parts of a network's topology could not be rendered: typed, so that the runtime can
//! log them, count them and turn them into Events on the node or pod.

use udn_ipam::IpFamily;

/// A part of the topology that was left out, and why. Everything else is still rendered.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, thiserror::Error)]
pub enum Problem {
    /// A node's part was left out.
    #[error("node {node}: {part} not rendered: {missing}")]
    Node {
        /// Node name.
        node: String,
        /// What was left out.
        part: Part,
        /// Why.
        missing: Missing,
    },
    /// A pod's logical switch port was left out.
    #[error("pod {namespace}/{pod} ({nad_key}): logical port not rendered: {missing}")]
    Pod {
        /// Pod namespace.
        namespace: String,
        /// Pod name.
        pod: String,
        /// The attachment's NAD key (`default` for the default network).
        nad_key: String,
        /// Why.
        missing: Missing,
    },
    /// A network-wide part was left out or rendered without a reference.
    #[error("{part} not rendered: {missing}")]
    Network {
        /// What was left out.
        part: Part,
        /// Why.
        missing: Missing,
    },
}

/// The part of a topology a [`Problem`] concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// Everything of a local node (upstream fails the whole node add).
    LocalNode,
    /// The cluster router's port to the node switch (`rtos-`) and its gateway chassis.
    ClusterRouterPort,
    /// The management port and its ACLs.
    ManagementPort,
    /// The gateway router, external switch and their routes, NATs and policies.
    Gateway,
    /// The local node's transit switch pair (`rtots-`/`tstor-`).
    Interconnect,
    /// A remote node's transit port and routes (or Layer2 remote gateway port).
    RemoteNode,
    /// The default network's UDN isolation port group and ACLs.
    Isolation,
    /// A reference column to a row another controller owns (rendered without it).
    SharedReference,
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::LocalNode => "local node topology",
            Self::ClusterRouterPort => "cluster router port",
            Self::ManagementPort => "management port",
            Self::Gateway => "gateway",
            Self::Interconnect => "interconnect ports",
            Self::RemoteNode => "remote node ports and routes",
            Self::Isolation => "UDN isolation",
            Self::SharedReference => "shared row reference",
        })
    }
}

/// What a part needed and did not have.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, thiserror::Error)]
pub enum Missing {
    /// `k8s.ovn.org/node-id` is not annotated.
    #[error("no k8s.ovn.org/node-id")]
    NodeId,
    /// `k8s.ovn.org/node-chassis-id` is not annotated.
    #[error("no k8s.ovn.org/node-chassis-id")]
    ChassisId,
    /// `k8s.ovn.org/node-transit-switch-port-ifaddr` is not annotated.
    #[error("no k8s.ovn.org/node-transit-switch-port-ifaddr")]
    TransitIps,
    /// The network has no entry in `k8s.ovn.org/node-subnets`.
    #[error("no k8s.ovn.org/node-subnets entry for network {network}")]
    HostSubnets {
        /// Network name.
        network: String,
    },
    /// The default network's host subnets do not cover the cluster's IP families.
    #[error("host subnets do not match the cluster's IP families (IPv4 {ipv4}, IPv6 {ipv6})")]
    HostSubnetFamilies {
        /// Whether the cluster runs IPv4.
        ipv4: bool,
        /// Whether the cluster runs IPv6.
        ipv6: bool,
    },
    /// `k8s.ovn.org/l3-gateway-config` is not annotated.
    #[error("no k8s.ovn.org/l3-gateway-config")]
    GatewayConfig,
    /// A value of one IP family is needed and none is there (e.g. a gateway IP, a join IP or
    /// a transit IP of the family of a host subnet).
    #[error("no {family} {what}")]
    Family {
        /// The family.
        family: IpFamily,
        /// What value (`gateway IP`, `join subnet IP`, `transit switch IP`, ...).
        what: &'static str,
    },
    /// `k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids` has no entry for the
    /// network.
    #[error(
        "no k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids entry for network {network}"
    )]
    Layer2GatewayTunnelId {
        /// Network name.
        network: String,
    },
    /// The pod's node is not known.
    #[error("node {node} is unknown")]
    UnknownNode {
        /// Node name.
        node: String,
    },
    /// The pod's node switch is not rendered (see the node's problems).
    #[error("node {node} switch is not rendered")]
    NodeSwitch {
        /// Node name.
        node: String,
    },
    /// The pod's attachment has no `tunnel_id` (Layer2 interconnect needs it).
    #[error("no tunnel_id in k8s.ovn.org/pod-networks")]
    PodTunnelId,
    /// An address could not be derived (a subnet too small, a masquerade IP out of range).
    #[error("{reason}")]
    Address {
        /// The derivation's error text.
        reason: String,
    },
    /// A row another controller owns does not exist yet (the default network's COPP, a
    /// load balancer group); the column is left unmanaged until it does.
    #[error("{what} does not exist yet")]
    SharedRow {
        /// The row (`COPP ovnkube-default`, `Load_Balancer_Group <name>`).
        what: String,
    },
}
