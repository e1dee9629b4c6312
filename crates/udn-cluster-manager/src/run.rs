//! Wiring: every controller of the cluster-manager, run together until shutdown.

use futures::FutureExt;
use udn_runtime::Shutdown;

use crate::context::Context;

/// A controller stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The UDN/CUDN controllers.
    #[error("network controller")]
    Network(#[source] Box<crate::network::NetworkError>),
    /// The node host-subnet controller.
    #[error("node subnet controller")]
    NodeSubnets(#[source] Box<crate::node_subnets::NodeSubnetsError>),
    /// The Layer2 pod IPAM controller.
    #[error("layer2 pod IPAM controller")]
    Layer2Ipam(#[source] Box<crate::layer2_ipam::Layer2IpamError>),
}

/// Run the controllers until `shutdown` fires (or one fails, which stops the others).
/// Without network segmentation (upstream: both `--enable-network-segmentation` and
/// `--enable-multi-network`) no UDN controller runs, as upstream.
pub async fn run_controllers(ctx: Context, shutdown: Shutdown) -> Result<(), RunError> {
    if !ctx.config.segmentation {
        tracing::info!("network segmentation disabled, UDN controllers not started");
        shutdown.wait().await;
        return Ok(());
    }
    let stop = {
        let shutdown = shutdown.clone();
        async move { shutdown.wait().await }.boxed().shared()
    };
    let network = crate::network::run(ctx.clone(), stop.clone())
        .map(|r| r.map_err(|e| RunError::Network(Box::new(e))));
    let nodes = crate::node_subnets::run(ctx.clone(), stop.clone())
        .map(|r| r.map_err(|e| RunError::NodeSubnets(Box::new(e))));
    let pods = crate::layer2_ipam::run(ctx, stop)
        .map(|r| r.map_err(|e| RunError::Layer2Ipam(Box::new(e))));
    let result = futures::try_join!(network, nodes, pods).map(|_| ());
    // One failed: make sure the others stop too.
    shutdown.trigger();
    result
}
