//! `IPAMClaim` (`k8s.cni.cncf.io/v1alpha1`, k8snetworkplumbingwg/ipamclaims v0.5.1-alpha, the
//! version OVN-Kubernetes vendors): a persistent IP allocation for one pod interface, so that
//! a VM keeps its addresses across restarts and live migration.
//!
//! A pod refers to a claim through the `ipam-claim-reference` attribute of its
//! network-selection element: in [`ANNOTATION_DEFAULT_NETWORK`] for the primary network, in
//! `k8s.v1.cni.cncf.io/networks` for secondary ones. The cluster-manager writes the
//! allocated addresses into `status.ips` and reuses them for every later pod referring to the
//! claim; the addresses are freed when the claim is deleted.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, CustomResourceExt};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::crd::structural;

/// Pod annotation with the primary network's selection element (Multus), where the
/// `ipam-claim-reference` of a primary-UDN pod is given.
pub const ANNOTATION_DEFAULT_NETWORK: &str = "v1.multus-cni.io/default-network";
/// Deprecated pod annotation naming the primary network's IPAMClaim; the
/// `ipam-claim-reference` of [`ANNOTATION_DEFAULT_NETWORK`] takes precedence.
pub const ANNOTATION_PRIMARY_UDN_IPAMCLAIM: &str = "k8s.ovn.org/primary-udn-ipamclaim";
/// Condition type the cluster-manager sets on a claim.
pub const CONDITION_IPS_ALLOCATED: &str = "IPsAllocated";
/// `IPsAllocated` reason: addresses were allocated.
pub const REASON_SUCCESSFUL_ALLOCATION: &str = "SuccessfulAllocation";
/// `IPsAllocated` message on success.
pub const MESSAGE_SUCCESSFUL_ALLOCATION: &str = "IP addresses successfully allocated";
/// `IPsAllocated` reason: the network's address pool is exhausted.
pub const REASON_SUBNET_EXHAUSTED: &str = "SubnetExhausted";
/// `IPsAllocated` reason: a requested address is held by someone else.
pub const REASON_IP_ADDRESS_CONFLICT: &str = "IPAddressConflict";
/// `IPsAllocated` reason: any other failure.
pub const REASON_INTERNAL_ERROR: &str = "InternalError";

/// Spec of an `IPAMClaim`.
#[derive(CustomResource, JsonSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "k8s.cni.cncf.io",
    version = "v1alpha1",
    kind = "IPAMClaim",
    plural = "ipamclaims",
    singular = "ipamclaim",
    namespaced,
    status = "IPAMClaimStatus",
    doc = "IPAMClaim is the Schema for the IPAMClaim API"
)]
pub struct IPAMClaimSpec {
    /// The network name for which this persistent allocation was created
    pub network: String,
    /// The pod interface name for which this allocation was created
    pub interface: String,
}

/// IPAMClaimStatus contains the observed status of the IPAMClaim.
#[derive(JsonSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IPAMClaimStatus {
    /// The list of IP addresses (v4, v6) that were allocated for the pod interface
    #[serde(default)]
    pub ips: Vec<String>,
    /// The name of the pod holding the IPAMClaim
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_pod: Option<OwnerPod>,
    /// Conditions contains details for one aspect of the current state of this API Resource
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions")]
    pub conditions: Vec<Condition>,
}

/// The pod holding a claim.
#[derive(JsonSchema, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerPod {
    /// Pod name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// `status.conditions`: a plain list of `metav1.Condition` (controller-gen output upstream).
fn conditions(_generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "description": "Conditions contains details for one aspect of the current state of this API Resource",
        "items": {
            "type": "object",
            "description": "Condition contains details for one aspect of the current state of this API Resource.",
            "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "message": {"type": "string", "maxLength": 32768},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                "reason": {
                    "type": "string",
                    "maxLength": 1024,
                    "minLength": 1,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                },
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "type": {
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                },
            },
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        },
    })
}

/// The `ipamclaims.k8s.cni.cncf.io` CRD as the ipamclaims project ships it: `spec.network`
/// and `spec.interface` required, `status.ips` required, status subresource.
pub fn ipam_claim_crd() -> CustomResourceDefinition {
    let mut crd = IPAMClaim::crd();
    structural::tidy(&mut crd);
    // `ips` is read leniently (a missing list is empty) but the schema requires it.
    let status = crd
        .spec
        .versions
        .iter_mut()
        .filter_map(|version| version.schema.as_mut())
        .filter_map(|validation| validation.open_api_v3_schema.as_mut())
        .filter_map(|root| root.properties.as_mut())
        .filter_map(|properties| properties.get_mut("status"));
    for status in status {
        status.required = Some(vec!["ips".to_owned()]);
    }
    crd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_names_scope_and_subresource() {
        let crd = ipam_claim_crd();
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("ipamclaims.k8s.cni.cncf.io")
        );
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.kind, "IPAMClaim");
        assert_eq!(crd.spec.names.list_kind.as_deref(), Some("IPAMClaimList"));
        let version = crd.spec.versions.first().unwrap();
        assert_eq!(version.name, "v1alpha1");
        assert!(version.subresources.as_ref().unwrap().status.is_some());
        let root = version
            .schema
            .as_ref()
            .unwrap()
            .open_api_v3_schema
            .as_ref()
            .unwrap();
        let props = root.properties.as_ref().unwrap();
        let spec = &props["spec"];
        assert_eq!(
            spec.required.as_deref(),
            Some(&["interface".to_owned(), "network".to_owned()][..])
        );
        let status = &props["status"];
        assert_eq!(status.required.as_deref(), Some(&["ips".to_owned()][..]));
    }

    #[test]
    fn status_serializes_as_upstream() {
        let status = IPAMClaimStatus {
            ips: vec!["10.0.0.3/24".into()],
            owner_pod: Some(OwnerPod {
                name: "virt-launcher-x".into(),
            }),
            conditions: Vec::new(),
        };
        assert_eq!(
            serde_json::to_string(&status).unwrap(),
            r#"{"ips":["10.0.0.3/24"],"ownerPod":{"name":"virt-launcher-x"}}"#
        );
        let empty = IPAMClaimStatus::default();
        assert_eq!(serde_json::to_string(&empty).unwrap(), r#"{"ips":[]}"#);
    }
}
