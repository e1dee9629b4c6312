//! The EndpointSlice mirror controller (upstream
//! `clustermanager/endpointslicemirror`): in a namespace whose primary network is a
//! user-defined network, every EndpointSlice of Kubernetes' EndpointSlice controller gets a
//! mirror with the pods' IPs on that network (from `k8s.ovn.org/pod-networks`), which the
//! network's services controller reads instead of the default slice.
//!
//! Mirrors carry the seed guide's labels and annotations (see the constants), the source's
//! owner references (so they go with the Service), address type and ports. Host-network pods
//! keep their default-network IPs. At start every default slice and every mirror is synced:
//! stale mirrors are deleted, missing ones created.
//!
//! One addition to upstream, the KubeVirt live-migration exception ([`migration`]): during a
//! non-failed live migration the VM's endpoints stay `ready`, `serving` and not
//! `terminating`; otherwise conditions are copied unchanged.

mod controller;
mod migration;
mod plan;
#[cfg(test)]
mod plan_proptest;
mod primary;

use std::future::Future;

use crate::context::Context;

/// `endpointslice.kubernetes.io/managed-by` of mirrors.
pub const MIRROR_CONTROLLER: &str = "endpointslice-mirror-controller.k8s.ovn.org";
/// `endpointslice.kubernetes.io/managed-by` of the slices mirrored.
pub const DEFAULT_CONTROLLER: &str = "endpointslice-controller.k8s.io";
/// The managed-by label.
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// Kubernetes' service-name label (on default slices).
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// Label: the Service of a mirror (a different key from Kubernetes', so Kubernetes' own
/// consumers do not take mirrors for the Service's slices).
pub const LABEL_UDN_SERVICE_NAME: &str = "k8s.ovn.org/service-name";
/// Label: the last mirrored `resourceVersion` of the default slice.
pub const LABEL_SOURCE_VERSION: &str = "k8s.ovn.org/source-endpointslice-version";
/// Annotation: the name of the default slice mirrored (names may exceed a label's 63
/// characters).
pub const ANNOTATION_SOURCE: &str = "k8s.ovn.org/source-endpointslice";
/// Annotation: the network the mirror's addresses belong to.
pub const ANNOTATION_NETWORK: &str = "k8s.ovn.org/endpointslice-network";

/// The controller's name in logs and metrics.
const CONTROLLER: &str = "endpointslice-mirror";

/// Why one slice could not be mirrored (it is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// The namespace is labelled for a primary UDN that has no NAD yet.
    #[error(
        "namespace {namespace} requires a primary user-defined network but has no primary NetworkAttachmentDefinition"
    )]
    NoPrimaryNad {
        /// The namespace.
        namespace: String,
    },
    /// A pod the default slice names is not in the cache (yet).
    #[error("EndpointSlice {namespace}/{slice}: pod {pod} not found")]
    PodMissing {
        /// Namespace.
        namespace: String,
        /// The default slice.
        slice: String,
        /// The pod.
        pod: String,
    },
    /// A pod has no address of the slice's family on the network (yet).
    #[error(
        "EndpointSlice {namespace}/{slice}: pod {pod} has no {family} address for network {network}"
    )]
    NoAddress {
        /// Namespace.
        namespace: String,
        /// The default slice.
        slice: String,
        /// The pod.
        pod: String,
        /// `IPv4` or `IPv6`.
        family: String,
        /// The NAD key.
        network: String,
    },
    /// A pod's `k8s.ovn.org/pod-networks` does not parse.
    #[error("pod {namespace}/{pod}: {source}")]
    Annotation {
        /// Namespace.
        namespace: String,
        /// The pod.
        pod: String,
        /// The parse error.
        #[source]
        source: Box<udn_api::annotations::AnnotationError>,
    },
    /// Two or more mirrors of one slice existed; they were deleted and one is made again.
    #[error("EndpointSlice {namespace}/{slice} had {count} mirrors; deleted them")]
    Duplicates {
        /// Namespace.
        namespace: String,
        /// The default slice.
        slice: String,
        /// How many.
        count: usize,
    },
    /// An API call failed.
    #[error("EndpointSlice {namespace}/{name}: {action}")]
    Api {
        /// Namespace.
        namespace: String,
        /// The slice acted on (a mirror's generateName on create).
        name: String,
        /// create, update or delete.
        action: &'static str,
        /// The error.
        #[source]
        source: Box<kube::Error>,
    },
}

impl MirrorError {
    /// A bounded label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NoPrimaryNad { .. } => "no-primary-nad",
            Self::PodMissing { .. } => "pod-missing",
            Self::NoAddress { .. } => "no-address",
            Self::Annotation { .. } => "annotation",
            Self::Duplicates { .. } => "duplicates",
            Self::Api { .. } => "api",
        }
    }
}

/// Runs the mirror controller until `stop` resolves.
pub async fn run(ctx: Context, stop: impl Future<Output = ()> + Send + 'static) {
    controller::run(ctx, stop).await;
}
