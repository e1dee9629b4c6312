//! Why host isolation could not start or apply a change.

use std::path::PathBuf;

use crate::nft::NftError;

/// A host isolation step that failed.
#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    /// `kubelet-cgroup-path` cannot be used.
    #[error("kubelet-cgroup-path {value:?} {reason}")]
    KubeletCgroupPath {
        /// The setting's value.
        value: String,
        /// Why.
        reason: String,
    },
    /// The directory discovery was asked to search cannot be used.
    #[error("kubelet cgroup search directory {}: {reason}", .dir.display())]
    SearchDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// An nft transaction or listing failed.
    #[error("host isolation: cannot {step}")]
    Nft {
        /// What was being done.
        step: &'static str,
        /// nft's error.
        #[source]
        source: NftError,
    },
}

impl IsolationError {
    pub(crate) fn nft(step: &'static str) -> impl FnOnce(NftError) -> Self {
        move |source| Self::Nft { step, source }
    }
}
