//! Dynamic UDN (upstream OKEP-5552, `--enable-dynamic-udn-allocation`): which nodes render
//! which UDN/CUDN network. [`activity`] finds the active nodes from pods and NADs,
//! [`rendering`] adds the grace period, [`controller`] watches the cluster, publishes the
//! rendered nodes to the allocating controllers and reports them (`NodesSelected`,
//! `udn_nodes_rendered`).

pub(crate) mod activity;
pub(crate) mod controller;
pub(crate) mod rendering;
pub(crate) mod status;

#[allow(unused_imports)]
pub(crate) use controller::NodeScope;
pub(crate) use controller::{run, scope_channel};
