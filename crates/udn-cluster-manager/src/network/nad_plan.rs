//! The NAD of one UDN/CUDN in one namespace: what to write to make it as desired
//! (upstream `updateNAD`) and what to do to remove it (upstream `deleteNAD`). Pure.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use udn_api::cluster::ClusterConfig;
use udn_api::crd::NetworkTopology;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::{
    CNI_TYPE, FINALIZER_UDN_PROTECTION, LABEL_PRIMARY_UDN_NAMESPACE, OVN_ANNOTATION_PREFIX,
};
use udn_api::netconf::ROLE_PRIMARY;
use udn_api::render::{NetworkSource, is_primary, network_name, render_nad};
use udn_ipam::required_tunnel_keys;

use super::pod_use::PodUse;
use super::sync_error::SyncError;

/// One API write on a NAD.
#[derive(Clone, Debug)]
pub(crate) enum NadOp {
    /// Create the NAD, after stamping the network's identity annotations on it.
    Create {
        /// The rendered NAD.
        nad: Box<NetworkAttachmentDefinition>,
        /// The network name (for the ID allocation).
        network: String,
        /// Tunnel keys the network needs.
        tunnel_keys: usize,
    },
    /// Replace the NAD (same resourceVersion) with new config, labels and annotations.
    Update {
        /// The NAD to write.
        nad: Box<NetworkAttachmentDefinition>,
    },
    /// Remove our finalizer from the NAD, then delete it.
    Delete {
        /// The NAD as cached.
        nad: Box<NetworkAttachmentDefinition>,
    },
    /// The cache has no NAD: confirm with the API server that none exists.
    ConfirmAbsent {
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// UID of the owner whose NAD it would be.
        owner_uid: String,
    },
}

impl PartialEq for NadOp {
    fn eq(&self, other: &Self) -> bool {
        let same_nad = |a: &NetworkAttachmentDefinition, b: &NetworkAttachmentDefinition| {
            a.metadata == b.metadata && a.spec == b.spec
        };
        match (self, other) {
            (
                Self::Create {
                    nad: a,
                    network: na,
                    tunnel_keys: ka,
                },
                Self::Create {
                    nad: b,
                    network: nb,
                    tunnel_keys: kb,
                },
            ) => na == nb && ka == kb && same_nad(a, b),
            (Self::Update { nad: a }, Self::Update { nad: b })
            | (Self::Delete { nad: a }, Self::Delete { nad: b }) => same_nad(a, b),
            (
                Self::ConfirmAbsent {
                    namespace: na,
                    name: a,
                    owner_uid: ua,
                },
                Self::ConfirmAbsent {
                    namespace: nb,
                    name: b,
                    owner_uid: ub,
                },
            ) => na == nb && a == b && ua == ub,
            _ => false,
        }
    }
}

impl NadOp {
    /// `namespace/name` of the NAD written.
    pub(crate) fn nad_key(&self) -> String {
        match self {
            Self::Create { nad, .. } | Self::Update { nad } | Self::Delete { nad } => {
                udn_api::names::nad_key(
                    nad.metadata.namespace.as_deref().unwrap_or_default(),
                    nad.metadata.name.as_deref().unwrap_or_default(),
                )
            }
            Self::ConfirmAbsent {
                namespace, name, ..
            } => udn_api::names::nad_key(namespace, name),
        }
    }
}

/// A NAD as it is once the plan is applied: what the condition reports.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct NadState {
    /// The namespace.
    pub(crate) namespace: String,
    /// The name.
    pub(crate) name: String,
    /// It has a deletionTimestamp.
    pub(crate) deleting: bool,
}

/// What is known about one target namespace.
#[derive(Clone, Debug, Default)]
pub(crate) struct NadTarget {
    /// The namespace labels; `None` when the namespace is not in the cache.
    pub(crate) namespace_labels: Option<BTreeMap<String, String>>,
    /// The NAD with the owner's name in the namespace.
    pub(crate) existing: Option<Arc<NetworkAttachmentDefinition>>,
    /// Every NAD of the namespace (only needed for a primary network without a NAD yet).
    pub(crate) namespace_nads: Vec<Arc<NetworkAttachmentDefinition>>,
}

/// Whether `meta`'s controller owner reference points at `uid` (`metav1.IsControlledBy`).
pub(crate) fn controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .is_some_and(|r| r.uid == uid)
}

/// Whether `meta` carries our finalizer.
pub(crate) fn has_finalizer(meta: &ObjectMeta) -> bool {
    meta.finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER_UDN_PROTECTION)
}

/// Tunnel keys the network of `source` needs (2 for a primary Layer2, 0 otherwise).
pub(crate) fn tunnel_keys_of(source: &NetworkSource<'_>) -> usize {
    let spec = source.spec();
    required_tunnel_keys(
        false,
        spec.topology() == NetworkTopology::Layer2,
        is_primary(spec),
    )
}

/// Make the NAD of `source` in its target namespace as desired (upstream `updateNAD`):
/// the write to do (`None` when it already is) and the NAD state afterwards.
pub(crate) fn ensure_nad(
    source: &NetworkSource<'_>,
    target: &NadTarget,
    cluster: &ClusterConfig,
) -> Result<(Option<NadOp>, NadState), SyncError> {
    let namespace = source.namespace().to_owned();
    let name = source.name().to_owned();
    let primary = is_primary(source.spec());
    if primary {
        match &target.namespace_labels {
            None => return Err(SyncError::NamespaceNotFound { namespace }),
            Some(labels) if !labels.contains_key(LABEL_PRIMARY_UDN_NAMESPACE) => {
                return Err(SyncError::InvalidPrimaryNetwork { namespace });
            }
            Some(_) => {}
        }
    }
    let desired = render_nad(source, cluster).map_err(|reason| SyncError::Render { reason })?;
    let Some(existing) = &target.existing else {
        if primary {
            no_primary_nad(&target.namespace_nads)?;
        }
        let op = NadOp::Create {
            nad: Box::new(desired),
            network: network_name(source),
            tunnel_keys: tunnel_keys_of(source),
        };
        let state = NadState {
            namespace,
            name,
            deleting: false,
        };
        return Ok((Some(op), state));
    };
    let uid = source.meta().uid.as_deref().unwrap_or_default();
    if !controlled_by(&existing.metadata, uid) {
        return Err(SyncError::Foreign { namespace, name });
    }
    let state = NadState {
        namespace,
        name,
        deleting: existing.metadata.deletion_timestamp.is_some(),
    };
    let mut annotations = desired.metadata.annotations.clone().unwrap_or_default();
    for (key, value) in existing.metadata.annotations.iter().flatten() {
        if key.starts_with(OVN_ANNOTATION_PREFIX) {
            annotations.insert(key.clone(), value.clone());
        }
    }
    let same = existing.spec.config == desired.spec.config
        && existing.metadata.labels == desired.metadata.labels
        && existing.metadata.annotations.clone().unwrap_or_default() == annotations;
    if same {
        return Ok((None, state));
    }
    let mut updated = (**existing).clone();
    updated.spec.config = desired.spec.config;
    updated.metadata.labels = desired.metadata.labels;
    updated.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    Ok((
        Some(NadOp::Update {
            nad: Box::new(updated),
        }),
        state,
    ))
}

/// Upstream `PrimaryNetAttachDefNotExist`: no NAD of the namespace is an OVN-Kubernetes
/// primary network.
fn no_primary_nad(nads: &[Arc<NetworkAttachmentDefinition>]) -> Result<(), SyncError> {
    let mut sorted: Vec<&Arc<NetworkAttachmentDefinition>> = nads.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for nad in sorted {
        let namespace = nad.metadata.namespace.clone().unwrap_or_default();
        let name = nad.metadata.name.clone().unwrap_or_default();
        let config = nad.spec.config.as_deref().unwrap_or_default();
        let value: serde_json::Value =
            serde_json::from_str(config).map_err(|err| SyncError::PrimaryCheckUnmarshal {
                namespace: namespace.clone(),
                name: name.clone(),
                reason: err.to_string(),
            })?;
        let field = |key: &str| value.get(key).and_then(serde_json::Value::as_str);
        if field("type") == Some(CNI_TYPE) && field("role") == Some(ROLE_PRIMARY) {
            return Err(SyncError::PrimaryExists { namespace, name });
        }
    }
    Ok(())
}

/// Remove the NAD `namespace/name` of the owner with `owner_uid` (upstream `deleteNAD`):
/// `None` when there is nothing to do (no NAD, or one we must not touch).
pub(crate) fn remove_nad(
    owner_uid: &str,
    namespace: &str,
    name: &str,
    existing: Option<&Arc<NetworkAttachmentDefinition>>,
    pods: &PodUse,
) -> Result<Option<NadOp>, SyncError> {
    let Some(nad) = existing else {
        return Ok(Some(NadOp::ConfirmAbsent {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            owner_uid: owner_uid.to_owned(),
        }));
    };
    if !controlled_by(&nad.metadata, owner_uid) || !has_finalizer(&nad.metadata) {
        return Ok(None);
    }
    if let Some((pod, reason)) = &pods.unparsable {
        return Err(SyncError::PodAnnotation {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            pod: pod.clone(),
            reason: reason.clone(),
        });
    }
    if !pods.users.is_empty() {
        return Err(SyncError::InUse {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            pods: pods.users.iter().cloned().collect(),
        });
    }
    Ok(Some(NadOp::Delete {
        nad: Box::new((**nad).clone()),
    }))
}

#[cfg(test)]
#[path = "nad_plan_tests.rs"]
mod tests;
