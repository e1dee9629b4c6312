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
//! Today: ClusterIP VIPs (every `clusterIPs` entry, each port, TCP/UDP/SCTP: one load
//! balancer per protocol, `Service_<ns>/<name>_<PROTO>_cluster`, network-prefixed on a UDN),
//! ready endpoints (else serving-and-terminating ones, as kube-proxy), session affinity
//! `ClientIP` (`affinity_timeout`). NodePorts, external and load balancer ingress IPs and the
//! Local traffic policies are not rendered yet.

mod lbs;
mod network;
mod view;

pub use lbs::{LbSpec, network_lbs};
pub use network::{hairpin_snat_ip, lbs_by_network};
pub use view::{EndpointView, ServicePortView, ServiceView, SliceView, service_view, slice_view};
