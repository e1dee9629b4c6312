//! Which pods use a NetworkAttachmentDefinition (upstream `NetAttachDefNotInUse`): a pod
//! uses NAD `ns/name` iff its `k8s.ovn.org/pod-networks` annotation has that exact key.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use udn_api::names::ANNOTATION_POD_NETWORKS;

/// The users of one NAD among the pods of its namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PodUse {
    /// `ns/pod` of every pod whose annotation names the NAD, sorted.
    pub(crate) users: BTreeSet<String>,
    /// The first pod (by name) whose annotation does not parse, with the reason.
    pub(crate) unparsable: Option<(String, String)>,
}

impl PodUse {
    /// Whether nothing prevents deleting the NAD.
    #[cfg(test)]
    pub(crate) fn is_free(&self) -> bool {
        self.users.is_empty() && self.unparsable.is_none()
    }
}

/// The NAD keys named by a pod's `k8s.ovn.org/pod-networks` annotation (empty when the
/// annotation is absent). Like upstream's `json.Unmarshal` into a map of structs: the value
/// must be a JSON object whose entries are objects or `null`.
pub(crate) fn pod_nad_keys(
    annotations: Option<&BTreeMap<String, String>>,
) -> Result<BTreeSet<String>, String> {
    let Some(value) = annotations.and_then(|a| a.get(ANNOTATION_POD_NETWORKS)) else {
        return Ok(BTreeSet::new());
    };
    let parsed: BTreeMap<String, Option<serde_json::Map<String, serde_json::Value>>> =
        serde_json::from_str(value)
            .map_err(|err| format!("failed to unmarshal ovn pod annotation {value:?}: {err}"))?;
    Ok(parsed.into_keys().collect())
}

/// The users of NAD `namespace/name` among `pods` (pods of other namespaces are ignored).
pub(crate) fn pod_use<'a>(
    namespace: &str,
    name: &str,
    pods: impl IntoIterator<Item = &'a ObjectMeta>,
) -> PodUse {
    let key = udn_api::names::nad_key(namespace, name);
    let mut result = PodUse::default();
    let mut pods: Vec<&ObjectMeta> = pods
        .into_iter()
        .filter(|pod| pod.namespace.as_deref() == Some(namespace))
        .collect();
    pods.sort_by(|a, b| a.name.cmp(&b.name));
    for pod in pods {
        let pod_name = pod.name.clone().unwrap_or_default();
        match pod_nad_keys(pod.annotations.as_ref()) {
            Ok(keys) => {
                if keys.contains(&key) {
                    result.users.insert(format!("{namespace}/{pod_name}"));
                }
            }
            Err(reason) => {
                if result.unparsable.is_none() {
                    result.unparsable = Some((pod_name, reason));
                }
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(namespace: &str, name: &str, networks: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            annotations: networks.map(|value| {
                BTreeMap::from([(ANNOTATION_POD_NETWORKS.to_owned(), value.to_owned())])
            }),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn exact_key_match_only() {
        let pods = [
            pod(
                "blue",
                "b",
                Some(r#"{"blue/net":{"ip_addresses":null,"mac_address":""}}"#),
            ),
            pod("blue", "a", Some(r#"{"default":{},"blue/net":null}"#)),
            pod("blue", "c", Some(r#"{"blue/net/1":{}}"#)),
            pod("blue", "d", None),
            pod("red", "e", Some(r#"{"blue/net":{}}"#)),
        ];
        let used = pod_use("blue", "net", &pods);
        assert_eq!(
            used.users.into_iter().collect::<Vec<_>>(),
            vec!["blue/a".to_owned(), "blue/b".to_owned()]
        );
        assert_eq!(used.unparsable, None);
    }

    #[test]
    fn unparsable_annotation_blocks_deletion() {
        let pods = [
            pod("blue", "z", Some("{")),
            pod("blue", "y", Some(r#"{"blue/net":5}"#)),
        ];
        let used = pod_use("blue", "net", &pods);
        assert!(!used.is_free());
        let (pod, reason) = used.unparsable.unwrap();
        assert_eq!(pod, "y");
        assert!(
            reason.starts_with("failed to unmarshal ovn pod annotation \"{\\\"blue/net\\\":5}\": ")
        );
        assert!(pod_use("blue", "net", &[pod_meta_none()]).is_free());
    }

    fn pod_meta_none() -> ObjectMeta {
        pod("blue", "x", None)
    }
}
