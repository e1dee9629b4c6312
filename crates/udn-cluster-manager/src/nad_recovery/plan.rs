//! The pure part of NAD recovery: who still uses a deleted NetworkAttachmentDefinition, and
//! the object to create again.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use udn_api::annotations::network_selection::parse_network_selection_for_pod;
use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::ANNOTATION_NETWORKS;

/// The API group of the UDN/CUDN kinds whose NADs the network controller owns.
const UDN_GROUP_VERSION: &str = "k8s.ovn.org/v1";

/// What to do about one deleted NAD.
#[derive(Clone, Debug)]
pub(crate) enum Decision {
    /// Create it again: `users` (`ns/pod`, sorted, at least one) still reference it.
    Recreate {
        /// The object to create.
        object: Box<NetworkAttachmentDefinition>,
        /// The pods that reference it.
        users: BTreeSet<String>,
    },
    /// The deletion stands.
    Stands(Reason),
}

/// Why a deletion stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// No pod references it.
    Unused,
    /// A UserDefinedNetwork or ClusterUserDefinedNetwork owns it: the network controller
    /// manages it (and its finalizer keeps it while pods use the network).
    OwnedByNetwork,
}

/// A pod whose `k8s.v1.cni.cncf.io/networks` annotation does not parse, with the reason:
/// it is not counted as a user (as upstream), and the controller logs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unparsable {
    /// `ns/pod`.
    pub(crate) pod: String,
    /// The parser's message.
    pub(crate) reason: String,
}

/// The pods among `pods` (any namespace, any phase: a pod object that names the NAD may
/// still need it for its CNI DEL) whose network-selection annotation names NAD
/// `namespace/name`, in any syntax `udn-api` parses (JSON, `ns/name@if`, bare names
/// defaulting to the pod's namespace).
pub(crate) fn users<'a>(
    namespace: &str,
    name: &str,
    pods: impl IntoIterator<Item = &'a ObjectMeta>,
) -> (BTreeSet<String>, Vec<Unparsable>) {
    let mut users = BTreeSet::new();
    let mut unparsable = Vec::new();
    for pod in pods {
        let Some(value) = pod
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_NETWORKS))
        else {
            continue;
        };
        let pod_namespace = pod.namespace.as_deref().unwrap_or_default();
        let pod_key = format!(
            "{pod_namespace}/{}",
            pod.name.as_deref().unwrap_or_default()
        );
        match parse_network_selection_for_pod(value, pod_namespace) {
            Ok(elements) => {
                if elements
                    .iter()
                    .any(|e| e.namespace == namespace && e.name == name)
                {
                    users.insert(pod_key);
                }
            }
            Err(err) => unparsable.push(Unparsable {
                pod: pod_key,
                reason: err.to_string(),
            }),
        }
    }
    (users, unparsable)
}

/// Whether a UDN or CUDN owns `nad`.
pub(crate) fn owned_by_network(nad: &NetworkAttachmentDefinition) -> bool {
    nad.metadata.owner_references.iter().flatten().any(|owner| {
        owner.api_version == UDN_GROUP_VERSION
            && matches!(
                owner.kind.as_str(),
                "UserDefinedNetwork" | "ClusterUserDefinedNetwork"
            )
    })
}

/// The decision for `deleted` (the last copy seen) given `users`.
pub(crate) fn decide(deleted: &NetworkAttachmentDefinition, users: BTreeSet<String>) -> Decision {
    if owned_by_network(deleted) {
        return Decision::Stands(Reason::OwnedByNetwork);
    }
    if users.is_empty() {
        return Decision::Stands(Reason::Unused);
    }
    Decision::Recreate {
        object: Box::new(recreated(deleted)),
        users,
    }
}

/// The object to create from the last copy: name, namespace, labels, annotations, owner
/// references and spec as they were; what the server assigns (uid, resourceVersion,
/// creation time, generation, managed fields) and the deletion marks cleared.
pub(crate) fn recreated(deleted: &NetworkAttachmentDefinition) -> NetworkAttachmentDefinition {
    let old = &deleted.metadata;
    NetworkAttachmentDefinition {
        metadata: ObjectMeta {
            name: old.name.clone(),
            namespace: old.namespace.clone(),
            labels: old.labels.clone(),
            annotations: old.annotations.clone(),
            owner_references: old.owner_references.clone(),
            ..ObjectMeta::default()
        },
        spec: deleted.spec.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use udn_api::nad::NetworkAttachmentDefinitionSpec;

    use super::*;

    fn pod(namespace: &str, name: &str, networks: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            namespace: Some(namespace.to_owned()),
            name: Some(name.to_owned()),
            annotations: networks
                .map(|v| BTreeMap::from([(ANNOTATION_NETWORKS.to_owned(), v.to_owned())])),
            ..ObjectMeta::default()
        }
    }

    fn nad(owner_kind: Option<&str>) -> NetworkAttachmentDefinition {
        NetworkAttachmentDefinition {
            metadata: ObjectMeta {
                name: Some("foo-network".to_owned()),
                namespace: Some("default".to_owned()),
                uid: Some("u1".to_owned()),
                resource_version: Some("7".to_owned()),
                labels: Some(BTreeMap::from([("a".to_owned(), "b".to_owned())])),
                deletion_timestamp: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                )),
                owner_references: owner_kind.map(|kind| {
                    vec![OwnerReference {
                        api_version: UDN_GROUP_VERSION.to_owned(),
                        kind: kind.to_owned(),
                        name: "net".to_owned(),
                        uid: "o1".to_owned(),
                        ..OwnerReference::default()
                    }]
                }),
                ..ObjectMeta::default()
            },
            spec: NetworkAttachmentDefinitionSpec {
                config: Some(
                    r#"{"cniVersion":"0.3.0","name":"foo-network","type":"bridge"}"#.to_owned(),
                ),
            },
        }
    }

    #[test]
    fn every_selection_syntax_names_a_user() {
        let pods = [
            // The seed's example: a bare name, twice, with a space.
            pod("default", "demo", Some("foo-network, foo-network")),
            pod("other", "cross", Some("default/foo-network@net1")),
            pod(
                "other",
                "json",
                Some(r#"[{"name":"foo-network","namespace":"default"}]"#),
            ),
            // A bare name in another namespace means that namespace's NAD.
            pod("other", "elsewhere", Some("foo-network")),
            pod("default", "none", None),
            pod("default", "other-nad", Some("bar")),
        ];
        let (users, unparsable) = users("default", "foo-network", &pods);
        assert_eq!(
            users.into_iter().collect::<Vec<_>>(),
            ["default/demo", "other/cross", "other/json"]
        );
        assert!(unparsable.is_empty());
    }

    #[test]
    fn an_unparsable_annotation_is_reported_and_not_counted() {
        let pods = [pod("default", "bad", Some(r#"[{"name": }"#))];
        let (users, unparsable) = users("default", "foo-network", &pods);
        assert!(users.is_empty());
        assert_eq!(unparsable.len(), 1);
        assert_eq!(unparsable[0].pod, "default/bad");
        assert!(
            unparsable[0].reason.contains(ANNOTATION_NETWORKS),
            "{:?}",
            unparsable[0]
        );
    }

    #[test]
    fn a_used_nad_is_recreated_from_its_last_copy() {
        let deleted = nad(None);
        let Decision::Recreate { object, users } =
            decide(&deleted, BTreeSet::from(["default/demo".to_owned()]))
        else {
            panic!("not recreated");
        };
        assert_eq!(users.len(), 1);
        assert_eq!(object.spec, deleted.spec);
        assert_eq!(object.metadata.labels, deleted.metadata.labels);
        assert_eq!(object.metadata.name.as_deref(), Some("foo-network"));
        assert_eq!(object.metadata.uid, None);
        assert_eq!(object.metadata.resource_version, None);
        assert_eq!(object.metadata.deletion_timestamp, None);
    }

    #[test]
    fn unused_and_network_owned_nads_stay_deleted() {
        assert!(matches!(
            decide(&nad(None), BTreeSet::new()),
            Decision::Stands(Reason::Unused)
        ));
        let users = BTreeSet::from(["default/demo".to_owned()]);
        for kind in ["UserDefinedNetwork", "ClusterUserDefinedNetwork"] {
            assert!(matches!(
                decide(&nad(Some(kind)), users.clone()),
                Decision::Stands(Reason::OwnedByNetwork)
            ));
        }
        // Another owner does not make it the network controller's.
        assert!(matches!(
            decide(&nad(Some("Deployment")), users),
            Decision::Recreate { .. }
        ));
    }
}
