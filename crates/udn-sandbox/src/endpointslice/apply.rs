//! The plan's calls, in order. A create refused because the namespace is terminating ends
//! the sync quietly (upstream drops the work: the namespace and its slices are going); a
//! delete of a slice already gone is done.

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, PostParams};

use super::EndpointSliceError;
use super::plan::{Plan, SliceOp};

fn namespace_terminating(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status
        .details
        .as_ref()
        .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating")))
}

/// Runs `plan` for Service `service` (`namespace/name`, for errors) through `api` (the
/// Service's namespace).
pub async fn apply(
    api: &Api<EndpointSlice>,
    service: &str,
    plan: &Plan,
) -> Result<(), EndpointSliceError> {
    let failed = |what: String| move |source| EndpointSliceError::Api { what, source };
    for op in &plan.ops {
        match op {
            SliceOp::Create(slice) => match api.create(&PostParams::default(), slice).await {
                Ok(created) => {
                    tracing::info!(
                        service,
                        slice = created.metadata.name.as_deref().unwrap_or_default(),
                        "created EndpointSlice"
                    );
                }
                Err(error) if namespace_terminating(&error) => return Ok(()),
                Err(error) => {
                    return Err(failed(format!(
                        "creating an EndpointSlice of Service {service}"
                    ))(error));
                }
            },
            SliceOp::Update(slice) => {
                let name = slice.metadata.name.clone().unwrap_or_default();
                api.replace(&name, &PostParams::default(), slice)
                    .await
                    .map_err(failed(format!(
                        "updating EndpointSlice {name} of Service {service}"
                    )))?;
                tracing::debug!(service, slice = %name, "updated EndpointSlice");
            }
            SliceOp::Delete(name) => match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => tracing::info!(service, slice = %name, "deleted EndpointSlice"),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => {
                    return Err(failed(format!(
                        "deleting EndpointSlice {name} of Service {service}"
                    ))(error));
                }
            },
        }
    }
    Ok(())
}
