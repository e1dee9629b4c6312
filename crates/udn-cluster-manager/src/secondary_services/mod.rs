//! Services on secondary networks: EndpointSlices with the pods' IPs on a
//! NetworkAttachmentDefinition, for Services that opt in with one of the two annotations of
//! the reference controllers (seeds `002` and `003`):
//!
//! - `isim.dev/network: <nad>` (ihcsim's nad-service-controller) on a headless
//!   (`clusterIP: None`), selector-less Service: the pods of the Service's namespace attached
//!   to the NAD (`<service namespace>/<nad>`, or `ns/name` as given), filtered by the
//!   Service's `app.kubernetes.io/name` label (else its `app` label) matching the pod's label
//!   of the same key, or every attached pod when the Service has neither label.
//! - `k8s.v1.cni.cncf.io/networks: <selection>` (the k8s-net-attach-def-controller's) on a
//!   Service with a selector: exactly one network in any syntax udn parses (a bare name
//!   means the Service's namespace; `name@if` pins the interface); the pods the selector
//!   matches in the Service's namespace only.
//!
//! A pod's IPs on the network come from its Multus `k8s.v1.cni.cncf.io/network-status`
//! (else the legacy `k8s.v1.cni.cncf.io/networks-status`): the first entry named `ns/name`
//! (or the bare `name`, as Multus wrote before 2020, for a pod in the NAD's namespace).
//! Every opted-in Service gets one EndpointSlice per IP family and resolved port set that
//! has endpoints (at most [`MAX_ENDPOINTS_PER_SLICE`] each), labelled
//! `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:` [`MANAGED_BY`]
//! (Kubernetes' EndpointSlice controller leaves slices of another manager alone) and owned
//! by the Service. Endpoint conditions follow Kubernetes' rules (not ihcsim's swapped ones).
//!
//! What the user must set for a selector Service: the KEP-4770 label
//! [`LABEL_ENDPOINT_CONTROLLER_NAME`]`: `[`MANAGED_BY`], so that Kubernetes' own controllers
//! do not also write primary-network slices for it. The controller never edits the Service;
//! without the label it still writes its slices and says so in a Warning Event.
//!
//! The shape is opt-in -> desired -> plan -> apply: [`opt_in`] reads the Service,
//! [`attachment`] a pod's network-status, [`desired`] builds the endpoints, [`plan`] turns
//! them and the existing slices into creates, updates and deletes (all pure), [`apply`]
//! makes the API calls and [`controller`] runs the watches and the work queue. The user's
//! documentation is `docs/services.md`.

mod apply;
mod attachment;
mod controller;
mod desired;
#[cfg(test)]
mod fixtures;
mod opt_in;
mod plan;
#[cfg(test)]
mod plan_proptest;

use std::future::Future;

use crate::context::Context;
// The slice labels `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`.
use crate::endpointslice_mirror::{LABEL_MANAGED_BY, LABEL_SERVICE_NAME};

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "secondary-services";
/// The value of `endpointslice.kubernetes.io/managed-by` on our slices, and the value a
/// selector Service's [`LABEL_ENDPOINT_CONTROLLER_NAME`] should have.
pub const MANAGED_BY: &str = "secondary-network-endpointslice-controller.k8s.ovn.org";
/// ihcsim's opt-in annotation on a headless, selector-less Service: the NAD's name.
pub const ANNOTATION_ISIM_NETWORK: &str = "isim.dev/network";
/// The network-status key older Multus wrote (same content as
/// [`udn_api::names::ANNOTATION_NETWORK_STATUS`]).
pub const ANNOTATION_NETWORKS_STATUS_LEGACY: &str = "k8s.v1.cni.cncf.io/networks-status";
/// The label Kubernetes sets on the slices of a Service without a cluster IP.
pub const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";
/// KEP-4770: a Service with this label is left to the controller it names by Kubernetes'
/// Endpoints, EndpointSlice and mirroring controllers.
pub const LABEL_ENDPOINT_CONTROLLER_NAME: &str = "service.kubernetes.io/endpoint-controller-name";
/// Kubernetes' default `--max-endpoints-per-slice`.
pub const MAX_ENDPOINTS_PER_SLICE: usize = 100;

/// Runs the controller until `stop` resolves. Nothing stops it earlier: API errors are
/// logged and retried with backoff, and the watches retry.
pub async fn run(ctx: Context, stop: impl Future<Output = ()> + Send + Clone + 'static) {
    controller::run(ctx, stop).await;
}

/// `error` and its sources, joined by `: ` (for Event texts; reporters print chains, an
/// Event note cannot).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
