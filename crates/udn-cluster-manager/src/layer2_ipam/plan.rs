//! One attachment of one pod (upstream `allocatePodAnnotationWithRollback`): the claim, the
//! tunnel ID, the IPs (annotated, the claim's, requested without IPAM, or new) and the entry.
//! Synchronous; works on the network's pools only and undoes its own allocations on error.

use ipnetwork::IpNetwork;
use tracing::warn;
use udn_api::annotations::{MacAddress, PodNetworkAnnotation};
use udn_api::ipamclaim::{
    REASON_INTERNAL_ERROR, REASON_IP_ADDRESS_CONFLICT, REASON_SUBNET_EXHAUSTED,
};
use udn_ipam::{PodIpAllocator, PodIpError, PodTunnelIdAllocator};

use super::annotation::{EntryInputs, attachment_mac, pod_entry};
use super::attachments::Attachment;
use super::state::{
    AttachmentError, ClaimView, ClaimWrite, Holding, PodInput, PodPlan, Pools, claim_owner,
};

/// What every attachment of a pod is planned with.
pub(crate) struct AttachmentContext<'a> {
    pub(crate) pod: &'a PodInput<'a>,
    pub(crate) service_cidrs: &'a [IpNetwork],
    pub(crate) persistent_ips: bool,
    pub(crate) claims: &'a dyn Fn(&str) -> Option<ClaimView>,
}

impl std::fmt::Debug for AttachmentContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttachmentContext")
            .field("pod", &self.pod.key)
            .finish_non_exhaustive()
    }
}

fn fail(message: String, retry: bool) -> AttachmentError {
    AttachmentError { message, retry }
}

fn claim_reason(error: &PodIpError) -> &'static str {
    if error.is_full() {
        REASON_SUBNET_EXHAUSTED
    } else if error.is_already_allocated() {
        REASON_IP_ADDRESS_CONFLICT
    } else {
        REASON_INTERNAL_ERROR
    }
}

/// The claim of a persistent attachment: `Ok(None)` when the attachment is not persistent,
/// an error (retried) when the claim does not exist yet.
fn resolve_claim(
    pools: &Pools,
    cx: &AttachmentContext<'_>,
    attachment: &Attachment,
) -> Result<Option<ClaimView>, AttachmentError> {
    let reference = &attachment.element.ipam_claim_reference;
    let persistent = cx.persistent_ips
        && pools.info.allow_persistent_ips
        && pools.ips.is_some()
        && !reference.is_empty();
    if !persistent {
        return Ok(None);
    }
    let namespace = attachment.element.namespace_or(cx.pod.namespace);
    (cx.claims)(&format!("{namespace}/{reference}"))
        .map(Some)
        .ok_or_else(|| {
            fail(
                format!(
                    "error retrieving IPAMClaim for pod {}/{}: failed to get IPAMClaim {reference:?}: not found",
                    cx.pod.namespace, cx.pod.name
                ),
                true,
            )
        })
}

/// The attachment's tunnel ID (annotated or new) and whether this call allocated it.
fn ensure_tunnel(
    tunnels: &mut Option<PodTunnelIdAllocator>,
    annotated: u32,
    owner: &str,
    desc: &str,
) -> Result<(u32, bool), AttachmentError> {
    let Some(pool) = tunnels.as_mut() else {
        return Ok((annotated, false));
    };
    if annotated != 0 {
        if let Err(error) = pool.restore(owner, annotated) {
            warn!(owner = %owner, error = %error, "annotated tunnel ID is held by another owner");
        }
        return Ok((annotated, false));
    }
    let held = pool.id_of(owner).is_some();
    let id = pool
        .allocate(owner)
        .map_err(|e| fail(format!("failed to assign pod id for {desc}: {e}"), true))?;
    Ok((id, !held))
}

/// `(reason, message)` for the claim status when allocating new IPs failed.
type ClaimFailure = Option<(&'static str, String)>;

/// The attachment's IPs and whether the IP owner got them by this call.
struct Ips {
    ips: Vec<IpNetwork>,
    new: bool,
}

/// IPs from a pool: annotated ones are kept (and held), else the claim's, else new ones.
fn pool_ips(
    pool: &mut PodIpAllocator,
    annotated: Vec<IpNetwork>,
    claim: Option<&ClaimView>,
    owner: &str,
    requested: &[String],
    desc: &str,
) -> Result<Ips, (AttachmentError, ClaimFailure)> {
    let held = pool.ips_of(owner).is_some();
    let ips = if !annotated.is_empty() {
        // Annotated IPs are never changed; a conflict is logged, not fixed.
        if let Err(error) = pool.restore(owner, &annotated)
            && !held
        {
            warn!(owner = %owner, error = %error, "annotated IPs are held by another owner");
        }
        annotated
    } else if let Some(claim) = claim.filter(|c| !c.ips.is_empty()) {
        pool.allocate_static(owner, &claim.ips).map_err(|error| {
            let message =
                format!("failed to ensure requested or annotated IPs for {desc}: {error}");
            (fail(message, true), None)
        })?
    } else if !requested.is_empty() {
        let message = format!(
            "cannot allocate a static IP request with IPAM for pod {desc} (custom network configuration disabled)"
        );
        return Err((fail(message, false), None));
    } else {
        pool.allocate(owner).map_err(|error| {
            let message = format!("failed to assign pod addresses for {desc}: {error}");
            (
                fail(message, true),
                Some((claim_reason(&error), error.to_string())),
            )
        })?
    };
    Ok(Ips {
        new: !held && pool.ips_of(owner).is_some(),
        ips,
    })
}

/// The entry: the annotated one (with the tunnel ID filled) unless it lacks IPs it should have.
fn entry_for(
    pools: &Pools,
    cx: &AttachmentContext<'_>,
    attachment: &Attachment,
    ips: &[IpNetwork],
    tunnel_id: u32,
    desc: &str,
) -> Result<PodNetworkAnnotation, AttachmentError> {
    let existing = cx.pod.existing.get(&attachment.nad_key);
    if let Some(entry) = existing.filter(|e| !e.ip_addresses.is_empty() || ips.is_empty()) {
        let mut entry = entry.clone();
        entry.tunnel_id = tunnel_id;
        return Ok(entry);
    }
    let element = &attachment.element;
    let requested = if element.mac.is_empty() {
        None
    } else {
        Some(element.mac.parse::<MacAddress>().map_err(|e| {
            fail(
                format!("failed to parse MAC request for {desc}: {e}"),
                false,
            )
        })?)
    };
    let seed = format!("{}/{}", attachment.nad_key, cx.pod.uid);
    Ok(pod_entry(&EntryInputs {
        info: &pools.info,
        role: attachment.role,
        ips,
        mac: attachment_mac(requested, ips, &seed),
        tunnel_id,
        gateway_request: &element.default_route,
        service_cidrs: cx.service_cidrs,
    }))
}

/// IPs without a pool: annotated ones, else the requested ones as given.
fn requested_ips(
    annotated: Vec<IpNetwork>,
    requested: &[String],
    desc: &str,
) -> Result<Ips, (AttachmentError, ClaimFailure)> {
    if !annotated.is_empty() {
        return Ok(Ips {
            ips: annotated,
            new: false,
        });
    }
    requested
        .iter()
        .map(|text| text.parse::<IpNetwork>())
        .collect::<Result<Vec<_>, _>>()
        .map(|ips| Ips { ips, new: false })
        .map_err(|e| {
            let message = format!("failed to parse IP requests for {desc}: {e}");
            (fail(message, false), None)
        })
}

/// Who holds what for one attachment.
struct Owners {
    pod: String,
    ips: String,
    claim: Option<ClaimView>,
}

/// Records a planned attachment: new holdings, the claim status for new claim IPs, the entry.
fn record(
    plan: &mut PodPlan,
    network: &str,
    pod_name: &str,
    owners: Owners,
    ips: Ips,
    new_tunnel: bool,
) {
    if ips.new {
        plan.new.push(Holding {
            network: network.to_owned(),
            owner: owners.ips,
            ips: true,
            tunnel: false,
        });
        if let Some(claim) = owners.claim.filter(|c| c.ips.is_empty()) {
            plan.claim_writes.push(ClaimWrite {
                key: claim.key,
                pod: pod_name.to_owned(),
                ips: ips.ips,
                failure: None,
            });
        }
    }
    if new_tunnel {
        plan.new.push(Holding {
            network: network.to_owned(),
            owner: owners.pod,
            ips: false,
            tunnel: true,
        });
    }
    if plan.new.iter().any(|h| h.network == network) {
        plan.touched.insert(network.to_owned());
    }
}

/// Plans one attachment into `plan` (entry, new holdings, claim writes); on error nothing
/// allocated by this call is kept.
pub(crate) fn plan_attachment(
    pools: &mut Pools,
    cx: &AttachmentContext<'_>,
    attachment: &Attachment,
    plan: &mut PodPlan,
) -> Result<(), AttachmentError> {
    let pod = cx.pod;
    let desc = format!("{}/{}/{}", attachment.nad_key, pod.namespace, pod.name);
    let existing = pod.existing.get(&attachment.nad_key);
    let claim = resolve_claim(pools, cx, attachment)?;
    let pod_owner = format!("{}/{}", attachment.nad_key, pod.uid);
    let owners = Owners {
        ips: claim
            .as_ref()
            .map_or_else(|| pod_owner.clone(), |c| claim_owner(&c.key)),
        pod: pod_owner,
        claim,
    };
    let annotated_tunnel = existing.map_or(0, |e| e.tunnel_id);
    let (tunnel_id, new_tunnel) =
        ensure_tunnel(&mut pools.tunnels, annotated_tunnel, &owners.pod, &desc)?;
    let undo = |pools: &mut Pools, ips: bool| {
        if new_tunnel && let Some(tunnels) = pools.tunnels.as_mut() {
            tunnels.release(&owners.pod);
        }
        if ips && let Some(pool) = pools.ips.as_mut() {
            pool.release(&owners.ips);
        }
    };
    let annotated: Vec<IpNetwork> = existing.map(|e| e.ip_addresses.clone()).unwrap_or_default();
    let requested = &attachment.element.ips;
    let outcome = match pools.ips.as_mut() {
        Some(pool) => pool_ips(
            pool,
            annotated,
            owners.claim.as_ref(),
            &owners.ips,
            requested,
            &desc,
        ),
        None => requested_ips(annotated, requested, &desc),
    };
    let ips = match outcome {
        Ok(ips) => ips,
        Err((error, failure)) => {
            undo(pools, false);
            if let (Some(claim), Some(failure)) = (&owners.claim, failure) {
                plan.claim_writes.push(ClaimWrite {
                    key: claim.key.clone(),
                    pod: pod.name.to_owned(),
                    ips: Vec::new(),
                    failure: Some(failure),
                });
            }
            return Err(error);
        }
    };
    let entry = match entry_for(pools, cx, attachment, &ips.ips, tunnel_id, &desc) {
        Ok(entry) => entry,
        Err(error) => {
            undo(pools, ips.new);
            return Err(error);
        }
    };
    let network = pools.info.name.clone();
    plan.desired.insert(attachment.nad_key.clone(), entry);
    record(plan, &network, pod.name, owners, ips, new_tunnel);
    Ok(())
}
