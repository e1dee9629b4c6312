//! One node reconcile: plan the node's gateway router tunnel IDs under the lock, then one
//! patch of `k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids` (unguarded: only this
//! controller writes it, and the plan comes from the pools, not from the cached value).

use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use tracing::{info, warn};
use udn_api::names::ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS;

use super::Layer2IpamError;
use super::controller::{Shared, lock, node_tunnels_text};
use crate::node_patch::patch_node_annotations;

fn forget(shared: &Shared, name: &str) {
    let touched = lock(&shared.inner).state.forget_node(name);
    if !touched.is_empty() {
        info!(node = %name, networks = touched.len(), "node gone: released its tunnel IDs");
    }
}

/// Whether the node needs another look later (a pool had no ID for it).
pub(super) async fn reconcile_node(shared: &Shared, name: &str) -> Result<bool, Layer2IpamError> {
    let Some(node) = shared.nodes.get(&ObjectRef::new(name)) else {
        forget(shared, name);
        return Ok(false);
    };
    let plan = lock(&shared.inner)
        .state
        .plan_node(name, node_tunnels_text(&node))
        .map_err(|source| Layer2IpamError::EncodeNode {
            node: name.to_owned(),
            source,
        })?;
    for error in &plan.errors {
        warn!(node = %name, error = %error, "node tunnel ID allocation failed");
    }
    let retry = !plan.errors.is_empty();
    if !plan.write {
        return Ok(retry);
    }
    let api: Api<Node> = Api::all(shared.ctx.client.clone());
    let change = [(
        ANNOTATION_NODE_LAYER2_GATEWAY_ROUTER_TUNNEL_IDS,
        plan.value.as_deref(),
    )];
    match patch_node_annotations(&api, name, None, change).await {
        Ok(_) => {
            info!(node = %name, allocated = plan.allocated.len(), "node tunnel IDs written");
            lock(&shared.inner).state.node_written(name, &plan);
            Ok(retry)
        }
        Err(kube::Error::Api(status)) if status.is_not_found() => {
            lock(&shared.inner).state.node_unwritten(&plan);
            forget(shared, name);
            Ok(false)
        }
        Err(source) => {
            lock(&shared.inner).state.node_unwritten(&plan);
            Err(Layer2IpamError::PatchNode {
                node: name.to_owned(),
                source,
            })
        }
    }
}
