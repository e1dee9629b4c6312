//! udn's node agent (upstream: the node half of ovnkube-node): what a node needs before and
//! while pods run there. OVS's own database ([`ovs`]), links, addresses, routes and rules
//! ([`netlink`]), nftables ([`nft`]) and the host isolation of primary-UDN pods
//! ([`isolation`]); the CNI server that wires pods.
//!
//! The shape is the one of every udn controller (see `docs/node.md`): inputs (a plain
//! snapshot) -> desired (plain data) -> plan (the diff against what this agent owns) ->
//! apply (one OVSDB transaction, one `nft -f` transaction, one netlink batch).

pub mod agent;
pub mod annotations;
pub mod cni;
pub mod cni_config;
pub mod command;
pub mod config;
pub mod gateway;
pub mod isolation;
pub mod metrics;
pub mod netlink;
pub mod nft;
pub mod ovs;
pub mod services;
pub mod watch;
