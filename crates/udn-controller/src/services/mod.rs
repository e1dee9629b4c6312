//! Services as OVN load balancers (upstream `pkg/ovn/controller/services`), one services
//! controller per network: the default network's and every primary UDN's. Pure: Services and
//! EndpointSlices in, [`LbSpec`]s out; the topology turns them into `Load_Balancer` rows in
//! the network's `clusterLBGroup`.
//!
//! A Service belongs to the network of its namespace: a namespace labelled
//! `k8s.ovn.org/primary-user-defined-network` to its primary UDN (endpoints from the
//! EndpointSlice mirror: `endpointslice.kubernetes.io/managed-by:
//! endpointslice-mirror-controller.k8s.ovn.org`, `k8s.ovn.org/service-name`,
//! `k8s.ovn.org/endpointslice-network: <network>`), any other to the default network
//! (endpoints from Kubernetes' own slices, `kubernetes.io/service-name`). So a network's load
//! balancers hold its own Services only, with its own pods' addresses: a ClusterIP of
//! another network is unknown to its switches and routers.
//!
//! Per Service and protocol: a cluster-wide load balancer
//! (`Service_<ns>/<name>_<PROTO>_cluster`, network-prefixed on a UDN) with the cluster IPs
//! (and the external and ingress IPs unless `externalTrafficPolicy: Local`) in the network's
//! `clusterLBGroup`; per local node, load balancers for NodePorts (the node's addresses),
//! Local traffic policies and host-network endpoints, attached to the node's switch and
//! gateway router directly (upstream's mode without load balancer templates). Endpoints:
//! ready ones, else serving-and-terminating ones (as kube-proxy); session affinity `ClientIP`.

mod config;
mod endpoints;
mod lbs;
mod network;
mod per_node;
mod view;

pub use config::{LbConfig, Vip, service_configs};
pub use lbs::{LbAttach, LbSpec, NetLbContext, network_lbs};
pub use network::{hairpin_snat_ip, lbs_by_network};
pub use per_node::LbNode;
pub use view::{EndpointView, ServicePortView, ServiceView, SliceView, service_view, slice_view};
