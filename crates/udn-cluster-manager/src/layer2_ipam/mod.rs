//! Pod IPAM of the networks the cluster-manager allocates upstream (`clustermanager/pod`):
//! Layer2 networks (IPs when they have subnets, MAC, logical-port tunnel ID) and Localnet
//! networks with subnets (IPs, MAC).
//!
//! - Networks come from NetworkAttachmentDefinitions (`networks`). A pod attaches to its
//!   namespace's primary Layer2 NAD and to the Layer2 / Localnet NADs it requests in
//!   `k8s.v1.cni.cncf.io/networks` (`attachments`). Unscheduled and host-network pods are
//!   skipped.
//! - Each attachment's entry in `k8s.ovn.org/pod-networks` is written in upstream's format
//!   (`annotation`): a primary Layer2 entry routes the service CIDRs and the UDN join subnet
//!   via the network gateway, takes the gateway as default route and, with IPv6, the
//!   link-local gateway of the transit-router port. Annotated IPs are never changed.
//! - Deleting or completing a pod releases its IPs and tunnel IDs, except IPs held by an
//!   IPAMClaim: with `allowPersistentIPs` (and the persistent-IPs feature), an attachment
//!   whose selection element names a claim (`ipam-claim-reference`; for the primary network
//!   in `v1.multus-cni.io/default-network`) gets the claim's `status.ips`, or new IPs that are
//!   then written to the claim (`claims`); they are freed when the claim is deleted.
//! - In the legacy Layer2 topology (the one udn's zones render; decided at start: legacy unless
//!   every node carries `k8s.ovn.org/layer2-topology-version: "2.0"`) every node gets
//!   `k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids`: per primary Layer2 network
//!   one ID from that network's pod tunnel ID pool (owner `<network>_<node>`), released with
//!   the node or the network. With the transit router (every zone says it runs it) nothing is
//!   allocated and pods start at tunnel ID 10. Entries of other networks are removed in both.
//!   With Dynamic UDN, a network whose NADs a UDN/CUDN owns has an entry only on the nodes
//!   that render it (`dynamic_udn::scope`); a node that stops rendering it loses the entry
//!   and the ID goes back to the pool once the annotation without it is written.
//! - At start every pool is restored from the nodes' tunnel IDs, the claims and the pods'
//!   annotations before anything is allocated, so no IP or tunnel ID is handed out twice
//!   across restarts.

pub(crate) mod annotation;
pub(crate) mod attachments;
pub(crate) mod claims;
mod controller;
pub(crate) mod networks;
mod node_reconcile;
pub(crate) mod plan;
mod reconcile;
pub(crate) mod state;

use std::future::Future;

use crate::context::Context;
use crate::dynamic_udn::scope::{ScopeReceiver, every_node};

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "layer2-ipam";
/// Event reason of a pod allocation failure (upstream).
pub const EVENT_REASON: &str = "ErrorAllocatingPod";

/// Why a reconcile (or the controller) failed.
#[derive(Debug, thiserror::Error)]
pub enum Layer2IpamError {
    /// A watch ended before its first complete list (the controller cannot start).
    #[error("watch of {resource} ended before the initial list completed")]
    WatchNotReady {
        /// The watched resource.
        resource: &'static str,
    },
    /// Reading a pod failed.
    #[error("get pod {pod}")]
    Get {
        /// `namespace/name`.
        pod: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Writing the pod annotation failed.
    #[error("patch annotation k8s.ovn.org/pod-networks of pod {pod}")]
    Patch {
        /// `namespace/name`.
        pod: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// The pod kept changing under the write.
    #[error(
        "patch annotation k8s.ovn.org/pod-networks of pod {pod}: conflict after {attempts} attempts"
    )]
    Conflict {
        /// `namespace/name`.
        pod: String,
        /// Attempts made.
        attempts: usize,
    },
    /// The annotation could not be encoded.
    #[error("encode annotation k8s.ovn.org/pod-networks of pod {pod}")]
    Encode {
        /// `namespace/name`.
        pod: String,
        /// The encoder error.
        #[source]
        source: udn_api::annotations::AnnotationError,
    },
    /// Writing an IPAMClaim status failed.
    #[error("update status of IPAMClaim {claim}")]
    Claim {
        /// `namespace/name`.
        claim: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// The claim vanished between the decision and the write.
    #[error("IPAMClaim {claim} is gone")]
    ClaimGone {
        /// `namespace/name`.
        claim: String,
    },
    /// Writing the node's gateway router tunnel IDs failed.
    #[error(
        "patch annotation k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids of node {node}"
    )]
    PatchNode {
        /// Node name.
        node: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// The node's tunnel IDs annotation could not be encoded.
    #[error(
        "encode annotation k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids of node {node}"
    )]
    EncodeNode {
        /// Node name.
        node: String,
        /// The encoder error.
        #[source]
        source: udn_api::annotations::AnnotationError,
    },
}

impl Layer2IpamError {
    /// A fixed word per variant, for the error metric.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::WatchNotReady { .. } => "watch",
            Self::Get { .. } => "get",
            Self::Patch { .. } | Self::PatchNode { .. } => "patch",
            Self::Conflict { .. } => "conflict",
            Self::Encode { .. } | Self::EncodeNode { .. } => "encode",
            Self::Claim { .. } | Self::ClaimGone { .. } => "claim",
        }
    }

    /// Whether retrying can help.
    pub fn is_retryable(&self) -> bool {
        !matches!(
            self,
            Self::Encode { .. } | Self::EncodeNode { .. } | Self::WatchNotReady { .. }
        )
    }
}

/// Runs the Layer2 pod IPAM controller until `shutdown` completes, every node carrying every
/// network (as with Dynamic UDN off). Pools are restored from the existing claims and pod
/// annotations before the first reconcile.
pub async fn run(
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Layer2IpamError> {
    controller::run(ctx, every_node(), shutdown).await
}

/// [`run`], with the gated networks' gateway router tunnel IDs on the nodes Dynamic UDN's
/// `scope` names.
pub(crate) async fn run_in_scope(
    ctx: Context,
    scope: ScopeReceiver,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Layer2IpamError> {
    controller::run(ctx, scope, shutdown).await
}
