//! The network manager (upstream `networkmanager`'s NAD controller, zone side): which
//! networks exist, from NetworkAttachmentDefinitions. A NAD of type `ovn-k8s-cni-overlay`
//! defines (part of) a network named by its NetConf `name`; NADs with the same name form one
//! network and must agree on its configuration; the default network always exists. Pure.

mod identity;
mod nad;
mod set;

pub use identity::NetworkIdentity;
pub use nad::{NadError, NadNetwork, parse_nad};
pub use set::{NadProblem, NetworkSet, network_set};
