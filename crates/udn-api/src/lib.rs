//! The udn API: everything the components agree on, as plain types.
//!
//! - [`crd`]: `UserDefinedNetwork` and `ClusterUserDefinedNetwork` (`k8s.ovn.org/v1`) with
//!   the upstream schema and CEL validation rules.
//! - [`nad`]: the `NetworkAttachmentDefinition` (`k8s.cni.cncf.io/v1`) type.
//! - [`ipamclaim`]: the persistent-IPs `IPAMClaim` (`k8s.cni.cncf.io/v1alpha1`) type.
//! - [`netconf`]: the OVN-Kubernetes CNI network configuration carried in a NAD.
//! - [`render`]: the pure UDN/CUDN -> NAD render, byte for byte as upstream.
//! - [`annotations`]: parse/format of the annotations udn reads and writes.
//! - [`names`]: annotation keys, labels, finalizers and network naming.
//! - [`selector`]: label selector matching.
//!
//! This crate does no I/O and depends on kube's derive/core side only.

pub mod annotations;
pub mod cluster;
#[cfg(feature = "cli")]
pub mod cluster_args;
pub mod crd;
pub mod dynamic_udn;
#[cfg(feature = "cli")]
pub mod dynamic_udn_args;
pub mod go_text;
pub mod ipamclaim;
pub mod nad;
pub mod names;
pub mod netconf;
pub mod render;
pub mod selector;
