//! CNI ADD (upstream `cmdAdd` and `getPrimaryUDNPodRequest`): wait for the pod and its
//! annotation, check the pod UID, wire the interface; for a default-network ADD in a
//! namespace whose primary network is a UDN, wire `ovn-udn1` too and merge the results.

use std::time::Duration;

use tokio::time::Instant;
use udn_api::crd::NetworkTopology;
use udn_cni_protocol::{CniResult, PodRequest};

use super::context::CniContext;
use super::network::{Attachment, PodInterface, pod_interface, primary_attachment};
use super::wire::{Target, WireError, unwire_port, wire};
use crate::ovs::NadFilter;
use crate::ovs::open_vswitch::BRIDGE_MAPPINGS;

/// The pod-side name of a primary UDN's interface (upstream's `ovn-udn1`).
pub const PRIMARY_UDN_IFNAME: &str = "ovn-udn1";

/// How long a pod may be missing from the cache (upstream: 5 tries 200 ms apart).
const POD_APPEAR: Duration = Duration::from_secs(1);

/// Why an ADD failed (texts as upstream's where it has them).
#[derive(Debug, thiserror::Error)]
pub enum AddError {
    /// The pod name or namespace is empty.
    #[error("required CNI variable missing")]
    MissingVariable,
    /// The pod is not known.
    #[error("timed out waiting for pod after 1s: pods \"{0}\" not found")]
    PodNotFound(String),
    /// The annotation did not come in time.
    #[error("timed out waiting for annotations: context deadline exceeded")]
    AnnotationTimeout,
    /// The pod was recreated since the runtime started the sandbox.
    #[error(
        "pod deleted before sandbox ADD operation began. Request Pod UID {request} is different from the Pod UID ({pod}) retrieved from the informer/API"
    )]
    UidMismatch {
        /// The request's UID.
        request: String,
        /// The pod's.
        pod: String,
    },
    /// A Localnet network without a bridge mapping for its physical network.
    #[error(
        "failed bridge mapping validation: failed to find OVN bridge-mapping for network: {0:?}"
    )]
    NoBridgeMapping(String),
    /// Reading OVS's database failed.
    #[error("failed getting openvswitch: {0}")]
    Ovs(#[from] crate::ovs::OvsError),
    /// Wiring failed.
    #[error(transparent)]
    Wire(#[from] WireError),
}

/// Runs ADD for `request` (its netconf already resolved to `attachment`), finishing by
/// `deadline`.
pub async fn add(
    ctx: &CniContext,
    request: &PodRequest<Attachment>,
    deadline: Instant,
) -> Result<CniResult, AddError> {
    if request.pod_name.is_empty() || request.pod_namespace.is_empty() {
        return Err(AddError::MissingVariable);
    }
    let attachment = &request.config;
    check_bridge_mapping(ctx, attachment)?;
    let (ns, name) = (request.pod_namespace.as_str(), request.pod_name.as_str());
    if ctx
        .stores
        .wait_for(POD_APPEAR, |stores| stores.pod(ns, name))
        .await
        .is_none()
    {
        return Err(AddError::PodNotFound(name.to_owned()));
    }
    let (uid, iface) = wait_interface(ctx, ns, name, attachment, deadline).await?;
    if let Some(requested) = &request.pod_uid
        && *requested != uid
    {
        return Err(AddError::UidMismatch {
            request: requested.clone(),
            pod: uid,
        });
    }
    let target = Target {
        namespace: ns,
        pod: name,
        pod_uid: &uid,
        sandbox: &request.sandbox_id,
        netns: &request.netns,
        ifname: &request.if_name,
    };
    let mut result = wire(ctx, &target, &iface, remaining(deadline)).await?;
    let primary = if attachment.is_default() && ctx.config.segmentation {
        let nads = ctx.stores.nads.state();
        primary_attachment(nads.iter().map(|nad| &**nad), ns, &ctx.config.cluster)
    } else {
        None
    };
    if let Some(primary) = primary {
        let second = async {
            let (_, iface) = wait_interface(ctx, ns, name, &primary, deadline).await?;
            let target = Target {
                ifname: PRIMARY_UDN_IFNAME,
                ..target.clone()
            };
            Ok::<_, AddError>(wire(ctx, &target, &iface, remaining(deadline)).await?)
        }
        .await;
        match second {
            Ok(udn) => result.merge_primary_udn(udn),
            Err(error) => {
                // The default network's interface is not left behind without its UDN.
                if let Some(host) = result.interfaces.first().map(|i| i.name.clone()) {
                    unwire_port(ctx, &host).await;
                }
                return Err(error);
            }
        }
    }
    ctx.metrics
        .pods_wired
        .inc_by(u64::try_from(result.interfaces.len() / 2).unwrap_or(0));
    ctx.metrics
        .pod_interfaces
        .set(i64::try_from(ctx.ovs.pod_interface_count()).unwrap_or(i64::MAX));
    Ok(result)
}

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// Waits until the pod's annotation has its entry for `attachment`; the pod's UID and
/// the interface.
async fn wait_interface(
    ctx: &CniContext,
    ns: &str,
    name: &str,
    attachment: &Attachment,
    deadline: Instant,
) -> Result<(String, PodInterface), AddError> {
    ctx.stores
        .wait_for(remaining(deadline), |stores| {
            let pod = stores.pod(ns, name)?;
            let iface = pod_interface(&pod, attachment)?;
            Some((pod.metadata.uid.clone().unwrap_or_default(), iface))
        })
        .await
        .ok_or(AddError::AnnotationTimeout)
}

/// Upstream's `checkBridgeMapping`: a Localnet network needs `ovn-bridge-mappings` to map
/// its physical network (its `physicalNetworkName`, else its name).
fn check_bridge_mapping(ctx: &CniContext, attachment: &Attachment) -> Result<(), AddError> {
    let Some(info) = &attachment.info else {
        return Ok(());
    };
    if info.topology != NetworkTopology::Localnet {
        return Ok(());
    }
    let physnet = if info.physical_network_name.is_empty() {
        info.name.clone()
    } else {
        info.physical_network_name.clone()
    };
    let state = ctx.ovs.state()?;
    let mappings = state
        .open_vswitch
        .as_ref()
        .and_then(|row| row.external_ids.get(BRIDGE_MAPPINGS).cloned())
        .unwrap_or_default();
    let mapped = mappings
        .split(',')
        .filter_map(|entry| entry.split_once(':'))
        .any(|(network, _)| network == physnet);
    if mapped {
        Ok(())
    } else {
        Err(AddError::NoBridgeMapping(physnet))
    }
}

/// Which ports a DEL of `attachment` removes (upstream: the default network's DEL with
/// segmentation takes every port of the sandbox, `ovn-udn1` included).
pub fn del_filter(attachment: &Attachment, segmentation: bool) -> NadFilter {
    match (attachment.is_default(), segmentation) {
        (true, true) => NadFilter::Any,
        (true, false) => NadFilter::DefaultNetwork,
        (false, _) => NadFilter::Nad(attachment.nad_key.clone()),
    }
}
