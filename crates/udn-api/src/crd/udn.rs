//! `UserDefinedNetwork`: a namespaced network owned by a tenant.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::shared::{Layer2Config, Layer3Config, NetworkTopology};

/// Spec of a `UserDefinedNetwork`.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "k8s.ovn.org",
    version = "v1",
    kind = "UserDefinedNetwork",
    plural = "userdefinednetworks",
    singular = "userdefinednetwork",
    shortname = "udn",
    namespaced,
    status = "UserDefinedNetworkStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct UserDefinedNetworkSpec {
    /// Layer3 or Layer2. Immutable.
    pub topology: NetworkTopology,
    /// Layer3 configuration; required iff topology is Layer3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer3: Option<Layer3Config>,
    /// Layer2 configuration; required iff topology is Layer2. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer2: Option<Layer2Config>,
}

/// Status of a `UserDefinedNetwork`.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserDefinedNetworkStatus {
    /// Conditions, keyed by type (`NetworkCreated`, `NetworkAllocationSucceeded`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
