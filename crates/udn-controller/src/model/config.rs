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
}
