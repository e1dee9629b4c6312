//! [`NetworkError`]: why a reconcile of the network controllers failed.

/// Why a UDN, CUDN or NAD reconcile (or the start of [`run`](super::run)) failed.
///
/// Sync failures carry the text that is also on the object's `NetworkCreated` condition.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// The spec, or the cluster state around it, does not allow the network (reported on
    /// the status condition; retried when related objects change).
    #[error("{kind} {key} is invalid: {message}")]
    Invalid {
        /// `UserDefinedNetwork` or `ClusterUserDefinedNetwork`.
        kind: &'static str,
        /// `namespace/name` or `name`.
        key: String,
        /// The condition message.
        message: String,
    },
    /// Pods still use a NetworkAttachmentDefinition that has to be deleted.
    #[error("{kind} {key} waits for pods: {message}")]
    InUse {
        /// `UserDefinedNetwork` or `ClusterUserDefinedNetwork`.
        kind: &'static str,
        /// `namespace/name` or `name`.
        key: String,
        /// The condition message.
        message: String,
    },
    /// An API write or read failed, or the cache was behind.
    #[error("{kind} {key} did not sync: {message}")]
    Api {
        /// `UserDefinedNetwork` or `ClusterUserDefinedNetwork`.
        kind: &'static str,
        /// `namespace/name` or `name`.
        key: String,
        /// The condition message (with the server's text).
        message: String,
    },
    /// No network ID or tunnel key could be allocated.
    #[error("{kind} {key} has no network identity: {message}")]
    Allocation {
        /// The object kind.
        kind: &'static str,
        /// `namespace/name` or `name`.
        key: String,
        /// What failed.
        message: String,
    },
    /// A pool (network IDs, masquerade IPs, tunnel keys) is used up; the object is retried
    /// when a network is released.
    #[error("{kind} {key} waits for the {pool} pool: {message}")]
    Exhausted {
        /// The object kind.
        kind: &'static str,
        /// `namespace/name` or `name`.
        key: String,
        /// The pool's name.
        pool: &'static str,
        /// The condition message.
        message: String,
    },
    /// Writing the `NetworkCreated` condition failed.
    #[error("write the NetworkCreated condition of {kind} {key}")]
    Status {
        /// `UserDefinedNetwork` or `ClusterUserDefinedNetwork`.
        kind: &'static str,
        /// `namespace/name` or `name`.
        key: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Listing the NADs of a CUDN being deleted failed.
    #[error("list the NetworkAttachmentDefinitions of ClusterUserDefinedNetwork {name}")]
    ListOwned {
        /// The CUDN.
        name: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Writing the network identity annotations on a NAD failed.
    #[error("annotate the network identity of NetworkAttachmentDefinition {key}")]
    Annotate {
        /// `namespace/name`.
        key: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// A cache never became ready (its watch task ended).
    #[error("the {resource} cache stopped before it was ready")]
    CacheNotReady {
        /// The resource.
        resource: &'static str,
    },
}

impl NetworkError {
    /// A fixed word per variant, for the error metric.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Invalid { .. } => "invalid",
            Self::InUse { .. } => "network_in_use",
            Self::Api { .. } => "api",
            Self::Allocation { .. } => "allocation",
            Self::Exhausted { .. } => "pool_exhausted",
            Self::Status { .. } => "status",
            Self::ListOwned { .. } => "list",
            Self::Annotate { .. } => "annotate",
            Self::CacheNotReady { .. } => "cache",
        }
    }

    /// Whether retrying soon can help. Invalid specs are not retried on a backoff (they are
    /// on the status condition and get reconciled when something related changes), nor are
    /// exhausted pools (retried when a network is released).
    pub fn is_retryable(&self) -> bool {
        !matches!(
            self,
            Self::Invalid { .. } | Self::CacheNotReady { .. } | Self::Exhausted { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_retries() {
        let invalid = NetworkError::Invalid {
            kind: "UserDefinedNetwork",
            key: "a/b".into(),
            message: "foreign".into(),
        };
        assert_eq!(invalid.kind(), "invalid");
        assert!(!invalid.is_retryable());
        assert_eq!(
            invalid.to_string(),
            "UserDefinedNetwork a/b is invalid: foreign"
        );
        let in_use = NetworkError::InUse {
            kind: "ClusterUserDefinedNetwork",
            key: "c".into(),
            message: "pods".into(),
        };
        assert_eq!(in_use.kind(), "network_in_use");
        assert!(in_use.is_retryable());
        let exhausted = NetworkError::Exhausted {
            kind: "UserDefinedNetwork",
            key: "a/b".into(),
            pool: "network-ids",
            message: "full".into(),
        };
        assert_eq!(exhausted.kind(), "pool_exhausted");
        assert!(!exhausted.is_retryable());
        assert_eq!(
            exhausted.to_string(),
            "UserDefinedNetwork a/b waits for the network-ids pool: full"
        );
    }

    #[test]
    fn error_is_send_sync_static() {
        fn assert_bounds<T: std::error::Error + Send + Sync + 'static>() {}
        assert_bounds::<NetworkError>();
    }
}
