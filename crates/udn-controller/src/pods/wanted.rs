//! Which attachments a pod asks for, keyed as in `k8s.ovn.org/pod-networks`: the default
//! network always (role `primary`, or `infrastructure-locked` when the namespace's primary
//! network is a UDN), the namespace's primary UDN, and every NAD listed in
//! `k8s.v1.cni.cncf.io/networks` (a NAD requested twice gets the keys `<ns>/<nad>` and
//! `<ns>/<nad>/1`, as upstream `GetIndexedNADKey`).

use std::collections::{BTreeMap, BTreeSet};

use udn_api::annotations::{
    AnnotationError, NetworkSelectionElement, PodNetworkRole, parse_network_selection_for_pod,
};
use udn_api::names::LABEL_PRIMARY_UDN_NAMESPACE;

use super::view::PodView;
use crate::model::DEFAULT_NETWORK;
use crate::networks::NetworkSet;

/// One attachment a pod asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    /// Key in `k8s.ovn.org/pod-networks` (`default`, `<ns>/<nad>`, `<ns>/<nad>/<index>`).
    pub nad_key: String,
    /// The network.
    pub network: String,
    /// Its role for the pod.
    pub role: PodNetworkRole,
    /// The selection element that asked for it (secondary attachments).
    pub element: Option<NetworkSelectionElement>,
}

/// Why a pod's attachments cannot be determined now (an Event on the pod; retried when the
/// NADs or the namespace change).
#[derive(Debug, thiserror::Error)]
pub enum PodProblem {
    /// The namespace is labelled for a primary UDN that does not exist (yet).
    #[error(
        "invalid primary network state for namespace {namespace:?}: a valid primary user defined network or network attachment definition custom resource, and required namespace label \"{label}\" must both be present",
        label = LABEL_PRIMARY_UDN_NAMESPACE
    )]
    InvalidPrimaryNetwork {
        /// Namespace.
        namespace: String,
    },
    /// `k8s.v1.cni.cncf.io/networks` does not parse.
    #[error("failed to get NAD to network mapping: {0}")]
    Selection(#[source] AnnotationError),
    /// A requested NAD does not exist or defines no network (yet).
    #[error(
        "failed to find a network attachment definition {nad} requested in k8s.v1.cni.cncf.io/networks"
    )]
    MissingNad {
        /// NAD key.
        nad: String,
    },
    /// A primary network's NAD requested as a secondary attachment.
    #[error(
        "failed to get NAD to network mapping: unexpected primary network {network:?} specified with a NetworkSelectionElement {nad}"
    )]
    PrimaryRequested {
        /// Network name.
        network: String,
        /// NAD key.
        nad: String,
    },
}

impl PodProblem {
    /// Event reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::InvalidPrimaryNetwork { .. } => "InvalidPrimaryNetwork",
            Self::Selection(_) | Self::PrimaryRequested { .. } => "ErrorAddingLogicalPort",
            Self::MissingNad { .. } => "NetworkAttachmentDefinitionNotFound",
        }
    }
}

/// The attachments `pod` asks for, the default network first, then the primary UDN, then
/// secondaries in annotation order, and the problems of secondary requests that were left
/// out (an unparsable `k8s.v1.cni.cncf.io/networks`, a missing NAD, a primary network
/// requested as a secondary): as upstream, where each network's controller handles its own
/// attachments, those do not hold back the default network or the primary UDN. A namespace
/// labelled for a primary UDN that does not exist does (upstream's default network
/// controller fails the pod): the error. `labelled` is the set of namespaces carrying the
/// primary-UDN label; `segmentation` whether primary UDNs are on.
pub fn wanted_attachments(
    pod: &PodView,
    set: &NetworkSet,
    labelled: &BTreeSet<String>,
    segmentation: bool,
) -> Result<(Vec<Wanted>, Vec<PodProblem>), PodProblem> {
    let mut out = Vec::new();
    let namespace = pod.namespace.as_str();
    let primary = if segmentation && labelled.contains(namespace) {
        match set.primary_of(namespace) {
            Some((nad, network)) => Some((nad.to_owned(), network.name.clone())),
            None => {
                return Err(PodProblem::InvalidPrimaryNetwork {
                    namespace: namespace.to_owned(),
                });
            }
        }
    } else {
        None
    };
    out.push(Wanted {
        nad_key: DEFAULT_NETWORK.to_owned(),
        network: DEFAULT_NETWORK.to_owned(),
        role: if primary.is_some() {
            PodNetworkRole::InfrastructureLocked
        } else {
            PodNetworkRole::Primary
        },
        element: None,
    });
    if let Some((nad_key, network)) = primary {
        out.push(Wanted {
            nad_key,
            network,
            role: PodNetworkRole::Primary,
            element: None,
        });
    }
    let mut problems = Vec::new();
    let Some(value) = pod.networks.as_deref() else {
        return Ok((out, problems));
    };
    let elements = match parse_network_selection_for_pod(value, namespace) {
        Ok(elements) => elements,
        Err(error) => {
            problems.push(PodProblem::Selection(error));
            return Ok((out, problems));
        }
    };
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for element in elements {
        let nad_key = element.nad_key(namespace);
        let Some(network) = set.network_of_nad(&nad_key) else {
            if !set.nad_networks.contains_key(&nad_key) {
                problems.push(PodProblem::MissingNad { nad: nad_key });
            }
            // Known but not renderable yet (no network ID): skipped until it is.
            continue;
        };
        if network.is_primary() {
            problems.push(PodProblem::PrimaryRequested {
                network: network.name.clone(),
                nad: nad_key,
            });
            continue;
        }
        let count = seen.entry(nad_key.clone()).or_insert(0);
        let key = if *count == 0 {
            nad_key.clone()
        } else {
            format!("{nad_key}/{count}")
        };
        *count += 1;
        out.push(Wanted {
            nad_key: key,
            network: network.name.clone(),
            role: PodNetworkRole::Secondary,
            element: Some(element),
        });
    }
    Ok((out, problems))
}
