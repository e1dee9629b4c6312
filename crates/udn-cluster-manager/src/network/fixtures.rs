//! Typed objects for the pure tests, built from udn-test-support's builders.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::{Value, json};
use udn_api::crd::{ClusterUserDefinedNetwork, UserDefinedNetwork};
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::LABEL_PRIMARY_UDN_NAMESPACE;

/// A UDN from a builder, with a uid.
pub(crate) fn udn(builder: Value, uid: &str) -> UserDefinedNetwork {
    let mut udn: UserDefinedNetwork = serde_json::from_value(builder).expect("UDN builder");
    udn.metadata.uid = Some(uid.to_owned());
    udn
}

/// A CUDN from a builder, with a uid.
pub(crate) fn cudn(builder: Value, uid: &str) -> ClusterUserDefinedNetwork {
    let mut cudn: ClusterUserDefinedNetwork =
        serde_json::from_value(builder).expect("CUDN builder");
    cudn.metadata.uid = Some(uid.to_owned());
    cudn
}

/// Labels of a namespace, with the primary label when `primary`.
pub(crate) fn ns_labels(primary: bool) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    if primary {
        labels.insert(LABEL_PRIMARY_UDN_NAMESPACE.to_owned(), String::new());
    }
    labels
}

/// A NAD with a config and an optional controller owner uid.
pub(crate) fn nad(
    namespace: &str,
    name: &str,
    config: &str,
    owner_uid: Option<&str>,
) -> Arc<NetworkAttachmentDefinition> {
    let mut value = json!({
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": "7"},
        "spec": {"config": config},
    });
    if let Some(uid) = owner_uid {
        value["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork", "name": name,
            "uid": uid, "controller": true, "blockOwnerDeletion": true,
        }]);
        value["metadata"]["finalizers"] = json!(["k8s.ovn.org/user-defined-network-protection"]);
    }
    Arc::new(serde_json::from_value(value).expect("NAD"))
}

/// A deletion timestamp.
pub(crate) fn deleted_at() -> Time {
    Time("2025-01-01T00:00:00Z".parse().expect("timestamp"))
}

/// Pod metadata with a `k8s.ovn.org/pod-networks` annotation naming `nad_keys`.
pub(crate) fn pod_using(namespace: &str, name: &str, nad_keys: &[&str]) -> ObjectMeta {
    let networks: serde_json::Map<String, Value> = nad_keys
        .iter()
        .map(|key| {
            (
                (*key).to_owned(),
                json!({"ip_addresses": null, "mac_address": ""}),
            )
        })
        .collect();
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        annotations: Some(BTreeMap::from([(
            udn_api::names::ANNOTATION_POD_NETWORKS.to_owned(),
            Value::Object(networks).to_string(),
        )])),
        ..ObjectMeta::default()
    }
}
