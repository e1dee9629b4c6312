//! kube-controller-manager's EndpointSlice controller (placeholder of the sandbox branch:
//! filled in by its own work).

/// Why the controller stopped.
#[derive(Debug, thiserror::Error)]
pub enum EndpointSliceError {
    /// Not built yet on this branch.
    #[error("the EndpointSlice controller is not built on this branch")]
    NotBuilt,
}

/// Runs the controller until SIGTERM or SIGINT.
pub async fn run(client: kube::Client) -> Result<(), EndpointSliceError> {
    let _ = client;
    Err(EndpointSliceError::NotBuilt)
}
