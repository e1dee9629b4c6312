//! The CRD manifests udn installs, as `k8s_openapi` objects (for the cluster-manager and
//! the API server simulator) and as canonical JSON (for `cargo xtask codegen` and
//! validation with `udn-schema`).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::{Map, Value};

use super::structural;
use super::{ClusterUserDefinedNetwork, UserDefinedNetwork};
use crate::nad;

/// Why a CRD could not be turned into its manifest form.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The CRD object did not serialize to JSON.
    #[error("serialize CRD {crd} to JSON")]
    Serialize {
        /// `metadata.name` of the CRD.
        crd: String,
        /// The serializer error.
        #[source]
        source: serde_json::Error,
    },
}

/// The `userdefinednetworks.k8s.ovn.org` CRD.
pub fn user_defined_network_crd() -> CustomResourceDefinition {
    let mut crd = UserDefinedNetwork::crd();
    structural::tidy(&mut crd);
    crd
}

/// The `clusteruserdefinednetworks.k8s.ovn.org` CRD.
pub fn cluster_user_defined_network_crd() -> CustomResourceDefinition {
    let mut crd = ClusterUserDefinedNetwork::crd();
    structural::tidy(&mut crd);
    crd
}

/// Every CRD udn needs in a cluster: UserDefinedNetwork, ClusterUserDefinedNetwork,
/// Multus' NetworkAttachmentDefinition and the persistent-IPs IPAMClaim.
pub fn manifests() -> Vec<CustomResourceDefinition> {
    vec![
        user_defined_network_crd(),
        cluster_user_defined_network_crd(),
        nad::network_attachment_definition_crd(),
        crate::ipamclaim::ipam_claim_crd(),
    ]
}

/// The file a CRD is written to under `manifests/crds/`: `<group>_<plural>.yaml`, the
/// controller-gen naming.
pub fn manifest_file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural)
}

/// `crd` as canonical JSON: object keys sorted, and the integral numeric bounds
/// (`minimum`, `maximum`, `multipleOf`) written as integers rather than the floats
/// `JSONSchemaProps` holds them as.
pub fn to_manifest_json(crd: &CustomResourceDefinition) -> Result<Value, ManifestError> {
    let value = serde_json::to_value(crd).map_err(|source| ManifestError::Serialize {
        crd: crd.metadata.name.clone().unwrap_or_default(),
        source,
    })?;
    Ok(canonical(value))
}

/// Keys whose integral float values are written as integers.
const INTEGRAL_BOUNDS: [&str; 3] = ["minimum", "maximum", "multipleOf"];

fn canonical(value: Value) -> Value {
    match value {
        Value::Object(object) => {
            let mut entries: Vec<(String, Value)> = object.into_iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.cmp(b));
            let mut sorted = Map::new();
            for (key, child) in entries {
                let child = if INTEGRAL_BOUNDS.contains(&key.as_str()) {
                    integral(child)
                } else {
                    canonical(child)
                };
                sorted.insert(key, child);
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

/// A float without a fractional part as an integer; anything else unchanged.
fn integral(value: Value) -> Value {
    match value.as_f64() {
        Some(float) if value.is_f64() && float.fract() == 0.0 && float.abs() < 9.0e15 => {
            Value::from(float as i64)
        }
        _ => value,
    }
}
