//! The inputs of one reconcile, as plain data: the zone's configuration, the networks (from
//! NetworkAttachmentDefinitions), the nodes (from their annotations) and the pods' attachments
//! (from their `k8s.ovn.org/pod-networks` annotation). The watch layer builds these from
//! Kubernetes objects; everything downstream is a pure function of them.

mod config;
mod network;
mod node;
mod pod;

pub use config::{Lean, ZoneConfig};
pub use network::{DEFAULT_NETWORK, Network, Topology};
pub use node::{GatewayConfig, GatewayConfigMode, Node};
pub use pod::PodAttachment;
