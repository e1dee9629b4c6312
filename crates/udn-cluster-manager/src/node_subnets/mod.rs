//! Node host subnets of the default network and of Layer3 networks (upstream
//! `clustermanager/node` allocator run by each network cluster controller), batched per node.
//!
//! - The default network's ranges are `--cluster-subnets` (its `k8s.ovn.org/node-subnets`
//!   key is `default`); it is allocated with or without network segmentation, as upstream.
//! - With segmentation, the other networks come from NetworkAttachmentDefinitions
//!   (`networks`): a Layer3 network exists while at least one NAD defines it; its cluster
//!   ranges are the union of its NADs' ranges in order, so appending a range (primary Layer3
//!   expansion) appends an allocator range and never moves an existing node subnet.
//! - One reconcile per node computes the node's whole `k8s.ovn.org/node-subnets` annotation
//!   for every network at once (`state`, `plan`) and writes it with one patch that only
//!   touches this annotation (guarded by the node's resourceVersion; see `node_patch`).
//!   Network changes queue every node in batches on a doubling schedule (`batch`), so a burst
//!   of new networks costs each node a few patches (logarithmic in the burst's length), not
//!   one per network or per fixed interval.
//! - Dynamic UDN (`--enable-dynamic-udn-allocation`): a network whose NADs a UDN/CUDN owns
//!   gets a subnet only on the nodes that render it (`dynamic_udn::scope`); a node that stops
//!   rendering it loses the entry, and the subnet goes back to the allocator once the
//!   annotation without it is written. Until Dynamic UDN has read the cluster, such entries
//!   are left as they are. Scope changes queue only the nodes they moved, in the batches.
//! - Entries of networks without NADs are removed (upstream `CleanupStaleNetworks`).
//!   Deleting a node releases its subnets.
//! - Failures (a full network) are reported as `NetworkAllocationFailed` Warning events and the
//!   `NetworkAllocationSucceeded` condition on the UDN/CUDN owning the NAD (`status`), then
//!   retried with backoff and whenever the network's ranges change. A full default network is
//!   logged and retried.
//! - At start, every allocator is restored from the existing annotations before anything is
//!   allocated, so no subnet is handed out twice across restarts.

mod batch;
mod controller;
pub(crate) mod networks;
pub(crate) mod plan;
pub(crate) mod queue;
mod reconcile;
pub(crate) mod state;
pub mod status;
pub(crate) mod watch;

use std::future::Future;

use crate::context::Context;
use crate::dynamic_udn::scope::{ScopeReceiver, every_node};

pub use plan::NodeNetworkError;

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "node-subnets";

/// Why a node reconcile (or the controller) failed.
#[derive(Debug, thiserror::Error)]
pub enum NodeSubnetsError {
    /// A watch ended before its first complete list (the controller cannot start).
    #[error("watch of {resource} ended before the initial list completed")]
    WatchNotReady {
        /// The watched resource.
        resource: &'static str,
    },
    /// Reading a node from the API failed.
    #[error("get node {node}")]
    Get {
        /// Node name.
        node: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Writing the annotation failed.
    #[error("patch annotation k8s.ovn.org/node-subnets of node {node}")]
    Patch {
        /// Node name.
        node: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// The node kept changing under the write.
    #[error(
        "patch annotation k8s.ovn.org/node-subnets of node {node}: conflict after {attempts} attempts"
    )]
    Conflict {
        /// Node name.
        node: String,
        /// Attempts made.
        attempts: usize,
    },
    /// The desired annotation could not be encoded.
    #[error("encode annotation k8s.ovn.org/node-subnets of node {node}")]
    Encode {
        /// Node name.
        node: String,
        /// The encoder error.
        #[source]
        source: udn_api::annotations::AnnotationError,
    },
    /// Applying the `NetworkAllocationSucceeded` condition failed.
    #[error("apply condition NetworkAllocationSucceeded to {owner}")]
    Status {
        /// `Kind namespace/name` of the owner.
        owner: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
}

impl NodeSubnetsError {
    /// A fixed word per variant, for the error metric.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::WatchNotReady { .. } => "watch",
            Self::Get { .. } => "get",
            Self::Patch { .. } => "patch",
            Self::Conflict { .. } => "conflict",
            Self::Encode { .. } => "encode",
            Self::Status { .. } => "status",
        }
    }

    /// Whether retrying can help.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, Self::Encode { .. } | Self::WatchNotReady { .. })
    }
}

/// Runs the node-subnets controller until `shutdown` completes, every node carrying every
/// network (as with Dynamic UDN off). Allocators are restored from the existing node
/// annotations before the first reconcile.
pub async fn run(
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), NodeSubnetsError> {
    controller::run(ctx, every_node(), shutdown).await
}

/// [`run`], with the gated networks on the nodes Dynamic UDN's `scope` names.
pub(crate) async fn run_in_scope(
    ctx: Context,
    scope: ScopeReceiver,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), NodeSubnetsError> {
    controller::run(ctx, scope, shutdown).await
}
