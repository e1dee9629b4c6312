//! [`SyncError`]: why a UDN/CUDN did not converge, as the text upstream puts in the
//! `NetworkCreated` condition.
//!
//! Display is the whole upstream message (wrapping prefixes included) because that flat
//! string is the condition message; inner reasons are fields, not a `source` chain.

use udn_api::names::LABEL_PRIMARY_UDN_NAMESPACE;
use udn_api::render::RenderError;
use udn_api::selector::SelectorError;
use udn_ipam::Pool;

/// What kind of failure a [`SyncError`] is: decides metrics, retries and events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SyncClass {
    /// The spec or the cluster state around it is invalid; fixed by a user, not by retrying.
    Invalid,
    /// Pods still use a NetworkAttachmentDefinition that has to go.
    InUse,
    /// An API call failed or the cache was behind.
    Api,
    /// No network ID or tunnel key could be allocated.
    Allocation,
    /// A pool (network IDs, masquerade IPs, tunnel keys) is used up: retried when a network
    /// is released, not on a backoff.
    Exhausted(Pool),
}

/// One failure of a UDN/CUDN sync, worded as upstream.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SyncError {
    /// The target namespace is not in the cache.
    #[error("failed to get namespace \"{namespace}\": namespace \"{namespace}\" not found")]
    NamespaceNotFound {
        /// The namespace.
        namespace: String,
    },
    /// A primary network in a namespace without the required label.
    #[error(
        "invalid primary network state for namespace \"{namespace}\": a valid primary user defined network or network attachment definition custom resource, and required namespace label \"{LABEL_PRIMARY_UDN_NAMESPACE}\" must both be present"
    )]
    InvalidPrimaryNetwork {
        /// The namespace.
        namespace: String,
    },
    /// The spec does not render into a NAD.
    #[error("failed to generate NetworkAttachmentDefinition: {reason}")]
    Render {
        /// The render failure.
        reason: RenderError,
    },
    /// Another primary network NAD already exists in the namespace.
    #[error("primary network already exist in namespace \"{namespace}\": \"{name}\"")]
    PrimaryExists {
        /// The namespace.
        namespace: String,
        /// The existing primary NAD.
        name: String,
    },
    /// A NAD of the namespace has a config that is not JSON.
    #[error(
        "failed to validate no primary network exist: unmarshal failed [{namespace}/{name}]: {reason}"
    )]
    PrimaryCheckUnmarshal {
        /// The namespace.
        namespace: String,
        /// The NAD.
        name: String,
        /// The decoder's message.
        reason: String,
    },
    /// A NAD with the desired name exists and is not controlled by this object.
    #[error(
        "foreign NetworkAttachmentDefinition with the desired name already exist [{namespace}/{name}]"
    )]
    Foreign {
        /// The namespace.
        namespace: String,
        /// The NAD.
        name: String,
    },
    /// Pods still use the NAD that has to be deleted.
    #[error(
        "failed to delete NetworkAttachmentDefinition [{namespace}/{name}]: network in use by the following pods: [{}]",
        pods.join(" ")
    )]
    InUse {
        /// The namespace.
        namespace: String,
        /// The NAD.
        name: String,
        /// `ns/pod` of every user, sorted.
        pods: Vec<String>,
    },
    /// A pod's `k8s.ovn.org/pod-networks` annotation does not parse, so use cannot be ruled out.
    #[error(
        "failed to delete NetworkAttachmentDefinition [{namespace}/{name}]: failed to verify NAD not in use [{namespace}/{name}]: failed to unmarshal pod annotation [{namespace}/{pod}]: {reason}"
    )]
    PodAnnotation {
        /// The namespace.
        namespace: String,
        /// The NAD.
        name: String,
        /// The pod.
        pod: String,
        /// The parse failure.
        reason: String,
    },
    /// The CUDN namespace selector is invalid.
    #[error("failed to get selected namespaces: failed to create label-selector: {reason}")]
    Selector {
        /// The selector failure.
        reason: SelectorError,
    },
    /// An API call failed; `context` is upstream's wrapping text, `detail` the server's message.
    #[error("{context}: {detail}")]
    Api {
        /// What was being done (upstream wording).
        context: String,
        /// The server's message.
        detail: String,
    },
    /// A write was refused because the cache is behind the server (409: conflict or
    /// already exists). Not reported on the condition: the next reconcile sees the change.
    #[error("{context}: {detail}")]
    Stale {
        /// What was being done (upstream wording).
        context: String,
        /// The server's message.
        detail: String,
    },
    /// A pool has nothing left for the network (udn's; upstream has fixed 4096 IDs).
    #[error("failed to allocate network ID for network {network}: {detail}")]
    Exhausted {
        /// The network name.
        network: String,
        /// The pool used up.
        pool: Pool,
        /// The pool's message (names the pool and its bound).
        detail: String,
    },
    /// No network ID or tunnel key for the network.
    #[error("failed to allocate network ID for network {network}: {detail}")]
    Allocation {
        /// The network name.
        network: String,
        /// The allocator's message.
        detail: String,
    },
}

impl SyncError {
    /// The class of this failure.
    pub(crate) fn class(&self) -> SyncClass {
        match self {
            Self::InUse { .. } => SyncClass::InUse,
            Self::Api { .. }
            | Self::Stale { .. }
            | Self::PodAnnotation { .. }
            | Self::NamespaceNotFound { .. } => SyncClass::Api,
            Self::Allocation { .. } => SyncClass::Allocation,
            Self::Exhausted { pool, .. } => SyncClass::Exhausted(*pool),
            Self::InvalidPrimaryNetwork { .. }
            | Self::Render { .. }
            | Self::PrimaryExists { .. }
            | Self::PrimaryCheckUnmarshal { .. }
            | Self::Foreign { .. }
            | Self::Selector { .. } => SyncClass::Invalid,
        }
    }
}

impl SyncError {
    /// Whether the failure only means the cache was behind (see [`SyncError::Stale`]).
    pub(crate) fn is_stale(&self) -> bool {
        matches!(self, Self::Stale { .. })
    }
}

/// The server's text of a failed API call (client-go's `StatusError.Error()` is the Status
/// message), or the client error itself.
pub(crate) fn api_detail(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_upstream_text() {
        assert_eq!(
            SyncError::InvalidPrimaryNetwork {
                namespace: "blue".into()
            }
            .to_string(),
            "invalid primary network state for namespace \"blue\": a valid primary user defined \
             network or network attachment definition custom resource, and required namespace \
             label \"k8s.ovn.org/primary-user-defined-network\" must both be present"
        );
        assert_eq!(
            SyncError::PrimaryExists {
                namespace: "blue".into(),
                name: "other".into()
            }
            .to_string(),
            "primary network already exist in namespace \"blue\": \"other\""
        );
        assert_eq!(
            SyncError::Foreign {
                namespace: "blue".into(),
                name: "net".into()
            }
            .to_string(),
            "foreign NetworkAttachmentDefinition with the desired name already exist [blue/net]"
        );
        assert_eq!(
            SyncError::InUse {
                namespace: "blue".into(),
                name: "net".into(),
                pods: vec!["blue/a".into(), "blue/b".into()]
            }
            .to_string(),
            "failed to delete NetworkAttachmentDefinition [blue/net]: network in use by the \
             following pods: [blue/a blue/b]"
        );
        assert_eq!(
            SyncError::Render {
                reason: RenderError::SubnetsRequired
            }
            .to_string(),
            "failed to generate NetworkAttachmentDefinition: failed to render CNI network config: \
             subnets is required with ipam.mode is Enabled or unset"
        );
    }

    #[test]
    fn classes_decide_retries() {
        let in_use = SyncError::InUse {
            namespace: "a".into(),
            name: "b".into(),
            pods: vec![],
        };
        assert_eq!(in_use.class(), SyncClass::InUse);
        assert_eq!(
            SyncError::Foreign {
                namespace: "a".into(),
                name: "b".into()
            }
            .class(),
            SyncClass::Invalid
        );
    }
}
