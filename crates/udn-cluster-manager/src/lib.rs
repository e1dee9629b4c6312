//! udn cluster-manager.
//!
//! Controllers (each: inputs -> desired -> plan -> apply):
//! - `network`: UDN and CUDN -> NetworkAttachmentDefinitions, finalizers, network IDs,
//!   `NetworkCreated` conditions, deletion while pods still use a network.
//! - `node_subnets`: per Layer3 network, one host subnet per node per family in the
//!   node's `k8s.ovn.org/node-subnets` annotation.
//! - `layer2_ipam`: pod IP/MAC/gateway for Layer2 networks in `k8s.ovn.org/pod-networks`,
//!   persistent IPs through IPAMClaims.

pub mod config;
pub mod context;
pub mod layer2_ipam;
pub mod metrics;
pub mod network;
pub mod node_subnets;
pub mod run;
