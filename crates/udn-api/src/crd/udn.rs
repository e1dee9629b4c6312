//! `UserDefinedNetwork`: a namespaced network owned by a tenant.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::schema_parts;
use super::shared::{Layer2Config, Layer3Config, NetworkTopology};

/// Spec of a `UserDefinedNetwork`.
// clippy reads the repeated `type_ = "string"` of the `printcolumn(...)` entries as a
// duplicated attribute; they are arguments of distinct columns.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "k8s.ovn.org",
    version = "v1",
    kind = "UserDefinedNetwork",
    plural = "userdefinednetworks",
    singular = "userdefinednetwork",
    shortname = "udn",
    namespaced,
    status = "UserDefinedNetworkStatus",
    doc = "A network requested for the pods of one namespace.",
    printcolumn(name = "Topology", type_ = "string", json_path = ".spec.topology"),
    printcolumn(name = "Role", type_ = "string", json_path = ".spec..role"),
    printcolumn(
        name = "Created",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"NetworkCreated\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.topology) && self.topology == 'Layer3' ? has(self.layer3): !has(self.layer3)")
        .message("spec.layer3 is required when topology is Layer3 and forbidden otherwise"),
    validation = Rule::new("has(self.topology) && self.topology == 'Layer2' ? has(self.layer2): !has(self.layer2)")
        .message("spec.layer2 is required when topology is Layer2 and forbidden otherwise"),
)]
pub struct UserDefinedNetworkSpec {
    /// Layer3 or Layer2. Immutable.
    #[schemars(schema_with = "schema_parts::udn_topology")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("Topology is immutable"))]
    pub topology: NetworkTopology,
    /// Layer3 configuration; required iff topology is Layer3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer3: Option<Layer3Config>,
    /// Layer2 configuration; required iff topology is Layer2. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema_parts::immutable_layer2")]
    pub layer2: Option<Layer2Config>,
}

/// Status of a `UserDefinedNetwork`.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserDefinedNetworkStatus {
    /// Conditions, keyed by type (`NetworkCreated`, `NetworkAllocationSucceeded`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema_parts::conditions")]
    pub conditions: Vec<Condition>,
}
