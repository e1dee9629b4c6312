//! The API calls of a plan, in its order (creates, updates, deletes). The first failure
//! stops the rest and is returned: the retry plans again from what the caches then show.
//! Updates are guarded by the slice's resourceVersion (a stale cache is a conflict, retried).

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, PostParams};

use super::plan::SliceOp;
use crate::context::CLUSTER_MANAGER;

/// A write of a Service's slices failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApplyError {
    /// Creating a slice failed.
    #[error("create an EndpointSlice of Service {service}")]
    Create {
        /// `ns/name` of the Service.
        service: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Replacing a slice failed (a conflict when the cache was behind).
    #[error("update EndpointSlice {slice} of Service {service}")]
    Update {
        /// `ns/name` of the Service.
        service: String,
        /// The slice's name.
        slice: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Deleting a slice failed.
    #[error("delete EndpointSlice {slice} of Service {service}")]
    Delete {
        /// `ns/name` of the Service.
        service: String,
        /// The slice's name.
        slice: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
}

impl ApplyError {
    /// A fixed word per variant, for the error metric.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Create { .. } => "create",
            Self::Update { .. } => "update",
            Self::Delete { .. } => "delete",
        }
    }
}

/// What the writes did, for the check that the slice cache shows them before the next plan
/// (else a plan from a cache without a new slice would create it twice).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Written {
    /// Names of the slices created.
    pub(crate) created: Vec<String>,
    /// Names of the slices replaced, with their resourceVersion before.
    pub(crate) updated: Vec<(String, String)>,
    /// Names of the slices deleted.
    pub(crate) deleted: Vec<String>,
}

impl Written {
    /// Whether nothing was written.
    pub(crate) fn is_empty(&self) -> bool {
        self.created.is_empty() && self.updated.is_empty() && self.deleted.is_empty()
    }
}

/// Runs `ops` for Service `service` through `api` (its namespace), recording each write
/// that succeeded in `written`.
pub(crate) async fn apply_ops(
    api: &Api<EndpointSlice>,
    service: &str,
    ops: &[SliceOp],
    written: &mut Written,
) -> Result<(), ApplyError> {
    let params = PostParams {
        field_manager: Some(CLUSTER_MANAGER.to_owned()),
        ..PostParams::default()
    };
    for op in ops {
        match op {
            SliceOp::Create(slice) => {
                let created =
                    api.create(&params, slice)
                        .await
                        .map_err(|source| ApplyError::Create {
                            service: service.to_owned(),
                            source,
                        })?;
                written
                    .created
                    .push(created.metadata.name.unwrap_or_default());
            }
            SliceOp::Update(slice) => {
                let name = slice.metadata.name.clone().unwrap_or_default();
                api.replace(&name, &params, slice)
                    .await
                    .map_err(|source| ApplyError::Update {
                        service: service.to_owned(),
                        slice: name.clone(),
                        source,
                    })?;
                let before = slice.metadata.resource_version.clone().unwrap_or_default();
                written.updated.push((name, before));
            }
            SliceOp::Delete { name } => {
                match api.delete(name, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(status)) if status.is_not_found() => {}
                    Err(source) => {
                        return Err(ApplyError::Delete {
                            service: service.to_owned(),
                            slice: name.clone(),
                            source,
                        });
                    }
                }
                written.deleted.push(name.clone());
            }
        }
    }
    Ok(())
}
