//! The zone's configuration: which zone this controller programs and what the cluster looks
//! like.

use udn_api::cluster::ClusterConfig;

/// What one controller instance programs, and the cluster it is part of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneConfig {
    /// The zone's name (upstream runs one zone per node, named after the node).
    pub zone: String,
    /// The cluster: default-network subnets, service CIDRs, join/masquerade/transit subnets,
    /// MTU, gateway mode, features.
    pub cluster: ClusterConfig,
    /// `--enable-multi-network`: secondary networks from NADs.
    pub multi_network: bool,
    /// `--enable-multi-network` and `--enable-network-segmentation` together: primary UDNs
    /// and the default network's UDN isolation.
    pub segmentation: bool,
    /// Dynamic UDN: a UDN network is rendered only on nodes cluster-manager gave its
    /// per-node state (a Layer3 host subnet, a Layer2 gateway router tunnel ID), i.e. nodes
    /// where its pods run (and for the grace period after).
    pub dynamic_udn: bool,
    /// What the zone renders less than upstream where a network does not need it.
    pub lean: Lean,
}

/// The savings at equal features, each switched by one flag (`docs/topology-costs.md` has
/// what each costs in a real zone): on, the zone renders less than upstream where a network
/// does not need it; off, upstream's exact rows. Names of what remains stay upstream's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lean {
    /// `--lean-transit-on-demand`: a Layer3 network (or the default network) has its
    /// transit switch, and the local `rtots-`/`tstor-` pair, only while a remote node has it
    /// (Dynamic UDN: has its pods); upstream renders them always.
    pub transit_on_demand: bool,
    /// `--lean-skip-multicast`: multicast is off, so no `mcast_*` keys on transit (and
    /// Layer2) switches, no `mcast_flood` on `rtots-` ports, no `clusterRtrPortGroup`.
    pub skip_multicast: bool,
    /// `--lean-skip-node-allow-acl`: no allow-from-node ACL on a UDN's node switch. It
    /// exists to exempt the node from NetworkPolicy default-deny, and udn renders no
    /// NetworkPolicy ACLs; alone, it only makes the switch stateful (conntrack on all traffic).
    pub skip_node_allow_acl: bool,
}

impl Lean {
    /// Every saving on (the default).
    pub const ALL: Self = Self {
        transit_on_demand: true,
        skip_multicast: true,
        skip_node_allow_acl: true,
    };

    /// Every saving off: upstream's exact rows.
    pub const UPSTREAM: Self = Self {
        transit_on_demand: false,
        skip_multicast: false,
        skip_node_allow_acl: false,
    };
}

impl Default for Lean {
    fn default() -> Self {
        Self::ALL
    }
}
