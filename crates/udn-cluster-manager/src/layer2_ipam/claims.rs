//! IPAMClaim status (upstream `persistentips.IPAMClaimReconciler.UpdateIPAMClaimStatus`):
//! the allocated IPs, the owner pod and the `IPsAllocated` condition, written once, when the
//! claim gets its addresses (or fails to).

use ipnetwork::IpNetwork;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use udn_api::ipamclaim::{
    CONDITION_IPS_ALLOCATED, IPAMClaim, IPAMClaimStatus, MESSAGE_SUCCESSFUL_ALLOCATION, OwnerPod,
    REASON_SUCCESSFUL_ALLOCATION,
};

use super::state::{ClaimView, ClaimWrite};
use crate::context::CLUSTER_MANAGER;

/// The claim as the allocator sees it; `None` when its IPs do not parse (treated as none).
pub(crate) fn claim_view(claim: &IPAMClaim) -> ClaimView {
    let namespace = claim.metadata.namespace.as_deref().unwrap_or_default();
    let name = claim.metadata.name.as_deref().unwrap_or_default();
    let ips = claim
        .status
        .as_ref()
        .map(|status| {
            status
                .ips
                .iter()
                .filter_map(|ip| ip.parse::<IpNetwork>().ok())
                .collect()
        })
        .unwrap_or_default();
    ClaimView {
        key: format!("{namespace}/{name}"),
        network: claim.spec.network.clone(),
        ips,
    }
}

/// The status to write for `write` on `claim` (its generation in the condition).
pub(crate) fn desired_status(write: &ClaimWrite, generation: Option<i64>) -> IPAMClaimStatus {
    let (status, reason, message) = match &write.failure {
        None => (
            "True",
            REASON_SUCCESSFUL_ALLOCATION,
            MESSAGE_SUCCESSFUL_ALLOCATION.to_owned(),
        ),
        Some((reason, message)) => ("False", *reason, message.clone()),
    };
    IPAMClaimStatus {
        ips: write.ips.iter().map(ToString::to_string).collect(),
        owner_pod: Some(OwnerPod {
            name: write.pod.clone(),
        }),
        conditions: vec![Condition {
            type_: CONDITION_IPS_ALLOCATED.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message,
            observed_generation: generation,
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::now()),
        }],
    }
}

/// Writes the claim's status; a claim that already has IPs is never overwritten (the
/// write is guarded by the resourceVersion the decision was made on).
pub(crate) async fn write_status(
    client: &kube::Client,
    write: &ClaimWrite,
    claim: &IPAMClaim,
) -> Result<(), kube::Error> {
    let namespace = claim.metadata.namespace.as_deref().unwrap_or_default();
    let name = claim.metadata.name.as_deref().unwrap_or_default();
    let status = desired_status(write, claim.metadata.generation);
    let body = json!({
        "metadata": {"resourceVersion": claim.metadata.resource_version},
        "status": status,
    });
    let params = PatchParams {
        field_manager: Some(CLUSTER_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    let api: Api<IPAMClaim> = Api::namespaced(client.clone(), namespace);
    api.patch_status(name, &params, &Patch::Merge(&body))
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_and_failure_statuses() {
        let ok = desired_status(
            &ClaimWrite {
                key: "ns/vm".into(),
                pod: "virt-launcher-vm-abc".into(),
                ips: vec!["10.0.0.3/24".parse().unwrap()],
                failure: None,
            },
            Some(1),
        );
        assert_eq!(ok.ips, ["10.0.0.3/24"]);
        assert_eq!(
            ok.owner_pod.as_ref().map(|o| o.name.as_str()),
            Some("virt-launcher-vm-abc")
        );
        let condition = &ok.conditions[0];
        assert_eq!(
            (
                condition.type_.as_str(),
                condition.status.as_str(),
                condition.reason.as_str(),
                condition.message.as_str()
            ),
            (
                "IPsAllocated",
                "True",
                "SuccessfulAllocation",
                "IP addresses successfully allocated"
            )
        );
        assert_eq!(condition.observed_generation, Some(1));
        let failed = desired_status(
            &ClaimWrite {
                key: "ns/vm".into(),
                pod: "p".into(),
                ips: Vec::new(),
                failure: Some(("SubnetExhausted", "full".into())),
            },
            None,
        );
        assert!(failed.ips.is_empty());
        assert_eq!(failed.conditions[0].status, "False");
        assert_eq!(failed.conditions[0].reason, "SubnetExhausted");
    }
}
