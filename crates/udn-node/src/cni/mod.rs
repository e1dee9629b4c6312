//! The CNI server (upstream `pkg/cni/cniserver.go`): `ovn-k8s-cni-overlay` forwards each
//! request here; ADD waits for the pod's annotation and wires the pod, DEL unwires it.

pub mod network;
pub mod server;
