//! kube-controller-manager's EndpointSlice controller, as the sandbox plays it
//! (`udnctl sandbox endpoints`, started once by `up`).
//!
//! For every Service with a selector (and not of type `ExternalName`) it keeps the
//! EndpointSlices that kube-controller-manager would write: one set per address type of the
//! Service's `ipFamilies`, endpoints from the selected pods' `status.podIPs`, at most
//! [`MAX_ENDPOINTS_PER_SLICE`] per slice, a placeholder slice when there is none, owned by
//! the Service (so the garbage collector removes them with it) and labelled
//! `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`.
//!
//! The shape is inputs -> desired -> plan -> apply:
//! - [`inputs`]: one Service with the pods it selects and the zones of their nodes;
//! - [`desired`]: the endpoints per (address type, ports) group, computed as upstream's
//!   `podToEndpoint` / `getEndpointPorts` do;
//! - [`plan`]: the creates, updates and deletes that turn the existing slices into the
//!   desired ones, with upstream's reconciler's placement rules (keep endpoints where they
//!   are, fill the fullest slices first, reuse a slice that would be deleted instead of
//!   creating one);
//! - [`trigger`]: the `endpoints.kubernetes.io/last-change-trigger-time` each sync stamps;
//! - [`apply`]: the API calls; [`controller`]: the watches and the work loop.
//!
//! Like kube-controller-manager (whose Services informer is unfiltered), it does not look at
//! the `service.kubernetes.io/endpoint-controller-name` label proposed by KEP-4770: that KEP
//! is provisional and was never implemented upstream, so a Service carrying the label gets
//! slices like any other.

pub mod apply;
pub mod controller;
pub mod desired;
pub mod inputs;
pub mod plan;
pub mod trigger;

#[cfg(test)]
mod fixtures;

pub use controller::run;

/// The label naming a slice's Service.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// The label naming a slice's manager.
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// kube-controller-manager's value of [`LABEL_MANAGED_BY`].
pub const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
/// The label set on the slices of a Service without a cluster IP.
pub const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";
/// The annotation with the time of the change that led to the slice's content.
pub const ANNOTATION_TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// The Node label whose value becomes an endpoint's `zone`.
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
/// kube-controller-manager's default `--max-endpoints-per-slice`.
pub const MAX_ENDPOINTS_PER_SLICE: usize = 100;

/// Why a sync of one Service failed.
#[derive(Debug, thiserror::Error)]
pub enum EndpointSliceError {
    /// The API server refused or failed a request.
    #[error("{what}")]
    Api {
        /// The request.
        what: String,
        /// The answer.
        #[source]
        source: kube::Error,
    },
    /// Some selected pods name a Node that does not exist (they were left out; retried).
    #[error("skipping pods of Service {service}: their Nodes do not exist: {pods:?}")]
    MissingNodes {
        /// `namespace/name` of the Service.
        service: String,
        /// The pods left out.
        pods: Vec<String>,
    },
    /// A watch ended before its first list.
    #[error("the watch of {resource} ended before its first list")]
    WatchNotReady {
        /// The resource.
        resource: &'static str,
    },
}
