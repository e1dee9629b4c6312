//! Node IDs and transit switch port addresses (upstream
//! `clustermanager/node_allocation_controller.go`), for every node, with or without network
//! segmentation.
//!
//! - Every node gets `k8s.ovn.org/node-id` (2, 3, … out of `0..=5000`, round-robin) and
//!   `k8s.ovn.org/node-transit-switch-port-ifaddr` (transit subnet base + node ID per
//!   cluster IP family), written together in one strategic-merge patch of the node (see
//!   `node_patch` for why not its `status` subresource), which also deletes the obsolete
//!   `k8s.ovn.org/node-gateway-router-lrp-ifaddrs`.
//! - At start the allocator is restored from the nodes' annotations before any node is
//!   planned: annotated IDs are kept, a duplicate gets a new ID (upstream `syncNodeIDs`).
//! - Deleting a node releases its ID; a released ID goes out again only after the range
//!   wraps (or after a restart), never while its node exists.
//! - Node events that leave the two annotations as planned (our own echo, status updates)
//!   cost one comparison and no reconcile; any other value is rewritten.

mod controller;
pub(crate) mod state;

use std::future::Future;

use crate::context::Context;

pub use state::NodeAllocationPlanError;

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "node-allocation";

/// Why a node reconcile (or the controller) failed.
#[derive(Debug, thiserror::Error)]
pub enum NodeAllocationError {
    /// The node watch ended before its first complete list (the controller cannot start).
    #[error("watch of nodes ended before the initial list completed")]
    WatchNotReady,
    /// No ID or transit address for the node.
    #[error("allocate node ID and transit switch port address")]
    Plan(#[from] NodeAllocationPlanError),
    /// Writing the annotations failed.
    #[error(
        "patch annotations k8s.ovn.org/node-id, node-transit-switch-port-ifaddr of node {node}"
    )]
    Patch {
        /// Node name.
        node: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
}

impl NodeAllocationError {
    /// A fixed word per variant, for the error metric.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::WatchNotReady => "watch",
            Self::Plan(NodeAllocationPlanError::Exhausted { .. }) => "exhausted",
            Self::Plan(NodeAllocationPlanError::TransitAddress { .. }) => "transit-address",
            Self::Patch { .. } => "patch",
        }
    }
}

/// Runs the node allocation controller until `shutdown` completes. The allocator is restored
/// from the existing node annotations before the first reconcile.
pub async fn run(
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), NodeAllocationError> {
    controller::run(ctx, shutdown).await
}
