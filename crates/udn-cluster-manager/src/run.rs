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
    /// The node ID / transit address controller.
    #[error("node allocation controller")]
    NodeAllocation(#[source] Box<crate::node_allocation::NodeAllocationError>),
    /// The node host-subnet controller.
    #[error("node subnet controller")]
    NodeSubnets(#[source] Box<crate::node_subnets::NodeSubnetsError>),
    /// The Layer2 pod IPAM controller.
    #[error("layer2 pod IPAM controller")]
    Layer2Ipam(#[source] Box<crate::layer2_ipam::Layer2IpamError>),
}

/// Run the controllers until `shutdown` fires (or one fails, which stops the others).
///
/// Node IDs, transit switch port addresses and the default network's host subnets are
/// allocated always, as upstream's cluster-manager does. The UDN controllers (networks,
/// Layer3 host subnets, Layer2 pod IPAM), the EndpointSlice mirror, NAD recovery and the
/// Services on secondary networks need network segmentation (upstream: both
/// `--enable-network-segmentation` and `--enable-multi-network`).
pub async fn run_controllers(ctx: Context, shutdown: Shutdown) -> Result<(), RunError> {
    let stop = {
        let shutdown = shutdown.clone();
        async move { shutdown.wait().await }.boxed().shared()
    };
    // The rendered nodes of UDN/CUDN networks (every node unless Dynamic UDN is on), followed
    // by the per-node allocations of gated networks. Without segmentation there are none.
    let (scope, scope_rx) = crate::dynamic_udn::scope_channel(&ctx);
    let node_ids = crate::node_allocation::run(ctx.clone(), stop.clone())
        .map(|r| r.map_err(|e| RunError::NodeAllocation(Box::new(e))));
    let nodes = crate::node_subnets::run_in_scope(ctx.clone(), scope_rx.clone(), stop.clone())
        .map(|r| r.map_err(|e| RunError::NodeSubnets(Box::new(e))));
    let result = if ctx.config.segmentation {
        let dynamic =
            crate::dynamic_udn::run(ctx.clone(), scope, stop.clone()).map(Ok::<(), RunError>);
        let network = crate::network::run(ctx.clone(), stop.clone())
            .boxed()
            .map(|r| r.map_err(|e| RunError::Network(Box::new(e))));
        let pods = crate::layer2_ipam::run_in_scope(ctx.clone(), scope_rx, stop.clone())
            .map(|r| r.map_err(|e| RunError::Layer2Ipam(Box::new(e))));
        let mirror =
            crate::endpointslice_mirror::run(ctx.clone(), stop.clone()).map(Ok::<(), RunError>);
        let recovery = crate::nad_recovery::run(ctx.clone(), stop.clone()).map(Ok::<(), RunError>);
        let services = crate::secondary_services::run(ctx, stop)
            .boxed()
            .map(Ok::<(), RunError>);
        futures::try_join!(
            node_ids, nodes, network, pods, mirror, recovery, services, dynamic
        )
        .map(|_| ())
    } else {
        tracing::info!("network segmentation disabled, UDN controllers not started");
        futures::try_join!(node_ids, nodes).map(|_| ())
    };
    // One failed: make sure the others stop too.
    shutdown.trigger();
    result
}
