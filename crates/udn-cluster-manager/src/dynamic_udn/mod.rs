//! Dynamic UDN (upstream OKEP-5552, `--enable-dynamic-udn-allocation`): which nodes render
//! which UDN/CUDN network. [`activity`] finds the active nodes from pods and NADs,
//! [`rendering`] adds the grace period, [`controller`] watches the cluster, publishes the
//! rendered nodes to the allocating controllers ([`scope`]: which node carries which gated
//! network) and reports them (`NodesSelected`, `udn_nodes_rendered`).

pub(crate) mod activity;
pub(crate) mod controller;
pub(crate) mod rendering;
pub(crate) mod scope;
pub(crate) mod status;

pub(crate) use controller::run;
pub(crate) use scope::scope_channel;
