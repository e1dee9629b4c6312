//! CNI DEL (upstream `cmdDel` / `UnconfigureInterface`): no annotation wait, the pod may
//! be gone; the sandbox's `br-int` ports of the attachment and their veths are removed.
//! Idempotent: a second DEL finds nothing and succeeds.

use tracing::{debug, warn};
use udn_cni_protocol::PodRequest;

use super::add::del_filter;
use super::context::CniContext;
use super::network::Attachment;
use super::wire::delete_host_veth;
use crate::netlink::{NetnsPath, container_ifindex, host_veth_name};
use crate::ovs::{BR_INT, OvsError};

/// Why a DEL failed: only OVS's database not answering (the runtime retries); veth
/// removal problems are logged, as upstream.
#[derive(Debug, thiserror::Error)]
#[error("failed to remove the pod's OVS ports: {0}")]
pub struct DelError(#[from] OvsError);

/// Runs DEL for `request`; the host veths removed.
pub async fn del(
    ctx: &CniContext,
    request: &PodRequest<Attachment>,
) -> Result<Vec<String>, DelError> {
    let attachment = &request.config;
    let filter = del_filter(attachment, ctx.config.segmentation);
    let mut names = ctx
        .ovs
        .delete_sandbox_ports(BR_INT, &request.sandbox_id, &filter)
        .await?;
    // A veth whose port never made it into OVS (an ADD cut short) still goes: its name is
    // known from the container id (and, off the default network, the pod-side ifindex).
    let derived = if attachment.is_default() {
        Some(host_veth_name(&request.sandbox_id, true, 0))
    } else if request.netns.is_empty() {
        None
    } else {
        match container_ifindex(&NetnsPath::new(&request.netns), &request.if_name).await {
            Ok(Some(index)) => Some(host_veth_name(&request.sandbox_id, false, index)),
            Ok(None) => None,
            Err(error) => {
                debug!(netns = %request.netns, error = %error, "pod netns not readable at DEL");
                None
            }
        }
    };
    if let Some(name) = derived
        && !names.contains(&name)
    {
        names.push(name);
    }
    let mut removed = Vec::new();
    for name in names {
        match delete_host_veth(&name).await {
            Ok(true) => removed.push(name),
            Ok(false) => {}
            Err(error) => {
                warn!(veth = %name, error = %error, "deleting the pod's host veth failed")
            }
        }
    }
    ctx.metrics
        .pod_interfaces
        .set(i64::try_from(ctx.ovs.pod_interface_count()).unwrap_or(i64::MAX));
    Ok(removed)
}
