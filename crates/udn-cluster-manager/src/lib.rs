//! udn cluster-manager.
//!
//! Controllers (each: inputs -> desired -> plan -> apply):
//! - `network`: UDN and CUDN -> NetworkAttachmentDefinitions, finalizers, network IDs,
//!   `NetworkCreated` conditions, deletion while pods still use a network.
//! - `node_allocation`: every node's ID and transit switch port addresses
//!   (`k8s.ovn.org/node-id`, `k8s.ovn.org/node-transit-switch-port-ifaddr`).
//! - `node_subnets`: for the default network and every Layer3 network, one host subnet per
//!   node per family in the node's `k8s.ovn.org/node-subnets` annotation.
//! - `layer2_ipam`: pod IP/MAC/gateway for Layer2 networks in `k8s.ovn.org/pod-networks`,
//!   persistent IPs through IPAMClaims, and (legacy Layer2 topology) the nodes' gateway router
//!   tunnel IDs from the same per-network tunnel ID pools.
//! - `endpointslice_mirror`: in namespaces with a primary UDN, a mirror of every default
//!   EndpointSlice with the pods' UDN addresses (and the KubeVirt live-migration exception).
//! - `nad_recovery`: NetworkAttachmentDefinitions deleted while pods still name them are
//!   created again (the k8s-net-attach-def-controller's recovery).
//! - `secondary_services`: EndpointSlices with the pods' IPs on a secondary network for
//!   Services that opt in with `isim.dev/network` or `k8s.v1.cni.cncf.io/networks`.

pub mod config;
pub mod context;
pub(crate) mod dynamic_udn;
pub mod endpointslice_mirror;
mod events;
pub mod layer2_ipam;
pub mod metrics;
pub mod nad_recovery;
pub mod network;
pub mod node_allocation;
mod node_patch;
pub mod node_subnets;
mod owner_condition;
pub mod run;
pub mod secondary_services;
