//! A namespace's primary network (upstream `GetActiveNetworkForNamespace`): the default
//! network unless the namespace carries `k8s.ovn.org/primary-user-defined-network`, then the
//! network of its NAD whose config has `"role": "primary"`.

use std::collections::BTreeMap;

use udn_api::nad::NetworkAttachmentDefinition;
use udn_api::names::LABEL_PRIMARY_UDN_NAMESPACE;
use udn_api::netconf::NetConf;

use super::MirrorError;

/// The primary user-defined network of a namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PrimaryNetwork {
    /// The NAD key `ns/name`: the key of the pods' `k8s.ovn.org/pod-networks` entry.
    pub(crate) nad_key: String,
    /// The network name (`ns_udn`, `cluster_udn_x`).
    pub(crate) network: String,
}

/// The primary UDN of namespace `namespace` (with `labels`) among `nads` (any namespace),
/// `None` for a namespace on the default network. The first primary NAD by name wins.
pub(crate) fn primary_network<'a>(
    namespace: &str,
    labels: Option<&BTreeMap<String, String>>,
    nads: impl IntoIterator<Item = &'a NetworkAttachmentDefinition>,
    default_mtu: u32,
) -> Result<Option<PrimaryNetwork>, MirrorError> {
    if !labels.is_some_and(|l| l.contains_key(LABEL_PRIMARY_UDN_NAMESPACE)) {
        return Ok(None);
    }
    let mut found: Option<(String, String)> = None;
    for nad in nads {
        if nad.metadata.namespace.as_deref() != Some(namespace)
            || nad.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let Some(conf) = nad
            .spec
            .config
            .as_deref()
            .and_then(|c| NetConf::parse(c, default_mtu).ok())
        else {
            continue;
        };
        if !conf.is_primary() {
            continue;
        }
        let name = nad.metadata.name.clone().unwrap_or_default();
        if found.as_ref().is_none_or(|(first, _)| name < *first) {
            found = Some((name, conf.name));
        }
    }
    match found {
        Some((name, network)) => Ok(Some(PrimaryNetwork {
            nad_key: udn_api::names::nad_key(namespace, &name),
            network,
        })),
        None => Err(MirrorError::NoPrimaryNad {
            namespace: namespace.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nad(namespace: &str, name: &str, role: &str) -> NetworkAttachmentDefinition {
        let mut nad = NetworkAttachmentDefinition::new(
            name,
            udn_api::nad::NetworkAttachmentDefinitionSpec {
                config: Some(format!(
                    r#"{{"cniVersion":"1.0.0","name":"{namespace}_{name}","type":"ovn-k8s-cni-overlay","topology":"layer3","subnets":"10.128.0.0/16/24","netAttachDefName":"{namespace}/{name}","role":"{role}"}}"#
                )),
            },
        );
        nad.metadata.namespace = Some(namespace.to_owned());
        nad
    }

    fn labelled() -> BTreeMap<String, String> {
        BTreeMap::from([(LABEL_PRIMARY_UDN_NAMESPACE.to_owned(), String::new())])
    }

    #[test]
    fn only_labelled_namespaces_have_a_primary_udn() {
        let nads = [
            nad("blue", "secondary", "secondary"),
            nad("blue", "net", "primary"),
        ];
        assert_eq!(primary_network("blue", None, &nads, 1400).unwrap(), None);
        assert_eq!(
            primary_network("blue", Some(&labelled()), &nads, 1400).unwrap(),
            Some(PrimaryNetwork {
                nad_key: "blue/net".to_owned(),
                network: "blue_net".to_owned()
            })
        );
    }

    #[test]
    fn a_labelled_namespace_without_its_nad_is_an_error() {
        let nads = [
            nad("green", "net", "primary"),
            nad("blue", "s", "secondary"),
        ];
        assert!(matches!(
            primary_network("blue", Some(&labelled()), &nads, 1400),
            Err(MirrorError::NoPrimaryNad { .. })
        ));
    }
}
